"""``bockparse-check FILE...``: validate CoNLL-U files for parsing.

Prints each problem as ``FILE:LINE: reason`` on stdout, then one summary line per file; exits 0
when every file is valid, 1 otherwise (2 for bad usage).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .conllu import DataError, check_conllu


def main(argv: Sequence[str] | None = None) -> int:
    """Run the checker; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="bockparse-check",
        description="Check CoNLL-U files: columns, IDs, HEADs, trees (no cycle, one root), "
        "blank lines, UTF-8, unique sent_id.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="CoNLL-U files")
    parser.add_argument(
        "--single-root",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="require exactly one word attached to ROOT per sentence (default: yes)",
    )
    args = parser.parse_args(argv)
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
            print(f"{path}: {len(problems)} problem(s)")
            status = 1
        else:
            print(f"{path}: OK")
    return status
