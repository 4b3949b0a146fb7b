"""Attachment scores split by gold projectivity: where transition parsers must lose.

A transition parser only builds projective trees, so on a sentence whose gold tree is
non-projective at least one head is wrong. :func:`scores_by_projectivity` scores a prediction
file on all sentences, on the projective ones and on the non-projective ones, with the metric
conventions of :mod:`bockparse.metrics` (UAS, LAS on base relations, LCM; punctuation included
unless excluded). The command line prints one Markdown row per prediction file::

    python -m bockparse.transition.analysis GOLD PRED [PRED ...] [--exclude-punct upos]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from ..data.conllu import DataError, read_conllu
from ..decoders.eisner import is_projective
from ..metrics import COUNTS, PUNCT_EXCLUSIONS, rates, scored_words, sentence_counts

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
    gold = read_conllu(gold_path, single_root=False, on_malformed="error")
    pred = read_conllu(pred_path, single_root=False, on_malformed="error")
    if len(gold) != len(pred):
        raise DataError(f"{pred_path}: {len(pred)} sentences, but {gold_path} has {len(gold)}")
    totals = {name: np.zeros(len(COUNTS), dtype=np.int64) for name in SUBSETS}
    for g, p in zip(gold, pred, strict=True):
        if g.forms != p.forms:
            raise DataError(f"{pred_path}:{p.line}: the words differ from {gold_path}:{g.line}")
        counts = sentence_counts(g, p.heads, p.rels, scored_words(g, exclude_punct))
        projective = is_projective(np.asarray([-1, *g.heads], dtype=np.int64))
        totals["all"] += counts
        totals["projective" if projective else "non-projective"] += counts
    return {
        name: {**rates(total), **dict(zip(COUNTS, total.tolist(), strict=True))}
        for name, total in totals.items()
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
        prog="python -m bockparse.transition.analysis",
        description="UAS, LAS and LCM overall and on the sentences whose gold tree is "
        "non-projective.",
    )
    parser.add_argument("gold")
    parser.add_argument("pred", nargs="+")
    parser.add_argument("--exclude-punct", choices=sorted(PUNCT_EXCLUSIONS), default=None)
    args = parser.parse_args(argv)
    try:
        print(markdown_rows(args.gold, args.pred, args.exclude_punct))
    except DataError as err:
        print(f"bockparse.transition.analysis: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
