"""The whole scorer learns: a tiny model overfits a few sentences of the shipped sample."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bockparse.decoders import decode_batch
from bockparse.heads.biaffine import BiaffineScorer
from bockparse.losses import LocalCrossEntropy

MAX_STEPS = 300


def uas(scorer: BiaffineScorer, batch) -> float:
    """Unlabelled attachment score of Bock-decoded trees, in eval mode."""
    scorer.eval()
    with torch.no_grad():
        arc = scorer(batch).arc
    scorer.train()
    trees = decode_batch(arc.detach(), batch.lengths, "bock")
    correct = sum(
        int((tree[1:] == gold[1 : len(tree)].numpy()).sum())
        for tree, gold in zip(trees, batch.heads, strict=True)
    )
    return correct / int(batch.lengths.sum())


@pytest.mark.slow
def test_tiny_model_overfits_eight_sentences(vocabs, collate, make_encoder, small_sizes):
    batch = collate(list(range(8)))
    torch.manual_seed(0)
    sizes = small_sizes(context={"lstm_hidden": 32}, arc_hidden=32, rel_hidden=16)
    scorer = BiaffineScorer(vocabs=vocabs, encoder=make_encoder(), **sizes).train()
    optimizer = torch.optim.Adam(scorer.parameters(), lr=3e-3)
    loss_fn = LocalCrossEntropy()
    history = []
    for step in range(1, MAX_STEPS + 1):
        optimizer.zero_grad()
        loss = loss_fn(scorer(batch), batch).loss
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            history.append(uas(scorer, batch))
            if history[-1] == 1.0:
                break
    assert history[-1] == 1.0, f"UAS every 10 steps: {np.round(history, 3).tolist()}"
