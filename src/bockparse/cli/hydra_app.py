"""``bockparse-train``'s command line around the Hydra app (:func:`train`).

Hydra reports a command line it cannot compose (an unknown option of a config group such as
``encoder=nonexistent``, a malformed override, a key that does not exist) in several lines,
with its config search path; here it is one ``bockparse-train:`` line that names the option and
the available choices (:func:`one_line`), and the exit status is 1. Any other error keeps its
traceback, and ``HYDRA_FULL_ERROR=1`` shows Hydra's full trace of a composition error too.
"""

from __future__ import annotations

import os
import sys

from hydra.errors import (
    ConfigCompositionException,
    MissingConfigException,
    OverrideParseException,
    SearchPathException,
)

from .command import version

PROG = "bockparse-train"
# What Hydra raises for a command line it cannot compose (MissingConfigException, an unknown
# config or group option, is a ConfigCompositionException).
COMPOSITION_ERRORS = (ConfigCompositionException, OverrideParseException, SearchPathException)
FULL_ERROR = "HYDRA_FULL_ERROR"  # "1": Hydra raises instead of printing its report
_SEARCH_PATH = ("Config search path:", "Search path:")  # where Hydra's message lists its sources


def _printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n`` and the like), so that it stays on
    one line whatever a command-line argument holds."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def one_line(err: Exception) -> str:
    """Hydra's message for a command line it cannot compose, in one line: what is wrong, the
    available options of the group (for an unknown option), the first line of the underlying
    OmegaConf error (for a key that cannot be set); the config search path is left out."""
    if isinstance(err, OverrideParseException):
        reasons = [line.strip() for line in err.message.splitlines() if line.strip()
                   and not line.startswith(("Error parsing override", "See https://"))]  # fmt: skip
        return _printable(f"cannot parse the override {err.override!r}: {'; '.join(reasons)} "
                          "(https://hydra.cc/docs/advanced/override_grammar/basic/)")  # fmt: skip
    lines = []
    for line in str(err).splitlines():
        if line.startswith(_SEARCH_PATH):
            break
        if line.strip() and not line.startswith("\t"):  # the options: err.options below
            lines.append(line.strip())
    text = " ".join(lines)
    if isinstance(err, MissingConfigException) and err.options:
        group = (err.missing_cfg_file or "").rpartition("/")[0]
        text = text.replace(f" Available options in '{group}':", "")
        text += f"; available options in '{group}': {', '.join(err.options)}"
    if err.__cause__ is not None and str(err.__cause__).strip():
        text += f" ({str(err.__cause__).strip().splitlines()[0]})"
    return _printable(text)


def train() -> int:
    """Run ``bockparse-train``'s Hydra app (:func:`bockparse.training.train.main`) on the
    command line; ``--version`` prints bockparse's version (Hydra's own flag would print
    Hydra's).

    Returns:
        0 when the app returns; 1 (after one ``bockparse-train:`` line on standard error) when
        Hydra cannot compose the command line. The app's own failures exit through it.
    """
    if "--version" in sys.argv[1:]:
        print(version())
        return 0
    from ..training.train import main

    asked = os.environ.get(FULL_ERROR)
    os.environ[FULL_ERROR] = "1"  # Hydra raises the error instead of printing it
    try:
        main()
    except COMPOSITION_ERRORS as err:
        if asked == "1":
            raise
        print(f"{PROG}: {one_line(err)}", file=sys.stderr)
        return 1
    finally:
        if asked is None:
            os.environ.pop(FULL_ERROR, None)
        else:
            os.environ[FULL_ERROR] = asked
    return 0
