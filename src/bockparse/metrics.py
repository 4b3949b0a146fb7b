"""UAS, LAS and LCM with the Bock paper's conventions (§5 and its appendix on evaluation).

Scored words are the integer-ID words (ROOT excluded), punctuation included unless an exclusion
is asked for; LAS compares base relations (the part before ``:``), as the CoNLL 2018 evaluator
does; LCM counts a sentence when every scored word has the right head and base relation.
Counts are integers, summed across batches and DDP ranks; rates are computed from them.

Metric keys are ``{stage}/{name}``: ``val/uas``, ``val/las``, ``val/lcm``, ``test/...``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import torch
from torchmetrics import Metric

from .data.conllu import DataError, Sentence, read_conllu
from .data.vocab import base_relation

NAMES = ("uas", "las", "lcm")

# Punctuation exclusions of the paper's comparison with Zhang et al. (2019): gold XPOS for the
# PTB, gold XPOS ``PU`` for the CTB, and gold UPOS ``PUNCT`` for UD treebanks.
PUNCT_EXCLUSIONS: dict[str, tuple[str, frozenset[str]]] = {
    "ptb": ("xpos", frozenset({"``", "''", ":", ",", "."})),
    "ctb": ("xpos", frozenset({"PU"})),
    "upos": ("upos", frozenset({"PUNCT"})),
}

COUNTS = ("words", "heads", "labels", "sentences", "complete")


def metric_key(stage: str, name: str) -> str:
    """``"val", "las"`` -> ``"val/las"``: the one spelling of logged metric names."""
    return f"{stage}/{name}"


def scored_words(sentence: Sentence, exclude_punct: str | None) -> np.ndarray:
    """bool ``[n]``: the words that count (all, or all but the gold punctuation)."""
    if exclude_punct is None:
        return np.ones(len(sentence), dtype=bool)
    try:
        column, tags = PUNCT_EXCLUSIONS[exclude_punct]
    except KeyError:
        known = ", ".join(PUNCT_EXCLUSIONS)
        raise ValueError(
            f"unknown punctuation exclusion {exclude_punct!r}; known: {known}"
        ) from None
    return np.array([tag not in tags for tag in getattr(sentence, column)], dtype=bool)


def sentence_counts(
    gold: Sentence, heads: Sequence[int], rels: Sequence[str], scored: np.ndarray
) -> np.ndarray:
    """Integer counts ``(words, heads, labels, sentences, complete)`` of one sentence.

    Args:
        gold: the gold sentence.
        heads: predicted heads of words ``1..n`` (``n`` values in ``0..n``).
        rels: predicted relation labels of words ``1..n``.
        scored: bool ``[n]``, the words that count.

    Returns:
        int64 ``[5]``.
    """
    head_ok = np.asarray(heads) == np.asarray(gold.heads)
    label_ok = head_ok & np.array(
        [base_relation(p) == base_relation(g) for p, g in zip(rels, gold.rels, strict=True)]
    )
    return np.array(
        [
            scored.sum(),
            (head_ok & scored).sum(),
            (label_ok & scored).sum(),
            1,
            bool((label_ok | ~scored).all()),
        ],
        dtype=np.int64,
    )


def rates(counts: np.ndarray | torch.Tensor) -> dict[str, float]:
    """Percentages ``{"uas", "las", "lcm"}`` from summed counts (0 when nothing is scored)."""
    words, heads, labels, sentences, complete = (int(c) for c in counts)
    return {
        "uas": 100.0 * heads / words if words else 0.0,
        "las": 100.0 * labels / words if words else 0.0,
        "lcm": 100.0 * complete / sentences if sentences else 0.0,
    }


class AttachmentScores(Metric):
    """UAS/LAS/LCM as a torchmetrics ``Metric``: integer counters summed across DDP ranks."""

    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state(
            "counts", default=torch.zeros(len(COUNTS), dtype=torch.long), dist_reduce_fx="sum"
        )

    def update(self, counts: np.ndarray | torch.Tensor) -> None:
        """Add the ``sentence_counts`` of one or more sentences (int ``[5]``)."""
        self.counts += torch.as_tensor(counts, dtype=torch.long, device=self.counts.device)

    def compute(self) -> dict[str, float]:
        return rates(self.counts)


def evaluate_files(gold_path: str, pred_path: str, exclude_punct: str | None = None) -> dict:
    """UAS/LAS/LCM of a prediction file against its gold file.

    The files must hold the same sentences with the same words (the prediction file is the gold
    one with HEAD and DEPREL replaced, as bockparse writes them).

    Returns:
        ``{"uas", "las", "lcm"}`` in percent plus the integer counts.

    Raises:
        DataError: a file is malformed or the two do not align (naming the file and line).
    """
    gold = read_conllu(gold_path, single_root=False, on_malformed="error")
    pred = read_conllu(pred_path, single_root=False, on_malformed="error")
    if len(gold) != len(pred):
        raise DataError(f"{pred_path}: {len(pred)} sentences, but {gold_path} has {len(gold)}")
    total = np.zeros(len(COUNTS), dtype=np.int64)
    for g, p in zip(gold, pred, strict=True):
        if g.forms != p.forms:
            raise DataError(
                f"{pred_path}:{p.line}: the words differ from {gold_path}:{g.line} "
                f"({len(p)} words against {len(g)})"
            )
        total += sentence_counts(g, p.heads, p.rels, scored_words(g, exclude_punct))
    return {**rates(total), **dict(zip(COUNTS, total.tolist(), strict=True))}


def main(argv: Sequence[str] | None = None) -> int:
    """``bockparse-eval GOLD PRED [--exclude-punct ptb|ctb|upos]``."""
    parser = argparse.ArgumentParser(
        prog="bockparse-eval",
        description="UAS, LAS (base relations) and LCM of a CoNLL-U prediction file.",
    )
    parser.add_argument("gold")
    parser.add_argument("pred")
    parser.add_argument(
        "--exclude-punct",
        choices=sorted(PUNCT_EXCLUSIONS),
        default=None,
        help="leave out gold punctuation (ptb/ctb: XPOS tags; upos: PUNCT)",
    )
    args = parser.parse_args(argv)
    try:
        result = evaluate_files(args.gold, args.pred, args.exclude_punct)
    except DataError as err:
        print(f"bockparse-eval: {err}", file=sys.stderr)
        return 1
    print(f"UAS {result['uas']:.2f}  LAS {result['las']:.2f}  LCM {result['lcm']:.2f}")
    print(
        f"({result['heads']} / {result['labels']} of {result['words']} words, "
        f"{result['complete']} of {result['sentences']} sentences)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
