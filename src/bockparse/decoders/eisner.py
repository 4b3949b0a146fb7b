"""Eisner's first-order projective dynamic programme, O(n^3) time, O(n^2) space.

The best *projective* tree: no two arcs cross when drawn above the sentence with ROOT at position
0 to the left, ROOT arcs included (the CL/E tutorial's closing section on projective data; the
textbook chapter's definition of projectivity). The chart has complete and incomplete spans, each
stored in one ``[N, N]`` matrix indexed by (head, far end), so a span to the right of its head
lies above the diagonal and one to the left below it:

* ``I[h, d]``: best span between ``h`` and ``d`` containing the arc ``h -> d``, built from a
  complete span of the left end pointing right and one of the right end pointing left, which
  meet between two adjacent words;
* ``C[h, e]``: best span headed at ``h`` reaching ``e`` with nothing left to attach, an
  incomplete span ``h -> r`` followed by the complete span of ``r`` reaching ``e``.

Spans are filled by increasing width; each cell keeps the split of its best value (the first
on ties), and the tree is read back with an explicit stack (no recursion).

Root handling: with ``single_root=False`` the answer is the complete span of ROOT over ``0..n``,
where ROOT may take several children. With ``single_root=True`` ROOT takes exactly one child
``r``: the best of ``S[0, r] + C[r, 1] + C[r, n]`` over ``r``, the chart being filled over words
``1..n`` only. ``-inf`` arcs are never used; ``NO_TREE`` if no projective (single-root) tree
avoids them.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import eisner as _self  # numba caches a function passed as a value only via a module
from .pool import decode_rows
from .registry import register, register_batch
from .trees import NEG_INF, NO_TREE, OK, run_kernel


@nb.njit(nogil=True, cache=True)
def solve(W, single_root, heads):
    """Best projective tree of ``W`` by Eisner's algorithm; ROOT's children restricted if asked.

    Args:
        W: float64 ``[N, N]`` work matrix from ``load_scores`` (``-inf`` on forbidden arcs,
            column 0 and the diagonal); read only.
        single_root: ROOT takes exactly one child.
        heads: int64 ``[N]``; on success the best projective tree, ``heads[0] = -1``.

    Returns:
        ``OK``, or ``NO_TREE`` when no projective (single-root) tree avoids the forbidden arcs.
    """
    N = W.shape[0]
    n = N - 1
    heads[0] = -1
    lo = 1 if single_root else 0
    C = np.empty((N, N))
    I = np.empty((N, N))
    CT = np.empty((N, N))  # CT[e, h] = C[h, e]: contiguous reads of the column of C
    Cbp = np.empty((N, N), dtype=np.int32)
    Ibp = np.empty((N, N), dtype=np.int32)
    for s in range(N):
        C[s, s] = 0.0
        CT[s, s] = 0.0
    for w in range(1, N):
        for s in range(lo, N - w):
            t = s + w
            # Incomplete spans: C[s, r] (s -> right to r) + C[t, r + 1] (t -> left to r + 1).
            a_rt = W[s, t]
            a_lt = W[t, s]
            if a_rt != NEG_INF or a_lt != NEG_INF:
                b = NEG_INF
                br = s
                for r in range(s, t):
                    x = C[s, r] + C[t, r + 1]
                    if x > b:
                        b = x
                        br = r
                I[s, t] = b + a_rt
                I[t, s] = b + a_lt
                Ibp[s, t] = br
                Ibp[t, s] = br
            else:
                I[s, t] = NEG_INF
                I[t, s] = NEG_INF
                Ibp[s, t] = s
                Ibp[t, s] = s
            # Complete to the right: I[s, r] + C[r, t], s < r <= t.
            b = NEG_INF
            br = t
            for r in range(s + 1, t + 1):
                x = I[s, r] + CT[t, r]
                if x > b:
                    b = x
                    br = r
            C[s, t] = b
            CT[t, s] = b
            Cbp[s, t] = br
            # Complete to the left: C[r, s] + I[t, r], s <= r < t.
            b = NEG_INF
            br = s
            for r in range(s, t):
                x = CT[s, r] + I[t, r]
                if x > b:
                    b = x
                    br = r
            C[t, s] = b
            CT[s, t] = b
            Cbp[t, s] = br

    # Explicit stack of spans to read back: (head, far end, complete?). Only spans of width >= 1
    # are pushed after the start and those on the stack never share an interior word, so at most
    # n + 2 are stored at once.
    stack_h = np.empty(N + 2, dtype=np.int64)
    stack_e = np.empty(N + 2, dtype=np.int64)
    stack_c = np.empty(N + 2, dtype=np.bool_)
    top = 0
    if single_root:
        best = NEG_INF
        root_child = -1
        for r in range(1, N):
            if W[0, r] == NEG_INF:
                continue
            x = W[0, r] + C[r, 1] + C[r, n]
            if x > best:
                best = x
                root_child = r
        if root_child < 0 or best == NEG_INF:
            return NO_TREE
        heads[root_child] = 0
        stack_h[0] = root_child
        stack_e[0] = 1
        stack_c[0] = True
        stack_h[1] = root_child
        stack_e[1] = n
        stack_c[1] = True
        top = 2
    else:
        if C[0, n] == NEG_INF:
            return NO_TREE
        stack_h[0] = 0
        stack_e[0] = n
        stack_c[0] = True
        top = 1
    while top > 0:
        top -= 1
        h = stack_h[top]
        e = stack_e[top]
        if h == e:  # only the initial spans can be trivial
            continue
        if stack_c[top]:
            r = Cbp[h, e]
            # C[h, e] = I[h, r] + C[r, e] in either direction (r != h).
            stack_h[top] = h
            stack_e[top] = r
            stack_c[top] = False
            top += 1
            if r != e:
                stack_h[top] = r
                stack_e[top] = e
                stack_c[top] = True
                top += 1
        else:
            heads[e] = h
            r = Ibp[h, e]
            s = min(h, e)
            t = max(h, e)
            if r != s:
                stack_h[top] = s
                stack_e[top] = r
                stack_c[top] = True
                top += 1
            if r + 1 != t:
                stack_h[top] = t
                stack_e[top] = r + 1
                stack_c[top] = True
                top += 1
    return OK


@register("eisner")
@nb.njit(nogil=True, cache=True)
def kernel(S, root, heads):
    """Entry point: ``run_kernel`` conventions (:mod:`.trees`)."""
    return run_kernel(_self.solve, S, root, heads)


@register_batch("eisner")
@nb.njit(nogil=True, cache=True)
def batch(S, lengths, root, heads, status, start, step):
    """Batch loop: ``decode_rows`` conventions (:mod:`.pool`)."""
    decode_rows(_self.kernel, S, lengths, root, heads, status, start, step)


@nb.njit(nogil=True, cache=True)
def _crossing_kernel(heads):
    """Whether two arcs of ``heads`` cross (ROOT arcs included); O(n^2)."""
    N = heads.shape[0]
    for d in range(1, N):
        a = min(heads[d], d)
        b = max(heads[d], d)
        for d2 in range(d + 1, N):
            c = min(heads[d2], d2)
            e = max(heads[d2], d2)
            if (a < c < b < e) or (c < a < e < b):
                return True
    return False


def is_projective(heads) -> bool:
    """Whether a dependency tree is projective: no two of its arcs cross, ROOT arcs included.

    Arcs are drawn above the sentence with ROOT at position 0, left of word 1; arcs ``(a, b)``
    and ``(c, e)`` (endpoints sorted) cross when ``a < c < b < e``; arcs sharing an endpoint
    never cross. For a tree this is the textbook definition (every word between a head and its
    dependent is dominated by the head).

    Args:
        heads: int ``[N]``, ``heads[0] == -1``, a tree (see ``check_tree``); not validated
            beyond its shape.

    Returns:
        ``True`` if no two arcs cross.
    """
    h = np.ascontiguousarray(heads, dtype=np.int64)
    if h.ndim != 1 or h.shape[0] < 1:
        raise ValueError(f"heads must be a 1-D array of length n + 1 >= 1, got shape {h.shape}")
    return not bool(_crossing_kernel(h))
