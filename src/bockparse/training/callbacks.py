"""The callbacks of one training run, and the one order the trainer runs them in.

Lightning calls each hook on the callbacks in the order of the trainer's list, so whatever two
callbacks do in the same hook happens in that order; :meth:`RunCallbacks.ordered` states it,
with the reason for each place, and ``bockparse-train`` builds its trainer from it
(:func:`run_callbacks`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import lightning.pytorch as pl
from omegaconf import DictConfig

from .. import rundir
from .checkpoints import CheckpointWriter
from .clock import RunClock
from .decisions import ScheduleCallback
from .predictions import PredictionWriter
from .resume import SaveConfig
from .trajectory import TraceCallback, TrajectoryTrace

log = logging.getLogger("bockparse.training.callbacks")


@dataclass(frozen=True)
class RunCallbacks:
    """The callbacks of one run by role (what ``bockparse-train`` reads after ``fit``)."""

    clock: RunClock
    decisions: ScheduleCallback
    checkpoints: CheckpointWriter
    predictions: PredictionWriter
    config: SaveConfig
    trace: TraceCallback | None

    def ordered(self) -> list[pl.Callback]:
        """The trainer's callbacks, in this order:

        1. ``RunClock``: first, so that its ``on_validation_end`` closes an evaluation's time
           before the decisions and the checkpoint writes that the evaluation triggers (the
           writes are counted as checkpoint time, the reload at the switch as other time).
        2. ``ScheduleCallback``: in ``on_validation_end`` hands the dev LAS to the schedule and
           carries out its decision on the model and the trainer (decays, unfreezing, the
           reload of the best model at the switch, the stop).
        3. ``CheckpointWriter``: after the decisions, since it writes what the decision asks
           for (``best.ckpt`` on an improvement, ``last.ckpt`` at the switch and the interval)
           and ``last.ckpt`` must hold the state after the decision (stage 2 and the reloaded
           model at the switch); it refuses to run on an evaluation not yet decided.
        4. ``PredictionWriter``: keeps and gathers the evaluated trees; no other callback
           reads or changes them.
        5. ``SaveConfig``: adds the config to a checkpoint in ``on_save_checkpoint``, which
           Lightning calls on every callback whenever a checkpoint is written.
        6. ``TraceCallback`` (``trace.enabled`` only): last, so that its work after each
           update (a hash of every parameter) falls outside the clock's update time.
        """
        order = (self.clock, self.decisions, self.checkpoints, self.predictions, self.config,
                 self.trace)  # fmt: skip
        return [callback for callback in order if callback is not None]


def run_callbacks(cfg: DictConfig, run_dir: Path) -> RunCallbacks:
    """The callbacks of a run of ``cfg`` in ``run_dir``; with ``trace.enabled`` the trace file
    is opened (appended to when ``cfg.resume``)."""
    decisions = ScheduleCallback(run_dir / rundir.BEST)
    checkpoints = CheckpointWriter(run_dir / rundir.CHECKPOINTS, decisions,
                                   **cfg.optim.last_checkpoint)  # fmt: skip
    trace = None
    if cfg.trace.enabled:  # the per-update trace (bockparse.training.trajectory)
        trace = TrajectoryTrace(run_dir / cfg.trace.file, shadow=cfg.trace.shadow,
                                tol=cfg.trace.tol, ties=cfg.trace.ties,
                                append=cfg.resume)  # fmt: skip
        log.info("per-update trace in %s", trace.path)
    return RunCallbacks(clock=RunClock(), decisions=decisions, checkpoints=checkpoints,
                        predictions=PredictionWriter(), config=SaveConfig(cfg),
                        trace=None if trace is None else TraceCallback(trace))  # fmt: skip
