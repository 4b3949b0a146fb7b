"""The run folder: its layout, its name, its one atomic writer, and its training lock.

A ``bockparse-train`` run folder (Hydra's ``hydra.run.dir``, named by :func:`folder_name`:
one configuration per folder) holds::

    .hydra/config.yaml   the composed config (written once locked)  CONFIG
    train.log            the run's log (opened once locked)         TRAIN_LOG
    environment.json     versions, CPU/GPU, the precision chosen    ENVIRONMENT
    checkpoints/         best.ckpt (weights), last.ckpt (full state), best-of-last.ckpt
    predictions/         val.conllu, test.conllu
    csv/metrics.csv      the logged curve
    timing.json          wall time by part                          TIMING
    metrics.json         the scores, written last: the run is done  METRICS
    train.lock           while a training process owns the folder   LOCK  (RunLock)

A folder is a run folder by this layout alone (:func:`is_run_dir`, :func:`run_dir_of`,
:func:`discover`): never by searching the folders above a file, so a file planted above a
downloaded run is never read. Every file of a run folder is read through :class:`RunDir` (the
parser, the analyses, publish): where it is, never through a symbolic link, its YAML as plain
data, old config layouts moved to the current one (:func:`bockparse.compat.current_keys`).

Every file a run writes goes through :func:`write_atomic` / :func:`atomic_path`: a temporary
file created with ``O_EXCL`` beside the target (never a fixed ``*.tmp`` name that a planted
symlink could redirect), given the permissions the umask allows, then renamed over the target,
which replaces a symlink there rather than following it. Standard library only at import (the
light install uses it for CoNLL-U output); reading YAML imports PyYAML and OmegaConf.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import os
import re
import socket
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from . import compat

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


# A run folder set aside by ``overwrite=true``: ``<folder>.replaced-<UTC time>``.
REPLACED = ".replaced-"
# Settings that change nothing a run computes: a run folder's saved config and a command that
# continues it may differ in them, and they are no part of a folder's name (each key and every
# key under it; ``hydra`` also its groups, ``hydra/launcher``).
RESULT_FREE = ("resume", "overwrite", "torch_threads", "loss.workers", "data.num_workers",
               "logger", "trace", "trainer.enable_progress_bar", "hydra")  # fmt: skip
# Settings that a run folder's path spells already (``<experiment>/<name>/seed<seed>``), that
# choose among those (a condition, a sweep), or that say where the files are (``data.root``,
# the git-ignored ``conf/local``): no part of a folder's name (these keys exactly).
NAMED_BY_PATH = ("seed", "experiment", "experiment_name", "condition", "loss", "decoder", "name",
                 "sweep", "local", "data.root")  # fmt: skip
MAX_NAME = 120  # characters of a folder name; a longer one ends in a hash of the whole


def _within(key: str, keys: Iterable[str]) -> bool:
    return any(key == k or key.startswith((f"{k}.", f"{k}/")) for k in keys)


def override_key(override: str) -> str:
    """The key of a Hydra command-line override: ``+model.x@pkg=1`` -> ``model.x``."""
    return override.lstrip("+~").split("=", 1)[0].split("@", 1)[0]


def folder_name(name: object, overrides: Iterable[str]) -> str:
    """A run's folder name: its ``name`` (``<loss>-<decoder>``), then every command-line
    override that can change its results, sorted, after commas (Hydra's ``override_dirname``
    idea): ``hinge-bock,model=biaffine-notags,optim.lr=0.1``. Overrides of
    :data:`RESULT_FREE` and :data:`NAMED_BY_PATH` are left out, except that under an explicit
    ``name=...`` the condition, loss and decoder overrides are kept (the name spells neither).

    A name with a character other than letters, digits and ``_.,=+@-`` (a ``/`` in a value,
    say), one that starts with a dot, or one longer than :data:`MAX_NAME` gets them replaced by
    ``_``, is cut, and ends in a hash of the whole: one folder component, never a path, and
    distinct for distinct overrides.
    """
    overrides = list(overrides)
    # An explicit name=... spells neither the loss nor the decoder: their overrides stay.
    named = NAMED_BY_PATH
    if any(override_key(o) == "name" for o in overrides):
        named = tuple(k for k in NAMED_BY_PATH if k not in ("condition", "loss", "decoder"))
    kept = sorted(o for o in overrides
                  if not _within(override_key(o), RESULT_FREE)
                  and override_key(o) not in named)  # fmt: skip
    text = ",".join([str(name), *kept])
    safe = re.sub(r"[^A-Za-z0-9_.,=+@-]", "_", text)
    if safe.startswith("."):
        safe = "_" + safe[1:]
    if safe != text or len(safe) > MAX_NAME:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        safe = f"{safe[: MAX_NAME - len(digest) - 1]}-{digest}"
    return safe


def _leaves(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict) or not tree:
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(_leaves(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


_PLAIN_KEY = re.compile(r"[\w.-]+")  # a dotted config key, shown as it is
SHOWN = 200  # characters of a value read from a file that a message shows


def shown(value: Any, key: bool = False, width: int = SHOWN) -> str:
    """``value`` (read from a file) for a one-line message: its ``repr`` (control characters
    escaped) cut to ``width`` characters; a ``key`` of word characters, dots and dashes as it
    is. The one escaper of file contents in messages and logs."""
    if key and isinstance(value, str) and _PLAIN_KEY.fullmatch(value):
        return value
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def config_changes(
    saved: dict[str, Any],
    current: dict[str, Any],
    *,
    under: Iterable[str] | None = None,
    free: Iterable[str] = RESULT_FREE,
    same: Callable[[str, Any, Any], bool] = lambda key, old, new: old == new,
) -> list[str]:
    """``key: saved -> current`` (keys and values escaped by :func:`shown`) for every setting
    that differs between two configs (plain containers), sorted.

    Args:
        under: compare only these top-level keys (``None``: all).
        free: settings that may differ (prefixes of dotted keys).
        same: whether ``old`` and ``new`` of ``key`` count as equal.
    """
    if under is not None:
        saved = {k: saved.get(k) for k in under}
        current = {k: current.get(k) for k in under}
    old, new = _leaves(saved), _leaves(current)
    missing = "<absent>"
    free = tuple(free)
    return [f"{shown(key, key=True)}: {shown(old.get(key, missing))} -> "
            f"{shown(new.get(key, missing))}"
            for key in sorted(old.keys() | new.keys())
            if not _within(key, free) and not same(key, old.get(key, missing),
                                                   new.get(key, missing))]  # fmt: skip


def planted_links(run_dir: str | os.PathLike, names: Iterable[str | os.PathLike]) -> list[Path]:
    """Those of ``names`` (paths in ``run_dir``, and the folders on the way) that are symbolic
    links: a run never writes or reads through them."""
    links: list[Path] = []
    for name in names:
        path = Path(run_dir)
        for part in Path(name).parts:
            path = path / part
            if path.is_symlink() and path not in links:
                links.append(path)
                break
    return links


def unusable_folder(run_dir: str | os.PathLike) -> str | None:
    """Why ``run_dir`` cannot be a run folder (one line: a file there or above it, or no
    right to write it or to make it), or ``None``."""
    path = Path(os.path.abspath(run_dir))
    existing = path
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder; give another hydra.run.dir or name="
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "write in" if existing == path else f"make {path} in"
        return f"cannot {what} {existing} (permission denied); give a writable hydra.run.dir"
    return None


def remove_empty(run_dir: str | os.PathLike, base: str | os.PathLike) -> None:
    """Remove ``run_dir`` if it is empty, then each folder above it while that is empty and
    below ``base`` (the working folder): what a refused job's folder creation left. Never
    removes anything that holds a file."""
    path, stop = Path(os.path.abspath(run_dir)), Path(os.path.abspath(base))
    while path != stop:
        try:
            path.rmdir()
        except OSError:  # not empty, absent, or not ours to remove
            return
        if stop not in path.parents:
            return
        path = path.parent


def predictions(run_dir: str | os.PathLike, stage: str) -> Path:
    """``<run_dir>/predictions/<stage>.conllu`` (``stage``: ``val`` or ``test``)."""
    return Path(run_dir) / PREDICTIONS / f"{stage}.conllu"


def is_run_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a run folder: a directory with its composed config or its
    ``metrics.json`` (a published run may carry only the scores), either a regular file
    itself, not a link. The one definition (:func:`discover`, :class:`RunDir`)."""
    return any(_regular(Path(path) / name) for name in (CONFIG, METRICS))


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def run_dir_of(path: str | os.PathLike) -> Path | None:
    """The run folder ``path`` belongs to: ``path`` itself when it is one (:func:`is_run_dir`),
    the run folder whose ``checkpoints/`` holds it (``<run>/checkpoints/<name>``), else
    ``None``: a file outside a run folder, or a checkpoint moved out of one."""
    path = Path(path)
    if is_run_dir(path):
        return path
    run_dir = path.parent.parent
    return run_dir if path.parent.name == CHECKPOINTS and is_run_dir(run_dir) else None


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


def write_hydra_config(run_dir: str | os.PathLike, cfg: Any, hydra: Any) -> None:
    """Write Hydra's record of the job into ``<run>/.hydra/``, as Hydra would (the same files
    and content), but through the atomic writer and only once the folder is locked:
    ``config.yaml`` (``cfg``, the composed config), ``hydra.yaml`` (``hydra``, Hydra's own
    config) and ``overrides.yaml`` (the command line's overrides)."""
    from omegaconf import OmegaConf

    run_dir = Path(run_dir)
    (run_dir / CONFIG).parent.mkdir(exist_ok=True)
    write_atomic(run_dir / CONFIG, OmegaConf.to_yaml(cfg))
    write_atomic(run_dir / HYDRA, OmegaConf.to_yaml(hydra))
    write_atomic(run_dir / OVERRIDES, OmegaConf.to_yaml(hydra.hydra.overrides.task))


def read_json(path: str | os.PathLike) -> Any:
    """The JSON content of ``path`` (``FileNotFoundError`` when absent)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


class RunFileError(ValueError):
    """A file of a run folder (or a small file sent with a model) that cannot be read as data:
    not a regular file, too large, damaged; the message is one line naming the file."""


class LinkRefused(RunFileError):
    """A symbolic link where a run folder's file is read: never followed."""


def read_file(path: str | os.PathLike, limit: int, follow_links: bool = False) -> bytes:
    """The content of a file someone sent (a run folder's config, metrics, environment record),
    read as data: a regular file only, opened without following a symbolic link
    (``O_NOFOLLOW``; ``follow_links`` for a folder that is not a run's, such as a Hugging Face
    cache snapshot of links) and without blocking (``O_NONBLOCK``: a FIFO or device is refused,
    not waited on), at most ``limit`` bytes.

    Raises:
        FileNotFoundError: nothing at ``path``.
        LinkRefused: ``path`` is a symbolic link.
        RunFileError: not a regular file, larger than ``limit``, or unreadable.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise LinkRefused(f"{path}: refused: a symbolic link (read as data, a file of a "
                              "run folder is never followed elsewhere)") from None  # fmt: skip
        raise RunFileError(f"{path}: cannot read ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunFileError(f"{path}: not a regular file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise RunFileError(f"{path}: larger than {limit:,} bytes; not a file a run writes")
    return data


def check_no_links(folder: str | os.PathLike, relative: str | os.PathLike) -> Path:
    """``folder / relative`` after checking that no part of it below ``folder`` is a symbolic
    link (a run folder someone sent is read without following links out of it).

    Raises:
        LinkRefused: a part is a symbolic link.
    """
    path = Path(folder)
    for part in Path(relative).parts:
        path = path / part
        if path.is_symlink():
            raise LinkRefused(f"{path}: refused: a symbolic link (a run folder's files are "
                              "read only where they are, never followed)")  # fmt: skip
    return path


MAX_CONFIG_BYTES = 2**20  # a composed config is a few KB
MAX_CONFIG_DEPTH = 64
MAX_JSON_BYTES = 2**20  # a run's metrics.json and environment.json (a few hundred bytes)
# An interpolation of another node of the same config (``${seed}``, ``${..decoder}``), the only
# kind a run config is resolved with; anything else (``${oc.env:HOME}``, any resolver) is kept
# as literal text, never evaluated.
NODE_REFERENCE = re.compile(r"\$\{\.*[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\d+\])*\}")


def _literal(text: str, source: str, key: str) -> str:
    """``text`` as OmegaConf should read it: as is when its interpolations are all node
    references (:data:`NODE_REFERENCE`), else with every ``${`` escaped (literal text).

    Raises:
        RunFileError: a backslash beside a non-node interpolation (its escaping is ambiguous).
    """
    if "${" not in text or "${" not in NODE_REFERENCE.sub("", text):
        return text
    if "\\" in text:
        raise RunFileError(f"{source}: {key}: an interpolation with a backslash is refused")
    return text.replace("${", "\\${")


def _yaml_loader() -> Any:
    """YAML as OmegaConf reads it (its safe loader: no Python tags, duplicate keys refused),
    without anchors and aliases: Hydra never writes them, and nested aliases expand
    exponentially."""
    import yaml
    from omegaconf._utils import get_yaml_loader

    def compose_node(self: Any, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases are not accepted in a run config",
                event.start_mark,
            )  # fmt: skip
        return yaml.composer.Composer.compose_node(self, parent, index)

    return type("RunConfigLoader", (get_yaml_loader(),), {"compose_node": compose_node})


def read_yaml(path: str | os.PathLike, resolvers: bool = False) -> Any:
    """A YAML file of a run folder (``.hydra/config.yaml``, ``.hydra/hydra.yaml``) read as plain
    data: a regular file, not followed through a symbolic link (:func:`read_file`), YAML without
    anchors and aliases, node references its only interpolations (any resolver, such as
    ``${oc.env:...}``, stays literal text: nothing from the environment or code reaches it),
    unless ``resolvers``: then OmegaConf's registered resolvers apply when a value is read (the
    analysis of one's own runs, whose data root may be ``${oc.env:BOCKPARSE_DATA}/...``).

    Returns:
        An OmegaConf ``DictConfig``.

    Raises:
        FileNotFoundError: nothing at ``path``.
        RunFileError: unreadable, not YAML, not a mapping, or nested too deeply
            (:class:`LinkRefused`: a symbolic link).
    """
    import yaml
    from omegaconf import OmegaConf

    try:
        data = yaml.load(read_file(path, MAX_CONFIG_BYTES).decode("utf-8"), Loader=_yaml_loader())
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RunFileError(f"{path}: not a readable run config ({first})") from None
    if not isinstance(data, dict):
        raise RunFileError(f"{path}: not a run config (a {type(data).__name__})")
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, at, depth = stack.pop()
        if depth > MAX_CONFIG_DEPTH:
            raise RunFileError(f"{path}: nested deeper than {MAX_CONFIG_DEPTH} at {at}")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            name = f"{at}.{key}" if at else str(key)
            if isinstance(value, str) and not resolvers:
                node[key] = _literal(value, str(path), name)
            elif isinstance(value, dict | list):
                stack.append((value, name, depth + 1))
    try:
        return OmegaConf.create(data)
    except Exception as e:  # OmegaConf raises many types on odd keys or values
        raise RunFileError(f"{path}: not a readable run config ({type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''})") from None  # fmt: skip


class RunDir:
    """One run folder, in both directions: where each file of the layout (module doc) lies and
    what it says. The one reader of run folders: every file is read where it is, never through
    a symbolic link (:func:`check_no_links`, :func:`read_file`), as data (:func:`read_yaml`: no
    resolver runs), and the saved config in the current key layout
    (:func:`bockparse.compat.current_keys`).

    A path accessor (:attr:`best`, :attr:`last`, :meth:`predictions`, :attr:`trace`) checks the
    folders on the way and the file itself for links and returns the path (which may not
    exist); a reader returns the content, ``None`` where an optional file is absent.

    Raises (every accessor):
        LinkRefused: a symbolic link on the way to the file.
        RunFileError: a file that cannot be read as what the run writes.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def file(self, relative: str | os.PathLike) -> Path:
        """``<run>/<relative>``, checked for links (:func:`check_no_links`)."""
        return check_no_links(self.path, relative)

    def config(self, resolvers: bool = False) -> Any:
        """The composed config (``.hydra/config.yaml``) as plain data, in the current key layout
        (:func:`bockparse.compat.current_keys`; ``resolvers``: see :func:`read_yaml`).

        Raises:
            FileNotFoundError: no saved config (not a run folder, or a published run that
                carries only its scores).
            RunFileError: a saved config that cannot be read.
        """
        try:
            cfg = read_yaml(self.file(CONFIG), resolvers)
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path}: not a run folder with its config (no "
                                    f"{CONFIG})") from None  # fmt: skip
        return compat.current_keys(cfg)

    def hydra(self) -> Any | None:
        """Hydra's own record of the run (``.hydra/hydra.yaml``: the chosen groups, the folder
        the run started in) as plain data; ``None`` without one."""
        try:
            return read_yaml(self.file(HYDRA))
        except FileNotFoundError:
            return None

    def _json(self, name: str) -> dict[str, Any] | None:
        path = self.file(name)
        try:
            text = read_file(path, MAX_JSON_BYTES)
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise RunFileError(f"{path}: damaged, not JSON ({type(e).__name__})") from None
        if not isinstance(data, dict):
            raise RunFileError(f"{path}: damaged, not a JSON object")
        return data

    def metrics(self) -> dict[str, Any] | None:
        """The scores (``metrics.json``, written last); ``None`` for a run that did not finish."""
        return self._json(METRICS)

    def environment(self) -> dict[str, Any] | None:
        """Versions, CPU/GPU and the precision chosen (``environment.json``); ``None`` without."""
        return self._json(ENVIRONMENT)

    @property
    def precision(self) -> str:
        """The precision the run used: its saved config's ``trainer.precision`` (training writes
        it resolved), else, for a run saved with ``auto``, the one its ``environment.json`` or
        ``metrics.json`` records; ``auto`` where none does (a run stopped before training;
        :func:`bockparse.compat.recorded_precision`).

        Raises:
            RunFileError: the recorded precision is not a string.
        """
        from omegaconf import OmegaConf

        saved = OmegaConf.select(self.config(), "trainer.precision", default=compat.AUTO)
        precision = compat.recorded_precision(saved, self.environment, self.metrics)
        if not isinstance(precision, str):
            raise RunFileError(f"{self.path}: the recorded precision {repr(precision)[:60]} is "
                               "not a precision")  # fmt: skip
        return precision

    @property
    def best(self) -> Path:
        """``checkpoints/best.ckpt``: the selected weights."""
        return self.file(BEST)

    @property
    def last(self) -> Path:
        """``checkpoints/last.ckpt``: the full training state a resume continues from."""
        return self.file(LAST)

    def predictions(self, stage: str) -> Path:
        """The saved predictions of ``stage`` (``val`` or ``test``): ``predictions/<stage>.conllu``
        as training writes it, else its gzip-compressed copy ``<stage>.conllu.gz`` (as published
        runs carry it); the first name when neither exists."""
        name = predictions("", stage)
        path, compressed = self.file(name), self.file(name.with_name(name.name + ".gz"))
        return compressed if not path.is_file() and compressed.is_file() else path

    @property
    def trace(self) -> Path:
        """The per-update trace (:mod:`bockparse.training.trajectory`): the file the config's
        ``trace.file`` names in the run folder (present where a run or a replay wrote one)."""
        return self.file(str(self.config().trace.file))


def discover(root: str | os.PathLike) -> Iterator[RunDir]:
    """Every run folder at or below ``root`` (:func:`is_run_dir`), in path order: ``root``
    itself when it is one, else the outermost ones below it, leaving out a folder set aside by
    ``overwrite=true`` (:data:`REPLACED`, no longer part of its sweep). Links are not followed.
    """
    root = Path(root)
    if is_run_dir(root):
        yield RunDir(root)
        return
    found: set[Path] = set()
    for folder, _, files in os.walk(root):  # never into a linked folder
        here = Path(folder)
        if METRICS in files or (here.name == CONFIG.parent.name and CONFIG.name in files):
            run = here.parent if here.name == CONFIG.parent.name else here
            if is_run_dir(run):
                found.add(run)
    for path in sorted(found):
        replaced = any(REPLACED in part for part in path.relative_to(root).parts)
        if not replaced and not any(parent in found for parent in path.parents):
            yield RunDir(path)


class RunFolderError(Exception):
    """A run folder that cannot take this training (locked, a file, read-only, holding planted
    links, another config or a finished run); the message is one line saying what to do."""


class RunLocked(RunFolderError):
    """Another process trains in this run folder (or held it too recently to tell)."""


# The training lock's heartbeat: its holder refreshes the lock file's mtime every HEARTBEAT
# seconds; a lock from another host (or one whose owner cannot be read) counts as abandoned
# only after STALE_AFTER seconds without one (a live lock on another node of a shared file
# system looks dead to a pid check).
HEARTBEAT = 60.0
STALE_AFTER = 600.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class RunLock:
    """One training at a time per run folder: ``<run>/train.lock`` names its holder.

    The lock file is complete from its first moment: its content (host, pid, start time and a
    token unique to this lock) is written to a temporary file that is then hard-linked to
    ``train.lock``, which fails when the lock exists. A lock is abandoned (taken over) when its
    holder is a dead process on this host, or, for a lock of another host or one that cannot be
    read, when its heartbeat (the file's mtime, refreshed every :data:`HEARTBEAT` seconds by a
    thread while held) is older than :data:`STALE_AFTER`. Only the process that holds an
    exclusive ``flock`` on the abandoned file, and finds the name still bound to that very file,
    removes it; so of several processes taking over one abandoned lock one gets in, and a fresh
    lock is never removed. Released (the file removed, under the same check) on exit.

    Raises:
        RunLocked: on entering, when the lock is held.
        RunFolderError: the folder cannot hold a lock (a file, read-only, the lock a directory
            or a link).
    """

    def __init__(self, run_dir: str | os.PathLike, heartbeat: float = HEARTBEAT) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK
        self.heartbeat = heartbeat
        self.token: str | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> RunLock:
        self._acquire()
        self._stop.clear()
        self._beat = threading.Thread(target=self._refresh, name="train.lock heartbeat",
                                      daemon=True)  # fmt: skip
        self._beat.start()
        return self

    def _acquire(self) -> None:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            for _ in range(10):
                if self._create():
                    return
                holder = self._holder()
                if holder is not None:
                    raise RunLocked(holder)
                self._remove_abandoned()
        except OSError as err:
            raise RunFolderError(folder_problem(self.run_dir, err)) from None
        raise RunLocked(f"{self.path}: could not take the lock (other processes race for it); "
                        "try again")  # fmt: skip

    def set_aside(self) -> Path:
        """Move the locked folder to ``<folder>.replaced-<UTC time>`` (:data:`REPLACED`; its
        lock removed there) and hold the lock of a fresh folder in its place.

        Returns:
            Where the old folder went.

        Raises:
            RunLocked: another process took the fresh folder in between.
        """
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        kept = self.run_dir.with_name(f"{self.run_dir.name}{REPLACED}{stamp}")
        for n in itertools.count(2):
            if not os.path.lexists(kept):
                break
            kept = self.run_dir.with_name(f"{self.run_dir.name}{REPLACED}{stamp}-{n}")
        os.rename(self.run_dir, kept)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(kept / LOCK)  # ours: nobody else removes a held lock
        self.token = None
        self._acquire()
        return kept

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        with contextlib.suppress(OSError):
            self._unlink_if(self._mine)

    def _create(self) -> bool:
        """Link a complete lock file to :attr:`path`; ``False`` when a lock exists."""
        token = uuid.uuid4().hex
        content = json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                              "token": token})  # fmt: skip
        fd, name = tempfile.mkstemp(dir=self.run_dir, prefix=f".{LOCK}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(content + "\n")
            os.chmod(name, 0o644)
            os.link(name, self.path)  # fails when the name exists, whatever it is
        except FileExistsError:
            return False
        finally:
            os.unlink(name)
        self.token = token
        return True

    def _mine(self, content: str, age: float = 0.0) -> bool:
        return self.token is not None and _lock_fields(content).get("token") == self.token

    def _abandoned(self, content: str, age: float) -> bool:
        return self._judge(content, age) is None

    def _judge(self, content: str, age: float) -> str | None:
        """Why the lock with ``content``, its heartbeat ``age`` seconds old, holds (one line),
        or ``None`` when it is abandoned."""
        fields = _lock_fields(content)
        host, pid = fields.get("host"), fields.get("pid")
        if host == socket.gethostname() and isinstance(pid, int) and not isinstance(pid, bool):
            if pid == os.getpid() or _alive(pid):
                return (f"{self.run_dir} is being trained by process {pid} on this host (lock "
                        f"{self.path}); wait for it, or train elsewhere (name=... or "
                        "hydra.run.dir=...)")  # fmt: skip
            return None
        if age > STALE_AFTER:
            return None
        who = (f"process {shown(pid)} on host {shown(host, key=True)}" if host is not None
               else "an unknown process (the lock file cannot be read)")  # fmt: skip
        return (f"{self.run_dir} is held by {who} (lock {self.path}, refreshed {age:.0f} s ago; "
                f"a lock without a heartbeat for {STALE_AFTER:.0f} s is taken over): wait for "
                "it, or train elsewhere (name=... or hydra.run.dir=...)")  # fmt: skip

    def _holder(self) -> str | None:
        """Why the existing lock holds (one line), or ``None`` when it is abandoned or gone."""
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return None  # released meanwhile
        if not stat.S_ISREG(mode):
            kind = ("a link" if stat.S_ISLNK(mode) else
                    "a directory" if stat.S_ISDIR(mode) else "not a regular file")  # fmt: skip
            raise RunFolderError(f"{self.path} is {kind}, not a lock file; remove it if no "
                                 "training uses this folder")  # fmt: skip
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        try:
            return self._judge(*_content_and_age(fd))
        finally:
            os.close(fd)

    def _remove_abandoned(self) -> None:
        """Remove the lock judged abandoned, if it still is (see the class)."""
        self._unlink_if(self._abandoned)

    def _unlink_if(self, condition: Callable[[str, float], bool]) -> None:
        """Unlink the lock file when ``condition(content, age)`` holds, under an exclusive
        ``flock`` on the file and only while the name still refers to the file locked."""
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if not os.path.samestat(os.fstat(fd), os.lstat(self.path)):
                    return  # removed (and maybe made afresh) while we waited
            except FileNotFoundError:
                return
            if condition(*_content_and_age(fd)):
                os.unlink(self.path)
        finally:
            os.close(fd)  # releases the flock

    def _refresh(self) -> None:
        """The heartbeat: refresh the lock file's mtime while this lock holds it."""
        while not self._stop.wait(self.heartbeat):
            with contextlib.suppress(OSError):
                fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    if self._mine(*_content_and_age(fd)):
                        os.utime(fd)
                finally:
                    os.close(fd)


def _content_and_age(fd: int) -> tuple[str, float]:
    """An open lock file's content and the age of its heartbeat (mtime) in seconds."""
    content = os.pread(fd, 4096, 0).decode("utf-8", "replace")
    return content, time.time() - os.fstat(fd).st_mtime


def _lock_fields(content: str) -> dict[str, Any]:
    """A lock file's fields (an earlier version's: :func:`bockparse.compat.lock_fields`);
    ``{}`` when unreadable."""
    text = content.strip()
    if (old := compat.lock_fields(text, socket.gethostname())) is not None:
        return old
    try:
        fields = json.loads(text)
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


def folder_problem(run_dir: str | os.PathLike, err: OSError) -> str:
    """One line for a run folder that cannot be made or written (``err`` from the attempt)."""
    path = Path(run_dir)
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a run folder; give another hydra.run.dir or name="
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{path}: cannot write there ({err.strerror}); give a writable hydra.run.dir"
    return describe_os_error(err, err.filename or path)


def describe_os_error(err: OSError, path: str | os.PathLike) -> str:
    """One line for a failed write to ``path``, naming it (never a temporary file)."""
    reasons = {errno.ENOSPC: "no space left on the device", errno.EFBIG: "file too large",
               errno.EDQUOT: "disk quota exceeded", errno.EACCES: "permission denied",
               errno.EROFS: "read-only file system", errno.ENOENT: "no such folder",
               errno.EISDIR: "it is a folder",
               errno.ENOTDIR: "a part of the path is not a folder"}  # fmt: skip
    return f"cannot write {path}: {reasons.get(err.errno, err.strerror or str(err))}"
