"""Stanza's schedule (bockparse.training.schedule) on scripted dev scores and a fake trainer:
plateau decay, the freeze and warm-ups, the switch by patience and by step with the best model
reloaded, the stop, ties, checkpoint files (the decisions carried out by ScheduleCallback, the
files written by CheckpointWriter after it) and a resume in the middle of stage 2."""

from __future__ import annotations

import io
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from bockparse.training.checkpoints import CheckpointWriter
from bockparse.training.decisions import ScheduleCallback
from bockparse.training.schedule import StanzaSchedule, WarmupPlateau

SETTINGS = dict(
    plateau_patience=200,
    plateau_decay=0.5,
    plateau_threshold=1e-4,
    switch_patience=400,
    switch_step=1000,
    stop_patience=300,
    stage2_warmup=200,
    transformer_freeze=200,
    transformer_warmup=200,
    transformer_lr_scale=0.5,
    stage2_transformer_lr_scale=1e-3,
    transformer_weight_decay=0.0,
)


def schedule(**changes) -> StanzaSchedule:
    return StanzaSchedule(**{**SETTINGS, **changes})


def replay(s: StanzaSchedule, scores, start: int = 100, every: int = 100):
    """Feed ``scores`` at updates start, start + every, ...; the decisions and factors."""
    out = []
    for i, score in enumerate(scores):
        d = s.after_evaluation(start + i * every, score)
        out.append((d, s.stage, s.lr_factor("parser"), s.lr_factor("transformer")))
        if d.stop:
            break
    return out


def test_plateau_decays_after_more_than_patience_updates_without_improvement():
    s = schedule(switch_step=10**6, switch_patience=10**6)
    out = replay(s, [50.0, 60.0, 60.0, 59.0, 60.0, 60.0, 60.0, 59.0])
    decayed = [d.step for d, *_ in out if "parser" in d.decayed]
    # the best of 60 at 200; 300 bad updates (> 200) at update 500, again at update 800
    assert decayed == [500, 800]
    assert [f for _, _, f, _ in out] == [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.25]


def test_plateau_needs_a_relative_improvement_of_threshold():
    s = schedule(switch_step=10**6, switch_patience=10**6, plateau_threshold=0.01)
    out = replay(s, [50.0, 50.4, 50.4, 50.45])  # +0.8 % and +0.9 %: no improvement
    assert [d.decayed for d, *_ in out] == [(), (), (), ("parser",)]
    assert [d.improved for d, *_ in out] == [True, True, True, True]  # model selection: >=


def test_transformer_frozen_then_warmed_up_then_scaled():
    s = schedule(switch_step=10**6, switch_patience=10**6)
    assert s.lr_factor("transformer") == 0.0 and s.lr_factor("parser") == 1.0
    out = replay(s, [10.0, 20.0, 30.0, 40.0, 50.0])
    # frozen for 200 updates; at update 200 the warm-up starts at 0 (Stanza), 0.5 at 300, 1 at 400
    assert [t for *_, t in out] == [0.0, 0.0, 0.25, 0.5, 0.5]
    assert [d.unfrozen for d, *_ in out] == [(), ("transformer",), (), (), ()]


def test_switch_by_patience_then_stage_two_warmup_and_scale():
    s = schedule(switch_step=10**6)
    out = replay(s, [50.0, 70.0, 60.0, 60.0, 60.0, 60.0, 80.0, 80.0])
    switches = [d for d, *_ in out if d.switch]
    assert [d.step for d in switches] == [600]  # 400 updates after the best at 200
    assert "no improvement" in switches[0].reason
    stage2 = [(st, p, t) for d, st, p, t in out if d.step >= 600]
    # at the switch every group's factor is 0 until the next evaluation, then 0.5, then 1
    assert stage2 == [(2, 0.0, 0.0), (2, 0.5, 0.5e-3), (2, 1.0, 1e-3)]


def test_switch_by_step():
    s = schedule(switch_step=300)
    out = replay(s, [50.0, 60.0, 70.0, 80.0])
    assert [(d.step, d.switch) for d, *_ in out if d.switch] == [(300, True)]
    assert "switch_step" in out[2][0].reason and s.stage == 2 and s.stage_start == 300


def test_stop_only_in_stage_two():
    s = schedule(switch_step=200, stop_patience=300)
    out = replay(s, [50.0, 60.0] + [55.0] * 10)
    assert [d.step for d, *_ in out if d.switch] == [200]
    assert out[-1][0].stop and out[-1][0].step == 500  # 300 updates after the switch
    assert "stage 2" in out[-1][0].reason
    s = schedule(switch_step=10**6, switch_patience=10**6, stop_patience=100)
    assert not any(d.stop for d, *_ in replay(s, [50.0] + [40.0] * 10))


def test_ties_prefer_the_later_model():
    s = schedule()
    out = replay(s, [70.0, 70.0, 65.0, 70.0])
    assert [d.improved for d, *_ in out] == [True, True, False, True]
    assert s.best_step == 400 and s.best == 70.0


def test_resume_in_stage_two_decides_as_an_uninterrupted_run():
    rng = np.random.default_rng(7)
    scores = np.round(60 + np.cumsum(rng.normal(0.2, 1.0, size=60)), 1).tolist()
    whole = replay(schedule(switch_step=1500), scores)
    assert any(d.switch for d, *_ in whole) and whole[-1][0].stop
    cut = next(i for i, (d, st, *_) in enumerate(whole) if st == 2 and not d.switch) + 2
    first = schedule(switch_step=1500)
    head = replay(first, scores[:cut])
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)  # through a checkpoint file
    buffer.seek(0)
    resumed = schedule(switch_step=1500)
    resumed.load_state_dict(torch.load(buffer, weights_only=False))
    assert resumed.stage == 2
    tail = replay(resumed, scores[cut:], start=100 * (cut + 1))
    assert head + tail == whole


@pytest.mark.parametrize(
    ("freeze", "warmup", "patience"), [(0, 0, 200), (200, 200, 200), (500, 500, 500), (0, 200, 300)]
)
def test_warmup_plateau_matches_stanza(freeze, warmup, patience):
    stanza = pytest.importorskip("stanza.models.common.warmup_plateau_scheduler")
    rng = np.random.default_rng(freeze + warmup + patience)
    scores = np.round(0.5 + np.cumsum(rng.normal(0.002, 0.01, size=80)), 3)
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    theirs = stanza.WarmupThenPlateauScheduler(
        optimizer, num_freeze_steps=freeze, num_warmup_steps=warmup, mode="max", factor=0.8,
        patience=patience, reset_optimizer_on_unfreeze=True,
    )  # fmt: skip
    ours = WarmupPlateau(freeze=freeze, warmup=warmup, patience=patience, decay=0.8, threshold=1e-4)
    assert ours.factor == optimizer.param_groups[0]["lr"]
    for score in scores:
        theirs.step(num_steps=100, metrics=float(score))
        ours.advance(100, float(score))
        assert math.isclose(ours.factor, optimizer.param_groups[0]["lr"], rel_tol=1e-12)


# -- the callback on a fake trainer -------------------------------------------------------------


class FakeModule(nn.Module):
    """A one-weight model whose weight records the update it was last trained at."""

    def __init__(self, s: StanzaSchedule) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(()))
        self.schedule = s
        self.resets: list[str] = []
        self.stage1_dropped_at: list[int] = []

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def reset_optimizer_state(self, group: str) -> None:
        self.resets.append(group)

    def drop_stage1_state(self) -> None:
        self.stage1_dropped_at.append(int(self.weight.item()))  # the reloaded model's update


class FakeTrainer:
    """What ScheduleCallback and CheckpointWriter read and call on a Lightning trainer."""

    sanity_checking = False
    is_global_zero = True

    def __init__(self, module: FakeModule, ckpt_path: Path | None = None) -> None:
        self.module = module
        self.state = SimpleNamespace(fn="fit")
        # one process: broadcast hands back what it is given (rank_zero_due: rank 0's clock)
        self.rank_zero_due: bool | None = None
        self.strategy = SimpleNamespace(barrier=lambda: None, broadcast=self._broadcast)
        self.global_step = 0
        self.callback_metrics: dict[str, torch.Tensor] = {}
        self.should_stop = False
        self.ckpt_path = ckpt_path

    def _broadcast(self, obj, src=0):
        return obj if self.rank_zero_due is None else self.rank_zero_due

    def save_checkpoint(self, path, weights_only):
        checkpoint = {
            "state_dict": self.module.state_dict(),
            "global_step": self.global_step,
            "bockparse": {"schedule": self.module.schedule.state_dict()},
        }
        if not weights_only:
            checkpoint["optimizer_states"] = [{"state": torch.ones(1000)}]
        torch.save(checkpoint, path)


def writer(folder: Path, **last_checkpoint) -> CheckpointWriter:
    """A checkpoint writer in ``folder`` with its own ScheduleCallback (``writer.decisions``)."""
    return CheckpointWriter(folder, ScheduleCallback(folder / "best.ckpt"), **last_checkpoint)


def train(callback, trainer, module, scores, start=100, every=100):
    """Evaluate after updates start, start + every, ...; the weight is the update's number;
    the decisions, then the writes (the order of bockparse.training.callbacks)."""
    for i, score in enumerate(scores):
        step = start + i * every
        trainer.global_step = step
        module.weight.data.fill_(float(step))
        trainer.callback_metrics = {"val/las": torch.tensor(score)}
        callback.decisions.on_validation_end(trainer, module)
        callback.on_validation_end(trainer, module)
        if trainer.should_stop:
            break


def load(path: Path) -> dict:
    return torch.load(path, weights_only=False)


def test_best_on_improvement_weights_only_and_the_switch_reloads_it(tmp_path):
    module = FakeModule(schedule(switch_patience=300, switch_step=10**6))
    trainer = FakeTrainer(module)
    callback = writer(tmp_path, every_evaluations=None, every_minutes=60)
    train(callback, trainer, module, [50.0, 70.0, 60.0, 60.0, 60.0])
    # the switch at 500 (300 updates after the best at 200) reloaded the model of update 200
    assert module.schedule.stage == 2 and module.weight.item() == 200.0
    best = load(callback.best_path)
    assert best["global_step"] == 200 and "optimizer_states" not in best
    last = load(callback.last_path)  # written at the switch only
    assert last["global_step"] == 500 and "optimizer_states" in last
    assert last["bockparse"]["schedule"]["stage"] == 2
    assert callback.bytes_written["best"] == 2 * callback.best_path.stat().st_size
    assert callback.bytes_written["last"] == callback.last_path.stat().st_size
    assert module.resets == ["transformer"]  # the freeze (200 updates) ended at update 200
    assert module.stage1_dropped_at == [200]  # once, after the reload
    assert not list(tmp_path.glob("*.tmp"))


def test_stop_sets_should_stop_and_last_at_the_interval(tmp_path):
    module = FakeModule(schedule(switch_step=200, stop_patience=300))
    trainer = FakeTrainer(module)
    callback = writer(tmp_path, every_evaluations=2, every_minutes=60)
    train(callback, trainer, module, [50.0, 60.0] + [55.0] * 10)
    assert trainer.should_stop and trainer.global_step == 500
    assert "stage 2" in callback.decisions.stop_reason
    # switch at 200 (written), then every second evaluation: 400
    assert load(callback.last_path)["global_step"] == 400
    callback.on_train_end(trainer, module)  # the end of training: always written
    assert load(callback.last_path)["global_step"] == 500


def test_last_every_minutes(tmp_path):
    module = FakeModule(schedule())
    trainer = FakeTrainer(module)
    callback = writer(tmp_path, every_evaluations=None, every_minutes=0)
    train(callback, trainer, module, [50.0, 40.0, 30.0])
    assert load(callback.last_path)["global_step"] == 300
    assert callback.writes == {"best": 1, "last": 3}


def test_rank_zero_decides_when_last_is_due(tmp_path):
    """Under DDP the time-based write follows rank 0's clock, on every rank alike."""
    module = FakeModule(schedule())
    trainer = FakeTrainer(module)
    callback = writer(tmp_path, every_evaluations=None, every_minutes=60)
    trainer.rank_zero_due = True  # rank 0's interval has passed, this rank's has not
    train(callback, trainer, module, [50.0])
    assert callback.writes["last"] == 1
    trainer.rank_zero_due = False  # and the other way round
    callback.every_seconds = 0.0
    train(callback, trainer, module, [40.0], start=200)
    assert callback.writes["last"] == 1


def test_resume_restores_the_best_model_that_last_ckpt_knows(tmp_path):
    module = FakeModule(schedule(switch_step=10**6))
    trainer = FakeTrainer(module)
    callback = writer(tmp_path, every_evaluations=2, every_minutes=60)
    train(callback, trainer, module, [50.0, 60.0, 70.0])  # last at 200, a new best at 300
    assert load(callback.best_path)["global_step"] == 300
    # killed here; the resumed run restores last.ckpt (update 200, best at 200)
    resumed = FakeModule(schedule(switch_step=10**6))
    last = load(callback.last_path)
    resumed.load_state_dict(last["state_dict"])
    resumed.schedule.load_state_dict(last["bockparse"]["schedule"])
    again = writer(tmp_path, every_evaluations=2, every_minutes=60)
    again.on_train_start(FakeTrainer(resumed, ckpt_path=callback.last_path), resumed)
    best = load(again.best_path)
    assert best["global_step"] == 200 and best["state_dict"]["weight"].item() == 200.0
    assert load(again.best_of_last_path)["global_step"] == 200


def test_a_switch_that_comes_with_an_improvement_keeps_the_model_that_best_ckpt_holds(tmp_path):
    """The decisions come before the writes: at a switch on a new best the model just evaluated
    is the best model (written to best.ckpt after the decision), and last.ckpt holds it."""
    module = FakeModule(schedule(switch_step=200))
    trainer = FakeTrainer(module)
    callback = writer(tmp_path, every_evaluations=None, every_minutes=60)
    train(callback, trainer, module, [50.0, 60.0])
    assert callback.decisions.decision.switch and callback.decisions.decision.improved
    best, last = load(callback.best_path), load(callback.last_path)
    assert best["global_step"] == last["global_step"] == 200
    assert best["state_dict"]["weight"].item() == last["state_dict"]["weight"].item() == 200.0
    assert last["bockparse"]["schedule"]["stage"] == 2 and module.stage1_dropped_at == [200]


def test_the_writer_refuses_an_evaluation_the_schedule_has_not_decided(tmp_path):
    module = FakeModule(schedule())
    trainer = FakeTrainer(module)
    callback = writer(tmp_path, every_evaluations=None, every_minutes=60)
    trainer.global_step = 100
    trainer.callback_metrics = {"val/las": torch.tensor(50.0)}
    with pytest.raises(RuntimeError, match="must come after ScheduleCallback"):
        callback.on_validation_end(trainer, module)  # before any decision
    callback.decisions.on_validation_end(trainer, module)
    callback.on_validation_end(trainer, module)
    trainer.global_step = 200
    with pytest.raises(RuntimeError, match="no decision of the schedule for update 200"):
        callback.on_validation_end(trainer, module)  # the decision is update 100's
    assert callback.writes == {"best": 1, "last": 0}
