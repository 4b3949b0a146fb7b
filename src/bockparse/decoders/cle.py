"""Chu-Liu/Edmonds by contraction and expansion, in the Dozat/Stanza formulation, iterative.

The method (the CL/E tutorial, "greedy, contract, expand"; the Bock paper §4.2):

1. Greedy heads: every word takes a best-scoring admissible head ``p(j)``. Without a cycle the
   greedy heads are an optimal arborescence.
2. Contraction of a cycle ``Q`` into one node ``q`` with the scores of eq. (7) of the Bock paper:
   an arc from an outside node ``i`` enters ``q`` with ``sigma_Q + max_{j in Q} (S[i, j] -
   S[p(j), j])``, where ``sigma_Q`` is the score of the cycle, and an arc from ``q`` to an outside
   node ``k`` scores ``max_{i in Q} S[i, k]``. The maximising endpoints are stored.
3. Expansion: the arc entering ``q`` names the cycle member where the tree enters, which takes that
   head; the other members keep their cycle arcs; an arc leaving ``q`` goes back to its stored
   member. Every contracted tree expands to a tree of the same score, and an optimal tree can be
   chosen to enter each contracted cycle once (§4.2), so contraction preserves the optimum.

Implementation (no recursion, no rebuilt matrices). All levels share the index space ``0..N-1``:
a contracted node reuses the index of one of its members (the *representative*), whose row and
column of the work matrix are overwritten with the contracted scores; the other members are
retired. A contraction record (representative, members with their cycle heads, and the entering and
leaving argmax arrays) is pushed on an explicit stack and popped in reverse order to expand.

Only the representative's column changes at a contraction, so the greedy heads are updated, not
recomputed: a word whose greedy head was in ``Q`` now has ``q`` (``S'[q, k]`` equals that head's
score), the others keep theirs, and only ``q`` needs a new argmax. The work is O(n^2) per sentence
plus O(n) per contraction for the cycle search; the §4.3 bound of O(n^3) for this procedure is
therefore met with room to spare.

Single root (``single_root=True``): the root arcs are reweighted by the penalty of
:func:`.trees.reweight_root` (the tutorial's second exact fix; Stanojević and Cohen 2021; the Bock
paper §4.3), computed from the score range so it is exact for scores of either sign, then one
rooted decode; a result with several root children means no single-root tree exists.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import cle as _self  # numba caches a function passed as a value only via a module
from .pool import decode_rows
from .registry import register, register_batch
from .trees import NEG_INF, NO_TREE, OK, count_root_children, reweight_root, run_kernel


@nb.njit(nogil=True, cache=True)
def solve_rooted(W, heads):
    """Maximum rooted arborescence of ``W`` by contraction and expansion (eq. 7 of the Bock paper).

    Args:
        W: float64 ``[N, N]`` work matrix from ``load_scores`` (``-inf`` on forbidden arcs,
            column 0 and the diagonal); overwritten by the contracted scores.
        heads: int64 ``[N]``; on success the optimal tree, ``heads[0] = -1``.

    Returns:
        ``OK``, or ``NO_TREE`` when some (contracted) node has no admissible incoming arc, which
        happens exactly when no spanning arborescence avoids the forbidden arcs.
    """
    N = W.shape[0]
    heads[0] = -1
    if N < 2:
        return OK

    # Greedy heads p(j) (step 1), scanning rows so that W is read contiguously.
    p = np.full(N, -1, dtype=np.int64)
    best = np.full(N, NEG_INF)
    for h in range(N):
        for d in range(1, N):
            x = W[h, d]
            if x > best[d]:
                best[d] = x
                p[d] = h
    for d in range(1, N):
        if p[d] < 0:
            return NO_TREE

    BIG = N + 1
    act = np.arange(N)  # active nodes of the current level, act[0] == 0 (ROOT)
    m = N
    retired = np.full(N, BIG, dtype=np.int64)  # contraction that retired the node, BIG if active
    in_q = np.full(N, -1, dtype=np.int64)  # == c while the node is a member of contraction c
    colour = np.zeros(N, dtype=np.int64)  # walk stamps of the cycle search (never reset)
    stamp = 0
    cyc_score = np.empty(N)
    # Contraction stack: at most n - 1 contractions, each retiring >= 1 word; members of all
    # contractions together number at most 2 (n - 1).
    cap = N - 1
    rep = np.empty(cap, dtype=np.int64)
    mem_start = np.zeros(cap + 1, dtype=np.int64)
    members = np.empty(2 * N, dtype=np.int64)
    member_head = np.empty(2 * N, dtype=np.int64)
    enter_arg = np.empty((cap, N), dtype=np.int32)
    leave_arg = np.empty((cap, N), dtype=np.int32)
    nc = 0
    last = -1  # the last representative: new cycles can only pass through it
    while True:
        # Cycle search on the greedy heads of the active nodes (walks stamped, no reset).
        base = stamp + 1
        cycle_at = -1
        for a in range(-1, m):
            if a < 0:
                if last < 0:
                    continue
                v = last
            else:
                v = act[a]
            if v == 0 or colour[v] >= base:
                continue
            stamp += 1
            u = v
            while u != 0 and colour[u] < base:
                colour[u] = stamp
                u = p[u]
            if u != 0 and colour[u] == stamp:
                cycle_at = u
                break
        if cycle_at < 0:
            break
        if nc >= cap:  # cannot happen: every contraction retires a word
            return NO_TREE

        # Contraction (step 2): record the members and their cycle arcs.
        c = nc
        start = mem_start[c]
        k = start
        sigma = 0.0
        j = cycle_at
        while True:
            members[k] = j
            member_head[k] = p[j]
            cyc_score[j] = W[p[j], j]
            sigma += cyc_score[j]
            in_q[j] = c
            k += 1
            j = p[j]
            if j == cycle_at:
                break
        stop = k
        mem_start[c + 1] = stop
        q = cycle_at
        rep[c] = q

        # Contracted scores, eq. (7), for every active node outside Q.
        for a in range(m):
            i = act[a]
            if in_q[i] == c:
                continue
            e_best = NEG_INF
            e_arg = q
            l_best = NEG_INF
            l_arg = q
            for t in range(start, stop):
                jj = members[t]
                x = W[i, jj] - cyc_score[jj]
                if x > e_best:
                    e_best = x
                    e_arg = jj
                y = W[jj, i]
                if y > l_best:
                    l_best = y
                    l_arg = jj
            enter_arg[c, i] = e_arg
            leave_arg[c, i] = l_arg
            W[i, q] = sigma + e_best if e_best != NEG_INF else NEG_INF
            if i != 0:
                W[q, i] = l_best
                if in_q[p[i]] == c:  # its greedy head merged into q: S'[q, i] is that score
                    p[i] = q

        # Retire the members other than q and give q its greedy head among the outside nodes.
        for t in range(start, stop):
            jj = members[t]
            if jj != q:
                retired[jj] = c
        nm = 0
        g_best = NEG_INF
        g_arg = -1
        for a in range(m):
            i = act[a]
            if in_q[i] == c:
                if i == q:
                    act[nm] = i
                    nm += 1
                continue
            act[nm] = i
            nm += 1
            x = W[i, q]
            if x > g_best:
                g_best = x
                g_arg = i
        m = nm
        for t in range(start, stop):
            in_q[members[t]] = -1
        if g_arg < 0:
            return NO_TREE
        p[q] = g_arg
        nc += 1
        last = q

    # Expansion (step 3), popping the contraction stack.
    for d in range(1, N):
        heads[d] = p[d]
    for c in range(nc - 1, -1, -1):
        q = rep[c]
        for d in range(1, N):  # arcs leaving q go back to their stored member
            if retired[d] > c and d != q and heads[d] == q:
                heads[d] = leave_arg[c, d]
        u = heads[q]
        v = enter_arg[c, u]
        for t in range(mem_start[c], mem_start[c + 1]):
            heads[members[t]] = member_head[t]
        heads[v] = u  # the entering arc replaces v's cycle arc
    heads[0] = -1
    return OK


@nb.njit(nogil=True, cache=True)
def solve(W, single_root, heads):
    """CL/E (§4.2); single root by the root penalty of ``reweight_root`` and one rooted decode."""
    if single_root:
        reweight_root(W)
    status = solve_rooted(W, heads)
    if status == OK and single_root and count_root_children(heads) != 1:
        return NO_TREE
    return status


@register("cle")
@nb.njit(nogil=True, cache=True)
def kernel(S, root, heads):
    """Entry point: ``run_kernel`` conventions (:mod:`.trees`)."""
    return run_kernel(_self.solve, S, root, heads)


@register_batch("cle")
@nb.njit(nogil=True, cache=True)
def batch(S, lengths, root, heads, status, start, step):
    """Batch loop: ``decode_rows`` conventions (:mod:`.pool`)."""
    decode_rows(_self.kernel, S, lengths, root, heads, status, start, step)
