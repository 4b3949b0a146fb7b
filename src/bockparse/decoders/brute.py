"""Brute force: exhaustive enumeration of dependency trees, the oracle of the tests.

A depth-first search assigns heads to words ``1..n`` in order, trying heads in increasing order
and pruning an assignment as soon as it closes a cycle (walking the heads already assigned) or
gives ROOT a second child under the single-root constraint. Every tree is visited exactly once,
in lexicographic order of its head array. Exponential: at most 8 words are accepted.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import brute as _self  # numba caches a function passed as a value only via a module
from .pool import decode_rows
from .registry import register, register_batch
from .trees import NEG_INF, NO_TREE, OK, load_scores, run_kernel

MAX_WORDS = 8


@nb.njit(nogil=True, cache=True)
def _search(W, single_root, best_heads, out_heads, out_scores):
    """Visit every (single-root) tree of ``W``.

    Args:
        W: float64 ``[N, N]`` work matrix (``-inf`` = forbidden).
        single_root: only trees with exactly one root child.
        best_heads: int64 ``[N]``; receives the first tree of maximum score.
        out_heads, out_scores: int64 ``[T, N]`` and float64 ``[T]`` receiving every tree, or
            arrays of length 0 to only count.

    Returns:
        ``(count, best_score)``; ``count == 0`` when no tree exists.
    """
    N = W.shape[0]
    heads = np.full(N, -1, dtype=np.int64)
    nxt = np.zeros(N + 1, dtype=np.int64)  # next head to try for each word
    roots = 0
    count = 0
    best = -np.inf
    store = out_scores.shape[0] > 0
    d = 1
    while d >= 1:
        if d == N:
            if not single_root or roots == 1:
                s = 0.0
                for v in range(1, N):
                    s += W[heads[v], v]
                if store:
                    out_heads[count] = heads
                    out_scores[count] = s
                if count == 0 or s > best:
                    best = s
                    best_heads[:] = heads
                count += 1
            d -= 1
            if heads[d] == 0:
                roots -= 1
            heads[d] = -1
            continue
        placed = False
        while nxt[d] < N:
            h = nxt[d]
            nxt[d] += 1
            if h == d or W[h, d] == NEG_INF:
                continue
            if h == 0:
                if single_root and roots == 1:
                    continue
            else:
                v = h  # walk up the assigned words (< d); reaching d closes a cycle
                while v != 0 and v < d:
                    v = heads[v]
                if v == d:
                    continue
            heads[d] = h
            if h == 0:
                roots += 1
            placed = True
            break
        if placed:
            d += 1
            nxt[d] = 0
        else:
            d -= 1
            if d >= 1:
                if heads[d] == 0:
                    roots -= 1
                heads[d] = -1
    return count, best


@nb.njit(nogil=True, cache=True)
def solve(W, single_root, heads):
    """Best tree by exhaustive search; the first of the tied optima in lexicographic order."""
    count, _ = _search(
        W, single_root, heads, np.empty((0, W.shape[0]), np.int64), np.empty(0, np.float64)
    )
    heads[0] = -1
    return OK if count > 0 else NO_TREE


@register("brute", max_words=MAX_WORDS)
@nb.njit(nogil=True, cache=True)
def kernel(S, root, heads):
    """Entry point: ``run_kernel`` conventions (:mod:`.trees`)."""
    return run_kernel(_self.solve, S, root, heads)


@register_batch("brute")
@nb.njit(nogil=True, cache=True)
def batch(S, lengths, root, heads, status, start, step):
    """Batch loop: ``decode_rows`` conventions (:mod:`.pool`)."""
    decode_rows(_self.kernel, S, lengths, root, heads, status, start, step)


def all_trees(scores, *, single_root: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Every (single-root) dependency tree of ``scores`` with its score, for tests and oracles.

    Args:
        scores: float ``[N, N]``, ``scores[h, d]``, ``-inf`` forbids an arc; at most 8 words.
        single_root: only trees with exactly one root child.

    Returns:
        ``(heads, tree_scores)``: int64 ``[T, N]`` in lexicographic order of the head arrays
        (``heads[:, 0] == -1``) and float64 ``[T]``; ``T == 0`` when no tree exists.
    """
    S = np.asarray(scores)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 2:
        raise ValueError(f"scores must be a square [N, N] matrix with N >= 2, got {S.shape}")
    N = S.shape[0]
    if N - 1 > MAX_WORDS:
        raise ValueError(f"all_trees enumerates at most {MAX_WORDS} words, got {N - 1}")
    W = np.empty((N, N))
    if load_scores(S, W) != OK:
        raise ValueError("scores contain NaN or +inf")
    best = np.empty(N, np.int64)
    count, _ = _search(W, single_root, best, np.empty((0, N), np.int64), np.empty(0))
    heads = np.empty((count, N), np.int64)
    values = np.empty(count)
    if count:
        _search(W, single_root, best, heads, values)
    return heads, values
