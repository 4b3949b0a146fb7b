"""bf16 autocast on the CPU: the scorer runs, and every loss computes in at least float32."""

from __future__ import annotations

import pytest
import torch

from bockparse.losses import LocalCrossEntropy, StructuredHinge, TreeCRF, log_partition


@pytest.fixture(scope="module")
def batch(collate):
    return collate([3, 0, 4, 11])


@pytest.mark.parametrize(
    "loss",
    [LocalCrossEntropy(), TreeCRF(single_root=True), StructuredHinge("bock", 1.0, True, 1)],
    ids=["local", "crf", "hinge"],
)
def test_losses_under_bf16_autocast(loss, make_scorer, make_encoder, batch):
    scorer = make_scorer(make_encoder())
    with torch.no_grad():
        reference = loss(scorer(batch), batch).loss
    with torch.autocast("cpu", dtype=torch.bfloat16):
        scores = scorer(batch)
        out = loss(scores, batch)
    assert scores.rel.dtype == torch.bfloat16  # autocast reached the biaffine scorers
    assert out.loss.dtype == torch.float32
    assert torch.isfinite(out.loss)
    # bf16 keeps 8 bits of mantissa: the loss agrees with fp32 to a few per cent.
    torch.testing.assert_close(out.loss.detach(), reference, rtol=0.05, atol=0.05)
    out.loss.backward()
    grads = [p.grad for p in scorer.parameters() if p.grad is not None]
    assert grads and all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)


def test_log_partition_of_bf16_scores_is_float32(batch):
    torch.manual_seed(0)
    B, N = batch.mask.shape
    arc = torch.randn(B, N, N)
    exact = log_partition(arc, batch.mask, single_root=True)
    rounded = log_partition(arc.bfloat16(), batch.mask, single_root=True)
    assert rounded.dtype == torch.float32
    torch.testing.assert_close(
        rounded, log_partition(arc.bfloat16().float(), batch.mask, single_root=True)
    )
    torch.testing.assert_close(rounded, exact, rtol=0.02, atol=0.5)
