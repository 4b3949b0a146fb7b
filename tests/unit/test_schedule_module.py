"""The module asks its schedule for the learning rates: the transformer stays unchanged while it
is frozen, its optimiser state is reset when it thaws, and each stage's rates and weight decays
are Stanza's (no real training: a toy scorer and hand-driven optimiser steps)."""

from __future__ import annotations

from functools import partial

import pytest
import torch
from torch import nn

from bockparse.training.module import ParserModule
from bockparse.training.schedule import StanzaSchedule


class Toy(nn.Module):
    """A parser head (bockparse.heads.ParserHead) of two layers, decoded by the run's decoder,
    without a tagger."""

    predict = None
    tagger = None

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(4, 4)  # stands for the transformer
        self.head = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.encoder(x)))


def make(
    freeze: int, switch_step: int, monkeypatch
) -> tuple[ParserModule, list[torch.optim.Optimizer]]:
    torch.manual_seed(0)
    schedule = StanzaSchedule(
        plateau_patience=1000, plateau_decay=0.8, plateau_threshold=1e-4, switch_patience=1000,
        switch_step=switch_step, stop_patience=1000, stage2_warmup=10, transformer_freeze=freeze,
        transformer_warmup=10, transformer_lr_scale=1.0, stage2_transformer_lr_scale=1e-3,
        transformer_weight_decay=0.0,
    )  # fmt: skip
    module = ParserModule(
        scorer=Toy(),
        loss=lambda scores, batch: None,
        decoder="cle",
        relations=["dep"],
        stage1=partial(torch.optim.Adadelta, lr=2.0, weight_decay=1e-5),
        stage2=partial(torch.optim.Adam, lr=2e-4, betas=(0.9, 0.999), eps=1e-6),
        schedule=schedule,
        max_grad_norm=1.0,
        exclude_punct=None,
    )
    optimizers = module.configure_optimizers()
    monkeypatch.setattr(module, "optimizers", lambda: optimizers)
    return module, optimizers


def step(module: ParserModule, optimizers, x: torch.Tensor) -> None:
    optimizer = optimizers[module.stage - 1]
    optimizer.zero_grad()
    module.scorer(x).pow(2).sum().backward()
    module._set_learning_rates(optimizer)
    optimizer.step()


def snapshot(m: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in m.parameters()]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("freeze", [20, 30])
def test_transformer_unchanged_while_frozen_then_trained(freeze, monkeypatch):
    module, optimizers = make(freeze, 1000, monkeypatch)
    groups = {g["name"]: g for g in optimizers[0].param_groups}
    assert groups["transformer"]["weight_decay"] == 0.0 and groups["parser"]["weight_decay"] == 1e-5
    x = torch.randn(8, 4)
    encoder, head = snapshot(module.scorer.encoder), snapshot(module.scorer.head)
    for update in range(1, freeze + 1):
        step(module, optimizers, x)
        assert same(snapshot(module.scorer.encoder), encoder), update
        if update % 10 == 0:  # an evaluation every 10 updates
            decision = module.schedule.after_evaluation(update, float(update))
            for name in decision.unfrozen:
                module.reset_optimizer_state(name)
    assert not same(snapshot(module.scorer.head), head)
    thawed = [
        p for g in optimizers[0].param_groups if g["name"] == "transformer" for p in g["params"]
    ]
    assert all(p not in optimizers[0].state for p in thawed)  # reset when the freeze ended
    for _ in range(10):  # the warm-up's factor is 0 until the next evaluation
        step(module, optimizers, x)
    assert same(snapshot(module.scorer.encoder), encoder)
    module.schedule.after_evaluation(freeze + 10, 0.0)
    step(module, optimizers, x)
    assert not same(snapshot(module.scorer.encoder), encoder)


def test_stage_two_rates(monkeypatch):
    module, optimizers = make(0, 40, monkeypatch)
    for update in (10, 20, 30, 40):
        module.schedule.after_evaluation(update, 50.0)  # stage 2 at switch_step 40
    assert module.stage == 2
    module.schedule.after_evaluation(50, 60.0)  # the end of stage 2's warm-up of 10 updates
    step(module, optimizers, torch.randn(8, 4))
    rates = {g["name"]: g["lr"] for g in optimizers[1].param_groups}
    assert rates == pytest.approx({"parser": 2e-4, "transformer": 2e-7})
