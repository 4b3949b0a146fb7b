#!/usr/bin/env bash
# Issue 54's CPU benchmarks before and after a change, on a quiet machine (nothing else
# running: no training, no tests), 2 threads per process, alternated: for each benchmark,
# round 1 runs BASE then this checkout, round 2 this checkout then BASE (training_step.py runs
# here only: it times the former code paths beside the current one itself). BASE is checked
# out with `git worktree add` in a temporary folder (removed at the end); each tree runs its
# own benchmarks/ and src/ (PYTHONPATH), on the same Python environment.
#
#   PYTHON=.venv/bin/python benchmarks/quiet_run.sh GSD EWT MODEL [BASE]
#
#   GSD    the UD Chinese-GSD v1.3 folder (utilisation.py, stanza_speed.py)
#   EWT    the full UD English-EWT folder (training_step.py's --ewt; prediction.py parses its
#          en_ewt-ud-dev.conllu)
#   MODEL  what prediction.py loads (a run folder, checkpoint or model file: the same weights
#          for both trees; e.g. the `make train` run, outputs/ewt-sample-cpu/hinge-bock/seed1111)
#   BASE   the commit before the change (default 7a2de07)
#
# Reports go to benchmarks/results/quiet-<date>/<benchmark>.<tree>.r<round>.md (tree: base or
# head), each with its command line and thread counts. stanza_speed.py needs the `bench` extra
# (Stanza 1.15) and trains 2 x 2 runs of 101 updates per call: the whole script takes hours.
set -euo pipefail

if [[ $# -lt 3 ]]; then
    sed -n '2,20p' "$0" >&2
    exit 2
fi
GSD=$(realpath "$1")
EWT=$(realpath "$2")
MODEL=$(realpath "$3")
BASE=${4:-7a2de07}
PY=$(realpath -s "$(command -v "${PYTHON:-python}")")  # a venv's python: its link kept
THREADS=2

HEAD_TREE=$(git rev-parse --show-toplevel)
BASE_TREE=$(mktemp -d /tmp/bockparse-base-XXXXXX)
OUT="$HEAD_TREE/benchmarks/results/quiet-$(date +%F)"
SCRATCH=$(mktemp -d /tmp/bockparse-quiet-XXXXXX)  # stanza_speed.py's run folders, one a call
mkdir -p "$OUT"
git -C "$HEAD_TREE" worktree add --detach "$BASE_TREE" "$BASE"
trap 'git -C "$HEAD_TREE" worktree remove --force "$BASE_TREE"' EXIT

export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS

# in TREE with its own code: the benchmark's command line (the output file added here, and
# stanza_speed.py's fresh --work folder)
bench() {
    local tree=$1 name=$2 round=$3 script=$4
    shift 4
    local label=head
    [[ $tree == "$BASE_TREE" ]] && label=base
    local extra=(--output "$OUT/$name.$label.r$round.md")
    [[ $script == stanza_speed.py ]] && extra+=(--work "$SCRATCH/$label.r$round")
    echo "== $(date +%T) $name, $label, round $round" >&2
    (cd "$tree" && PYTHONPATH="$tree/src" "$PY" "benchmarks/$script" "$@" "${extra[@]}")
}

# both trees, in the round's order
alternated() {
    local name=$1 round=$2
    shift 2
    local trees=("$BASE_TREE" "$HEAD_TREE")
    [[ $round == 2 ]] && trees=("$HEAD_TREE" "$BASE_TREE")
    for tree in "${trees[@]}"; do
        bench "$tree" "$name" "$round" "$@"
    done
}

# numba compiles each tree's decoders once (cached beside its modules): not in any timing
for tree in "$BASE_TREE" "$HEAD_TREE"; do
    (cd "$tree" && PYTHONPATH="$tree/src" "$PY" -c "import numpy as np
from bockparse.decoders import DECODERS, decode_batch
S = np.random.rand(2, 5, 5).astype(np.float32)
for name in DECODERS: decode_batch(S, [4, 3], name)")
done

for round in 1 2; do
    alternated utilisation "$round" utilisation.py --data "$GSD" --threads "$THREADS"
    # this checkout's only: it times the former code paths itself, in the same process (BASE's
    # copy predates them and its component breakdown no longer runs)
    bench "$HEAD_TREE" training_step "$round" training_step.py --ewt "$EWT"
    alternated prediction "$round" prediction.py "$MODEL" "$EWT/en_ewt-ud-dev.conllu" \
        --threads "$THREADS"
done
for round in 1 2; do  # the longest last
    alternated stanza_speed "$round" stanza_speed.py --data "$GSD" --threads "$THREADS" \
        --seeds 1111 2222
done
echo "reports in $OUT" >&2
