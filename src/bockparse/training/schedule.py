"""Stanza 1.15's two-stage schedule and the paper's model selection: one owner for both.

:class:`StanzaSchedule` holds everything the schedule decides and remembers: the stage, the
best dev LAS and its update, the patience counters, and one :class:`WarmupPlateau` per parameter
group (``parser``, ``transformer``) giving that group's learning-rate factor. It does no I/O and
knows nothing of Lightning: the module asks it for the current factors
(:meth:`StanzaSchedule.lr_factor`), saves its :meth:`~StanzaSchedule.state_dict` in every
checkpoint, and :class:`.checkpoints.ScheduleCallback` feeds it each evaluation's dev LAS and
carries out its :class:`Decision` (checkpoint files, the reload of the best model, stopping).

After every development evaluation (the Bock paper's appendix on training and model selection,
``stanza/models/parser.py:train`` in Stanza 1.15):

* a dev LAS at least as high as the best so far is an improvement (ties prefer the later model,
  ``dev_score >= max(dev_score_history)``) and that model becomes ``best.ckpt``;
* every group's factor advances by the updates since the previous evaluation through Stanza's
  ``WarmupThenPlateauScheduler`` (``stanza/models/common/warmup_plateau_scheduler.py``): the
  transformer is frozen (factor 0) for ``transformer_freeze`` updates, then warmed up linearly
  over ``transformer_warmup``; every group decays by ``plateau_decay`` once more than
  ``plateau_patience`` updates have passed without a relative improvement of
  ``plateau_threshold`` on that scheduler's own best; the factors change only at evaluations,
  as Stanza's do;
* stage 1 (Adadelta) ends when dev LAS has not improved for ``switch_patience`` updates or at
  update ``switch_step``: the best model is reloaded and stage 2 (Adam) starts with fresh
  schedulers, every group warmed up over ``stage2_warmup`` updates (factor 0 until the next
  evaluation, as in Stanza) and the transformer scaled by ``stage2_transformer_lr_scale``;
* stage 2 stops after ``stop_patience`` updates without improvement (``max_steps`` bounds both).

Stanza checks the switch and the stop after every update; here they are checked at
evaluations, which is the same whenever ``eval_every`` divides ``switch_step``,
``switch_patience`` and ``stop_patience`` (the paper's 100 | 2,000 and 10,000).

Checkpoint files and the reload: :mod:`.checkpoints`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

GROUPS = ("parser", "transformer")


class WarmupPlateau:
    """One parameter group's learning-rate factor: Stanza's ``WarmupThenPlateauScheduler``.

    Three phases in updates: ``freeze`` (factor 0), ``warmup`` (the factor rises linearly,
    ``elapsed / warmup``), then plateau (the product of the decays so far). It advances only when
    told how many updates passed (:meth:`advance`, at each evaluation), so the factor is constant
    between evaluations, as in Stanza. Stanza's ``cooldown``, ``min_lr`` and minimum-decay
    ``eps`` are at their defaults there (0, 0, 1e-8) and not modelled here.

    Args:
        freeze: updates at factor 0.
        warmup: updates of linear warm-up after the freeze.
        patience: plateau updates without improvement tolerated (a decay when exceeded).
        decay: the factor's multiplier at each plateau decay.
        threshold: relative improvement needed (Stanza's ``threshold_mode="rel"``, ``mode="max"``).
    """

    def __init__(
        self, *, freeze: int, warmup: int, patience: int, decay: float, threshold: float
    ) -> None:
        if freeze < 0 or warmup < 0 or patience < 0:
            raise ValueError("freeze, warmup and patience are numbers of updates (>= 0)")
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must lie in (0, 1), got {decay}")
        self.freeze, self.warmup, self.patience = freeze, warmup, patience
        self.decay, self.threshold = decay, threshold
        self.steps = 0
        self.warmed = 0
        self.best = -math.inf
        self.bad_steps = 0
        self.multiplier = 1.0

    @property
    def phase(self) -> str:
        if self.steps < self.freeze:
            return "freeze"
        if self.steps < self.freeze + self.warmup:
            return "warmup"
        return "plateau"

    @property
    def factor(self) -> float:
        phase = self.phase
        if phase == "freeze":
            return 0.0
        if phase == "warmup":
            return self.warmed / self.warmup
        return self.multiplier

    def advance(self, steps: int, score: float) -> tuple[bool, bool]:
        """Advance by ``steps`` updates that ended with dev score ``score``.

        Returns:
            ``(unfrozen, decayed)``: whether the freeze ended now (the group's optimiser state
            is then reset, Stanza's ``reset_optimizer_on_unfreeze``), and whether the factor
            decayed.
        """
        if steps <= 0:
            raise ValueError(f"an evaluation must follow at least one update, got {steps}")
        before = self.steps
        was_frozen = self.phase == "freeze"
        self.steps += steps
        unfrozen = was_frozen and self.phase != "freeze"
        start, end = self.freeze, self.freeze + self.warmup
        self.warmed = min(
            self.warmup, self.warmed + max(0, min(self.steps, end) - max(before, start))
        )
        if self.phase != "plateau":
            return unfrozen, False
        if score > self.best * (1.0 + self.threshold):
            self.best, self.bad_steps = score, 0
        else:
            self.bad_steps += self.steps - max(before, end)
        if self.bad_steps > self.patience:
            self.multiplier *= self.decay
            self.bad_steps = 0
            return unfrozen, True
        return unfrozen, False

    def state_dict(self) -> dict[str, Any]:
        keys = ("steps", "warmed", "best", "bad_steps", "multiplier")
        return {k: getattr(self, k) for k in keys}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, value)


@dataclass(frozen=True)
class Decision:
    """What one evaluation decided (:meth:`StanzaSchedule.after_evaluation`)."""

    step: int
    score: float
    improved: bool
    decayed: tuple[str, ...]  # groups whose factor decayed
    unfrozen: tuple[str, ...]  # groups whose freeze ended: reset their optimiser state
    switch: bool  # stage 1 -> 2: reload the best model
    stop: bool
    reason: str  # why the switch or the stop happened ("" otherwise)


class StanzaSchedule:
    """The stage, model selection, the learning-rate factors and the warm-ups of one run.

    Args:
        plateau_patience, plateau_decay, plateau_threshold: every group's plateau decay.
        switch_patience, switch_step: when stage 1 hands over to stage 2.
        stop_patience: stage-2 updates without improvement before stopping.
        stage2_warmup: stage 2's linear warm-up in updates (every group).
        transformer_freeze: stage-1 updates before the transformer's learning rate leaves 0.
        transformer_warmup: stage-1 linear warm-up of the transformer after the freeze.
        transformer_lr_scale: the transformer's learning rate relative to the parser's in stage
            1 (Stanza's ``bert_learning_rate``); ``None`` without a transformer.
        stage2_transformer_lr_scale: the same in stage 2 (``second_bert_learning_rate``).
        transformer_weight_decay: the transformer group's weight decay in both stages
            (``bert_weight_decay``; the parser's comes with each stage's optimiser).
    """

    def __init__(
        self,
        *,
        plateau_patience: int,
        plateau_decay: float,
        plateau_threshold: float,
        switch_patience: int,
        switch_step: int,
        stop_patience: int,
        stage2_warmup: int,
        transformer_freeze: int,
        transformer_warmup: int,
        transformer_lr_scale: float | None,
        stage2_transformer_lr_scale: float,
        transformer_weight_decay: float,
    ) -> None:
        self.plateau = dict(patience=plateau_patience, decay=plateau_decay,
                            threshold=plateau_threshold)  # fmt: skip
        self.switch_patience = switch_patience
        self.switch_step = switch_step
        self.stop_patience = stop_patience
        self.stage2_warmup = stage2_warmup
        self.transformer_freeze = transformer_freeze
        self.transformer_warmup = transformer_warmup
        self.scales = {
            1: 0.0 if transformer_lr_scale is None else transformer_lr_scale,
            2: 0.0 if transformer_lr_scale is None else stage2_transformer_lr_scale,
        }
        self.transformer_weight_decay = transformer_weight_decay
        self.stage = 1
        self.stage_start = 0
        self.best = -math.inf
        self.best_step = -1
        self.last_improvement = 0
        self.last_evaluation = 0
        self.groups = self._fresh_groups()

    def _fresh_groups(self) -> dict[str, WarmupPlateau]:
        if self.stage == 1:
            return {
                "parser": WarmupPlateau(freeze=0, warmup=0, **self.plateau),
                "transformer": WarmupPlateau(freeze=self.transformer_freeze,
                                             warmup=self.transformer_warmup, **self.plateau),
            }  # fmt: skip
        return {
            g: WarmupPlateau(freeze=0, warmup=self.stage2_warmup, **self.plateau) for g in GROUPS
        }

    def group_options(self, group: str) -> dict[str, Any]:
        """Optimiser settings of ``group`` that differ from its stage's optimiser's own."""
        return {"weight_decay": self.transformer_weight_decay} if group == "transformer" else {}

    def lr_factor(self, group: str) -> float:
        """The learning rate of ``group`` (``parser`` or ``transformer``) relative to the active
        optimiser's configured ``lr``: scale times warm-up or freeze times plateau decays."""
        factor = self.groups[group].factor
        return factor * self.scales[self.stage] if group == "transformer" else factor

    def after_evaluation(self, step: int, score: float) -> Decision:
        """Record the dev LAS ``score`` of the model after update ``step`` and decide."""
        improved = score >= self.best
        if improved:
            self.best, self.best_step, self.last_improvement = score, step, step
        decayed, unfrozen = [], []
        for name, group in self.groups.items():
            thawed, decay = group.advance(step - self.last_evaluation, score)
            if thawed:
                unfrozen.append(name)
            if decay:
                decayed.append(name)
        self.last_evaluation = step
        switch = stop = False
        reason = ""
        if self.stage == 1:
            if step - self.last_improvement >= self.switch_patience:
                switch, reason = True, f"no improvement for {step - self.last_improvement} updates"
            elif step >= self.switch_step:
                switch, reason = True, f"update {step} reached switch_step {self.switch_step}"
            if switch:
                self.stage, self.stage_start, self.last_improvement = 2, step, step
                self.groups = self._fresh_groups()
        elif step - self.last_improvement >= self.stop_patience:
            stop, reason = (
                True,
                f"no improvement for {step - self.last_improvement} updates in stage 2",
            )
        return Decision(
            step, score, improved, tuple(decayed), tuple(unfrozen), switch, stop, reason
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "stage_start": self.stage_start,
            "best": self.best,
            "best_step": self.best_step,
            "last_improvement": self.last_improvement,
            "last_evaluation": self.last_evaluation,
            "groups": {name: g.state_dict() for name, g in self.groups.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stage = state["stage"]
        self.stage_start = state["stage_start"]
        self.best = state["best"]
        self.best_step = state["best_step"]
        self.last_improvement = state["last_improvement"]
        self.last_evaluation = state["last_evaluation"]
        self.groups = self._fresh_groups()
        for name, group in state["groups"].items():
            self.groups[name].load_state_dict(group)
