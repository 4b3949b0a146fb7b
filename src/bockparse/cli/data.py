"""``bockparse-check FILE...``: validate CoNLL-U files for parsing
(:func:`bockparse.data.conllu.check_conllu`). Light: no torch.

Prints each problem as ``FILE:LINE: reason`` on stdout, then one summary line per file; exits 0
when every file is valid, 1 otherwise (2 for bad usage). ``-`` reads standard input (once).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..data.conllu import DataError, check_conllu, is_standard_stream, source_name
from .command import Command


def check(argv: Sequence[str] | None = None) -> int:
    """Run the checker; returns the exit status."""
    command = Command(
        "bockparse-check",
        description="Check CoNLL-U files: columns, IDs, HEADs, trees (no cycle, one root), "
        "blank lines, UTF-8, unique sent_id.",
    )
    command.add_argument(
        "files", nargs="+", metavar="FILE", help="CoNLL-U files (- for standard input)"
    )
    command.add_argument(
        "--single-root",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="require exactly one word attached to ROOT per sentence (default: yes)",
    )
    args = command.parse_args(argv)
    if sum(map(is_standard_stream, args.files)) > 1:
        command.error("- (standard input) can be given once")
    status = 0
    for path in args.files:
        try:
            problems = check_conllu(path, single_root=args.single_root)
        except DataError as e:
            print(e)
            status = 1
            continue
        for problem in problems:
            print(problem)
        if problems:
            print(f"{source_name(path)}: {len(problems)} problem(s)")
            status = 1
        else:
            print(f"{source_name(path)}: OK")
    return status
