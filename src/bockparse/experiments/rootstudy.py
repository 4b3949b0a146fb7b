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

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..decoders import decode, get_decoder, kbest
from ..rundir import write_atomic
from .loading import LoadedRun, scored_sentences

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


def run_matrices(run: LoadedRun, stage: str, max_sentences: int | None = None) -> list[np.ndarray]:
    """The arc score matrices of a run's split (:func:`scored_sentences`) in file order, so
    that the first ``max_sentences`` (all when ``None``) are the same on every call."""
    matrices = [(sentence.index, sentence.arc) for sentence in scored_sentences(run, stage)]
    matrices.sort(key=lambda item: item[0])
    if max_sentences is not None:
        matrices = matrices[:max_sentences]
    return [m for _, m in matrices]


def write_study(rows: Sequence[dict[str, Any]], text: str, out: str | Path, title: str) -> None:
    """Write the printed report ``text`` as ``rootstudy.md``, the ``rows`` of
    :func:`study_matrices` as ``rootstudy.json`` and ``.csv``, and their plot titled ``title``
    as ``rootstudy.png`` into the folder ``out`` (made if missing); the tables atomically."""
    from .plots import plot_root_violations

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "rootstudy.md", text)
    write_atomic(out / "rootstudy.json", json.dumps(rows, indent=2) + "\n")
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(out / "rootstudy.csv", table.getvalue())
    plot_root_violations(rows, out / "rootstudy.png", title=title)
