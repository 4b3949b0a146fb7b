"""A schedule's state from a checkpoint is validated as a new schedule would hold it (issue 50:
a crafted last.ckpt changed a resumed run's schedule): every state a real schedule reaches is
accepted and restored exactly; a state no schedule with these settings reaches is refused,
naming the key."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bockparse.training.schedule import StanzaSchedule

SETTINGS = dict(
    plateau_patience=20,
    plateau_decay=0.8,
    plateau_threshold=1e-4,
    switch_patience=60,
    switch_step=400,
    stop_patience=60,
    stage2_warmup=30,
    transformer_freeze=20,
    transformer_warmup=30,
    transformer_lr_scale=0.5,
    stage2_transformer_lr_scale=1e-3,
    transformer_weight_decay=0.0,
)


def trajectory(seed: int, every: int = 7):
    """(update, schedule) after each evaluation of a run with noisy, mostly flat dev scores:
    freezes, warm-ups, many decays, the switch and the stop."""
    rng = np.random.default_rng(seed)
    schedule = StanzaSchedule(**SETTINGS)
    for step in range(every, 2000, every):
        decision = schedule.after_evaluation(step, float(50 + 5 * rng.random()))
        yield step, schedule
        if decision.stop:
            return


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_state_a_schedule_reaches_is_accepted_and_restored_exactly(seed):
    decays = 0
    for step, schedule in trajectory(seed):
        state = schedule.state_dict()
        assert schedule.state_problem(state, step) is None, (step, state)
        fresh = StanzaSchedule(**SETTINGS)
        fresh.load_state_dict(state)
        assert fresh.state_dict() == state
        assert [fresh.lr_factor(g) for g in ("parser", "transformer")] == [
            schedule.lr_factor(g) for g in ("parser", "transformer")]  # fmt: skip
        decays = max(decays, round(math.log(state["groups"]["parser"]["multiplier"], 0.8)))
    assert state["stage"] == 2 and decays >= 2  # the trajectory reached what is checked


def reached():
    *_, (step, schedule) = trajectory(0)
    return step, schedule.state_dict()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda s: s["groups"]["parser"].update(decay=1000), "groups.parser: unknown keys 'decay'"),
        (lambda s: s["groups"]["parser"].update(multiplier=1e9), "groups.parser: multiplier="),
        (lambda s: s["groups"]["parser"].update(multiplier=0.5), "groups.parser: multiplier="),
        (lambda s: s["groups"]["transformer"].update(warmed=-1), "groups.transformer: warmed="),
        (lambda s: s["groups"]["parser"].update(bad_steps=10**6), "groups.parser: bad_steps="),
        (lambda s: s["groups"]["parser"].update(steps=3), "groups.parser: steps=3"),
        (lambda s: s.update(stage=3), "stage=3: must be 1 or 2"),
        (lambda s: s.update(stage=True), "stage=True: must be 1 or 2"),
        (lambda s: s.update(best=math.nan), "best=nan"),
        (lambda s: s.update(best=1e9), "best=1000000000.0"),
        (lambda s: s.update(last_evaluation=10**9), "last_evaluation=1000000000: after"),
        (lambda s: s.update(extra=1), "unknown keys 'extra'"),
        (lambda s: s.pop("groups"), "lacks groups"),
        (lambda s: s["groups"].pop("transformer"), "groups: lacks transformer"),
    ],
)
def test_a_state_no_schedule_reaches_is_refused_naming_the_key(change, named):
    step, state = reached()
    change(state)
    problem = StanzaSchedule(**SETTINGS).state_problem(state, step)
    assert problem is not None and problem.startswith(named), problem
    with pytest.raises(ValueError, match="schedule state: "):
        StanzaSchedule(**SETTINGS).load_state_dict(state)
