"""Where a training run's wall time goes: start-up, updates, evaluations, checkpoints, test.

:class:`RunClock` is a Lightning callback that adds up the wall time of the training updates
(``on_train_batch_start`` to ``on_train_batch_end``: forward, loss, backward, optimiser step)
and of the development evaluations inside ``fit`` (``on_validation_start`` to
``on_validation_end``, sanity checks excluded). Placed before
:class:`bockparse.training.decisions.ScheduleCallback` and
:class:`bockparse.training.checkpoints.CheckpointWriter` in the trainer's callbacks
(:mod:`bockparse.training.callbacks`), its ``on_validation_end`` runs first, so the checkpoint
writes that an evaluation triggers are not counted as evaluation; the writer counts them
(``write_seconds``). ``bockparse-train``
writes the split to the run's ``timing.json`` and ``train.log``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl

_IMPORTED = time.monotonic()
MAX_SECONDS = 1e9  # about 32 years: a resumed run's training time from last.ckpt is below


def process_seconds() -> float:
    """Seconds since this process started: from ``/proc`` on Linux (10 ms resolution), else
    since this module was imported (which misses the interpreter's start and earlier imports)."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - int(stat[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


class RunClock(pl.Callback):
    """Wall seconds of a run's training updates and development evaluations (module doc).

    Attributes:
        fit_start: :func:`process_seconds` when ``fit`` began (start-up: imports, Hydra, data
            and model building).
        updates, evaluations: wall seconds summed over the updates / evaluations of ``fit``.
        n_updates, n_evaluations: how many were timed (a resumed run counts its own only).
        resumed_seconds: wall seconds of ``fit`` in the processes before a resume, up to the
            ``last.ckpt`` it resumed from (the clock's state in every ``last.ckpt``).
    """

    def __init__(self) -> None:
        self.fit_start = 0.0
        self.updates = self.evaluations = 0.0
        self.n_updates = self.n_evaluations = 0
        self.resumed_seconds = 0.0
        self._began = self._fit_began = 0.0

    def fit_seconds(self) -> float:
        """Wall seconds of ``fit`` so far, over every process of a resumed run."""
        return self.resumed_seconds + time.perf_counter() - self._fit_began

    def state_dict(self) -> dict[str, float]:
        return {"fit_seconds": self.fit_seconds()}

    @staticmethod
    def state_problem(state: Any) -> str | None:
        """Why ``state`` (from a checkpoint) is not :meth:`state_dict`'s; ``None`` if it is."""
        seconds = state.get("fit_seconds") if isinstance(state, dict) else None
        if not isinstance(state, dict) or set(state) != {"fit_seconds"}:
            return f"must be {{'fit_seconds': seconds}}, got {state!r:.200}"
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            return f"fit_seconds={seconds!r:.200}: must be a number of seconds"
        if not 0.0 <= seconds < MAX_SECONDS:
            return f"fit_seconds={seconds!r}: must be at least 0 and below {MAX_SECONDS:g}"
        return None

    def load_state_dict(self, state_dict: dict[str, float]) -> None:
        """Take :meth:`state_dict` back (checked: :meth:`state_problem`)."""
        if problem := self.state_problem(state_dict):
            raise ValueError(f"clock state: {problem}")
        self.resumed_seconds = float(state_dict["fit_seconds"])

    def on_fit_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.fit_start = process_seconds()
        self._fit_began = time.perf_counter()

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self._began = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self.updates += time.perf_counter() - self._began
        self.n_updates += 1

    def on_validation_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self._began = time.perf_counter()

    def on_validation_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        self.evaluations += time.perf_counter() - self._began
        self.n_evaluations += 1

    def split(self, checkpoints: float, final_evaluation: float) -> dict[str, float]:
        """The run's wall time by part, in seconds, now (at the end of the run).

        Args:
            checkpoints: seconds spent writing checkpoints during ``fit``.
            final_evaluation: seconds of the closing evaluation of ``best.ckpt`` on dev and
                test, predictions written.

        Returns:
            ``startup``, ``updates``, ``evaluations``, ``checkpoints``, ``final_evaluation``,
            ``other`` (the rest: Lightning's loops, data loading between updates, the reload at
            the stage switch, logging) and ``total``, plus the counts ``n_updates`` and
            ``n_evaluations``.
        """
        total = process_seconds()
        parts = {
            "startup": self.fit_start,
            "updates": self.updates,
            "evaluations": self.evaluations,
            "checkpoints": checkpoints,
            "final_evaluation": final_evaluation,
        }
        parts["other"] = total - sum(parts.values())
        parts["total"] = total
        result = {k: round(v, 3) for k, v in parts.items()}
        return result | {"n_updates": self.n_updates, "n_evaluations": self.n_evaluations}
