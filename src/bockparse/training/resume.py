"""Resume policy: what a ``resume=true`` run must share with its ``last.ckpt``.

The composed config is stored in every checkpoint (:class:`SaveConfig`, under
:data:`CONFIG_KEY`); :func:`check_resume` reads ``last.ckpt`` as data (``weights_only``) and
refuses a damaged file, a config that differs in :data:`RESUME_KEYS`, and any state that the
run would set back (the schedule's, the callbacks', the update count) that a run with this
config could not have written (:func:`state_problem`), before anything is built. Everything
from the file that reaches a message is escaped (:func:`shown`), so that a key holding a line
break cannot add a line to ``train.log``.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from hydra.utils import instantiate, to_absolute_path
from omegaconf import DictConfig, OmegaConf

from ..compat import WRITER_STATE_KEY, current_model, current_targets
from ..data.conllu import DataError
from ..data.vocab import Vocabs
from ..modelfile import ModelError, UnsafeFileError, load_tensors
from ..rundir import config_changes, shown
from .checkpoints import CheckpointWriter
from .checks import MAX_UPDATES, PRECISIONS
from .clock import RunClock

log = logging.getLogger("bockparse.training.resume")

# The composed config, saved in every checkpoint under this key (``resume=true`` compares it).
CONFIG_KEY = "bockparse_config"
# What a resumed run must share with the checkpoint: the model's shape, the data, the condition.
RESUME_KEYS = ("model", "encoder", "data", "loss", "decoder", "name", "exclude_punct", "seed")
RESUME_FREE = frozenset({"data.num_workers"})  # changes nothing but speed
# Folders, compared as the folders they name: a relative one from the start folder (the
# shipped sample's root is absolute since bockparse-train finds it in the package).
RESUME_FOLDERS = frozenset({"data.root"})


class ResumeError(Exception):
    """``resume=true`` cannot continue this run folder; the message says why and what to do."""


class SaveConfig(pl.Callback):
    """Stores the run's composed config (resolved) in every checkpoint, under ``CONFIG_KEY``."""

    def __init__(self, cfg: DictConfig) -> None:
        self.config = OmegaConf.to_container(cfg, resolve=True)

    def on_save_checkpoint(self, trainer, module, checkpoint: dict[str, Any]) -> None:
        checkpoint[CONFIG_KEY] = self.config


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``key: saved -> current`` for every setting under ``RESUME_KEYS`` that differs
    (:func:`bockparse.rundir.config_changes`; moved classes read as today's,
    :func:`bockparse.compat.current_targets`, the model node in the current layout,
    :func:`bockparse.compat.current_model`); settings in ``RESUME_FREE`` may differ."""
    saved = current_targets(saved)
    model, _ = current_model(saved.get("model"), None)
    return config_changes({**saved, "model": model}, current, under=RESUME_KEYS,
                          free=RESUME_FREE, same=_same)  # fmt: skip


def _same(key: str, old: Any, new: Any) -> bool:
    if key in RESUME_FOLDERS and isinstance(old, str) and isinstance(new, str):
        return _folder(old) == _folder(new)
    return old == new


def _folder(path: str) -> str:
    return os.path.realpath(to_absolute_path(os.path.expanduser(path)))


# The callbacks whose state last.ckpt carries, with the check of that state.
CALLBACK_STATES = {WRITER_STATE_KEY: CheckpointWriter.state_problem,
                   "RunClock": RunClock.state_problem}  # fmt: skip


def state_problem(checkpoint: dict[str, Any], cfg: DictConfig) -> str | None:
    """Why the state that a resumed run sets back from ``checkpoint`` (a ``last.ckpt`` read as
    data) could not have been written by a run with ``cfg``: the update count, the saved
    config's precision, the schedule (validated as a new schedule of ``cfg.optim.schedule``
    would hold it: :meth:`StanzaSchedule.state_problem`), the module's decoding time and the
    callbacks' states (:data:`CALLBACK_STATES`), the training loader's place in its epoch and
    the vocabularies; ``None`` when all of it can be applied."""
    step = checkpoint.get("global_step")
    if type(step) is not int or not 0 <= step <= MAX_UPDATES:
        return f"global_step={shown(step)}: must be an integer from 0 to {MAX_UPDATES}"
    counted = _trained_updates(checkpoint)
    if counted is not None and counted != step:
        return f"global_step={step}: its training loop counts {shown(counted)} updates"
    saved = checkpoint.get(CONFIG_KEY)
    if isinstance(saved, dict):  # the resumed run's precision (hardware.resolve_run_precision)
        trainer = saved.get("trainer", {})
        precision = trainer.get("precision") if isinstance(trainer, dict) else trainer
        if not isinstance(trainer, dict) or not any(
            type(precision) is type(p) and precision == p for p in (None, *PRECISIONS)
        ):
            return f"{CONFIG_KEY}.trainer.precision={shown(precision)}: not a precision"
    module = checkpoint.get("bockparse")
    if not isinstance(module, dict) or not set(module) <= {"schedule", "decode_seconds"}:
        return "bockparse: must be {'schedule': ..., 'decode_seconds': ...}"
    seconds = module.get("decode_seconds")
    if type(seconds) is not float or not 0.0 <= seconds < math.inf:
        return f"bockparse.decode_seconds={shown(seconds)}: must be seconds (a float >= 0)"
    if "schedule" in module:
        schedule = instantiate(cfg.optim.schedule)
        if problem := schedule.state_problem(module["schedule"], step):
            return f"bockparse.schedule: {problem}"
    callbacks = checkpoint.get("callbacks", {})
    if not isinstance(callbacks, dict):
        return "callbacks: must be a mapping"
    for name, problem_of in CALLBACK_STATES.items():
        if name in callbacks and (problem := problem_of(callbacks[name])):
            return f"callbacks.{name}: {problem}"
    if problem := _loader_problem(checkpoint, step):
        return problem
    if DATA_KEY in checkpoint and (problem := _vocabs_problem(checkpoint[DATA_KEY])):
        return f"{DATA_KEY}.{problem}"
    return None


# Where Lightning's loop state keeps the state of each training loader: the training loader's
# place in its epoch (bockparse.data.datamodule.TrainLoader.state_dict).
LOADER_PATH = ("loops", "fit_loop", "state_dict", "combined_loader")
LOADER_KEYS = ("epoch", "batches")


def _loader_problem(checkpoint: dict[str, Any], step: int) -> str | None:
    """Why the training loader's place in ``checkpoint`` (:data:`LOADER_PATH`) cannot be the
    one a run of ``step`` updates saved: one ``{"epoch": e, "batches": b}`` with ``e`` and
    ``b`` at most ``step`` (every epoch and every batch served is at least one update); absent
    or empty (a ``last.ckpt`` of a bockparse without resumable loaders) is accepted."""
    node: Any = checkpoint
    for depth, key in enumerate(LOADER_PATH):
        if not isinstance(node, dict):
            return f"{'.'.join(LOADER_PATH[:depth])}: must be a mapping"
        if key not in node:
            return None
        node = node[key]
    where = ".".join(LOADER_PATH)
    if isinstance(node, list) and not node:
        return None
    if not isinstance(node, list) or len(node) != 1:
        return f"{where}={shown(node)}: must be the state of the one training loader"
    state = node[0]
    if not isinstance(state, dict) or set(state) != set(LOADER_KEYS):
        return f"{where}[0]={shown(state)}: must be {{'epoch': ..., 'batches': ...}}"
    for key in LOADER_KEYS:
        if type(state[key]) is not int or not 0 <= state[key] <= step:
            return (f"{where}[0].{key}={shown(state[key])}: must be an integer from 0 to the "
                    f"update count {step}")  # fmt: skip
    return None


# The data module's state in a Lightning checkpoint (under its class name): the vocabularies.
DATA_KEY = "ParserDataModule"


def _vocabs_problem(state: Any) -> str | None:
    """Why ``state`` is not ``ParserDataModule.state_dict()``: ``{"vocabs": ...}`` that
    :meth:`Vocabs.from_dict` accepts."""
    if not isinstance(state, dict) or set(state) != {"vocabs"}:
        return "must be {'vocabs': the vocabularies}"
    try:
        Vocabs.from_dict(state["vocabs"])
    except DataError as err:
        return f"vocabs: {err}"
    return None


# Where Lightning's loop state counts the updates of a manually optimised module (the count
# that a resumed trainer continues from).
UPDATES_PATH = ("loops", "fit_loop", "epoch_loop", "manual_optimization", "optim_step_progress",
                "total", "completed")  # fmt: skip


def _trained_updates(checkpoint: dict[str, Any]) -> Any:
    """The update count in ``checkpoint``'s loop state (:data:`UPDATES_PATH`), ``None`` if
    it has none."""
    node: Any = checkpoint
    for key in UPDATES_PATH:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def read_finished(path: Path) -> dict[str, Any]:
    """The ``metrics.json`` of a finished run, which ``resume=true`` returns as it is.

    Raises:
        ResumeError: it is not a JSON object (damaged or not written by bockparse).
    """
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        problem = f"it cannot be read as JSON ({shown(str(err))})"
    else:
        if isinstance(result, dict):
            return result
        problem = f"it holds a {type(result).__name__}, not a JSON object"
    raise ResumeError(f"{path} says the run is finished, but {problem}: move it away to resume "
                      "from last.ckpt, or start over with resume=false")  # fmt: skip


def check_resume(cfg: DictConfig, last: Path) -> tuple[dict[str, Any] | None, int]:
    """Check that ``last`` (a run's ``last.ckpt``) can continue under ``cfg``; it is read with
    ``torch.load(weights_only=True)``, so a pickle payload is refused, never run.

    Returns:
        The composed config the checkpoint was trained with (resolved; ``None`` for a
        checkpoint of an earlier version that saved none) and its update count.

    Raises:
        ResumeError: the file cannot be read or is no full training checkpoint, the
            config it was trained with differs from ``cfg`` in ``RESUME_KEYS`` (all listed),
            or the state it would set back could not come from a run with ``cfg``
            (:func:`state_problem`).
    """
    restart = _restart(last)
    try:
        checkpoint = load_tensors(last)
    except UnsafeFileError:
        raise ResumeError(f"refused to resume from {last}: it holds Python objects other than "
                          "tensors and plain containers, and loading them could run code; a "
                          f"bockparse checkpoint never does. Options: {restart}"
                          ) from None  # fmt: skip
    except ModelError as err:  # missing, random, truncated or damaged bytes
        problem = f"the file is damaged or unreadable ({err})"
        raise ResumeError(f"cannot resume from {last}: {problem}. Options: {restart}") from None
    return check_checkpoint(cfg, checkpoint, last)


def _restart(last: Path) -> str:
    run_dir = last.parent.parent
    return (f"start over with resume=false (its checkpoints are replaced) or delete {run_dir}, "
            "or set hydra.run.dir to a new folder")  # fmt: skip


def check_checkpoint(
    cfg: DictConfig, checkpoint: Any, last: Path
) -> tuple[dict[str, Any] | None, int]:
    """:func:`check_resume` on ``checkpoint``, the content of ``last`` as data."""
    restart = _restart(last)
    needed = ("state_dict", "optimizer_states", "bockparse")
    missing = [k for k in needed if k not in checkpoint] if isinstance(checkpoint, dict) else needed
    if missing:
        raise ResumeError(f"cannot resume from {last}: not a full bockparse training checkpoint "
                          f"(it lacks {', '.join(missing)}). Options: {restart}")  # fmt: skip
    saved = checkpoint.get(CONFIG_KEY)
    if saved is not None and not isinstance(saved, dict):
        raise ResumeError(f"refusing to resume from {last}: its {CONFIG_KEY} is a "
                          f"{type(saved).__name__}, not a config. Options: {restart}")  # fmt: skip
    differences = [] if saved is None else config_differences(
        saved, OmegaConf.to_container(cfg, resolve=True))  # fmt: skip
    if differences:
        raise ResumeError(f"refusing to resume from {last}: the config differs from the one it "
                          "was trained with in " + "; ".join(differences) + ". Undo these "
                          f"overrides to resume, or {restart}")  # fmt: skip
    if problem := state_problem(checkpoint, cfg):
        raise ResumeError(f"refusing to resume from {last}: its training state cannot come "
                          f"from this run ({problem}). Options: {restart}")  # fmt: skip
    if saved is None:
        log.warning("%s holds no config (an earlier version wrote it): resuming unchecked", last)
    return saved, checkpoint["global_step"]
