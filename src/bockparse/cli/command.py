"""What every console script shares (standard library only, so the light scripts can use it):
the program name, ``--version`` (``bockparse <version>``), and the one-line report of a
problem: ``PROGRAM: problem`` on standard error, then an exit status (1, or 2 where a script
reports bad usage so), never a traceback. The checks on ``--out`` are
:mod:`bockparse.cli.outputs`.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata


def version() -> str:
    """``bockparse <version>``: the installed distribution's version (``importlib.metadata``),
    or the source tree's ``bockparse.__version__`` when it runs uninstalled."""
    try:
        number = metadata.version("bockparse")
    except metadata.PackageNotFoundError:
        from .. import __version__ as number
    return f"bockparse {number}"


class Command(argparse.ArgumentParser):
    """The argument parser of a console script ``prog``: ``--version`` added, and
    :meth:`report`, :meth:`fail` and :meth:`interrupted` for the one-line reports."""

    def __init__(self, prog: str, description: str) -> None:
        super().__init__(prog=prog, description=description)
        self.add_argument("--version", action="version", version=version())

    def report(self, problem: Exception | str) -> None:
        """Print ``PROGRAM: problem`` on standard error: an exception's text, or its type when
        it has none; a multi-line problem (a ``DataError`` listing ``FILE:LINE: reason``
        lines) keeps its lines."""
        print(f"{self.prog}: {str(problem) or type(problem).__name__}", file=sys.stderr)

    def fail(self, problem: Exception | str, status: int = 1) -> int:
        """:meth:`report` the problem; return the exit status ``status``."""
        self.report(problem)
        return status

    def interrupted(self) -> int:
        """Ctrl-C: one line, exit status 130; the commands write outputs atomically, when
        complete, so nothing was written."""
        print(f"{self.prog}: interrupted; nothing written", file=sys.stderr)
        return 130
