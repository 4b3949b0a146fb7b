"""Checkpoints of a run, written as Stanza's schedule decides (:class:`CheckpointWriter`).

``best.ckpt`` holds the weights only and is written on improvement; ``last.ckpt`` holds the
full training state for ``resume=true`` and is written every ``every_evaluations`` evaluations
or ``every_minutes`` minutes, whichever comes first, at every stage switch and at the end of
training. Every file is written atomically. When training ends without any evaluation, the
final model becomes ``best.ckpt``. A run resumed from ``last.ckpt`` puts back the
``best.ckpt`` that ``last.ckpt`` knows of (``best-of-last.ckpt``), so that the best model and
the schedule's record agree. ``last.ckpt`` also holds every process's random number
generators (:func:`rng_states`) and the training loader's place in its epoch
(:class:`bockparse.data.datamodule.TrainLoader`): a resumed run continues bit for bit. The
decisions themselves are carried out by :class:`bockparse.training.decisions.ScheduleCallback`.
"""

from __future__ import annotations

import logging
import math
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch

from ..compat import WRITER_STATE_KEY
from ..modelfile import load_tensors
from ..rundir import BEST, BEST_OF_LAST, LAST, RESUMED_EXACTLY, atomic_path
from .decisions import ScheduleCallback

log = logging.getLogger("bockparse.training.checkpoints")


def save_atomic(trainer: pl.Trainer, path: Path, *, weights_only: bool) -> int:
    """``trainer.save_checkpoint`` to ``path`` through a temporary file and a rename.

    Returns:
        The bytes written.
    """
    size = 0
    if trainer.is_global_zero:  # rank 0 writes (Lightning's save_checkpoint), the others wait
        with atomic_path(path) as tmp:
            trainer.save_checkpoint(tmp, weights_only=weights_only)
            size = tmp.stat().st_size
    else:
        trainer.save_checkpoint(path, weights_only=weights_only)  # collective; writes nothing
    trainer.strategy.barrier()
    return size


def link_atomic(source: Path, path: Path) -> None:
    """Make ``path`` a hard link to ``source`` (a copy where the file system has no hard
    links), replacing ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.unlink()  # os.link needs the name free; the name stays ours (unique, in our folder)
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)


def rng_states() -> dict[str, Any]:
    """This process's random number generators as tensors and plain values (checkpoints are
    read with ``weights_only``): torch's CPU and CUDA ones (dropout, word dropout), numpy's and
    Python's global ones."""
    # numpy's legacy global generator: bockparse draws none, a library or an extension may
    kind, keys, pos, has_gauss, gauss = np.random.get_state()  # noqa: NPY002
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss],
        "python": random.getstate(),
    }


RNG_KEYS = ("torch", "cuda", "numpy", "python")
MT_WORDS = 624  # the Mersenne Twister's state: 624 32-bit words (numpy's and Python's)


def rng_problem(states: Any) -> str | None:
    """Why ``states`` (from a checkpoint, as data) is not what :func:`rng_states` returns; each
    generator's state is tried on a fresh generator of its kind, never on the process's own.
    ``None`` when :func:`set_rng_states` can put it back."""
    if not isinstance(states, dict) or set(states) != set(RNG_KEYS):
        return f"must be a mapping of {', '.join(RNG_KEYS)}"
    state = states["torch"]
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8 or state.dim() != 1:
        return "torch: must be a uint8 tensor (torch's generator state)"
    try:
        torch.Generator().set_state(state)
    except (RuntimeError, TypeError, ValueError) as err:
        return f"torch: not a generator state ({str(err).splitlines()[0]!r})"
    cuda = states["cuda"]
    if not isinstance(cuda, list) or not all(
        isinstance(t, torch.Tensor) and t.dtype == torch.uint8 and t.dim() == 1 for t in cuda
    ):
        return "cuda: must be a list of uint8 tensors (one per GPU)"
    numpy_state = states["numpy"]
    if not isinstance(numpy_state, list | tuple) or len(numpy_state) != 5:
        return "numpy: must be [kind, keys, pos, has_gauss, gauss]"
    kind, keys, pos, has_gauss, gauss = numpy_state
    if (
        kind != "MT19937"
        or not isinstance(keys, torch.Tensor)
        or keys.dtype != torch.int64
        or keys.shape != (MT_WORDS,)
        or not bool(((keys >= 0) & (keys < 2**32)).all())
        or type(pos) is not int
        or not 0 <= pos <= MT_WORDS
        or has_gauss not in (0, 1)
        or type(has_gauss) is not int
        or type(gauss) is not float
        or not math.isfinite(gauss)
    ):
        return "numpy: not the state of numpy's MT19937 generator"
    python = states["python"]
    if (
        not isinstance(python, tuple)
        or len(python) != 3
        or not (python[2] is None or (type(python[2]) is float and math.isfinite(python[2])))
    ):
        return "python: must be (version, internal state, gauss_next) of random.getstate()"
    try:
        random.Random().setstate(python)
    except (TypeError, ValueError, OverflowError) as err:
        return f"python: not a random.getstate() ({str(err).splitlines()[0]!r})"
    return None


def set_rng_states(states: dict[str, Any]) -> None:
    """Put back what :func:`rng_states` returned."""
    torch.set_rng_state(states["torch"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])
    kind, keys, pos, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))  # noqa: NPY002
    random.setstate(states["python"])


def _world() -> tuple[int, int]:
    """(rank, world size) of this process; (0, 1) without torch.distributed."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


class CheckpointWriter(pl.Callback):
    """Writes the files that the schedule's decisions ask for: ``best.ckpt`` (weights only) on
    improvement, ``last.ckpt`` (full state) at the configured interval, at the switch and at
    the end of training; it comes after ``decisions`` in the trainer's callbacks
    (:mod:`bockparse.training.callbacks`) and carries out the decision it has just made.

    ``best-of-last.ckpt`` is a hard link (no bytes written) to the ``best.ckpt`` that
    ``last.ckpt`` knows of: a run resumed from ``last.ckpt`` after a kill puts it back, so that
    the best model and the schedule's record of it always agree.

    Its state in ``last.ckpt`` (under :attr:`state_key`, an earlier callback's name:
    :data:`bockparse.compat.WRITER_STATE_KEY`) is every rank's random number
    generators at the write (:meth:`state_dict`); a resumed run puts them back when training
    starts, after the loaders are made, where the uninterrupted run went on from the same state.

    Args:
        checkpoint_dir: where the checkpoints go.
        decisions: the callback whose decisions this one writes out.
        every_evaluations: write ``last.ckpt`` after this many evaluations (``None``: by time
            only) ...
        every_minutes: ... or once this many minutes have passed since the previous write.
    """

    def __init__(
        self,
        checkpoint_dir: str | os.PathLike,
        decisions: ScheduleCallback,
        *,
        every_evaluations: int | None,
        every_minutes: float,
    ) -> None:
        if every_evaluations is not None and every_evaluations < 1:
            raise ValueError(f"every_evaluations must be >= 1 or null, got {every_evaluations}")
        self.dir = Path(checkpoint_dir)
        self.decisions = decisions
        self.every_evaluations = math.inf if every_evaluations is None else every_evaluations
        self.every_seconds = 60.0 * every_minutes
        self.evaluations_since_last = 0
        self.last_written = time.monotonic()
        self.bytes_written = {"best": 0, "last": 0}
        self.writes = {"best": 0, "last": 0}
        self.write_seconds = 0.0
        self.evaluations = 0
        self.last_step = -1
        self.saved_rng: list[dict[str, Any]] | None = None  # per rank, from last.ckpt

    @property
    def state_key(self) -> str:
        return WRITER_STATE_KEY

    @property
    def best_path(self) -> Path:
        return self.dir / BEST.name

    @property
    def last_path(self) -> Path:
        return self.dir / LAST.name

    @property
    def best_of_last_path(self) -> Path:
        return self.dir / BEST_OF_LAST.name

    def _save(self, trainer: pl.Trainer, kind: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        path = self.best_path if kind == "best" else self.last_path
        size = save_atomic(trainer, path, weights_only=kind == "best")
        if kind == "last" and trainer.is_global_zero and self.best_path.exists():
            link_atomic(self.best_path, self.best_of_last_path)
        self.write_seconds += time.perf_counter() - start
        self.bytes_written[kind] += size
        self.writes[kind] += 1
        if kind == "last":
            self.evaluations_since_last, self.last_written = 0, time.monotonic()
            self.last_step = trainer.global_step
        log.debug("wrote %s (%d bytes)", path, size)

    def log_summary(self, fit_seconds: float) -> None:
        """Log what was written over a training of ``fit_seconds`` (one line of ``train.log``):
        how often and how much, the evaluations, and its share of the training time."""
        written, writes = self.bytes_written, self.writes
        log.info("checkpoints: best.ckpt %d× (%.1f MB), last.ckpt %d× (%.1f MB) over %d "
                 "evaluations, %.1f s (%.1f %% of training)", writes["best"],
                 written["best"] / 1e6, writes["last"], written["last"] / 1e6, self.evaluations,
                 self.write_seconds, 100 * self.write_seconds / max(fit_seconds, 1e-9))  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        """``{"rng": [rng_states() of rank 0, rank 1, ...]}``; every rank calls it (Lightning
        builds the checkpoint on every rank; rank 0 writes it), so it gathers collectively."""
        mine = rng_states()
        _, world = _world()
        states: list[Any] = [mine]
        if world > 1:
            states = [None] * world
            torch.distributed.all_gather_object(states, mine)
        return {"rng": states}

    @staticmethod
    def state_problem(state: Any) -> str | None:
        """Why ``state`` (from a checkpoint) is not :meth:`state_dict`'s: ``{"rng": [...]}``,
        one :func:`rng_problem`-free state per rank; ``None`` if it is."""
        if not isinstance(state, dict) or set(state) != {"rng"}:
            return "must be {'rng': [the random number generators of each process]}"
        ranks = state["rng"]
        if not isinstance(ranks, list) or not ranks:
            return "rng: must be a list with one state per process"
        for rank, states in enumerate(ranks):
            if problem := rng_problem(states):
                return f"rng[{rank}].{problem}"
        return None

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Keep the generators of :meth:`state_dict` (checked: :meth:`state_problem`) for
        :meth:`on_train_start`."""
        if problem := self.state_problem(state_dict):
            raise ValueError(f"{WRITER_STATE_KEY} state: {problem}")
        self.saved_rng = state_dict["rng"]

    def _restore_rng(self) -> None:
        rank, world = _world()
        if self.saved_rng is None:
            log.warning("resumed, not bit for bit: last.ckpt holds no random number generator "
                        "states (an earlier bockparse wrote it), so the run draws other dropout "
                        "masks and batches than an uninterrupted run")  # fmt: skip
        elif len(self.saved_rng) != world:
            log.warning("resumed, not bit for bit: last.ckpt was written by %d processes, this "
                        "run has %d", len(self.saved_rng), world)  # fmt: skip
        else:
            set_rng_states(self.saved_rng[rank])
            log.info("%s: every process's random number generators and the training loader's "
                     "place in its epoch restored", RESUMED_EXACTLY)  # fmt: skip
        self.saved_rng = None

    def on_train_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.last_written = time.monotonic()
        if trainer.ckpt_path is None:
            return
        self._restore_rng()
        self.last_step = trainer.global_step  # what last.ckpt holds: not written again at the end
        if not self.best_of_last_path.exists():
            return
        # Resumed: a best.ckpt written after last.ckpt belongs to the lost updates.
        step = load_tensors(self.best_path)["global_step"]
        if step != module.schedule.best_step and trainer.is_global_zero:
            log.info("best.ckpt (update %d) is newer than last.ckpt: restoring the best model "
                     "of update %d", step, module.schedule.best_step)  # fmt: skip
            os.replace(self.best_of_last_path, self.best_path)
            link_atomic(self.best_path, self.best_of_last_path)
        trainer.strategy.barrier()

    def on_train_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if not self.best_path.exists():  # no evaluation happened: the final model is the best
            self._save(trainer, "best")
            module.schedule.best_step = trainer.global_step
        if self.last_step != trainer.global_step:
            self._save(trainer, "last")

    def on_validation_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        decision = self.decisions.decision
        if decision is None or decision.step != trainer.global_step:
            raise RuntimeError(f"no decision of the schedule for update {trainer.global_step}: "
                               "CheckpointWriter must come after ScheduleCallback "
                               "(bockparse.training.callbacks)")  # fmt: skip
        self.evaluations += 1
        self.evaluations_since_last += 1
        if decision.improved:
            self._save(trainer, "best")
        due = (
            decision.switch
            or self.evaluations_since_last >= self.every_evaluations
            or time.monotonic() - self.last_written >= self.every_seconds
        )
        # Under DDP the clocks of the ranks differ: rank 0 decides, so that all ranks save.
        if trainer.strategy.broadcast(due, src=0):
            self._save(trainer, "last")
