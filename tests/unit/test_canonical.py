"""The canonical tie rule: every exact decoder driving decode_canonical gives Bock's arrays."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bockparse.decoders import decode, tree_score
from bockparse.decoders.synthetic import integer_graph
from bockparse.predict import CANONICAL, decode_canonical, decode_heads, tree_scores

EXACT = ("bock", "bock-original", "cle", "tarjan")


def tie_heavy_batch(seed: int, count: int, max_words: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A padded batch of small-integer graphs (scores in -2..2: most optima are tied), no arc
    forbidden (so every graph has a single-root tree)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_words + 1, size=count)
    N = int(lengths.max()) + 1
    arc = np.zeros((count, N, N), dtype=np.float32)
    for b, n in enumerate(lengths):
        arc[b, : n + 1, : n + 1] = integer_graph(int(n), rng, low=-2, high=2, forbid=0.0)
    return torch.from_numpy(arc), torch.from_numpy(lengths)


@pytest.mark.parametrize("single_root", [True, False])
def test_every_exact_decoder_gives_the_canonical_arrays(single_root):
    arc, lengths = tie_heavy_batch(seed=16, count=400, max_words=7)
    canonical = decode_heads(arc, lengths, CANONICAL, single_root=single_root)
    plain = {m: decode_heads(arc, lengths, m, single_root=single_root) for m in EXACT}
    # The premise: on these graphs the decoders' own maximisers differ (ties), at equal value.
    assert not torch.equal(plain["cle"], canonical)
    for method in EXACT:
        np.testing.assert_array_equal(tree_scores(arc, plain[method]), tree_scores(arc, canonical))
        got = decode_canonical(arc, lengths, method, single_root=single_root, tol=1e-9)
        assert torch.equal(got, canonical), method


def test_the_canonical_tree_is_optimal_and_is_bocks():
    arc, lengths = tie_heavy_batch(seed=3, count=200, max_words=6)
    for single_root in (True, False):
        got = decode_canonical(arc, lengths, "cle", single_root=single_root, tol=1e-9)
        for b, n in enumerate(lengths.tolist()):
            S = arc[b, : n + 1, : n + 1].double().numpy()
            best = decode(S, "brute", single_root=single_root)
            heads = got[b, : n + 1].numpy()
            assert tree_score(S, heads) == tree_score(S, best)
            np.testing.assert_array_equal(heads, decode(S, "bock", single_root=single_root))


def test_a_decoder_over_other_trees_is_refused():
    """Eisner maximises over projective trees only: its value differs where the optimum is not
    projective, and decode_canonical says so rather than return a tree of another value."""
    S = np.full((5, 5), -10.0, dtype=np.float32)
    for h, d in ((0, 2), (2, 4), (4, 1), (2, 3)):  # 4 -> 1 crosses 2 -> 3: non-projective
        S[h, d] = 0.0
    arc, lengths = torch.from_numpy(S)[None], torch.tensor([4])
    with pytest.raises(RuntimeError, match="eisner and bock optima differ"):
        decode_canonical(arc, lengths, "eisner", single_root=True, tol=1e-6)
