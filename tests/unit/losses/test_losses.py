"""Losses against brute-force enumeration, gradients, and padding invariance."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from bockparse.decoders import DECODERS
from bockparse.decoders.brute import all_trees
from bockparse.decoders.synthetic import random_tree
from bockparse.losses import LocalCrossEntropy, StructuredHinge, TreeCRF, log_partition
from bockparse.losses.common import normalized_arc_scores
from bockparse.losses.hinge import hinge_per_sentence
from bockparse.model import ParserScores

R = 3


def make_batch(lengths, seed, *, aux=False, gold_bonus=0.0):
    """Random scores and gold trees for sentences of the given lengths, padded."""
    g = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    B, N = len(lengths), max(lengths) + 1
    heads = torch.zeros(B, N, dtype=torch.long)
    mask = torch.zeros(B, N, dtype=torch.bool)
    for b, n in enumerate(lengths):
        heads[b, 1 : n + 1] = torch.from_numpy(random_tree(n, rng)[1:])
        mask[b, 1 : n + 1] = True
    arc = torch.randn(B, N, N, generator=g, dtype=torch.float64)
    arc += gold_bonus * torch.zeros(B, N, N, dtype=torch.float64).scatter_(1, heads[:, None], 1.0)
    scores = ParserScores(
        arc=arc.requires_grad_(),
        rel=torch.randn(B, N, N, R, generator=g, dtype=torch.float64).requires_grad_(),
        linearization=torch.randn(B, N, N, generator=g, dtype=torch.float64) if aux else None,
        distance=torch.randn(B, N, N, generator=g, dtype=torch.float64) if aux else None,
    )
    rels = torch.randint(0, R, (B, N), generator=g)
    batch = SimpleNamespace(heads=heads, rels=rels, mask=mask, lengths=torch.tensor(lengths))
    return scores, batch


def unpad(scores: ParserScores, batch, b: int):
    """Sentence ``b`` alone, as a batch of one."""
    N = int(batch.lengths[b]) + 1

    def cut(t, dims):
        if t is None:
            return None
        return t[b : b + 1, :N, :N] if dims == 3 else t[b : b + 1, :N, :N, :]

    return (
        ParserScores(
            cut(scores.arc, 3),
            cut(scores.rel, 4),
            cut(scores.linearization, 3),
            cut(scores.distance, 3),
        ),
        SimpleNamespace(
            heads=batch.heads[b : b + 1, :N],
            rels=batch.rels[b : b + 1, :N],
            mask=batch.mask[b : b + 1, :N],
            lengths=batch.lengths[b : b + 1],
        ),
    )


def brute_hinge(logp: np.ndarray, gold: np.ndarray, margin: float) -> float:
    heads, values = all_trees(logp, single_root=True)
    cost = margin * (heads[:, 1:] != gold[1:]).sum(axis=1)
    return float((values + cost).max() - logp[gold[1:], np.arange(1, len(gold))].sum())


@pytest.mark.parametrize("margin", [1.0, 0.5])
def test_hinge_matches_brute_force(margin):
    loss = StructuredHinge("bock", margin=margin, single_root=True, workers=2)
    for seed in range(60):
        lengths = [int(x) for x in np.random.default_rng(seed).integers(1, 6, size=3)]
        scores, batch = make_batch(lengths, seed, gold_bonus=float(seed % 3))
        logp = normalized_arc_scores(scores.arc, batch.mask)
        predicted, _, _ = loss.oracle(logp, batch)()
        per = hinge_per_sentence(logp, predicted, batch.heads, batch.mask, margin)
        for b, n in enumerate(lengths):
            lp = logp[b, : n + 1, : n + 1].detach().numpy()
            gold = np.r_[-1, batch.heads[b, 1 : n + 1].numpy()]
            expected = brute_hinge(lp, gold, margin)
            assert per[b].item() >= 0
            assert per[b].item() == pytest.approx(expected, abs=1e-9)


def test_hinge_is_zero_when_gold_wins_by_its_cost():
    scores, batch = make_batch([4, 5], seed=3, gold_bonus=30.0)
    out = StructuredHinge("cle", margin=1.0, single_root=True)(scores, batch)
    assert out.arc.item() == 0.0
    scores, batch = make_batch([4, 5], seed=3, gold_bonus=0.0)
    assert StructuredHinge("cle", margin=1.0, single_root=True)(scores, batch).arc.item() > 0


def test_hinge_gradient_is_the_indicator_difference():
    scores, batch = make_batch([5, 3, 6], seed=8)
    logp = normalized_arc_scores(scores.arc, batch.mask).detach().requires_grad_()
    loss = StructuredHinge("bock", margin=1.0, single_root=True)
    predicted, _, _ = loss.oracle(logp, batch)()
    per = hinge_per_sentence(logp, predicted, batch.heads, batch.mask, 1.0)
    assert (per > 0).all()
    per.sum().backward()
    N = logp.shape[1]
    assert (predicted[~batch.mask] == -1).all()  # the padded convention of Batch.heads
    onehot = lambda h: torch.nn.functional.one_hot(h.clamp(min=0), N).transpose(1, 2).double()  # noqa: E731
    expected = (onehot(predicted) - onehot(batch.heads)) * batch.mask[:, None, :]
    assert torch.equal(logp.grad, expected)


@pytest.mark.parametrize("method", [m for m in DECODERS if m != "brute"])
def test_every_decoder_can_be_the_oracle(method):
    scores, batch = make_batch([6, 2, 7], seed=5, aux=True)
    out = StructuredHinge(method, margin=1.0, single_root=True)(scores, batch)
    assert torch.isfinite(out.loss) and out.arc.item() >= 0 and out.words == 15
    out.loss.backward()
    assert torch.isfinite(scores.arc.grad).all()


@pytest.mark.parametrize("single_root", [False, True])
def test_crf_log_partition_matches_brute_force(single_root):
    for seed in range(40):
        lengths = [int(x) for x in np.random.default_rng(seed).integers(1, 6, size=3)]
        scores, batch = make_batch(lengths, seed)
        log_z = log_partition(scores.arc, batch.mask, single_root)
        for b, n in enumerate(lengths):
            S = scores.arc[b, : n + 1, : n + 1].detach().numpy().copy()
            S[:, 0] = -np.inf
            np.fill_diagonal(S, -np.inf)
            _, values = all_trees(S, single_root=single_root)
            assert log_z[b].item() == pytest.approx(np.logaddexp.reduce(values), abs=1e-9)


@pytest.mark.parametrize(
    "make_loss",
    [
        LocalCrossEntropy,
        lambda: StructuredHinge("bock", margin=1.0, single_root=True),
        lambda: TreeCRF(single_root=True),
    ],
    ids=["local-ce", "hinge", "crf"],
)
def test_padding_does_not_change_the_loss(make_loss):
    """A padded batch gives the word-weighted mean of the sentences' own losses."""
    loss_fn = make_loss()
    scores, batch = make_batch([3, 7, 1, 5], seed=21, aux=True)
    whole = loss_fn(scores, batch)
    assert whole.words == 16
    parts = [loss_fn(*unpad(scores, batch, b)) for b in range(4)]
    total = sum(p.loss * p.words for p in parts) / sum(p.words for p in parts)
    assert whole.loss.item() == pytest.approx(total.item(), rel=1e-12)
    whole.loss.backward()
    assert torch.isfinite(scores.arc.grad).all() and torch.isfinite(scores.rel.grad).all()


def test_local_ce_by_hand():
    scores, batch = make_batch([2], seed=1)
    out = LocalCrossEntropy()(scores, batch)
    arc = scores.arc.detach()[0]
    manual = 0.0
    for d in (1, 2):
        col = torch.tensor([arc[h, d] for h in range(3) if h != d])
        heads = [h for h in range(3) if h != d]
        manual -= (arc[batch.heads[0, d], d] - torch.logsumexp(col, 0)).item()
        rel = scores.rel.detach()[0, batch.heads[0, d], d]
        manual -= torch.log_softmax(rel, 0)[batch.rels[0, d]].item()
        assert len(heads) == 2
    assert out.loss.item() == pytest.approx(manual / 2)
