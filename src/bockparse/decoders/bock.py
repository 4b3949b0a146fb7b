"""Reformulated Bock: Algorithm 1 of Wang & Park (2026), §3.2.

Bock (1971) builds a minimum-cost arborescence on costs ``C = -S`` (eq. 2) column by column,
keeping the original matrix and node indices. The maintained state (§3.1–3.2):

* ``U1[j]``: cumulative adjustment of column ``j``; the adjusted cost of arc ``i -> j`` is
  ``C[i, j] - U1[j]``;
* ``I*[j]`` (``star``): the starred (provisional) head of ``j``, ``-1`` for ⊥;
* ``B[j]`` (``bar``): a barred reference to an original arc ``(Ī[j], J̄[j])``, stored as the
  single integer ``Ī * N + J̄``, ``-1`` for ⊥;
* ``comp[j]``: the label of ``j``'s contracted component (initially ``j``);
* ``TRACE``: a boolean mask of the vertices of the components visited by a backward trace.

For each column ``K = 1..n``: the candidate search (eq. 3) takes the first minimum of
``C[i, j] - U1[j]`` over dependents ``j <= K`` of the active component ``H = comp[K]`` in
increasing order, then heads ``i`` outside it in increasing order; the column adjustment adds
that minimum to ``U1`` on the active component; the backward trace follows stars from the head,
writing the candidate into empty bars and collecting visited components in ``TRACE``. Returning
to ``H`` closes a circuit: contraction gives the active label to all of ``TRACE`` and the search
restarts. Reaching a vertex without a star starts the star-and-bar transfer, which first
replaces every bar naming the candidate by the displaced arc (global replacement), then reads
the bar at the candidate's dependent (local read), replaces it, and installs the star; a
displaced star makes the read bar the next candidate. O(n^3) time, O(n) extra space (§3.4).

The single-root constraint is enforced as in the paper (§4.2): solve the rooted problem, and if
the optimum has several root children, force each admissible root child in turn.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import bock as _self  # numba caches a function passed as a value only via a module
from .pool import decode_rows
from .registry import register, register_batch
from .trees import (
    INTERNAL_ERROR,
    NEG_INF,
    NO_TREE,
    OK,
    enumerate_root_children,
    run_kernel,
    work_matrix,
)


@nb.njit(nogil=True, cache=True)
def solve_rooted(W, heads, slack, tracer=None, stars=None):
    """Minimum-cost rooted arborescence of ``C = -W`` by Algorithm 1 (§3.2).

    Args:
        W: float64 ``[N, N]`` scores with ``-inf`` on forbidden arcs, column 0 and diagonal;
            read only (costs are negated on the fly, which is exact).
        heads: int64 ``[N]``; on success ``heads[j] = I*[j]`` and ``heads[0] = -1``.
        slack: float64 ``[N]``; on success ``slack[c] = C[0, c] - U1[c]``, the final adjusted
            cost of each root arc (``inf`` where forbidden), for the single-root bound.
        tracer: ``None`` when compiled; the step printer of ``bockparse-trace-bock`` when the
            pure-Python ``solve_rooted.py_func`` is run (its calls are pruned when ``None``).
        stars: ``None`` (pruned when compiled), or int64 ``[N, N]`` receiving ``I*`` after every
            completed column ``K`` in row ``K`` (Theorem 1's hook, for tests).

    Returns:
        ``OK``; ``NO_TREE`` when a candidate search finds no admissible arc (infeasible);
        ``INTERNAL_ERROR`` if the transfer breaks the invariant of Lemma 1 (a bug).
    """
    N = W.shape[0]
    U1 = np.zeros(N)
    star = np.full(N, -1, dtype=np.int64)
    bar = np.full(N, -1, dtype=np.int64)
    comp = np.arange(N)
    trace = np.zeros(N, dtype=np.bool_)
    for K in range(1, N):
        while True:
            # Candidate search (eq. 3): first minimum, dependents then heads increasing.
            H = comp[K]
            best = np.inf
            I1 = -1
            J1 = -1
            for j in range(1, K + 1):
                if comp[j] != H:
                    continue
                for i in range(N):
                    if comp[i] != H and W[i, j] != NEG_INF:
                        adjusted = -W[i, j] - U1[j]
                        if adjusted < best:
                            best = adjusted
                            I1 = i
                            J1 = j
            if I1 < 0:
                return NO_TREE
            # Column adjustment: the candidate's adjusted cost becomes 0.
            for j in range(1, K + 1):
                if comp[j] == H:
                    U1[j] += best
            if tracer is not None:
                tracer.search(K, H, I1, J1, best, U1)
            # Backward trace from the candidate's head along starred predecessors.
            J = I1
            while comp[J] != H and star[J] >= 0:
                if not trace[J]:
                    label = comp[J]
                    for q in range(1, K + 1):
                        if comp[q] == label:
                            trace[q] = True
                if bar[J] < 0:
                    bar[J] = I1 * N + J1
                J = star[J]
            if tracer is not None:
                tracer.trace(trace, bar, comp[J] == H)
            if comp[J] == H:
                # Contraction: the traced components take the active label.
                for q in range(1, K + 1):
                    if trace[q]:
                        comp[q] = H
                        trace[q] = False
                if tracer is not None:
                    tracer.contract(comp)
                continue
            trace[:] = False  # no circuit: the partition is unchanged
            # Star-and-bar transfer.
            cand = I1 * N + J1
            displaced = -1
            while True:
                for q in range(1, K + 1):  # global replacement before the local read
                    if bar[q] == cand:
                        bar[q] = displaced
                following = bar[J1]
                bar[J1] = displaced
                old = star[J1]
                star[J1] = I1
                if tracer is not None:
                    tracer.transfer(I1, J1, old, following, star, bar)
                if old < 0:
                    break
                if following < 0:  # a displaced star with no bar to go on: Lemma 1 rules it out
                    return INTERNAL_ERROR
                displaced = old * N + J1
                cand = following
                I1 = following // N
                J1 = following % N
            break
        if stars is not None:
            stars[K, :] = star
    heads[0] = -1
    heads[1:] = star[1:]
    for c in range(1, N):
        slack[c] = -W[0, c] - U1[c] if W[0, c] != NEG_INF else np.inf
    return OK


@nb.njit(nogil=True, cache=True)
def solve(W, single_root, heads):
    """Reformulated Bock (Algorithm 1, §3.2), single root by enumeration (§4.2)."""
    if single_root:
        return enumerate_root_children(_self.solve_rooted, W, heads)
    return solve_rooted(W, heads, np.empty(W.shape[0]))


def prefix_stars(scores) -> np.ndarray:
    """Bock's starred arcs ``I*`` after every completed column (Theorem 1's hook, for tests).

    Args:
        scores: float ``[N, N]``, ``scores[h, d]``; the rooted problem (no root constraint).

    Returns:
        int64 ``[N, N]``: row ``K`` is ``I*`` once column ``K`` is complete (``-1`` for ⊥, at
        ROOT and at the words ``K + 1..n``); row 0 all ``-1``; row ``n`` is the ``bock`` tree.
        Rows are ``-1`` from the first column with an empty candidate set (infeasible).
    """
    W = work_matrix(scores)
    N = W.shape[0]
    stars = np.full((N, N), -1, dtype=np.int64)
    solve_rooted(W, np.empty(N, dtype=np.int64), np.empty(N), None, stars)
    return stars


@register("bock")
@nb.njit(nogil=True, cache=True)
def kernel(S, root, heads):
    """Entry point: ``run_kernel`` conventions (:mod:`.trees`)."""
    return run_kernel(_self.solve, S, root, heads)


@register_batch("bock")
@nb.njit(nogil=True, cache=True)
def batch(S, lengths, root, heads, status, start, step):
    """Batch loop: ``decode_rows`` conventions (:mod:`.pool`)."""
    decode_rows(_self.kernel, S, lengths, root, heads, status, start, step)
