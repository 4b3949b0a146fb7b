"""Resume policy: what a ``resume=true`` run must share with its ``last.ckpt``.

The composed config is stored in every checkpoint (:class:`SaveConfig`, under
:data:`CONFIG_KEY`); :func:`check_resume` reads ``last.ckpt`` as data (``weights_only``) and
refuses a damaged file or a config that differs in :data:`RESUME_KEYS`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from omegaconf import DictConfig, OmegaConf

from ..modelfile import ModelError, UnsafeFileError, load_tensors

log = logging.getLogger("bockparse.training.resume")

# The composed config, saved in every checkpoint under this key (``resume=true`` compares it).
CONFIG_KEY = "bockparse_config"
# What a resumed run must share with the checkpoint: the model's shape, the data, the condition.
RESUME_KEYS = ("model", "encoder", "data", "loss", "decoder", "name", "exclude_punct", "seed")
RESUME_FREE = frozenset({"data.num_workers"})  # changes nothing but speed


class ResumeError(Exception):
    """``resume=true`` cannot continue this run folder; the message says why and what to do."""


class SaveConfig(pl.Callback):
    """Stores the run's composed config (resolved) in every checkpoint, under ``CONFIG_KEY``."""

    def __init__(self, cfg: DictConfig) -> None:
        self.config = OmegaConf.to_container(cfg, resolve=True)

    def on_save_checkpoint(self, trainer, module, checkpoint: dict[str, Any]) -> None:
        checkpoint[CONFIG_KEY] = self.config


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``key: saved -> current`` for every setting under ``RESUME_KEYS`` that differs (dotted
    keys, sorted); settings in ``RESUME_FREE`` may differ."""
    old = _flat({k: saved.get(k) for k in RESUME_KEYS})
    new = _flat({k: current.get(k) for k in RESUME_KEYS})
    return [f"{key}: {old.get(key, '<absent>')!r} -> {new.get(key, '<absent>')!r}"
            for key in sorted(old.keys() | new.keys())
            if key not in RESUME_FREE and old.get(key) != new.get(key)]  # fmt: skip


def check_resume(cfg: DictConfig, last: Path) -> tuple[dict[str, Any] | None, int]:
    """Check that ``last`` (a run's ``last.ckpt``) can continue under ``cfg``; it is read with
    ``torch.load(weights_only=True)``, so a pickle payload is refused, never run.

    Returns:
        The composed config the checkpoint was trained with (resolved; ``None`` for a
        checkpoint of an earlier version that saved none) and its update count.

    Raises:
        ResumeError: the file cannot be read or is no full training checkpoint, or the
            config it was trained with differs from ``cfg`` in ``RESUME_KEYS`` (all listed).
    """
    run_dir = last.parent.parent
    restart = (f"start over with resume=false (its checkpoints are replaced) or delete {run_dir}, "
               "or set hydra.run.dir to a new folder")  # fmt: skip
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
    needed = ("state_dict", "optimizer_states", "bockparse")
    missing = [k for k in needed if k not in checkpoint] if isinstance(checkpoint, dict) else needed
    if missing:
        raise ResumeError(f"cannot resume from {last}: not a full bockparse training checkpoint "
                          f"(it lacks {', '.join(missing)}). Options: {restart}")  # fmt: skip
    saved = checkpoint.get(CONFIG_KEY)
    if saved is None:
        log.warning("%s holds no config (an earlier version wrote it): resuming unchecked", last)
        return None, int(checkpoint.get("global_step", 0))
    differences = config_differences(saved, OmegaConf.to_container(cfg, resolve=True))
    if differences:
        raise ResumeError(f"refusing to resume from {last}: the config differs from the one it "
                          "was trained with in " + "; ".join(differences) + ". Undo these "
                          f"overrides to resume, or {restart}")  # fmt: skip
    return saved, int(checkpoint.get("global_step", 0))
