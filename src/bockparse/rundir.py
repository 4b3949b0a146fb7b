"""The run folder: its layout, its one atomic writer, and its training lock.

A ``bockparse-train`` run folder (Hydra's ``hydra.run.dir``) holds::

    .hydra/config.yaml   the composed config (Hydra writes it)      CONFIG
    train.log            the run's log (Hydra's job logging)        TRAIN_LOG
    environment.json     versions, CPU/GPU, the precision chosen    ENVIRONMENT
    checkpoints/         best.ckpt (weights), last.ckpt (full state), best-of-last.ckpt
    predictions/         val.conllu, test.conllu
    csv/metrics.csv      the logged curve
    timing.json          wall time by part                          TIMING
    metrics.json         the scores, written last: the run is done  METRICS
    train.lock           while a training process owns the folder   LOCK

A folder is a run folder by this layout alone (:func:`is_run_dir`, :func:`run_dir_of`): never by
searching the folders above a file, so a file planted above a downloaded run is never read.

Every file a run writes goes through :func:`write_atomic` / :func:`atomic_path`: a temporary
file created with ``O_EXCL`` beside the target (never a fixed ``*.tmp`` name that a planted
symlink could redirect), given the permissions the umask allows, then renamed over the target,
which replaces a symlink there rather than following it. Standard library only (the light
install uses it for CoNLL-U output).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CONFIG = Path(".hydra") / "config.yaml"
HYDRA = Path(".hydra") / "hydra.yaml"
OVERRIDES = Path(".hydra") / "overrides.yaml"
TRAIN_LOG = "train.log"
ENVIRONMENT = "environment.json"
TIMING = "timing.json"
METRICS = "metrics.json"
CSV = Path("csv") / "metrics.csv"
CHECKPOINTS = "checkpoints"
BEST = Path(CHECKPOINTS) / "best.ckpt"
LAST = Path(CHECKPOINTS) / "last.ckpt"
BEST_OF_LAST = Path(CHECKPOINTS) / "best-of-last.ckpt"  # the best.ckpt that last.ckpt knows of
PREDICTIONS = "predictions"
LOCK = "train.lock"
# train.log's record of a resume: "resuming from <last.ckpt> at update K", then, when the run
# continues exactly as an uninterrupted one would, a line starting "resumed bit for bit".
RESUMING = "resuming from"
RESUMED_EXACTLY = "resumed bit for bit"


def predictions(run_dir: str | os.PathLike, stage: str) -> Path:
    """``<run_dir>/predictions/<stage>.conllu`` (``stage``: ``val`` or ``test``)."""
    return Path(run_dir) / PREDICTIONS / f"{stage}.conllu"


def is_run_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a run folder: a directory with its composed config."""
    return (Path(path) / CONFIG).is_file()


def run_dir_of(checkpoint: str | os.PathLike) -> Path:
    """The run folder of a checkpoint at ``<run>/checkpoints/<name>.ckpt``.

    Raises:
        FileNotFoundError: the checkpoint does not sit in a run folder's ``checkpoints/``
            (the message says what to give instead).
    """
    path = Path(checkpoint)
    run_dir = path.parent.parent
    if path.parent.name != CHECKPOINTS or not is_run_dir(run_dir):
        raise FileNotFoundError(
            f"{path}: not in a run folder's {CHECKPOINTS}/ (no {run_dir / CONFIG}); give the "
            "run folder, or a model file from bockparse-export"
        )
    return run_dir


# Names of runs written before a run's name was a function of its loss and decoder alone
# (issue 28): the Table 1 presets local-ce and crf named theirs after themselves.
LEGACY_NAMES = {("local-ce", "cle"): "local-ce-cle", ("crf", "cle"): "crf-cle"}


def current_name(name: str | None, decoder: str | None) -> str | None:
    """A run's name as it is spelled now: ``<loss>-<decoder>`` for a run of the old presets
    (:data:`LEGACY_NAMES`), else ``name``."""
    return LEGACY_NAMES.get((name, decoder), name)


def current_keys(cfg: Any) -> Any:
    """A run's saved config (an OmegaConf ``DictConfig``) in the current key layout.

    Run folders written before the config groups mirrored the code keep the run's name, decoder
    and loss (and a transition parser's system) under ``condition``; they move to ``name``,
    ``decoder``, ``loss`` and ``model.system`` (a copy; the hinge's ``decoder: ${..decoder}``
    still names the run's decoder). A run's old name becomes its current one
    (:func:`current_name`). A config in the current layout is returned as is. The one place
    that knows the old layouts (a model's old layout: :func:`bockparse.modelfile.nested_params`).
    """
    from omegaconf import OmegaConf, open_dict

    if "condition" in cfg and "loss" not in cfg:
        old = cfg.condition
        cfg = cfg.copy()
        with open_dict(cfg):
            cfg.name = old.get("name")
            cfg.decoder = old.get("decoder")
            cfg.loss = old.get("loss")
            if "system" in old and "model" in cfg:
                cfg.model.system = old.system
            del cfg["condition"]
    name = OmegaConf.select(cfg, "name", default=None, throw_on_resolution_failure=False)
    decoder = OmegaConf.select(cfg, "decoder", default=None, throw_on_resolution_failure=False)
    if current_name(name, decoder) != name:
        cfg = cfg.copy()
        with open_dict(cfg):
            cfg.name = current_name(name, decoder)
    return cfg


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _through_proc(link: str) -> bool:
    """Whether the symlink ``link`` leads through ``/proc`` (Linux's ``/dev/stdout`` is a link
    to ``/proc/self/fd/1``, a link to whatever the process's standard output is, a regular
    file included): renaming over such a link would replace ``/dev/stdout`` itself."""
    hop = os.path.abspath(link)
    for _ in range(40):  # the kernel's bound on nested links
        if os.path.realpath(os.path.dirname(hop)).startswith("/proc/"):
            return True
        try:
            hop = os.path.join(os.path.dirname(hop), os.readlink(hop))
        except OSError:  # not a link: the end of the chain
            return False
    return False


def check_replaceable(path: str | os.PathLike) -> None:
    """Check that ``path`` is a regular file, a symlink to one (or to nothing), or absent:
    what :func:`atomic_path` may replace.

    Raises:
        OSError: naming ``path`` and what it is (a folder, a FIFO, a device such as
            ``/dev/null``, a socket, a link to one, or a link to a process's open file such as
            ``/dev/stdout``, whatever that file is).
    """
    target = Path(path)
    try:
        mode = target.lstat().st_mode
    except FileNotFoundError:
        return
    link = stat.S_ISLNK(mode)
    if link:
        try:
            mode = target.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):  # a dangling link: replaced
            return
        except OSError as err:  # a loop or an unreadable folder on the way
            raise OSError(err.errno, f"a symlink that cannot be resolved ({err.strerror})",
                          str(target)) from None  # fmt: skip
    if link and _through_proc(os.fspath(target)):
        what = "a symlink to a process's open file (as /dev/stdout is)"
    elif stat.S_ISREG(mode):
        return
    else:
        what = ("a symlink to " if link else "") + _kind(mode)
    raise OSError(errno.EINVAL, f"it is {what}, not a regular file: give a file name "
                  "(- writes standard output where a command allows it)", str(target))  # fmt: skip


def _named(err: OSError, tmp: Path, target: Path) -> None:
    """Make ``err`` name ``target`` where it named the temporary file (or no file): a message
    built from it then names the file the user asked for."""
    if str(err.filename) == str(tmp) or (err.filename is None and err.strerror is not None):
        err.filename = str(target)  # (an OSError of a message alone would lose it)
    if str(err.filename2) == str(tmp):
        err.filename2 = str(target)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A fresh temporary path beside ``path`` to write; renamed over ``path`` when the block
    ends normally, removed when it raises (nothing partial is left).

    The temporary file is created with ``O_EXCL`` (``tempfile.mkstemp``) in the target's
    folder and gets the permissions the umask allows (``0o666 & ~umask``), as a plain
    ``open`` would give; the rename replaces a symlink at ``path`` instead of following it.
    No temporary name outlives the block.

    Only a regular file (or a symlink to one) is replaced: any other existing ``path`` (a
    folder, a FIFO, a device such as ``/dev/stdout`` or ``/dev/null``, a socket, a link to
    one) is refused before anything is written, rather than replaced by a regular file (or,
    planted in a run folder, written into). An ``OSError`` raised in the block or by the
    rename names ``path``, never the temporary file.

    Raises:
        OSError: ``path`` is not a regular file, or the write failed (naming ``path``).
    """
    target = Path(path)
    check_replaceable(target)
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:  # it names the temporary file it tried
        err.filename = str(target)
        raise
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        _named(err, tmp, target)
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    # Where tmp and target were links to one file the rename did nothing (POSIX): the target
    # already holds the content, and the temporary name goes.
    tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (as UTF-8 if a ``str``) to ``path`` through :func:`atomic_path`."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(payload)


def write_json(path: str | os.PathLike, data: Any) -> None:
    """``data`` as indented, key-sorted JSON, atomically."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """The JSON content of ``path`` (``FileNotFoundError`` when absent)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


class RunLocked(Exception):
    """Another live process is training in this run folder."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class RunLock:
    """One training at a time per run folder: ``<run>/train.lock`` holds the owner's pid.

    Taken with ``O_CREAT | O_EXCL``; a lock whose process is gone (killed, machine restarted)
    is taken over; released (the file removed) on exit.

    Raises:
        RunLocked: on entering, when a live process holds the lock.
    """

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.path = Path(run_dir) / LOCK

    def _create(self) -> bool:
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(self.path, flags, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        return True

    def owner(self) -> int | None:
        """The pid in the lock file, or ``None`` (no lock, or not a pid)."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except (FileNotFoundError, OSError):
            return None
        return int(text) if text.isdigit() else None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            if self._create():
                return self
            pid = self.owner()
            if pid is not None and pid != os.getpid() and _alive(pid):
                raise RunLocked(
                    f"{self.path.parent} is being trained by process {pid} (lock {self.path}); "
                    "wait for it, or give another hydra.run.dir"
                )
            with contextlib.suppress(FileNotFoundError):  # stale: its owner is gone
                self.path.unlink()
        raise RunLocked(f"{self.path}: could not take the lock (another process races for it)")

    def __exit__(self, *exc: object) -> None:
        if self.owner() == os.getpid():
            self.path.unlink(missing_ok=True)


def describe_os_error(err: OSError, path: str | os.PathLike) -> str:
    """One line for a failed write to ``path``, naming it (never a temporary file)."""
    reasons = {errno.ENOSPC: "no space left on the device", errno.EFBIG: "file too large",
               errno.EDQUOT: "disk quota exceeded", errno.EACCES: "permission denied",
               errno.EROFS: "read-only file system", errno.ENOENT: "no such folder",
               errno.EISDIR: "it is a folder",
               errno.ENOTDIR: "a part of the path is not a folder"}  # fmt: skip
    return f"cannot write {path}: {reasons.get(err.errno, err.strerror or str(err))}"
