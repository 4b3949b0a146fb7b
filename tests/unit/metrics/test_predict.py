"""The one prediction path: padded heads from a registry decoder, relations at those heads."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from bockparse.data.batch import Batch
from bockparse.decoders import decode
from bockparse.model.outputs import ParserScores
from bockparse.predict import predict_trees, sentence_rows


@pytest.mark.parametrize("decoder", ["cle", "tarjan", "eisner"])
def test_predict_trees_equals_decoding_each_sentence(decoder):
    g = torch.Generator().manual_seed(4)
    lengths = torch.tensor([5, 2, 7])
    B, N, R = 3, 8, 4
    arc = torch.randn(B, N, N, generator=g)
    rel = torch.randn(B, N, N, R, generator=g)
    heads, rels = predict_trees(ParserScores(arc=arc, rel=rel), lengths, decoder)
    assert heads.dtype == rels.dtype == torch.int64 and heads.shape == rels.shape == (B, N)
    for b, n in enumerate(lengths.tolist()):
        expected = decode(arc[b, : n + 1, : n + 1].numpy(), decoder, single_root=True)
        assert heads[b, : n + 1].tolist() == expected.tolist()  # heads[b, 0] == -1
        assert (heads[b, n + 1 :] == -1).all() and (rels[b, n + 1 :] == -1).all()
        assert rels[b, 0] == -1
        for d in range(1, n + 1):
            assert rels[b, d] == int(rel[b, expected[d], d].argmax())
    assert np.count_nonzero(heads[:, 1:].numpy() == 0) == B  # one word on ROOT each


def test_relations_scored_at_the_heads_alone_equal_all_pairs():
    """The optimisation prediction relies on (scores at the predicted heads only) against the
    unoptimised path (all N x N pairs, then gathered), in float32: equal scores up to rounding,
    identical best relations; and a scorer's lazy ParserScores never builds the full tensor."""
    from bockparse.model.biaffine import DeepBiaffine

    torch.manual_seed(0)
    biaffine = DeepBiaffine(16, 8, 37, dropout=0.0, init_std=0.5).eval()
    B, N = 4, 30
    x = torch.randn(B, N, 16)
    heads = torch.randint(0, N, (B, N))
    heads[:, 0] = -1
    heads[2, 20:] = -1  # padding
    full = biaffine(x)  # [B, N, N, R]
    expected = full.gather(1, heads.clamp(min=0)[:, None, :, None].expand(-1, 1, -1, 37))
    at = biaffine.at(x, heads)
    words = heads >= 0  # ROOT and padding get no scores
    torch.testing.assert_close(at[words], expected.squeeze(1)[words], rtol=1e-5, atol=1e-5)
    assert torch.equal(at[~words], torch.zeros_like(at[~words]))
    star = torch.zeros_like(heads)  # every word on ROOT: one head per sentence, N - 1 slots
    star[:, 0] = -1
    gathered = full[:, 0, 1:]  # [B, N - 1, R]
    torch.testing.assert_close(biaffine.at(x, star)[:, 1:], gathered, rtol=1e-5, atol=1e-5)
    nothing = torch.full_like(heads, -1)  # no word: no head, no slot
    assert torch.equal(biaffine.at(x, nothing), torch.zeros(B, N, 37))
    lazy = ParserScores(arc=x.new_zeros(B, N, N), rel_fn=lambda: biaffine(x),
                        rel_at_fn=lambda h: biaffine.at(x, h))  # fmt: skip
    eager = ParserScores(arc=x.new_zeros(B, N, N), rel=full)
    best = lazy.rel_at_heads(heads).argmax(-1)
    assert lazy._rel is None  # never materialised
    assert torch.equal(best[words], eager.rel_at_heads(heads).argmax(-1)[words])
    assert torch.equal(lazy.rel, full)  # read on demand: the same computation as before


def test_relation_scores_read_later_are_computed_as_when_the_scores_were_made():
    """Scores made under inference mode and bf16 autocast, read after both ended, are what an
    eager computation inside them gave (the analyses keep scores and read them later)."""
    from bockparse.model.biaffine import DeepBiaffine

    torch.manual_seed(1)
    biaffine = DeepBiaffine(8, 4, 5, dropout=0.0, init_std=0.5).eval()
    x = torch.randn(2, 6, 8)
    heads = torch.randint(0, 6, (2, 6))
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        eager = biaffine(x)
        eager_at = biaffine.at(x, heads)
        lazy = ParserScores(arc=x.new_zeros(2, 6, 6), rel_fn=lambda: biaffine(x),
                            rel_at_fn=lambda h: biaffine.at(x, h))  # fmt: skip
    at = lazy.rel_at_heads(heads)
    assert at.dtype == torch.bfloat16 and torch.equal(at, eager_at)
    assert torch.equal(lazy.rel, eager) and lazy.rel.is_inference()
    moved = lazy.with_arc(torch.ones(2, 6, 6))
    assert torch.equal(moved.rel, eager) and not torch.equal(moved.arc, lazy.arc)


def test_sentence_rows_cut_padded_rows_into_per_sentence_trees():
    """Padded ``[B, N]`` rows and ``[B, N, N]`` matrices back to each sentence's ``n + 1``
    positions, with its sentence id, for tensors and arrays alike; no padding kept."""
    lengths, ids = torch.tensor([2, 4, 1]), torch.tensor([7, 0, 3])
    unused = torch.zeros(0)
    batch = Batch(**{f.name: unused for f in dataclasses.fields(Batch)}
                  | {"lengths": lengths, "sentence_ids": ids})  # fmt: skip
    heads = torch.tensor([[-1, 2, 0, -1, -1], [-1, 0, 1, 2, 3], [-1, 0, -1, -1, -1]])
    rels = heads + 10
    arc = np.arange(3 * 5 * 5).reshape(3, 5, 5)
    rows = list(sentence_rows(batch, heads, rels, arc))
    assert [r[0] for r in rows] == [7, 0, 3]
    for (_, head_row, rel_row, arc_rows), b, n in zip(rows, range(3), [2, 4, 1], strict=True):
        assert head_row.tolist() == heads[b, : n + 1].tolist() and -1 not in head_row[1:]
        assert torch.equal(rel_row, head_row + 10)
        assert arc_rows.shape == (n + 1, n + 1) and (arc_rows == arc[b, : n + 1, : n + 1]).all()
        assert np.shares_memory(arc_rows, arc)  # a view: cutting copies nothing
