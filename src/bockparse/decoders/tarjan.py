"""Corrected Tarjan: Tarjan (1977) with the recovery of Camerini, Fratta & Maffioli (1979).

Dense O(N^2) implementation, compiled and iterative, maximising scores ``W[h, d]``.

Components and their entering arcs (Tarjan 1977; the dense case of Böther et al. 2023, cited
in the Bock paper §3.4 and §4.1):

* every original node starts as a singleton component whose incoming array is the column
  ``W[:, v]`` (one entry per source node ``u``, the original arc ``u -> v``);
* components are processed one at a time; the active component selects its best entering
  arc (the maximum of its incoming array over sources outside it). If the source lies in a
  different weakly connected part of the selected arcs (a union–find), the selection is kept;
  otherwise the selected arcs close a critical cycle, which is contracted at once into a new
  component, and the new component becomes the active one (the component schedule of the Bock
  paper §4.1, continuing with the merged component);
* a contraction merges the members' incoming arrays into one dense row, entry by entry:
  for a source ``u`` it keeps the best of ``arr_m[u] - w(sel_m)`` over the members ``m``
  (the contracted-graph weights of Zmigrod et al. 2021 §2, up to the constant ``w(C)``),
  remembering the original dependent of the winning arc. Each contraction costs O(|C| N),
  and the sizes of all cycles sum to less than 2N, so the whole run is O(N^2): no heaps.

Recovery (Camerini et al. 1979, the corrected reconstruction forest; Bock paper §4.1): every
selection is a node of a forest; the selection entering a contracted component becomes the
parent of the selections on its cycle; ``leaf[v]`` is the first selection entering singleton
``v``. Parents are created after their children, so scanning the selections from the last to
the first, every selection not yet deleted is an arc of the tree, and the path from
``leaf[dependent]`` up to it is deleted. Exact with ties.

Single root (Gabow & Tarjan 1984 as presented by Zmigrod, Vieira & Cotterell 2020, and in
Zmigrod et al. 2021 §2 for G^[1]): the unconstrained contraction phase is run first; if its
contracted graph has one root edge the tree is the answer. Otherwise the root edges of the
contracted graph are removed (G \\\\ e: every root arc into that top-level component) and
those components are processed again, each taking its best non-root entering arc and
contracting the cycles this closes; a root arc is taken again only by a component with no
other entering arc. This is Tarjan's algorithm on the lexicographic weights
``(-[arc leaves the root], w)`` (an infinite root penalty held symbolically, exact where the
numeric penalty of §4.3 rounds): every contraction of the first phase is still a critical
cycle under those weights (its arcs never leave the root), so the phase can be kept, and the
lexicographic optimum is the best tree with the fewest root children, i.e. the best
single-root tree whenever one exists. More than one root child at the end means none exists.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import tarjan as _self  # numba caches a function passed as a value only via a module
from .registry import register
from .trees import INTERNAL_ERROR, NEG_INF, NO_TREE, OK, run_kernel

# Rows of the packed int64 work array (length 2N each: N nodes, then N - 1 merged components).
_COMP, _NXT, _WPAR, _LEAF, _GH, _FIRST, _LAST, _SRC, _SELF, _FSRC, _FDEP, _FPAR, _MEM = range(13)
_INT_ROWS = 14  # _MEM + 1 and one spare row (phase-2 list of root components)


@nb.njit(nogil=True, cache=True, inline="always")
def _find(par, x):
    """Root of ``x`` in the union–find ``par`` (path halving, no recursion)."""
    while par[x] != x:
        par[x] = par[par[x]]
        x = par[x]
    return x


@nb.njit(nogil=True, cache=True)
def _attach(W, MW, MD, iw, sel_w, cnt, c, bw, bsrc, bdep, lex, reuse):
    """Settle component ``c`` with entering arc ``bsrc -> bdep`` of adjusted weight ``bw``.

    Contracts every cycle the selection closes and re-selects for the merged component until
    a selection joins two weak parts. ``lex``: selections prefer any non-root arc to a root
    arc (phase 2 of the single-root procedure). ``reuse``: a forest id to overwrite with the
    first selection (a phase-2 re-selection), or -1. ``cnt[0]``, ``cnt[1]``: numbers of forest
    nodes and of merged components so far.
    """
    N = W.shape[0]
    comp = iw[_COMP]
    nxt = iw[_NXT]
    wpar = iw[_WPAR]
    leaf = iw[_LEAF]
    first = iw[_FIRST]
    last = iw[_LAST]
    sel_src = iw[_SRC]
    sel_f = iw[_SELF]
    fsrc = iw[_FSRC]
    fdep = iw[_FDEP]
    fpar = iw[_FPAR]
    members = iw[_MEM]
    while True:
        if bsrc < 0:
            return NO_TREE  # no admissible arc enters c: some words cannot be reached
        if reuse >= 0:
            f = reuse
            reuse = -1
        else:
            f = cnt[0]
            cnt[0] += 1
            fpar[f] = -1
        fsrc[f] = bsrc
        fdep[f] = bdep
        sel_f[c] = f
        sel_w[c] = bw
        sel_src[c] = bsrc
        if c < N:
            leaf[c] = f
        rc = _find(wpar, first[c])
        ru = _find(wpar, bsrc)
        if rc != ru:
            wpar[rc] = ru
            return OK
        # The selections close a cycle: c <- comp(bsrc) <- ... <- c. Contract it.
        k = cnt[1]
        cnt[1] += 1
        nc = N + k
        nmem = 0
        x = comp[bsrc]
        while x != c:
            members[nmem] = x
            nmem += 1
            if nmem >= N:
                return INTERNAL_ERROR
            x = comp[sel_src[x]]
        members[nmem] = c
        nmem += 1
        row = MW[k]
        drow = MD[k]
        for i in range(nmem):
            m = members[i]
            s = sel_w[m]
            if m < N:
                if i == 0:
                    for u in range(N):
                        row[u] = W[u, m] - s
                        drow[u] = m
                else:
                    for u in range(N):
                        val = W[u, m] - s
                        if val > row[u]:
                            row[u] = val
                            drow[u] = m
            else:
                src = MW[m - N]
                sdep = MD[m - N]
                if i == 0:
                    for u in range(N):
                        row[u] = src[u] - s
                        drow[u] = sdep[u]
                else:
                    for u in range(N):
                        val = src[u] - s
                        if val > row[u]:
                            row[u] = val
                            drow[u] = sdep[u]
        for i in range(nmem):
            m = members[i]
            fpar[sel_f[m]] = cnt[0]  # the merged component's selection comes next
            v = first[m]
            while v >= 0:
                comp[v] = nc
                row[v] = NEG_INF  # arcs inside the new component
                v = nxt[v]
            if i == 0:
                first[nc] = first[m]
            else:
                nxt[last[nc]] = first[m]
            last[nc] = last[m]
        # Best entering arc of the merged component.
        bw = NEG_INF
        bsrc = -1
        for u in range(1, N):
            if row[u] > bw:
                bw = row[u]
                bsrc = u
        if row[0] > NEG_INF and (bsrc < 0 or (not lex and row[0] > bw)):
            bw = row[0]
            bsrc = 0
        if bsrc >= 0:
            bdep = drow[bsrc]
        c = nc


@nb.njit(nogil=True, cache=True)
def _recover(iw, nf, heads, deleted):
    """Camerini et al. (1979) recovery: the tree arcs from the reconstruction forest."""
    leaf = iw[_LEAF]
    fsrc = iw[_FSRC]
    fdep = iw[_FDEP]
    fpar = iw[_FPAR]
    for f in range(nf):
        deleted[f] = False
    for f in range(nf - 1, -1, -1):
        if deleted[f]:
            continue
        v = fdep[f]
        heads[v] = fsrc[f]
        x = leaf[v]
        while x != f:
            if x < 0:
                return INTERNAL_ERROR
            deleted[x] = True
            x = fpar[x]
    return OK


@nb.njit(nogil=True, cache=True)
def solve_tarjan(W, single_root, heads):
    """Best tree of ``W`` (maximum score) by corrected Tarjan; Gabow–Tarjan single root.

    Args:
        W: float64 ``[N, N]`` from ``load_scores`` (``-inf`` on forbidden arcs, column 0 and
            the diagonal); read only.
        single_root: exactly one word attached to ROOT.
        heads: int64 ``[N]``, the result (``heads[0] = -1``).

    Returns:
        ``OK``, ``NO_TREE`` or ``INTERNAL_ERROR``.
    """
    N = W.shape[0]
    C = 2 * N
    iw = np.empty((_INT_ROWS, C), dtype=np.int64)
    fw = np.empty((2, C))
    MW = np.empty((max(N - 2, 1), N))
    MD = np.empty((max(N - 2, 1), N), dtype=np.int64)
    sel_w = fw[0]
    gw = fw[1]
    comp = iw[_COMP]
    nxt = iw[_NXT]
    wpar = iw[_WPAR]
    gh = iw[_GH]
    first = iw[_FIRST]
    last = iw[_LAST]
    sel_src = iw[_SRC]
    sel_f = iw[_SELF]
    roots = iw[_INT_ROWS - 1]
    cnt = np.zeros(2, dtype=np.int64)
    heads[0] = -1
    # Greedy pass, row-major: the best head of every word (the first selection of each
    # singleton). Row 0 goes last and wins
    # only strictly, which spares the single-root phase 2 on ties.
    for d in range(N):
        gw[d] = NEG_INF
        gh[d] = -1
        comp[d] = d
        nxt[d] = -1
        wpar[d] = d
        first[d] = d
        last[d] = d
        sel_src[d] = -1
    for h in range(1, N):
        row = W[h]
        for d in range(1, N):
            x = row[d]
            if x > gw[d]:
                gw[d] = x
                gh[d] = h
    row = W[0]
    for d in range(1, N):
        x = row[d]
        if x > gw[d]:
            gw[d] = x
            gh[d] = 0
    # Phase 1: the unconstrained contraction phase, singletons in increasing order.
    for v in range(1, N):
        if comp[v] != v or sel_src[v] >= 0:
            continue  # already merged (impossible: merged components contain processed nodes)
        status = _attach(W, MW, MD, iw, sel_w, cnt, v, gw[v], gh[v], v, False, -1)
        if status != OK:
            return status
    if single_root:
        # Top-level components entered from the root (always top level: root arcs never
        # lie on a cycle).
        nroots = 0
        for v in range(1, N):
            c = comp[v]
            if first[c] == v and sel_src[c] == 0:
                roots[nroots] = c
                nroots += 1
        if nroots > 1:
            # Phase 2: drop the root edges of the contracted graph and settle those
            # components again with root arcs as the last resort. Rebuild the weak parts
            # without the root edges: each top-level component with its subtree.
            for v in range(N):
                wpar[v] = first[comp[v]]
            for v in range(1, N):
                c = comp[v]
                if first[c] == v and sel_src[c] > 0:
                    rc = _find(wpar, v)
                    ru = _find(wpar, sel_src[c])
                    if rc != ru:
                        wpar[rc] = ru
            for i in range(nroots):
                c = roots[i]
                bw = NEG_INF
                bsrc = -1
                bdep = -1
                if c < N:
                    for u in range(1, N):
                        x = W[u, c]
                        if x > bw:
                            bw = x
                            bsrc = u
                    if bsrc < 0 and W[0, c] > NEG_INF:
                        bw = W[0, c]
                        bsrc = 0
                    bdep = c
                else:
                    row = MW[c - N]
                    for u in range(1, N):
                        if row[u] > bw:
                            bw = row[u]
                            bsrc = u
                    if bsrc < 0 and row[0] > NEG_INF:
                        bw = row[0]
                        bsrc = 0
                    if bsrc >= 0:
                        bdep = MD[c - N, bsrc]
                status = _attach(W, MW, MD, iw, sel_w, cnt, c, bw, bsrc, bdep, True, sel_f[c])
                if status != OK:
                    return status
    deleted = np.empty(cnt[0], dtype=np.bool_)
    status = _recover(iw, cnt[0], heads, deleted)
    if status != OK:
        return status
    if single_root:
        k = 0
        for d in range(1, N):
            if heads[d] == 0:
                k += 1
        if k != 1:
            return NO_TREE
    return OK


@nb.njit(nogil=True, cache=True)
def solve(W, single_root, heads):
    """Corrected Tarjan (Tarjan 1977; Camerini et al. 1979), single root by Gabow–Tarjan."""
    return solve_tarjan(W, single_root, heads)


@register("tarjan")
@nb.njit(nogil=True, cache=True)
def kernel(S, root, heads):
    """Entry point: ``run_kernel`` conventions (:mod:`.trees`)."""
    return run_kernel(_self.solve, S, root, heads)
