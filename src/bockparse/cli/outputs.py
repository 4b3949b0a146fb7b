"""Where a command may write: the checks every console script makes on its ``--out`` before any
work (standard library and :mod:`bockparse.rundir` only, so the light scripts can use them).

An output is refused in one line when it is one of the inputs, when it lies inside a run folder
that an input is read from (``bockparse-export RUN --out RUN/checkpoints/best.ckpt`` would
destroy the run it reads), when it is something other than a regular file (a folder, a FIFO, a
device such as ``/dev/stdout``: the atomic writer replaces only regular files; ``--out -``
writes standard output where a command allows it), or when its folder is missing or not
writable.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .. import rundir
from ..data.conllu import is_standard_stream


def run_folders(paths: Iterable[str | os.PathLike]) -> list[tuple[str, Path]]:
    """The run folders that ``paths`` are read from, each with the path given: a run folder
    itself, or the run folder of a checkpoint in its ``checkpoints/`` (a model file, a CoNLL-U
    file or ``-`` belong to none)."""
    found = []
    for given in paths:
        path = Path(given)
        if is_standard_stream(given):
            continue
        folder = rundir.run_dir_of(path)
        if folder is not None:
            found.append((os.fspath(given), folder))
    return found


def inside_problem(
    out: str | os.PathLike, folders: Iterable[tuple[str, str | os.PathLike]], what: str
) -> str | None:
    """Why ``out`` cannot be written: it is (or lies inside) one of ``folders``, each given as
    ``(the input named by the user, the folder)`` and called ``what`` in the message; ``None``
    when it lies outside them all. Links are resolved, so no spelling of a path escapes."""
    target = Path(out).resolve()
    for given, folder in folders:
        if target.is_relative_to(Path(folder).resolve()):
            where = "" if os.fspath(given) == os.fspath(folder) else f" (of {given})"
            return f"--out {out} is inside {what} {folder}{where}, which is read: write outside it"
    return None


def out_folder_problem(
    out: str | os.PathLike | None, runs: Iterable[str | os.PathLike]
) -> str | None:
    """Why a command's ``--out DIR`` (``None``: not given) cannot be written: it is inside one
    of the run folders ``runs`` that the command reads (:func:`inside_problem`)."""
    if out is None:
        return None
    return inside_problem(out, [(os.fspath(run), run) for run in runs], "the run folder")


def output_problem(out: str | os.PathLike, *inputs: str | os.PathLike) -> str | None:
    """Why the file ``out`` cannot be written (module doc), or ``None``; checked before any
    work. ``-`` (standard output) is always writable."""
    if is_standard_stream(out):
        return None
    target = Path(out)
    for given in inputs:
        if is_standard_stream(given):
            continue
        if Path(given).exists() and target.exists() and os.path.samefile(given, target):
            return f"--out {out} is the input {given}: give another file"
    if problem := inside_problem(out, run_folders(inputs), "the run folder"):
        return problem
    if target.is_dir():
        return f"--out {out} is a folder: give a file name"
    try:
        rundir.check_replaceable(target)
    except OSError as err:
        return rundir.describe_os_error(err, out)
    folder = target.parent
    if not folder.is_dir():
        return f"cannot write {out}: no folder {folder}"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".probe")
    except OSError as err:
        return rundir.describe_os_error(err, out)
    os.close(fd)
    os.unlink(probe)
    return None
