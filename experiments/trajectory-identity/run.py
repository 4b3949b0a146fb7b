"""Driver of the trajectory-identity study (issue 16): trains every run the README reports, with
the per-update trace on, in the deterministic CPU configuration (setting gsd-gpu: on a CUDA
GPU), copies each run's small artifacts (trace.csv, metrics.json, train.log, .hydra/config.yaml
and overrides.yaml; never checkpoints) to runs/<setting>/<run>/seed<seed>/ here, then
regenerates the tables and the plot (analyse.py). Runs whose artifacts are already here are
skipped (--force reruns them).

    export BOCKPARSE_DATA=/path/to/treebanks   # the folder holding ud-chinese-gsd/
    python experiments/trajectory-identity/run.py            # everything, in this order
    python experiments/trajectory-identity/run.py --only gsd --seeds 1111
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RUNS = HERE / "runs"
SCRATCH = REPO / "outputs" / "trajectory-identity"

# The deterministic CPU configuration, the trace on (shadow set per run below).
COMMON = [
    "trace.enabled=true",
    "trainer.deterministic=true",
    "torch_threads=1",
    "trainer.enable_progress_bar=false",
    "logger.wandb.enabled=false",
    "logger.csv=true",
]
# Settings: the experiment, and the budget cut to the 2-core machine (README, "Budget").
SETTINGS = {
    "gsd": ["experiment=ablation-ud-gsd", "optim.max_steps=40", "optim.eval_every=20"],
    "ewt-minilm": ["experiment=ewt-sample-cpu", "optim.max_steps=20", "optim.eval_every=10"],
    "gsd-long": ["experiment=ablation-ud-gsd", "optim.max_steps=200", "optim.eval_every=50"],
    # Issue 29 item 6 on a GPU (a lent one; fp32, so that only the kernels differ from "gsd").
    "gsd-gpu": [
        "experiment=ablation-ud-gsd",
        "optim.max_steps=40",
        "optim.eval_every=20",
        "trainer=gpu",
        "trainer.precision=32-true",
    ],
}
RANDOM_INIT = "model.biaffine_init_std=0.01"
NONDETERMINISTIC_KERNELS = "trainer.deterministic=false"
NONDETERMINISTIC = [NONDETERMINISTIC_KERNELS, "torch_threads=2"]
# Runs: name -> overrides. The shadow oracle of a hinge run is the other decoder of its pair.
RUNS_OF = {
    "local-ce": ["condition=local-ce"],
    "local-ce-bock": ["condition=local-ce-bock"],
    "hinge-cle": ["condition=hinge-cle", "trace.shadow=bock"],
    "hinge-cle-rerun": ["condition=hinge-cle", "trace.shadow=bock"],
    "hinge-bock": ["condition=hinge-bock", "trace.shadow=cle"],
    "hinge-cle-canonical": [
        "condition=hinge-cle",
        "loss.canonical_ties=true",
        "trace.shadow=bock",
    ],
    "hinge-bock-canonical": [
        "condition=hinge-bock",
        "loss.canonical_ties=true",
        "trace.shadow=cle",
    ],
    "hinge-cle-randinit": ["condition=hinge-cle", RANDOM_INIT, "trace.shadow=bock"],
    "hinge-bock-randinit": ["condition=hinge-bock", RANDOM_INIT, "trace.shadow=cle"],
    # Issue 29 item 6: local CE rerun as is, and twice without deterministic algorithms on two
    # threads (the setting the paper's divergent local-CE runs had, on a GPU).
    "local-ce-rerun": ["condition=local-ce"],
    "local-ce-nondet": ["condition=local-ce", *NONDETERMINISTIC],
    "local-ce-nondet-rerun": ["condition=local-ce", *NONDETERMINISTIC],
    # ... and deterministic algorithms on two threads: which of the two makes runs part
    "local-ce-2threads": ["condition=local-ce", "torch_threads=2"],
    "local-ce-2threads-rerun": ["condition=local-ce", "torch_threads=2"],
    # ... and, on a GPU, non-deterministic kernels alone (one CPU thread, as in every other run)
    "local-ce-nondet-1thread": ["condition=local-ce", NONDETERMINISTIC_KERNELS],
    "local-ce-nondet-1thread-rerun": ["condition=local-ce", NONDETERMINISTIC_KERNELS],
}
# The plan, in the order it runs (what matters most first): (setting, runs, seeds).
PLAN = [
    ("gsd", ["hinge-cle", "hinge-bock", "hinge-cle-rerun", "hinge-cle-canonical",
             "hinge-bock-canonical", "local-ce", "local-ce-bock", "hinge-cle-randinit",
             "hinge-bock-randinit"], [1111]),
    ("ewt-minilm", ["hinge-cle", "hinge-bock", "hinge-cle-rerun"], [1111]),
    ("gsd-long", ["hinge-bock"], [1111]),
    ("gsd", ["hinge-cle", "hinge-bock", "hinge-cle-canonical", "hinge-bock-canonical"],
     [2222, 3333]),
    ("ewt-minilm", ["hinge-cle-canonical", "hinge-bock-canonical"], [1111]),
    ("gsd", ["hinge-cle-randinit", "hinge-bock-randinit", "local-ce", "local-ce-bock"],
     [2222, 3333]),
    ("gsd", ["local-ce-rerun", "local-ce-nondet", "local-ce-nondet-rerun", "local-ce-2threads",
             "local-ce-2threads-rerun"], [1111]),
    ("ewt-minilm", ["local-ce", "local-ce-rerun", "local-ce-nondet", "local-ce-nondet-rerun"],
     [1111]),
    ("gsd-gpu", ["local-ce", "local-ce-rerun", "local-ce-nondet-1thread",
                 "local-ce-nondet-1thread-rerun", "hinge-cle", "hinge-bock"], [1111]),
]  # fmt: skip
KEEP = ["trace.csv", "metrics.json", "train.log", ".hydra/config.yaml", ".hydra/overrides.yaml"]


def complete(folder: Path) -> bool:
    return (folder / "metrics.json").exists() and (folder / "trace.csv").exists()


def train(setting: str, run: str, seed: int, force: bool) -> None:
    target = RUNS / setting / run / f"seed{seed}"
    if complete(target) and not force:
        print(f"= {setting}/{run}/seed{seed}: done", flush=True)
        return
    scratch = SCRATCH / setting / run / f"seed{seed}"
    shutil.rmtree(scratch, ignore_errors=True)
    own = {o.split("=", 1)[0] for o in RUNS_OF[run]}  # a run's own setting replaces COMMON's
    common = [o for o in COMMON if o.split("=", 1)[0] not in own]
    overrides = [*SETTINGS[setting], *RUNS_OF[run], *common, f"seed={seed}", f"name={run}",
                 f"experiment_name=trajectory-identity-{setting}",
                 f"hydra.run.dir={scratch}"]  # fmt: skip
    print(f"> {setting}/{run}/seed{seed}: {' '.join(overrides)}", flush=True)
    threads = next(o.split("=")[1] for o in [*RUNS_OF[run], *COMMON] if o.startswith("torch_th"))
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    subprocess.run([sys.executable, "-m", "bockparse.training.train", *overrides], cwd=REPO,
                   env=env, check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    shutil.rmtree(target, ignore_errors=True)
    for name in KEEP:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        text = (scratch / name).read_text(encoding="utf-8")
        # Paths in train.log relative to the repository: no machine path in committed files.
        (target / name).write_text(text.replace(f"{REPO}/", ""), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SETTINGS), help="one setting of the plan")
    parser.add_argument("--seeds", type=int, nargs="+", help="these seeds of the plan only")
    parser.add_argument("--force", action="store_true", help="rerun runs already here")
    args = parser.parse_args()
    if "BOCKPARSE_DATA" not in os.environ:
        sys.exit("set BOCKPARSE_DATA to the folder holding ud-chinese-gsd/")
    for setting, runs, seeds in PLAN:
        if args.only and setting != args.only:
            continue
        for seed in seeds:
            if args.seeds and seed not in args.seeds:
                continue
            for run in runs:
                train(setting, run, seed, args.force)
    subprocess.run([sys.executable, str(HERE / "analyse.py")], check=True)


if __name__ == "__main__":
    main()
