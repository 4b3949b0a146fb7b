"""``bockparse-trace-bock [FILE]``: reformulated Bock phase by phase on a cost matrix
(:func:`bockparse.decoders.trace.trace_bock`; without a file, the paper's worked example).
Light: no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..decoders import trace
from .command import Command


def trace_bock(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 when a tree was found, 1 when none exists, 2 for a bad matrix."""
    command = Command("bockparse-trace-bock", description=trace.__doc__.split("\n")[0])
    command.add_argument(
        "file", nargs="?", type=Path, help="cost matrix file (default: the paper's example)"
    )
    args = command.parse_args(argv)
    try:
        heads = trace.trace_file(args.file)
    except ValueError as err:
        return command.fail(err, 2)
    return 0 if heads is not None else 1
