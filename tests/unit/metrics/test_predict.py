"""The one prediction path: padded heads from a registry decoder, relations at those heads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bockparse.decoders import decode
from bockparse.model.outputs import ParserScores
from bockparse.predict import predict_trees


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
