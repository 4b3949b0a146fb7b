"""Random score matrices for tests and benchmarks, in the ``scores[h, d]`` orientation."""

from __future__ import annotations

import numpy as np


def random_tree(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly shuffled random tree: int64 ``heads [n + 1]`` with one root child."""
    order = rng.permutation(n) + 1
    heads = np.full(n + 1, -1, dtype=np.int64)
    heads[order[0]] = 0
    for i in range(1, n):
        heads[order[i]] = order[rng.integers(0, i)]
    return heads


def parser_like(n: int, rng: np.random.Generator, *, gold_bonus: float = 4.0) -> np.ndarray:
    """Scores shaped like a trained parser's: log-softmax over heads of N(0, 1) logits.

    A random gold tree gets ``gold_bonus`` on its arcs; each dependent's column is then
    normalised by a log-softmax over its admissible heads (the diagonal and column 0 are
    ``-inf``), so every admissible score is negative.

    Returns:
        float64 ``[n + 1, n + 1]``.
    """
    gold = random_tree(n, rng)
    logits = rng.normal(size=(n + 1, n + 1))
    logits[gold[1:], np.arange(1, n + 1)] += gold_bonus
    np.fill_diagonal(logits, -np.inf)
    logits[:, 0] = -np.inf
    cols = logits[:, 1:]
    cols -= np.logaddexp.reduce(cols, axis=0, keepdims=True)
    return logits


def integer_graph(
    n: int,
    rng: np.random.Generator,
    *,
    low: int = -3,
    high: int = 3,
    forbid: float = 0.25,
) -> np.ndarray:
    """Small integer scores in ``[low, high]`` (many ties), each arc forbidden with ``forbid``.

    Returns:
        float64 ``[n + 1, n + 1]`` with ``-inf`` on forbidden arcs.
    """
    S = rng.integers(low, high + 1, size=(n + 1, n + 1)).astype(np.float64)
    S[rng.random(S.shape) < forbid] = -np.inf
    return S
