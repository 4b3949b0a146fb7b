"""Per-update trace of a training run, to compare two runs update by update (issue 16).

The Bock paper (§5, "Structured training", and its appendix) leaves open why CL/E- and
Bock-trained parsers' losses differ before the first development evaluation. Its own analysis
says when two trajectories must coincide: identical inputs, and a unique loss-augmented optimum
(a tied one lets two exact oracles select different, equally valid subgradients). The trace
records, at every update, what is needed to test that: the loss; for structured losses, how many
sentences' loss-augmented optima are tied (the second-best tree scores as the best, by
:func:`bockparse.decoders.kbest` with ``k = 2``) and how many maximisers a *shadow* oracle, run
on the very same matrix, would have chosen differently; and a hash of every parameter after the
update. Two runs are identical up to update ``t`` exactly when their hashes agree there.

Off by default (``trace.enabled``); when off, the training step pays one ``is None`` test.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
import time
from pathlib import Path

import lightning.pytorch as pl
import numpy as np
from torch import nn

from ..decoders import get_decoder, kbest
from ..losses.common import LossOutput, OracleCall
from ..predict import decode_heads
from ..rundir import RunFolderError

FIELDS = (
    "update",
    "loss",
    "sentences",
    "tied",
    "disagree",
    "disagree_tied",
    "param_hash",
    "step_seconds",
    "trace_seconds",
)


def parameter_hash(module: nn.Module) -> str:
    """A 64-bit BLAKE2b digest of every parameter's bytes, in ``named_parameters`` order.

    Equal digests mean (up to a 2^-64 chance) bit-identical parameters. Time linear in the
    parameter count (about 1 GB/s).

    Returns:
        16 hexadecimal digits.
    """
    digest = hashlib.blake2b(digest_size=8)
    for name, p in module.named_parameters():
        digest.update(name.encode())
        digest.update(p.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def tied_optima(call: OracleCall, tol: float) -> np.ndarray:
    """Which sentences' loss-augmented optimum is tied.

    Args:
        call: the oracle's problem (``scores`` float32 ``[B, N, N]``, ``lengths``).
        tol: relative tolerance: tied when ``best - second <= tol * max(1, |best|)`` (float64
            tree scores of the float32 matrix).

    Returns:
        bool ``[B]``; a sentence with a single admissible tree is never tied.
    """
    scores = call.scores.double().numpy()
    tied = np.zeros(len(call.lengths), dtype=bool)
    for b, n in enumerate(call.lengths.tolist()):
        best = kbest(scores[b, : n + 1, : n + 1], 2, single_root=call.single_root)
        if len(best) == 2:
            tied[b] = best[0][0] - best[1][0] <= tol * max(1.0, abs(best[0][0]))
    return tied


class TrajectoryTrace:
    """Writes one row per update to a CSV file (``FIELDS``) and returns the numbers to log.

    Args:
        path: the CSV file (the run folder's ``trace.csv``).
        shadow: registry name of the shadow oracle, decoded on the same loss-augmented matrix
            as the run's oracle; ``None``: no disagreement counts.
        tol: the tie tolerance of :func:`tied_optima`.
        ties: count tied optima (one 2-best search per sentence).
        append: keep the rows already in ``path`` (a resumed run); otherwise start it afresh.
    """

    def __init__(
        self, path: str | Path, *, shadow: str | None, tol: float, ties: bool, append: bool
    ) -> None:
        if shadow is not None:
            get_decoder(shadow)
        self.path = Path(path)
        self.shadow = shadow
        self.tol = tol
        self.ties = ties
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not (append and os.path.lexists(self.path))
        self._file = open(self._open(fresh), "w" if fresh else "a", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._file, fieldnames=FIELDS)
        if fresh:
            self._writer.writeheader()
        self.started = False

    def _open(self, fresh: bool) -> int:
        """A descriptor of :attr:`path` opened without following a link: a new file (an old
        one removed first) or, to append, the existing one.

        Raises:
            bockparse.rundir.RunFolderError: the file is a link (planted), or cannot be opened.
        """
        try:
            if fresh:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)  # removes a link there rather than following it
                return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        except OSError as err:
            raise RunFolderError(f"{self.path}: cannot open the trace ({err.strerror}); a trace "
                                 "is never written through a link") from None  # fmt: skip

    def start(self, module: nn.Module, update: int) -> None:
        """Write the row of the parameters before ``update + 1`` (the initialisation when 0)."""
        self._write({"update": update, "param_hash": parameter_hash(module)})
        self.started = True

    def oracle_counts(self, call: OracleCall) -> dict[str, int]:
        """Tied optima, and disagreements with the shadow oracle (all, and on tied
        optima) of one loss-augmented problem."""
        counts = {}
        tied = tied_optima(call, self.tol) if self.ties else None
        if tied is not None:
            counts["tied"] = int(tied.sum())
        if self.shadow is not None:
            other = decode_heads(call.scores, call.lengths, self.shadow,
                                 single_root=call.single_root)  # fmt: skip
            differ = (other != call.heads).any(dim=1).numpy()
            counts["disagree"] = int(differ.sum())
            if tied is not None:
                counts["disagree_tied"] = int((differ & tied).sum())
        return counts

    def record(
        self, update: int, out: LossOutput, sentences: int, module: nn.Module, step_seconds: float
    ) -> dict[str, float]:
        """Trace one update (after the optimiser's step).

        Args:
            update: the update's number (1 for the first).
            out: the loss of the update.
            sentences: sentences in the update's batch.
            module: the model, its parameters already updated.
            step_seconds: wall time of the training step without the trace.

        Returns:
            The numbers to log (``trace/...``): the loss, the counts, the hash's first 48 bits
            as a float (exact), and the trace's own seconds.
        """
        start = time.perf_counter()
        row: dict[str, object] = {"update": update, "loss": repr(out.loss.item())}
        row["sentences"] = sentences
        if out.oracle is not None:
            row.update(self.oracle_counts(out.oracle))
        digest = parameter_hash(module)
        row["param_hash"] = digest
        seconds = time.perf_counter() - start
        row.update(step_seconds=f"{step_seconds:.6f}", trace_seconds=f"{seconds:.6f}")
        self._write(row)
        logged = {k: float(v) for k, v in row.items() if k in ("tied", "disagree", "disagree_tied")}
        logged.update(loss=out.loss.item(), param_hash48=float(int(digest[:12], 16)),
                      seconds=seconds)  # fmt: skip
        return logged

    def _write(self, row: dict[str, object]) -> None:
        self._writer.writerow(row)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class TraceCallback(pl.Callback):
    """Runs a :class:`TrajectoryTrace` around every update: the parameters before the first one,
    then a row after each (from the module's ``last_output``), logged as ``trace/*``; the file
    is closed when training ends.

    Args:
        trace: the trace to write.
    """

    def __init__(self, trace: TrajectoryTrace) -> None:
        self.trace = trace
        self._start = 0.0

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self._start = time.perf_counter()
        if not self.trace.started:
            self.trace.start(module, trainer.global_step)  # the parameters before this update

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        seconds = time.perf_counter() - self._start
        size = len(batch)  # global_step counts this update already
        traced = self.trace.record(trainer.global_step, module.last_output, size, module, seconds)
        for name, value in traced.items():
            module.log(f"trace/{name}", value, batch_size=size)

    def on_train_end(self, trainer, module) -> None:
        self.trace.close()
