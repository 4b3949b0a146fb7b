"""The evaluated trees of a run (and a tagger's tags): kept per sentence, gathered from every
rank, written in file order (:class:`PredictionWriter`, a Lightning callback; the module only
predicts and counts); the evaluation of the selected checkpoint on dev and test (:func:`evaluate`).
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
    """Keeps the trees (and the tagger's tags) that each development and test step returns,
    every sentence once per epoch; under DDP gathers every rank's at the epoch's end; writes
    them on request.

    A step returns ``(heads, rels)``, int64 ``[B, N]``, or with a tagger ``(heads, rels,
    tags)``, ``tags`` mapping each predicted tag field (``upos``, ``xpos``, ``feats``) to int64
    ``[B, N]`` tag ids (:meth:`bockparse.training.module.ParserModule.validation_step`).

    Attributes:
        trees: per stage, sentence id -> ``(heads, rels)``, int64 ``[n + 1]`` CPU rows of the
            padded predictions, ``-1`` at ROOT (under DDP a rank's own sentences until the
            epoch's end, then every rank's).
        tags: per stage, sentence id -> tag field -> int64 ``[n + 1]`` CPU row of tag ids (ROOT
            first); empty without a tagger.
    """

    def __init__(self) -> None:
        self.trees: dict[str, dict[int, tuple[torch.Tensor, torch.Tensor]]] = {
            s: {} for s in EVAL_STAGES
        }
        self.tags: dict[str, dict[int, dict[str, torch.Tensor]]] = {s: {} for s in EVAL_STAGES}

    def _keep(self, stage: str, batch: Batch, outputs: Any) -> None:
        heads, rels, *rest = outputs
        tags = rest[0] if rest else {}
        fields = tuple(tags)
        done = self.trees[stage]
        padded = (heads.cpu(), rels.cpu(), *(tags[f].cpu() for f in fields))
        for sid, head_row, rel_row, *tag_rows in sentence_rows(batch, *padded):
            if sid in done:
                raise RuntimeError(f"{stage}: sentence {sid} predicted twice in one epoch")
            done[sid] = (head_row, rel_row)
            if fields:
                self.tags[stage][sid] = dict(zip(fields, tag_rows, strict=True))

    def _gather(self, trainer: pl.Trainer, module: pl.LightningModule, stage: str) -> None:
        """Under DDP, give every rank the trees (and tags) of all ranks (Lightning's
        ``all_gather``).

        Each rank fills int64 ``[S, N_max]`` tables (``S`` sentences of the split; heads,
        relations and each tag field) with its own rows and ``-2`` elsewhere; after the
        gather, every sentence must have exactly one owner (the evaluation samplers deal each
        sentence to one rank, without padding).

        Raises:
            RuntimeError: a sentence predicted by no rank or by several.
        """
        if trainer.world_size == 1:
            return
        done, tagged = self.trees[stage], self.tags[stage]
        tagger = module.scorer.tagger  # its fields: the same on every rank, sentences or none
        fields = () if tagger is None else tagger.columns
        dataset = trainer.datamodule.dataset(stage)
        shape = (len(dataset), int(dataset.lengths.max(initial=0)) + 1)
        tables = torch.full((2 + len(fields), *shape), -2, dtype=torch.long)
        for sid, (heads, rels) in done.items():
            rows = (heads, rels, *(tagged[sid][f] for f in fields))
            for k, row in enumerate(rows):
                tables[k, sid, : len(row)] = row
        gathered = module.all_gather(tables.to(module.device)).cpu()  # [W, 2 + F, S, N_max]
        owned = gathered[:, 0, :, 0] != -2  # ROOT's head is -1 in a predicted row
        owners = owned.sum(0)  # [S]
        if not bool((owners == 1).all()):
            bad = torch.nonzero(owners != 1).flatten().tolist()[:10]
            raise RuntimeError(f"{stage}: sentences {bad} predicted by {owners[bad].tolist()} "
                               "ranks instead of one")  # fmt: skip
        rank_of = owned.long().argmax(0).tolist()
        done.clear()
        tagged.clear()
        for sid, (rank, n) in enumerate(zip(rank_of, dataset.lengths, strict=True)):
            rows = gathered[rank, :, sid, : n + 1]  # [2 + F, n + 1]
            done[sid] = (rows[0], rows[1])
            if fields:
                tagged[sid] = dict(zip(fields, rows[2:], strict=True))

    def on_validation_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.trees["val"].clear()
        self.tags["val"].clear()

    def on_validation_batch_end(self, trainer, module, outputs, batch, batch_idx,
                                dataloader_idx=0) -> None:  # fmt: skip
        self._keep("val", batch, outputs)

    def on_validation_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self._gather(trainer, module, "val")

    def on_test_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.trees["test"].clear()
        self.tags["test"].clear()

    def on_test_batch_end(self, trainer, module, outputs, batch, batch_idx,
                          dataloader_idx=0) -> None:  # fmt: skip
        self._keep("test", batch, outputs)

    def on_test_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self._gather(trainer, module, "test")

    def write(self, trainer: pl.Trainer, stage: str, path: str | Path) -> None:
        """Write the last ``stage`` trees as CoNLL-U in file order (atomically), with the
        tagger's tags in their columns when the model has one; under DDP rank 0 writes the
        predictions gathered from every rank and the others write nothing."""
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
            dict(self.tags[stage]) or None,
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
        ``{"val/uas": ..., ..., "test/lcm": ...}`` and a tagger's ``"val/upos"``, ...
        (:func:`bockparse.metrics.tag_names`): the same on every rank.
    """
    result: dict[str, float] = {}
    for stage, evaluate_stage in (("val", trainer.validate), ("test", trainer.test)):
        evaluate_stage(module, datamodule=datamodule, ckpt_path=str(checkpoint), weights_only=True)
        path = rundir.predictions(run_dir, stage)
        writer.write(trainer, stage, path)
        names = (*NAMES, *module.tag_names)  # a tagger's accuracies beside the trees' scores
        result.update({metric_key(stage, n): module.rates[stage][n] for n in names})
        scores = ", ".join(f"{n.upper()} {module.rates[stage][n]:.2f}" for n in names)
        log.info("%s: %s; predictions in %s", stage, scores, path)
    return result
