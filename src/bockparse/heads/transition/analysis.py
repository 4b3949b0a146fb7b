"""Attachment scores split by gold projectivity: where transition parsers must lose.

A transition parser only builds projective trees, so on a sentence whose gold tree is
non-projective at least one head is wrong. :func:`scores_by_projectivity` scores a prediction
file on all sentences, on the projective ones and on the non-projective ones, with the metric
conventions of :mod:`bockparse.metrics` (UAS, LAS on base relations, LCM; punctuation included
unless excluded). The command line prints one Markdown row per prediction file::

    python -m bockparse.heads.transition.analysis GOLD PRED [PRED ...] [--exclude-punct upos]

:func:`projective_ceiling` bounds what any projective parser can reach: per sentence the
projective tree with the most correct heads (Eisner's algorithm over a gold-arc indicator,
single root), the UAS a perfect transition parser would get::

    python -m bockparse.heads.transition.analysis GOLD --ceiling
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from ...data.conllu import DataError, read_conllu
from ...decoders import decode
from ...decoders.eisner import is_projective
from ...metrics import COUNTS, PUNCT_EXCLUSIONS, rates, sentence_counts

SUBSETS = ("all", "projective", "non-projective")


def scores_by_projectivity(
    gold_path: str, pred_path: str, exclude_punct: str | None = None
) -> dict[str, dict]:
    """UAS/LAS/LCM of a prediction file on all, projective and non-projective gold sentences.

    Args:
        gold_path: the gold CoNLL-U file.
        pred_path: the same sentences and words with predicted HEAD and DEPREL.
        exclude_punct: a punctuation exclusion of :mod:`bockparse.metrics`, or ``None``.

    Returns:
        ``{subset: {"uas", "las", "lcm", <integer counts>}}`` for each of ``SUBSETS``.

    Raises:
        DataError: a file is malformed or the two do not align.
    """
    gold = read_conllu(gold_path, single_root=False, on_malformed="error", skip_option=None)
    pred = read_conllu(pred_path, single_root=False, on_malformed="error", skip_option=None)
    if len(gold) != len(pred):
        raise DataError(f"{pred_path}: {len(pred)} sentences, but {gold_path} has {len(gold)}")
    # per subset: gold sentences, predicted heads, predicted labels
    subsets: dict[str, tuple[list, list, list]] = {name: ([], [], []) for name in SUBSETS}
    for g, p in zip(gold, pred, strict=True):
        if g.forms != p.forms:
            raise DataError(f"{pred_path}:{p.line}: the words differ from {gold_path}:{g.line}")
        projective = is_projective(np.asarray([-1, *g.heads], dtype=np.int64))
        for name in ("all", "projective" if projective else "non-projective"):
            for column, value in zip(subsets[name], (g, p.heads, p.rels), strict=True):
                column.append(value)
    totals = {name: sentence_counts(*lists, exclude_punct) for name, lists in subsets.items()}
    return {
        name: {**rates(total), **dict(zip(COUNTS, total.tolist(), strict=True))}
        for name, total in totals.items()
    }


def projective_ceiling(gold_path: str) -> dict[str, dict]:
    """The best UAS reachable with projective single-root trees, per subset of ``SUBSETS``.

    Time: one O(n^3) Eisner decode per non-projective sentence.

    Returns:
        ``{subset: {"uas", "heads", "words", "sentences"}}`` (punctuation included).
    """
    totals = {name: np.zeros(3, dtype=np.int64) for name in SUBSETS}  # heads, words, sentences
    for s in read_conllu(gold_path, single_root=True, on_malformed="error", skip_option=None):
        n = len(s)
        gold = np.asarray([-1, *s.heads], dtype=np.int64)
        if is_projective(gold):
            best, subset = n, "projective"
        else:
            hits = np.zeros((n + 1, n + 1))
            hits[gold[1:], np.arange(1, n + 1)] = 1.0  # [N, N]: 1 on the gold arcs
            best = int((decode(hits, "eisner", single_root=True)[1:] == gold[1:]).sum())
            subset = "non-projective"
        for name in ("all", subset):
            totals[name] += (best, n, 1)
    return {
        name: {
            "uas": 100.0 * int(h) / int(w) if w else 0.0,
            "heads": int(h),
            "words": int(w),
            "sentences": int(k),
        }
        for name, (h, w, k) in totals.items()
    }


def markdown_rows(gold_path: str, pred_paths: Sequence[str], exclude_punct: str | None) -> str:
    """A Markdown table: per prediction file, UAS/LAS/LCM overall and on non-projective trees."""
    lines = [
        "| predictions | UAS | LAS | LCM | non-proj. UAS | non-proj. LAS | non-proj. LCM |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for path in pred_paths:
        s = scores_by_projectivity(gold_path, path, exclude_punct)
        cells = [f"{s[k][m]:.2f}" for k in ("all", "non-projective") for m in ("uas", "las", "lcm")]
        lines.append(f"| {path} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bockparse.heads.transition.analysis",
        description="UAS, LAS and LCM overall and on the sentences whose gold tree is "
        "non-projective.",
    )
    parser.add_argument("gold")
    parser.add_argument("pred", nargs="*")
    parser.add_argument("--exclude-punct", choices=sorted(PUNCT_EXCLUSIONS), default=None)
    parser.add_argument(
        "--ceiling", action="store_true", help="also print the projective UAS ceiling of GOLD"
    )
    args = parser.parse_args(argv)
    if not args.pred and not args.ceiling:
        parser.error("give prediction files, --ceiling, or both")
    try:
        if args.ceiling:
            c = projective_ceiling(args.gold)
            print(
                f"projective ceiling: UAS {c['all']['uas']:.2f} overall, "
                f"{c['non-projective']['uas']:.2f} on the {c['non-projective']['sentences']} "
                f"non-projective sentences ({c['non-projective']['heads']} of "
                f"{c['non-projective']['words']} heads)"
            )
        if args.pred:
            print(markdown_rows(args.gold, args.pred, args.exclude_punct))
    except DataError as err:
        print(f"bockparse.heads.transition.analysis: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
