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

Single root (Gabow & Tarjan 1984, as presented by Zmigrod, Vieira & Cotterell 2020 and used
for G^[1] in Zmigrod et al. 2021 §2): the unconstrained contraction phase runs first; it stays
valid under the root constraint, since no contracted cycle contains a root arc. If the
contracted graph's tree has one root edge, that is the answer. Otherwise, while it has several,
the root edge whose removal costs least (its adjusted weight minus that of the best non-root
arc entering the same top-level component) is swapped for that arc; a cycle closed by the swap
is contracted and the merged component selects its best entering arc again (the root edge
stays in its incoming array, and is what it takes unless a non-root arc ties), as in
Zmigrod et al.'s swap-and-contract loop. Root arcs never join weak parts, so each root child's
subtree stays a part of its own and the cycle test of a swap is the union–find's. A cheapest
root edge without any non-root alternative means no single-root tree exists. O(N^2) in all.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import tarjan as _self  # numba caches a function passed as a value only via a module
from .registry import register
from .trees import INTERNAL_ERROR, NEG_INF, NO_TREE, OK, run_kernel


@nb.njit(nogil=True, cache=True)
def _best_nonroot(W, MW, MD, c):
    """Best non-root arc entering component ``c``: ``(adjusted weight, source, dependent)``."""
    N = W.shape[0]
    bw = NEG_INF
    bsrc = -1
    bdep = -1
    if c < N:
        for u in range(1, N):
            x = W[u, c]
            if x > bw:
                bw = x
                bsrc = u
        bdep = c
    else:
        row = MW[c - N]
        for u in range(1, N):
            if row[u] > bw:
                bw = row[u]
                bsrc = u
        if bsrc >= 0:
            bdep = MD[c - N, bsrc]
    return bw, bsrc, bdep


@nb.njit(nogil=True, cache=True)
def solve_tarjan(W, single_root, heads):
    """Best tree of ``W`` (maximum score) by corrected Tarjan; Gabow–Tarjan single root.

    One function, no calls in the loops (a compiled call passing arrays costs more than the
    work of a selection). Components ``0..N-1`` are the singletons, ``N + k`` the k-th
    contraction, whose incoming array is row ``k`` of ``MW`` (dependents in ``MD``).

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
    iw = np.empty((16, C), dtype=np.int64)
    fw = np.empty((3, C))
    MW = np.empty((max(N - 2, 1), N))
    MD = np.empty((max(N - 2, 1), N), dtype=np.int64)
    comp = iw[0]  # component of each node (flat labels)
    nxt = iw[1]  # node lists of the components: next node
    wpar = iw[2]  # union-find over nodes: weakly connected parts of the selected arcs
    leaf = iw[3]  # first forest node entering each singleton
    gh = iw[4]  # greedy head of each word
    first = iw[5]  # first / last node of each component's list
    last = iw[6]
    sel_src = iw[7]  # source node of each component's selected arc (-1: none yet)
    sel_f = iw[8]  # forest node of each component's selection
    fsrc = iw[9]  # forest: original arc fsrc -> fdep, parent fpar
    fdep = iw[10]
    fpar = iw[11]
    members = iw[12]
    roots = iw[13]  # phase 2: the root children of the contracted graph, with the best
    rsrc = iw[14]  # non-root arc rsrc -> rdep entering each (adjusted weight rw)
    rdep = iw[15]
    rw = fw[2]
    sel_w = fw[0]  # adjusted weight of each component's selected arc
    gw = fw[1]
    heads[0] = -1
    for d in range(N):
        gw[d] = NEG_INF
        gh[d] = -1
        comp[d] = d
        nxt[d] = -1
        wpar[d] = d
        first[d] = d
        last[d] = d
        sel_src[d] = -1
    # Greedy pass, row-major: the best head of every word, i.e. the first selection of every
    # singleton. Row 0 goes last and wins only strictly, which spares phase 2 on ties.
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
    nf = 0  # forest nodes
    nm = 0  # contractions
    nroots = 0
    phase = 1
    item = 1
    while True:
        # Next component to settle. Phase 1: the singletons 1..n in order, each with its
        # greedy head. Phase 2 (single root): swap the root edge of the contracted graph
        # whose removal costs least for the best non-root arc entering its component.
        if phase == 1:
            if item == N:
                if not single_root:
                    break
                for v in range(1, N):
                    c = comp[v]
                    if first[c] == v and sel_src[c] == 0:
                        roots[nroots] = c
                        aw, asrc, adep = _best_nonroot(W, MW, MD, c)
                        rw[nroots] = aw
                        rsrc[nroots] = asrc
                        rdep[nroots] = adep
                        nroots += 1
                phase = 2
                continue
            c = item
            item += 1
            bw = gw[c]
            bsrc = gh[c]
            bdep = c
            reuse = -1
        else:
            if nroots <= 1:
                break
            best = np.inf
            ib = -1
            for i in range(nroots):
                if rsrc[i] >= 0:
                    delta = sel_w[roots[i]] - rw[i]
                    if delta < best:
                        best = delta
                        ib = i
            if ib < 0:
                return NO_TREE  # no root child can leave the root: no single-root tree
            c = roots[ib]
            bw = rw[ib]
            bsrc = rsrc[ib]
            bdep = rdep[ib]
            reuse = sel_f[c]
            nroots -= 1
            roots[ib] = roots[nroots]
            rw[ib] = rw[nroots]
            rsrc[ib] = rsrc[nroots]
            rdep[ib] = rdep[nroots]
        # Settle c with the arc bsrc -> bdep of adjusted weight bw, contracting every cycle
        # the selections close, until a selection joins two weak parts.
        while True:
            if bsrc < 0:
                return NO_TREE  # no admissible arc enters c: some words cannot be reached
            if reuse >= 0:
                f = reuse  # phase 2: the swapped root edge's forest node is replaced
                reuse = -1
            else:
                f = nf
                nf += 1
                fpar[f] = -1
            fsrc[f] = bsrc
            fdep[f] = bdep
            sel_f[c] = f
            sel_w[c] = bw
            sel_src[c] = bsrc
            if c < N:
                leaf[c] = f
            if bsrc == 0:
                # A root arc never closes a cycle. It joins no weak part either, so that
                # each root child keeps its subtree as its own part, which phase 2 needs
                # when it swaps the root edge away.
                if phase == 2:
                    roots[nroots] = c
                    aw, asrc, adep = _best_nonroot(W, MW, MD, c)
                    rw[nroots] = aw
                    rsrc[nroots] = asrc
                    rdep[nroots] = adep
                    nroots += 1
                break
            rc = first[c]
            while wpar[rc] != rc:
                wpar[rc] = wpar[wpar[rc]]
                rc = wpar[rc]
            ru = bsrc
            while wpar[ru] != ru:
                wpar[ru] = wpar[wpar[ru]]
                ru = wpar[ru]
            if rc != ru:
                wpar[rc] = ru
                break
            # The selections close a cycle c <- comp(bsrc) <- ... <- c: contract it.
            k = nm
            nm += 1
            nc = N + k
            nmem = 0
            x = comp[bsrc]
            while x != c:
                members[nmem] = x
                nmem += 1
                if nmem >= N or sel_src[x] < 0:
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
                fpar[sel_f[m]] = nf  # the merged component's selection comes next
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
            if row[0] > bw:
                bw = row[0]
                bsrc = 0
            if bsrc >= 0:
                bdep = drow[bsrc]
            c = nc
    # Recovery (Camerini et al. 1979): scan the forest from its last node; a node not yet
    # deleted is a tree arc, and the path from its dependent's leaf up to it is deleted.
    deleted = np.zeros(nf, dtype=np.bool_)
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
