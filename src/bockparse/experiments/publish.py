"""``bockparse-publish``: copy the small files of finished runs into the repository.

A published table must regenerate from files in the repository, yet a run folder holds
checkpoints of hundreds of megabytes. This command copies, per run, what the tables and
analyses read and what an auditor needs, and nothing else:

* ``metrics.json`` (the scores, written last by ``bockparse-train``), ``timing.json`` (its wall
  time split), ``environment.json`` (versions, CPU, precision), ``train.log``,
  ``csv/metrics.csv`` (the per-evaluation curve);
* ``.hydra/config.yaml``, ``hydra.yaml`` and ``overrides.yaml`` (the composed config);
* ``predictions/{val,test}.conllu`` gzip-compressed as ``<stage>.conllu.gz`` (a fixed gzip
  header, so the same predictions give the same bytes); ``bockparse-reeval`` and the CoNLL-U
  reader take the ``.gz`` files as they are.

Never checkpoints. Each run keeps its path relative to the folder it was found under, so
``bockparse-publish multirun/table1-ud --out experiments/table1-ud/runs`` gives
``experiments/table1-ud/runs/table1-ud-ewt/local-ce-cle/seed1111/...``. Only finished runs (with
``metrics.json``) are copied; a failed one is named and skipped, so the published table
lists it as missing rather than failed. Files are written atomically.

A run folder is data from whoever sent it: only regular files are copied, each opened without
following a link (``O_NOFOLLOW``), and a run holding a symlink (or a FIFO, a device, ...) where
a copied file or its folder should be is refused in one line, with nothing of it written. The
copies get the permissions the umask gives a new file, never the source's. Nothing is written
through a link either: ``--out`` and every folder below it must be real folders, and ``--out``
may neither lie inside a folder given nor hold one.
"""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

from .. import rundir
from ..rundir import write_atomic

_FILES = (rundir.METRICS, rundir.TIMING, rundir.ENVIRONMENT, rundir.TRAIN_LOG, rundir.CSV,
          rundir.CONFIG, rundir.HYDRA, rundir.OVERRIDES)  # fmt: skip
SMALL = tuple(str(name) for name in _FILES)
PREDICTIONS = ("val", "test")
# The largest file publish copies (a treebank's predictions are a few MB, a run's log less): a
# bound against a device or a sparse file planted in a run folder.
MAX_COPIED_BYTES = 2**30


def _what(mode: int) -> str:
    return "a symlink" if stat.S_ISLNK(mode) else "not a regular file"


def read_regular(run_dir: Path, name: str | os.PathLike) -> bytes | None:
    """The bytes of ``run_dir / name``, or ``None`` when it is absent, read through
    :class:`bockparse.rundir.RunDir`: neither the file nor a folder between ``run_dir`` and it
    is followed if it is a link, and only a regular file is read.

    Raises:
        ValueError: the file, or a folder on the way to it, is a symlink or not a regular
            file (folder), naming it (:class:`bockparse.rundir.RunFileError`).
    """
    try:
        return rundir.read_file(rundir.RunDir(run_dir).file(name), MAX_COPIED_BYTES)
    except FileNotFoundError:
        return None


def real_folder(root: Path, relative: Path) -> Path:
    """``root / relative``, its missing folders made; ``root`` and every folder below it that
    leads there must be real folders (never written through a link). The folders above
    ``root`` are the user's own and may be links.

    Raises:
        ValueError: one of them is a symlink or not a folder, naming it.
    """
    if not root.is_symlink():
        root.mkdir(parents=True, exist_ok=True)
    path = root
    for part in ("", *relative.parts):
        path = path / part
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            path.mkdir()
            continue
        if not stat.S_ISDIR(mode):
            raise ValueError(f"{path} is {_what(mode)} where a destination folder belongs: "
                             "publish writes into real folders only")  # fmt: skip
    return path


def publish_run(
    run_dir: str | Path, dest: str | Path, root: str | Path | None = None
) -> list[Path]:
    """Copy one run's small files (:data:`SMALL`, compressed predictions) to ``dest``.

    Everything is read (regular files only: :func:`read_regular`) before anything is written,
    so a refused run leaves nothing behind. ``dest`` and the folders from ``root`` (``--out``;
    by default ``dest`` itself) down to it must be real folders (:func:`real_folder`).

    Returns:
        The files written, in :data:`SMALL` order, then the predictions.

    Raises:
        FileNotFoundError: ``run_dir`` has no ``metrics.json`` (not a finished run).
        ValueError: a file to copy, or a folder on the way to it or to ``dest``, is a symlink
            or not a regular file (folder).
    """
    run_dir, dest = Path(run_dir), Path(dest)
    root = dest if root is None else Path(root)
    copies: list[tuple[Path, bytes]] = []
    for name in SMALL:
        data = read_regular(run_dir, name)
        if name == rundir.METRICS and data is None:
            raise FileNotFoundError(f"{run_dir}: no {rundir.METRICS} (the run did not finish)")
        if data is not None:
            copies.append((Path(name), data))
    for stage in PREDICTIONS:
        source = rundir.predictions(run_dir, stage).relative_to(run_dir)
        data = read_regular(run_dir, source)
        if data is not None:
            packed = gzip.compress(data, compresslevel=9, mtime=0)
            copies.append((Path(rundir.PREDICTIONS) / f"{stage}.conllu.gz", packed))
    written = []
    for name, data in copies:
        target = real_folder(root, dest.relative_to(root) / name.parent) / name.name
        write_atomic(target, data)
        written.append(target)
    return written
