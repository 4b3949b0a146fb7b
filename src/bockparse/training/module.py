"""The LightningModule: it wires the scorer, the loss, the decoder, the metrics and the optimisers.

Training follows the Bock paper's protocol (§5 and its appendix): the condition's loss in
``training_step``; development and test batches decoded with the condition's decoder under the
single-root constraint; Stanza's two optimisers, stage 1 (Adadelta) then stage 2 (Adam). The
stage, the learning-rate factors, the freeze and the warm-ups belong to the run's
:class:`bockparse.training.schedule.StanzaSchedule`, which the module asks for the current
learning rates and saves in every checkpoint. Optimisation is manual so that the active stage
and the learning rates are explicit. Every number comes from ``conf/optim``.

A scorer with a joint tagger (``model.tagger``) adds its loss to the condition's (in the losses)
and is evaluated on its tags too: the development and test trees are parsed from the tags it
predicts, its UPOS, XPOS, UFeats (and AllTags) accuracies are logged beside the attachment
scores (:func:`bockparse.metrics.tag_counts`, the CoNLL 2018 evaluator's), and the steps return
the tags for the prediction files.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import lightning.pytorch as pl
import torch
from torch import nn

from .. import compat
from .. import predict as prediction
from ..attachment import AttachmentScores, TagAccuracy
from ..data.batch import Batch
from ..data.vocab import base_relation_ids
from ..decoders import get_decoder
from ..heads import ParserHead
from ..losses import LossOutput
from ..metrics import NAMES, batch_counts, check_punct_exclusion, metric_key, tag_counts, tag_names
from ..model.tagger import TagScores
from .predictions import EVAL_STAGES
from .schedule import StanzaSchedule


class ParserModule(pl.LightningModule):
    """Scorer + loss + decoder, trained with Stanza's two-stage schedule.

    Args:
        scorer: the parser head (:class:`bockparse.heads.ParserHead`): maps a ``Batch`` to the
            scores the loss takes.
        loss: ``loss(scores, batch) -> LossOutput``.
        decoder: registry name of the decoder for development and test predictions; ``None``
            for a head that predicts trees itself with ``scorer.predict(batch)`` (the
            transition parsers of :mod:`bockparse.heads.transition`).
        relations: relation labels, the scorer's ``R`` classes in order.
        stage1, stage2: optimiser factories (``torch.optim`` classes with their settings bound,
            Hydra ``_partial_``), called with parameter groups.
        schedule: the stage, the learning-rate factors and the warm-ups (Stanza's schedule).
        max_grad_norm: gradient clipping by norm.
        exclude_punct: a punctuation exclusion of :mod:`bockparse.metrics` for the dev/test
            scores, or ``None`` (punctuation included, as in the paper's main results).

    Attributes:
        last_output: the last update's ``LossOutput`` (the per-update trace reads it:
            :class:`.trajectory.TraceCallback`).
        rates: per stage, the last evaluation's scores (UAS, LAS, LCM; and the tagger's
            accuracies, :func:`bockparse.metrics.tag_names`).
    """

    def __init__(
        self,
        *,
        scorer: ParserHead,
        loss: Callable[[Any, Batch], LossOutput],
        decoder: str | None,
        relations: Sequence[str],
        stage1: Callable[..., torch.optim.Optimizer],
        stage2: Callable[..., torch.optim.Optimizer],
        schedule: StanzaSchedule,
        max_grad_norm: float,
        exclude_punct: str | None,
    ) -> None:
        super().__init__()
        decodes_itself = scorer.predict is not None
        if decoder is not None:
            get_decoder(decoder)
            if decodes_itself:
                raise ValueError(
                    f"the {scorer.kind} head predicts its trees itself, so it takes no graph "
                    f"decoder (got decoder={decoder}); loss=transition sets decoder=null"
                )
        elif not decodes_itself:
            raise ValueError(f"decoder is null but the {scorer.kind} head has no predict(batch) "
                             "of its own: set a decoder")  # fmt: skip
        self.automatic_optimization = False
        self.scorer = scorer
        self.loss = loss
        self.decoder = decoder
        self.relations = list(relations)
        self.stage1, self.stage2 = stage1, stage2
        self.schedule = schedule
        self.max_grad_norm = max_grad_norm
        self.exclude_punct = exclude_punct
        self.last_output: LossOutput | None = None
        self.metrics = nn.ModuleDict({s: AttachmentScores() for s in EVAL_STAGES})
        self.tag_names = tag_names(scorer.tagger.columns) if scorer.tagger is not None else ()
        self.tag_accuracy = (
            nn.ModuleDict({s: TagAccuracy(self.tag_names) for s in EVAL_STAGES})
            if self.tag_names
            else None
        )
        self.decode_seconds = 0.0
        # LAS compares base relations: the base id of each relation id (not saved: derived).
        self.register_buffer(
            "base_of",
            torch.tensor(base_relation_ids(self.relations)[1], dtype=torch.long),
            persistent=False,
        )
        self.rates: dict[str, dict[str, float]] = {}  # last rates per stage, full precision

    # -- optimisation -------------------------------------------------------------------------

    @property
    def stage(self) -> int:
        """The active stage (1: Adadelta, 2: Adam), as the schedule says."""
        return self.schedule.stage

    def _groups(self) -> list[dict[str, Any]]:
        encoder = self.scorer.encoder
        inner = {id(p) for p in encoder.parameters()} if encoder is not None else set()
        rest = [p for p in self.parameters() if id(p) not in inner]
        groups = [{"params": rest, "name": "parser", **self.schedule.group_options("parser")}]
        if inner:
            groups.append({"params": list(encoder.parameters()), "name": "transformer",
                           **self.schedule.group_options("transformer")})  # fmt: skip
        return groups

    def configure_optimizers(self):
        return [self.stage1(self._groups()), self.stage2(self._groups())]

    def _optimizer(self) -> torch.optim.Optimizer:
        """The active stage's optimiser (the bare ``torch.optim`` one)."""
        optimizer = self.optimizers()[self.stage - 1]
        return getattr(optimizer, "optimizer", optimizer)

    def reset_optimizer_state(self, group: str) -> None:
        """Forget the active optimiser's state for ``group``'s parameters (the schedule asks for
        it when a frozen group starts training, Stanza's ``reset_optimizer_on_unfreeze``)."""
        optimizer = self._optimizer()
        for param_group in optimizer.param_groups:
            if param_group["name"] == group:
                for p in param_group["params"]:
                    optimizer.state.pop(p, None)

    def drop_stage1_state(self) -> None:
        """Forget stage 1's optimiser state at the switch: Adadelta never steps again (Stanza
        builds a new optimiser there too), so ``last.ckpt`` need not carry its two tensors per
        parameter (twice the weights)."""
        optimizer = self.optimizers()[0]
        getattr(optimizer, "optimizer", optimizer).state.clear()

    def _set_learning_rates(self, optimizer: torch.optim.Optimizer) -> None:
        for group in optimizer.param_groups:
            base = group.setdefault("base_lr", group["lr"])
            group["lr"] = base * self.schedule.lr_factor(group["name"])

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        optimizer = self.optimizers()[self.stage - 1]
        out = self.loss(self.scorer(batch), batch)
        if not torch.isfinite(out.loss):
            raise FloatingPointError(
                f"training loss is {out.loss.item()} at update {self.global_step}: "
                "lower the learning rate or check the data"
            )
        optimizer.zero_grad()
        self.manual_backward(out.loss)
        self.clip_gradients(optimizer, gradient_clip_val=self.max_grad_norm,
                            gradient_clip_algorithm="norm")  # fmt: skip
        self._set_learning_rates(optimizer.optimizer)
        optimizer.step()
        self.decode_seconds += out.decode_seconds
        size = len(batch)
        self.log("train/loss", out.loss.detach(), prog_bar=True, batch_size=size)
        self.log("train/decode_seconds", out.decode_seconds, batch_size=size)
        self.log("train/stage", float(self.stage), batch_size=size)
        if out.tag is not None:
            self.log("train/tag_loss", out.tag, batch_size=size)
        for name, value in out.counts.items():  # per-epoch sums, e.g. sentences skipped
            self.log(f"train/{name}", float(value), on_step=False, on_epoch=True,
                     reduce_fx="sum", batch_size=size)  # fmt: skip
        for group in optimizer.optimizer.param_groups:
            self.log(f"lr/{group['name']}", group["lr"], batch_size=size)
        self.last_output = out
        return out.loss.detach()

    # -- evaluation ---------------------------------------------------------------------------

    def predict_trees(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, TagScores | None]:
        """Heads (the run's decoder, single root) and relations (best at the predicted head) by
        :func:`bockparse.predict.predict_trees`; with no decoder, the scorer's own
        ``predict(batch)``. Adds the time to ``decode_seconds`` (the scorer's own prediction
        timed whole, encoder included; otherwise decoding and relations only). A tagger
        model's trees are parsed from the tags it predicts.

        Returns:
            int64 ``[B, N]`` heads and relation ids on the batch's device, ``-1`` at ROOT and
            padding, and the tagger's scores (``None`` without a tagger).
        """
        if self.decoder is None:
            start = time.perf_counter()
            heads, rels, tags = self.scorer.predict(batch)
        else:
            scores = self.scorer(batch)
            tags = scores.tags
            start = time.perf_counter()
            heads, rels = prediction.predict_trees(scores, batch.lengths, self.decoder)
        self.decode_seconds += time.perf_counter() - start
        return heads, rels, tags

    def _evaluate(self, stage: str, batch: Batch) -> tuple[torch.Tensor, ...]:
        """Predict a batch and add its counts to the stage's metrics; returns the trees, and a
        tagger's tags (tag field -> int64 ``[B, N]`` ids), for the
        :class:`.predictions.PredictionWriter`."""
        heads, rels, tags = self.predict_trees(batch)
        exclude = self.exclude_punct is not None
        counts = batch_counts(heads, rels, batch, self.base_of, exclude)
        self.metrics[stage].update(counts)
        if tags is None:
            return heads, rels
        predicted = tags.predicted()
        self.tag_accuracy[stage].update(int(counts[0]), self._tag_counts(stage, batch, predicted))
        return heads, rels, predicted

    def _tag_counts(
        self, stage: str, batch: Batch, predicted: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        """:func:`bockparse.metrics.tag_counts` of a batch's predicted tags against the gold
        sentences of the stage's dataset (the CoNLL 2018 evaluator's UFeats among them), with
        the run's punctuation exclusion."""
        dataset = self.trainer.datamodule.dataset(stage)
        fields = tuple(predicted)
        rows = prediction.sentence_rows(batch, *(predicted[f].cpu() for f in fields))
        gold, pred = [], []
        for sid, *tag_rows in rows:
            sentence = dataset.sentences[sid]
            values = {f: getattr(dataset.vocabs, f).tokens(row[1:].tolist())
                      for f, row in zip(fields, tag_rows, strict=True)}  # fmt: skip
            gold.append(sentence)
            pred.append(replace(sentence, **values))
        return tag_counts(gold, pred, self.exclude_punct)

    def _check_punct(self) -> None:
        """A punctuation exclusion must be the one the data marks in ``Batch.punct``."""
        if self.exclude_punct is not None:
            dm = self.trainer.datamodule
            check_punct_exclusion(self.exclude_punct, dm.punct_field, dm.punct_tags)

    def _log_scores(self, stage: str) -> None:
        scores = self.metrics[stage].compute()
        if self.tag_accuracy is not None:
            scores.update(self.tag_accuracy[stage].compute())
            self.tag_accuracy[stage].reset()
        self.rates[stage] = scores
        for name in (*NAMES, *self.tag_names):
            self.log(metric_key(stage, name), scores[name], prog_bar=name == "las")
        self.log(metric_key(stage, "decode_seconds"), self.decode_seconds)
        self.metrics[stage].reset()

    def on_validation_epoch_start(self) -> None:
        self._check_punct()

    def validation_step(self, batch: Batch, batch_idx: int) -> tuple[torch.Tensor, ...]:
        return self._evaluate("val", batch)

    def on_validation_epoch_end(self) -> None:
        self._log_scores("val")

    def on_test_epoch_start(self) -> None:
        self._check_punct()

    def test_step(self, batch: Batch, batch_idx: int) -> tuple[torch.Tensor, ...]:
        return self._evaluate("test", batch)

    def on_test_epoch_end(self) -> None:
        self._log_scores("test")

    # -- checkpoints --------------------------------------------------------------------------

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["bockparse"] = {
            "schedule": self.schedule.state_dict(),
            "decode_seconds": self.decode_seconds,
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint["bockparse"]
        if (schedule := compat.schedule_state(state)) is not None:  # (None: an earlier version's)
            self.schedule.load_state_dict(schedule)
        self.decode_seconds = state["decode_seconds"]
