"""What every console script shares (standard library only, so the light scripts can use it):
the program name, ``--version`` (``bockparse <version>``), and the one-line report of a
problem: ``PROGRAM: problem`` on standard error, then an exit status (1, or 2 where a script
reports bad usage so), never a traceback. The checks on ``--out`` are
:mod:`bockparse.cli.outputs`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from importlib import metadata


def version() -> str:
    """``bockparse <version>``: the installed distribution's version (``importlib.metadata``),
    or the source tree's ``bockparse.__version__`` when it runs uninstalled."""
    try:
        number = metadata.version("bockparse")
    except metadata.PackageNotFoundError:
        from .. import __version__ as number
    return f"bockparse {number}"


def whole_number(least: int, most: int | None = None, unit: str = "") -> Callable[[str], int]:
    """An argument type: a whole number from ``least`` to ``most`` (no upper bound when
    ``None``), else argparse's one-line usage error (exit status 2) before any work;
    ``unit`` names what is counted in the message."""
    what = f" {unit}" if unit else ""

    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number{what}: {text!r}") from None
        if number < least or (most is not None and number > most):
            bound = f"{least:,} to {most:,}" if most is not None else f"at least {least:,}"
            raise argparse.ArgumentTypeError(f"{number:,}{what}: give {bound}")
        return number

    return parse


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
