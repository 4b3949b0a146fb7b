"""The evaluated trees of a run: kept per sentence, gathered from every rank, written in file
order (:class:`PredictionWriter`, a Lightning callback; the module only predicts and counts);
the evaluation of the selected checkpoint on dev and test (:func:`evaluate`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch

from .. import rundir
from ..data.batch import Batch
from ..metrics import NAMES, metric_key
from ..predict import sentence_rows

log = logging.getLogger("bockparse.training.predictions")

EVAL_STAGES = ("val", "test")


class PredictionWriter(pl.Callback):
    """Keeps the trees that each development and test step returns, every sentence once per
    epoch; under DDP gathers every rank's at the epoch's end; writes them on request.

    Attributes:
        trees: per stage, sentence id -> ``(heads, rels)``, int64 ``[n + 1]`` CPU rows of the
            padded predictions, ``-1`` at ROOT (under DDP a rank's own sentences until the
            epoch's end, then every rank's).
    """

    def __init__(self) -> None:
        self.trees: dict[str, dict[int, tuple[torch.Tensor, torch.Tensor]]] = {
            s: {} for s in EVAL_STAGES
        }

    def _keep(self, stage: str, batch: Batch, outputs: Any) -> None:
        heads, rels = (t.cpu() for t in outputs)
        done = self.trees[stage]
        for sid, head_row, rel_row in sentence_rows(batch, heads, rels):
            if sid in done:
                raise RuntimeError(f"{stage}: sentence {sid} predicted twice in one epoch")
            done[sid] = (head_row, rel_row)

    def _gather(self, trainer: pl.Trainer, module: pl.LightningModule, stage: str) -> None:
        """Under DDP, give every rank the trees of all ranks (Lightning's ``all_gather``).

        Each rank fills an int64 ``[S, N_max]`` table (``S`` sentences of the split) with its
        own trees and ``-2`` elsewhere; after the gather, every sentence must have exactly one
        owner (the evaluation samplers deal each sentence to one rank, without padding).

        Raises:
            RuntimeError: a sentence predicted by no rank or by several.
        """
        if trainer.world_size == 1:
            return
        done = self.trees[stage]
        dataset = trainer.datamodule.dataset(stage)
        shape = (len(dataset), int(dataset.lengths.max(initial=0)) + 1)
        tables = torch.full((2, *shape), -2, dtype=torch.long)  # heads, rels
        for sid, (heads, rels) in done.items():
            tables[0, sid, : len(heads)] = heads
            tables[1, sid, : len(rels)] = rels
        gathered = module.all_gather(tables.to(module.device)).cpu()  # [W, 2, S, N_max]
        owned = gathered[:, 0, :, 0] != -2  # ROOT's head is -1 in a predicted row
        owners = owned.sum(0)  # [S]
        if not bool((owners == 1).all()):
            bad = torch.nonzero(owners != 1).flatten().tolist()[:10]
            raise RuntimeError(f"{stage}: sentences {bad} predicted by {owners[bad].tolist()} "
                               "ranks instead of one")  # fmt: skip
        rank_of = owned.long().argmax(0).tolist()
        done.clear()
        for sid, (rank, n) in enumerate(zip(rank_of, dataset.lengths, strict=True)):
            done[sid] = (gathered[rank, 0, sid, : n + 1], gathered[rank, 1, sid, : n + 1])

    def on_validation_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.trees["val"].clear()

    def on_validation_batch_end(self, trainer, module, outputs, batch, batch_idx,
                                dataloader_idx=0) -> None:  # fmt: skip
        self._keep("val", batch, outputs)

    def on_validation_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self._gather(trainer, module, "val")

    def on_test_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.trees["test"].clear()

    def on_test_batch_end(self, trainer, module, outputs, batch, batch_idx,
                          dataloader_idx=0) -> None:  # fmt: skip
        self._keep("test", batch, outputs)

    def on_test_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self._gather(trainer, module, "test")

    def write(self, trainer: pl.Trainer, stage: str, path: str | Path) -> None:
        """Write the last ``stage`` trees as CoNLL-U in file order (atomically); under DDP rank
        0 writes the trees gathered from every rank and the others write nothing."""
        from ..data.dataset import write_predictions

        if not trainer.is_global_zero:
            return
        done = self.trees[stage]
        dataset = trainer.datamodule.dataset(stage)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_predictions(
            path,
            dataset,
            {sid: h.numpy() for sid, (h, _) in done.items()},
            {sid: r.numpy() for sid, (_, r) in done.items()},
        )


def evaluate(
    trainer: pl.Trainer,
    module: pl.LightningModule,
    datamodule: pl.LightningDataModule,
    writer: PredictionWriter,
    checkpoint: Path,
    run_dir: Path,
) -> dict[str, float]:
    """Evaluate ``checkpoint`` on dev and test with ``module`` (a
    :class:`~bockparse.training.module.ParserModule`) and write ``predictions/{val,test}.conllu``
    in ``run_dir`` through ``writer`` (rank 0 alone under DDP, with the trees of every rank).

    Returns:
        ``{"val/uas": ..., ..., "test/lcm": ...}``: the same on every rank.
    """
    result: dict[str, float] = {}
    for stage, evaluate_stage in (("val", trainer.validate), ("test", trainer.test)):
        evaluate_stage(module, datamodule=datamodule, ckpt_path=str(checkpoint), weights_only=True)
        path = rundir.predictions(run_dir, stage)
        writer.write(trainer, stage, path)
        result.update({metric_key(stage, n): module.rates[stage][n] for n in NAMES})
        scores = ", ".join(f"{n.upper()} {module.rates[stage][n]:.2f}" for n in NAMES)
        log.info("%s: %s; predictions in %s", stage, scores, path)
    return result
