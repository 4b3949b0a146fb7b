"""Stanza's two-stage schedule and the paper's model selection, as a Lightning callback.

After every development evaluation (the Bock paper's appendix on training and model
selection):

* a dev LAS at least as high as the best so far is an improvement (ties prefer the later model)
  and its checkpoint becomes ``best.ckpt``;
* in stage 1 (Adadelta) the learning rate decays by ``plateau_decay`` after ``plateau_patience``
  updates without improvement;
* stage 1 ends when dev LAS has not improved for ``switch_patience`` updates or at update
  ``switch_step``: the best model is reloaded and training goes on with stage 2 (Adam);
* stage 2 stops after ``stop_patience`` updates without improvement (``max_steps`` bounds both).

``last.ckpt`` is written after every evaluation for ``resume=true``. Both files are written
atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch

from .metrics import metric_key


def save_atomic(trainer: pl.Trainer, path: Path) -> None:
    """``trainer.save_checkpoint`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    trainer.save_checkpoint(tmp)
    if trainer.is_global_zero:
        os.replace(tmp, path)
    trainer.strategy.barrier()


class StanzaSchedule(pl.Callback):
    """Model selection on dev LAS, plateau decay, the Adadelta-to-Adam switch and stopping.

    Args:
        checkpoint_dir: where ``best.ckpt`` and ``last.ckpt`` go.
        plateau_patience, plateau_decay: stage-1 decay after so many updates without improvement.
        switch_patience, switch_step: when stage 1 hands over to stage 2.
        stop_patience: stage-2 updates without improvement before stopping.
    """

    def __init__(
        self,
        checkpoint_dir: str | os.PathLike,
        *,
        plateau_patience: int,
        plateau_decay: float,
        switch_patience: int,
        switch_step: int,
        stop_patience: int,
    ) -> None:
        self.dir = Path(checkpoint_dir)
        self.plateau_patience = plateau_patience
        self.plateau_decay = plateau_decay
        self.switch_patience = switch_patience
        self.switch_step = switch_step
        self.stop_patience = stop_patience
        self.best = float("-inf")
        self.best_step = -1
        self.last_improvement = 0
        self.last_decay = 0

    @property
    def best_path(self) -> Path:
        return self.dir / "best.ckpt"

    @property
    def last_path(self) -> Path:
        return self.dir / "last.ckpt"

    def on_validation_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        las = float(trainer.callback_metrics[metric_key("val", "las")])
        step = trainer.global_step
        if las >= self.best:
            self.best, self.best_step = las, step
            self.last_improvement = self.last_decay = step
            save_atomic(trainer, self.best_path)
        if module.stage == 1:
            if step - max(self.last_improvement, self.last_decay) >= self.plateau_patience:
                module.lr_factor *= self.plateau_decay
                self.last_decay = step
            if step - self.last_improvement >= self.switch_patience or step >= self.switch_step:
                best = torch.load(self.best_path, map_location=module.device, weights_only=False)
                module.load_state_dict(best["state_dict"])
                module.start_stage_two(step)
                self.last_improvement = step
        elif step - self.last_improvement >= self.stop_patience:
            trainer.should_stop = True
        save_atomic(trainer, self.last_path)

    def state_dict(self) -> dict[str, Any]:
        return {
            "best": self.best,
            "best_step": self.best_step,
            "last_improvement": self.last_improvement,
            "last_decay": self.last_decay,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.best = state_dict["best"]
        self.best_step = state_dict["best_step"]
        self.last_improvement = state_dict["last_improvement"]
        self.last_decay = state_dict["last_decay"]
