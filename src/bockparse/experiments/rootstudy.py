"""``bockparse-rootstudy``: how often decoding without the root constraint breaks it.

Zmigrod, Vieira & Cotterell (2021), Fig. 1: on a trained parser's development scores, the
percentage of trees with more than one word attached to ROOT, for the unconstrained 1-best tree
and the unconstrained K-best lists (K = 5, 10, 20, 50), against root-constrained decoding (the
run's single-root decoder and ``kbest(..., single_root=True)``), which violates it in 0 % of
trees by construction; the constrained counts are computed, not assumed. A K-best list of a
short sentence can hold fewer than K trees (a sentence of n words has (n + 1)^(n - 1) spanning
trees); percentages are over the trees returned. The K-best lists are prefixes of one
``max(K)``-best list per sentence.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..cli.outputs import out_folder_problem
from ..decoders import decode, get_decoder, kbest
from .loading import load_run, scored_sentences

KS = (5, 10, 20, 50)


def root_children(heads: np.ndarray) -> int:
    """Words attached to ROOT (``heads[1:] == 0``)."""
    return int(np.count_nonzero(np.asarray(heads)[1:] == 0))


class _Tally:
    """Trees, violating trees and sentences with at least one violating tree."""

    def __init__(self) -> None:
        self.trees = self.violating = self.sentences = self.sentences_violating = 0

    def add(self, trees: Sequence[np.ndarray]) -> None:
        bad = sum(root_children(h) > 1 for h in trees)
        self.trees += len(trees)
        self.violating += bad
        self.sentences += 1
        self.sentences_violating += bad > 0

    def pct(self) -> float:
        return 100.0 * self.violating / self.trees if self.trees else 0.0

    def sentence_pct(self) -> float:
        return 100.0 * self.sentences_violating / self.sentences if self.sentences else 0.0


def study_matrices(
    matrices: Sequence[np.ndarray] | Any, ks: Sequence[int] = KS, decoder: str = "cle"
) -> list[dict[str, Any]]:
    """Root-constraint violations on fixed score matrices.

    Args:
        matrices: float ``[N, N]`` score matrices ``scores[h, d]`` (an iterable).
        ks: list sizes, each ``>= 1``.
        decoder: the exact decoder for the 1-best rows (unconstrained and single root).

    Returns:
        One row per decoding (``"1-best"``, ``"5-best"``, ...): ``trees``, ``violating``,
        ``unconstrained_pct``, ``sentences_violating_pct`` and the same for the constrained
        decoding (``constrained_trees``, ``constrained_violating``, ``constrained_pct``).
    """
    get_decoder(decoder)
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError(f"K must be >= 1, got {ks}")
    top = ks[-1]
    free = {k: _Tally() for k in [1, *ks]}
    fixed = {k: _Tally() for k in [1, *ks]}
    for S in matrices:
        free[1].add([decode(S, decoder, single_root=False)])
        fixed[1].add([decode(S, decoder, single_root=True)])
        free_list = [h for _, h in kbest(S, top, single_root=False)]
        fixed_list = [h for _, h in kbest(S, top, single_root=True)]
        for k in ks:
            free[k].add(free_list[:k])
            fixed[k].add(fixed_list[:k])
    rows = []
    for k in [1, *ks]:
        rows.append(
            {
                "decoding": f"{k}-best",
                "k": k,
                "sentences": free[k].sentences,
                "trees": free[k].trees,
                "violating": free[k].violating,
                "unconstrained_pct": free[k].pct(),
                "sentences_violating_pct": free[k].sentence_pct(),
                "constrained_trees": fixed[k].trees,
                "constrained_violating": fixed[k].violating,
                "constrained_pct": fixed[k].pct(),
            }
        )
    return rows


def to_markdown(rows: Sequence[dict[str, Any]], title: str) -> str:
    lines = [
        title,
        "",
        "| decoding | sentences | trees | violating | violating % | sentences with a violation % "
        "| root-constrained trees | violating | violating % |",
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['decoding']} | {r['sentences']} | {r['trees']} | {r['violating']} | "
            f"{r['unconstrained_pct']:.2f} | {r['sentences_violating_pct']:.2f} | "
            f"{r['constrained_trees']} | {r['constrained_violating']} | "
            f"{r['constrained_pct']:.2f} |"
        )
    one = rows[0]["unconstrained_pct"]
    if one > 0:
        ratios = ", ".join(f"{r['decoding']} {r['unconstrained_pct'] / one:.1f}×" for r in rows[1:])
        lines += ["", f"Violation rate relative to the unconstrained 1-best: {ratios}."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``bockparse-rootstudy RUN_DIR [--stage val] [--k 5 10 20 50] [--out DIR]``."""
    parser = argparse.ArgumentParser(
        prog="bockparse-rootstudy",
        description="Percentage of 1-best and K-best trees violating the single-root "
        "constraint without it, against root-constrained decoding (Zmigrod et al. 2021, "
        "Fig. 1), on a trained model's fixed scores.",
    )
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument("--stage", choices=("val", "test"), default="val")
    parser.add_argument("--k", nargs="+", type=int, default=list(KS))
    parser.add_argument("--decoder", default=None, help="1-best decoder (default: the run's)")
    parser.add_argument("--max-sentences", type=int, default=None, help="the first N only")
    parser.add_argument(
        "--out", metavar="DIR", default=None, help="write rootstudy.md/.csv/.json/.png here"
    )
    args = parser.parse_args(argv)
    if problem := out_folder_problem(args.out, [args.run]):
        print(f"bockparse-rootstudy: {problem}", file=sys.stderr)
        return 1
    try:
        run = load_run(args.run)
    except (FileNotFoundError, ValueError) as err:
        print(f"bockparse-rootstudy: {err}", file=sys.stderr)
        return 1
    decoder = args.decoder or str(run.cfg.decoder)
    matrices = []
    for sentence in scored_sentences(run, args.stage):
        matrices.append((sentence.index, sentence.arc))
    matrices.sort(key=lambda item: item[0])  # file order, so --max-sentences is reproducible
    if args.max_sentences is not None:
        matrices = matrices[: args.max_sentences]
    try:
        rows = study_matrices([m for _, m in matrices], args.k, decoder)
    except ValueError as err:
        print(f"bockparse-rootstudy: {err}", file=sys.stderr)
        return 1
    title = (
        f"Root-constraint violations on {args.run} ({run.cfg.name}, seed "
        f"{run.cfg.seed}), {args.stage} scores, {len(matrices)} sentences; 1-best by "
        f"{decoder}, K-best by bockparse.decoders.kbest."
    )
    text = to_markdown(rows, title)
    print(text, end="", flush=True)
    if args.out:
        from .plots import plot_root_violations

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "rootstudy.md").write_text(text, encoding="utf-8")
        (out / "rootstudy.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        with open(out / "rootstudy.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        plot_root_violations(rows, out / "rootstudy.png", title=f"{args.run}: {args.stage}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
