"""Stanza 1.15's two-stage schedule and the paper's model selection: one owner for both.

:class:`StanzaSchedule` holds everything the schedule decides and remembers: the stage, the
best dev LAS and its update, the patience counters, and one :class:`WarmupPlateau` per parameter
group (``parser``, ``transformer``) giving that group's learning-rate factor. It does no I/O and
knows nothing of Lightning: the module asks it for the current factors
(:meth:`StanzaSchedule.lr_factor`), saves its :meth:`~StanzaSchedule.state_dict` in every
checkpoint, :class:`.decisions.ScheduleCallback` feeds it each evaluation's dev LAS and carries
out its :class:`Decision` (the reload of the best model, stopping), and
:class:`.checkpoints.CheckpointWriter` writes the checkpoint files the decision asks for.

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

The reload: :mod:`.decisions`; checkpoint files: :mod:`.checkpoints`.
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

    STATE = ("steps", "warmed", "best", "bad_steps", "multiplier")

    def state_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.STATE}

    def state_problem(self, state: Any, steps: int) -> str | None:
        """Why ``state`` (from a checkpoint) cannot be this group's after ``steps`` updates of
        its stage, as a new group with its settings would have it (exactly the keys of
        :meth:`state_dict`, integers and scores in their ranges, the warm-up and the decays
        consistent with ``freeze``, ``warmup``, ``patience`` and ``decay``); ``None`` if it can.
        """
        problem = _keys_problem(state, self.STATE)
        if problem:
            return problem
        for key in ("steps", "warmed", "bad_steps"):
            if not _is_int(state[key]) or state[key] < 0:
                return f"{key}={state[key]!r}: must be an integer at least 0"
        if state["steps"] != steps:
            return f"steps={state['steps']!r}: the schedule's updates in this stage are {steps}"
        warmed = min(self.warmup, max(0, steps - self.freeze))
        if state["warmed"] != warmed:
            return (f"warmed={state['warmed']!r}: after {steps} updates, with this run's freeze "
                    f"{self.freeze} and warm-up {self.warmup}, it is {warmed}")  # fmt: skip
        if state["bad_steps"] > self.patience:
            return (f"bad_steps={state['bad_steps']!r}: must be at most this run's plateau "
                    f"patience {self.patience}")  # fmt: skip
        if not _is_score(state["best"]):
            return f"best={state['best']!r}: must be -inf or a score in [0, 100]"
        if not _is_power(state["multiplier"], self.decay):
            return (f"multiplier={state['multiplier']!r}: must be a power of this run's plateau "
                    f"decay {self.decay} (the product of the decays so far)")  # fmt: skip
        return None

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take the counters of :meth:`state_dict` back (checked: :meth:`state_problem`)."""
        steps = state.get("steps") if isinstance(state, dict) else None
        problem = self.state_problem(state, steps if _is_int(steps) else 0)
        if problem:
            raise ValueError(f"schedule state: {problem}")
        for key in self.STATE:
            setattr(self, key, state[key])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_score(value: Any) -> bool:
    """A dev score (LAS in [0, 100]) or ``-inf`` (none yet)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return value == -math.inf or 0.0 <= value <= 100.0


def _is_power(multiplier: Any, decay: float) -> bool:
    """Whether ``multiplier`` is ``decay ** k`` for an integer ``k >= 0`` (to rounding)."""
    if isinstance(multiplier, bool) or not isinstance(multiplier, int | float):
        return False
    if not 0.0 < multiplier <= 1.0:
        return False
    k = round(math.log(multiplier) / math.log(decay))
    return math.isclose(decay**k, multiplier, rel_tol=1e-9)


def _keys_problem(state: Any, keys: tuple[str, ...]) -> str | None:
    """Why ``state`` is not a mapping with exactly ``keys``; ``None`` if it is."""
    if not isinstance(state, dict):
        return f"must be a mapping, got {type(state).__name__}"
    unknown = [k for k in state if k not in keys]
    missing = [k for k in keys if k not in state]
    if unknown:
        return f"unknown keys {', '.join(map(repr, unknown))} (known: {', '.join(keys)})"
    if missing:
        return f"lacks {', '.join(missing)}"
    return None


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

    def _fresh_groups(self, stage: int | None = None) -> dict[str, WarmupPlateau]:
        """New groups for ``stage`` (default: the current one)."""
        if (stage or self.stage) == 1:
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

    STATE = ("stage", "stage_start", "best", "best_step", "last_improvement", "last_evaluation",
             "groups")  # fmt: skip

    def state_problem(self, state: Any, step: int | None = None) -> str | None:
        """Why ``state`` (from a checkpoint, as data) cannot be this schedule's, as a new
        schedule with these settings could reach it: exactly the keys of :meth:`state_dict`,
        a stage of 1 or 2, update counts that are integers in order (the last evaluation at
        most ``step``, the checkpoint's update count, when given), scores in [0, 100] or
        ``-inf``, and each group's counters as :meth:`WarmupPlateau.state_problem` checks them;
        ``None`` if it can. Names the offending key (``groups.parser.multiplier=...``)."""
        problem = _keys_problem(state, self.STATE)
        if problem:
            return problem
        if state["stage"] not in (1, 2) or not _is_int(state["stage"]):
            return f"stage={state['stage']!r}: must be 1 or 2"
        counts = ("stage_start", "last_improvement", "last_evaluation")
        for key in counts:
            if not _is_int(state[key]) or state[key] < 0:
                return f"{key}={state[key]!r}: must be an integer at least 0"
        last = state["last_evaluation"]
        if step is not None and last > step:
            return f"last_evaluation={last!r}: after the checkpoint's update {step}"
        if state["stage"] == 1 and state["stage_start"] != 0:
            return f"stage_start={state['stage_start']!r}: stage 1 starts at update 0"
        for key in ("stage_start", "last_improvement"):
            if state[key] > last:
                return f"{key}={state[key]!r}: after the last evaluation (update {last})"
        # best_step: the best evaluation's update, -1 before any, or the last update when
        # training ended without an evaluation (CheckpointWriter.on_train_end)
        best, best_step = state["best"], state["best_step"]
        if not _is_int(best_step) or best_step < -1 or (step is not None and best_step > step):
            return f"best_step={best_step!r}: must be an integer from -1 to the last update"
        if not _is_score(best) or (best != -math.inf and not 0 <= best_step <= last):
            return (f"best={best!r}: must be -inf or a score in [0, 100] reached at an "
                    f"evaluation (best_step={best_step!r})")  # fmt: skip
        groups = state["groups"]
        problem = _keys_problem(groups, GROUPS)
        if problem:
            return f"groups: {problem}"
        fresh = self._fresh_groups(state["stage"])
        for name in GROUPS:
            problem = fresh[name].state_problem(groups[name], last - state["stage_start"])
            if problem:
                return f"groups.{name}: {problem}"
        return None

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take the state of :meth:`state_dict` back, checked first (:meth:`state_problem`):
        only known keys, of the right types and in range, ever reach the schedule.

        Raises:
            ValueError: the state could not come from this schedule (the problem named).
        """
        problem = self.state_problem(state)
        if problem:
            raise ValueError(f"schedule state: {problem}")
        for key in self.STATE[:-1]:
            setattr(self, key, state[key])
        self.groups = self._fresh_groups()
        for name, group in state["groups"].items():
            self.groups[name].load_state_dict(group)
