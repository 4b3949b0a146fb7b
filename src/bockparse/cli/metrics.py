"""``bockparse-eval``: the scores of a CoNLL-U prediction file against its gold file
(:func:`bockparse.metrics.evaluate_files`); and the ``--exclude-punct`` option that every
evaluation command shares. Light: no torch.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..data.conllu import DataError
from ..metrics import PUNCT_EXCLUSIONS, evaluate_files, format_scores
from .command import Command


def add_punct_argument(command: argparse.ArgumentParser) -> None:
    """The ``--exclude-punct`` option of the evaluation commands (:data:`PUNCT_EXCLUSIONS`)."""
    command.add_argument(
        "--exclude-punct",
        choices=sorted(PUNCT_EXCLUSIONS),
        default=None,
        help="leave out gold punctuation (ptb/ctb: XPOS tags; upos: PUNCT)",
    )


def eval_files(argv: Sequence[str] | None = None) -> int:
    """``bockparse-eval GOLD PRED [--exclude-punct ptb|ctb|upos]``."""
    command = Command(
        "bockparse-eval",
        description="UAS, LAS (base relations), LCM and the tag accuracies UPOS, XPOS, UFeats "
        "(universal features) and AllTags of a CoNLL-U prediction file, as the CoNLL 2018 "
        "evaluator computes them for gold tokenisation.",
    )
    command.add_argument("gold", help="gold CoNLL-U file (- for standard input)")
    command.add_argument("pred", help="predicted CoNLL-U file (- for standard input)")
    add_punct_argument(command)
    args = command.parse_args(argv)
    try:
        result = evaluate_files(args.gold, args.pred, args.exclude_punct)
    except DataError as err:
        return command.fail(err)
    print(format_scores(result))
    return 0
