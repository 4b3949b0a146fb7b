"""Stanza's schedule carried out on a training run (:class:`ScheduleCallback`).

:class:`bockparse.training.schedule.StanzaSchedule` decides and knows nothing of Lightning;
this callback hands it each evaluation's dev LAS and carries out the :class:`Decision` on the
model and the trainer: it logs the evaluation and every decay, resets the optimiser state of a
group whose freeze ends, reloads the best model at the stage switch and stops training. It
writes no file: :class:`bockparse.training.checkpoints.CheckpointWriter`, which comes after it
(:mod:`bockparse.training.callbacks`), writes the checkpoints the decision asks for. Its log,
``bockparse.training.schedule``, is the run's record of the schedule's decisions.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import lightning.pytorch as pl

from ..metrics import metric_key
from ..modelfile import load_tensors
from .schedule import Decision

log = logging.getLogger("bockparse.training.schedule")  # the schedule's decisions, one log


class ScheduleCallback(pl.Callback):
    """Feeds each evaluation's dev LAS to the module's :class:`StanzaSchedule` and carries out
    its decision (module doc).

    At the switch the best model comes back: the model just evaluated when the switch comes
    with an improvement (it is the model that :class:`CheckpointWriter` writes to
    ``best.ckpt`` next), else ``best.ckpt`` as an earlier evaluation wrote it.

    Args:
        best_path: the run's ``best.ckpt``.

    Attributes:
        decision: the latest evaluation's decision (``None`` before the first), which
            :class:`CheckpointWriter` carries out on the files.
        stop_reason: why training stopped early (``""`` while it has not).
    """

    def __init__(self, best_path: str | os.PathLike) -> None:
        self.best_path = Path(best_path)
        self.decision: Decision | None = None
        self.stop_reason = ""

    def on_validation_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        schedule = module.schedule
        las = float(trainer.callback_metrics[metric_key("val", "las")])
        step = trainer.global_step
        decision = self.decision = schedule.after_evaluation(step, las)
        log.info("update %d: dev LAS %.2f%s (best %.2f at update %d)", step, las,
                 ", a new best" if decision.improved else "", schedule.best,
                 schedule.best_step)  # fmt: skip
        for name in decision.decayed:
            log.info("update %d: %s learning rate decays to %.3g of its base", step, name,
                     schedule.lr_factor(name))  # fmt: skip
        for name in decision.unfrozen:
            module.reset_optimizer_state(name)
            log.info("update %d: %s unfrozen (its optimiser state reset)", step, name)
        if decision.switch:
            best_step = step
            if not decision.improved:
                best = load_tensors(self.best_path)
                module.load_state_dict(best["state_dict"])
                best_step = best["global_step"]
            module.drop_stage1_state()
            log.info("update %d: stage 2 (%s); reloaded the best model of update %d",
                     step, decision.reason, best_step)  # fmt: skip
        if decision.stop:
            trainer.should_stop = True
            self.stop_reason = decision.reason
            log.info("update %d: stopping: %s", step, decision.reason)
