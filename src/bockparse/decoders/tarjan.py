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

Ties follow the common order of Theorem 1 (Bock paper §4.1): among equal adjusted weights,
the smallest original dependent, then the smallest original head (ROOT's row included, as
node 0). The greedy pass keeps the first maximum of every column over heads ``0, 1, ...``; a
merged incoming array keeps, for each source, the smallest dependent among its best arcs; the
merged component takes the smallest ``(dependent, source)`` among its best entries. Since the
adjusted weights are Bock's adjusted costs negated, up to one constant per component
(``d(i, j) = C[i, j] - U1[j] + beta_Q``, §4.1), the selections, contractions and the recovered
branching after every column ``K`` are Bock's (Theorem 1): ``tarjan`` with
``single_root=False`` returns exactly ``bock``'s predecessor array whenever the arithmetic is
exact (e.g. integer or dyadic scores), ties and forbidden arcs included. In floating point the
two accumulate the same adjustments in a different order, so values that tie in exact
arithmetic may round apart; the trees then differ only between equal-valued optima.

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
stays in its incoming array), as in
Zmigrod et al.'s swap-and-contract loop. Root arcs never join weak parts, so each root child's
subtree stays a part of its own and the cycle test of a swap is the union–find's. A cheapest
root edge without any non-root alternative means no single-root tree exists. O(N^2) in all.

The engine, :func:`contract`, also serves the K-best search (:mod:`.kbest`): given ``MW2`` it
keeps, beside the best arc from every source into a merged component, the second best (another
dependent), which the second-best bookkeeping of Zmigrod et al. (2021, §3) needs. Given
``prefix``, it records the recovered branching after every completed column (the test hook of
Theorem 1). Both are ``None`` in the decoder, and numba compiles those branches away.
"""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from . import tarjan as _self  # numba caches a function passed as a value only via a module
from .pool import decode_rows
from .registry import register, register_batch
from .trees import INTERNAL_ERROR, NEG_INF, NO_TREE, OK, run_kernel, work_matrix

Forest = namedtuple("Forest", ["fsrc", "fdep", "fcomp", "deleted", "sel_w", "MW"])
"""What :func:`contract` leaves for K-best: forest node ``f`` is the selection of component
``fcomp[f]``, the original arc ``fsrc[f] -> fdep[f]``, a tree arc unless ``deleted[f]``;
``sel_w[c]`` is the adjusted weight of component ``c``'s selection and row ``k`` of ``MW`` the
incoming array of component ``N + k`` (components ``0..N-1`` are the singletons)."""


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
        drow = MD[c - N]
        for u in range(1, N):
            x = row[u]
            if x > bw or (x == bw and x > NEG_INF and drow[u] < bdep):
                bw = x
                bsrc = u
                bdep = drow[u]
    return bw, bsrc, bdep


@nb.njit(nogil=True, cache=True)
def recover(nf, fsrc, fdep, fpar, leaf, deleted, heads):
    """Corrected recovery (Camerini et al. 1979) of the first ``nf`` forest nodes.

    Scans the forest from its last node; a node not yet deleted is a tree arc, and the path
    from its dependent's leaf up to it is deleted. Writes ``heads[fdep] = fsrc`` for the kept
    nodes and ``deleted[:nf]``; returns ``OK`` or ``INTERNAL_ERROR``.
    """
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
def contract(W, single_root, heads, MW2, prefix):
    """Corrected Tarjan on ``W`` (maximum score); single root by Gabow–Tarjan.

    One function, no calls in the loops (a compiled call passing arrays costs more than the
    work of a selection).

    Args:
        W: float64 ``[N, N]`` from ``load_scores`` (``-inf`` on forbidden arcs, column 0 and
            the diagonal); read only.
        single_root: exactly one word attached to ROOT.
        heads: int64 ``[N]``, the result (``heads[0] = -1``).
        MW2: ``None``, or float64 ``[max(N - 2, 1), N]``: then row ``k`` receives the
            second-best adjusted weight from every source into component ``N + k`` (an arc to
            another dependent than ``MD``'s), for K-best.
        prefix: ``None``, or int64 ``[N, N]``: then row ``K`` receives the recovered branching
            after column ``K`` is settled (``-1`` for ROOT and the words after ``K``), and row 0
            all ``-1``; unconstrained only (Theorem 1's hook, for tests).

    Returns:
        ``(status, nf, forest)``: ``OK``, ``NO_TREE`` or ``INTERNAL_ERROR``; the number of
        forest nodes; the :data:`Forest` (its ``deleted`` valid after a successful run).
    """
    N = W.shape[0]
    # Components 0..N-1 are the singletons, N + k the k-th contraction (at most N - 2);
    # forest nodes and components number fewer than 2N.
    C = 2 * N
    iw = np.empty((17, C), dtype=np.int64)
    fw = np.empty((3, C))
    MW = np.empty((max(N - 2, 1), N))  # row k: incoming array of component N + k
    MD = np.empty((max(N - 2, 1), N), dtype=np.int64)  # the original dependent of each entry
    deleted = np.empty(C, dtype=np.bool_)
    comp = iw[0]  # component of each node (flat labels)
    nxt = iw[1]  # node lists of the components: next node
    first = iw[2]  # first / last node of each component's list
    last = iw[3]
    wpar = iw[4]  # union-find over nodes: weakly connected parts of the selected arcs
    leaf = iw[5]  # first forest node entering each singleton
    gh = iw[6]  # greedy head of each word, and its score
    gw = fw[0]
    sel_src = iw[7]  # source node of each component's selected arc (-1: none yet)
    sel_w = fw[1]  # adjusted weight of each component's selected arc
    sel_f = iw[8]  # forest node of each component's selection
    fsrc = iw[9]  # forest: original arc fsrc -> fdep, parent fpar, selection of fcomp
    fdep = iw[10]
    fpar = iw[11]
    fcomp = iw[12]
    members = iw[13]  # the components of the cycle being contracted
    roots = iw[14]  # phase 2: the root children of the contracted graph, with the best
    rsrc = iw[15]  # non-root arc rsrc -> rdep entering each (adjusted weight rw)
    rdep = iw[16]
    rw = fw[2]
    forest = Forest(fsrc, fdep, fcomp, deleted, sel_w, MW)
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
    if prefix is not None:
        prefix[0, :] = -1
    # Greedy pass, row-major from ROOT's row: the first best head of every word (the common
    # tie order), i.e. the first selection of every singleton.
    for h in range(N):
        row = W[h]
        for d in range(1, N):
            x = row[d]
            if x > gw[d]:
                gw[d] = x
                gh[d] = h
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
            if prefix is not None and item > 1:
                K = item - 1
                prefix[K, :] = -1
                if recover(nf, fsrc, fdep, fpar, leaf, deleted, prefix[K]) != OK:
                    return INTERNAL_ERROR, nf, forest
                prefix[K, 0] = -1
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
                return NO_TREE, nf, forest  # no root child can leave the root: no single-root tree
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
                return (
                    NO_TREE,
                    nf,
                    forest,
                )  # no admissible arc enters c: some words cannot be reached
            if reuse >= 0:
                f = reuse  # phase 2: the swapped root edge's forest node is replaced
                reuse = -1
            else:
                f = nf
                nf += 1
                fpar[f] = -1
            fsrc[f] = bsrc
            fdep[f] = bdep
            fcomp[f] = c
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
                    return INTERNAL_ERROR, nf, forest
                x = comp[sel_src[x]]
            members[nmem] = c
            nmem += 1
            # Merge the members' incoming arrays: for each source the best adjusted weight,
            # the smallest dependent among equals (and the second best, for K-best).
            row = MW[k]
            drow = MD[k]
            for u in range(N):
                row[u] = NEG_INF
                drow[u] = N
            if MW2 is not None:
                row2 = MW2[k]
                for u in range(N):
                    row2[u] = NEG_INF
            for i in range(nmem):
                m = members[i]
                s = sel_w[m]
                if m < N:
                    for u in range(N):
                        val = W[u, m] - s
                        if val > row[u] or (val == row[u] and m < drow[u]):
                            if MW2 is not None:
                                row2[u] = row[u]
                            row[u] = val
                            drow[u] = m
                        elif MW2 is not None:
                            if val > row2[u]:
                                row2[u] = val
                else:
                    src = MW[m - N]
                    sdep = MD[m - N]
                    if MW2 is not None:
                        src2 = MW2[m - N]
                    for u in range(N):
                        val = src[u] - s
                        if val > row[u] or (val == row[u] and sdep[u] < drow[u]):
                            if MW2 is not None:
                                row2[u] = max(row[u], src2[u] - s)
                            row[u] = val
                            drow[u] = sdep[u]
                        elif MW2 is not None:
                            if val > row2[u]:
                                row2[u] = val
            for i in range(nmem):
                m = members[i]
                fpar[sel_f[m]] = nf  # the merged component's selection comes next
                v = first[m]
                while v >= 0:
                    comp[v] = nc
                    row[v] = NEG_INF  # arcs inside the new component
                    if MW2 is not None:
                        row2[v] = NEG_INF
                    v = nxt[v]
                if i == 0:
                    first[nc] = first[m]
                else:
                    nxt[last[nc]] = first[m]
                last[nc] = last[m]
            # Best entering arc of the merged component: the smallest dependent, then the
            # smallest source, among the best.
            bw = NEG_INF
            bsrc = -1
            bdep = N
            for u in range(N):
                x = row[u]
                if x > bw or (x == bw and x > NEG_INF and drow[u] < bdep):
                    bw = x
                    bsrc = u
                    bdep = drow[u]
            c = nc
    if recover(nf, fsrc, fdep, fpar, leaf, deleted, heads) != OK:
        return INTERNAL_ERROR, nf, forest
    if single_root:
        k = 0
        for d in range(1, N):
            if heads[d] == 0:
                k += 1
        if k != 1:
            return NO_TREE, nf, forest
    return OK, nf, forest


@nb.njit(nogil=True, cache=True)
def solve_tarjan(W, single_root, heads):
    """Best tree of ``W`` by corrected Tarjan (:func:`contract`): ``OK``, ``NO_TREE`` or
    ``INTERNAL_ERROR``."""
    status, _, _ = contract(W, single_root, heads, None, None)
    return status


@nb.njit(nogil=True, cache=True)
def solve(W, single_root, heads):
    """Corrected Tarjan (Tarjan 1977; Camerini et al. 1979), single root by Gabow–Tarjan."""
    return solve_tarjan(W, single_root, heads)


@register("tarjan")
@nb.njit(nogil=True, cache=True)
def kernel(S, root, heads):
    """Entry point: ``run_kernel`` conventions (:mod:`.trees`)."""
    return run_kernel(_self.solve, S, root, heads)


@register_batch("tarjan")
@nb.njit(nogil=True, cache=True)
def batch(S, lengths, root, heads, status, start, step):
    """Batch loop: ``decode_rows`` conventions (:mod:`.pool`)."""
    decode_rows(_self.kernel, S, lengths, root, heads, status, start, step)


def prefix_branchings(scores) -> np.ndarray:
    """Corrected-Tarjan recovery after every completed column (Theorem 1's hook, for tests).

    Args:
        scores: float ``[N, N]``, ``scores[h, d]``; the rooted problem (no root constraint).

    Returns:
        int64 ``[N, N]``: row ``K`` the branching recovered from the record of columns
        ``1..K`` (``-1`` at ROOT and at the words ``K + 1..n``); row ``n`` is the ``tarjan``
        tree. Rows are ``-1`` from the first column where no admissible arc enters (infeasible).
    """
    W = work_matrix(scores)
    N = W.shape[0]
    prefix = np.full((N, N), -1, dtype=np.int64)
    contract(W, False, np.empty(N, dtype=np.int64), None, prefix)
    return prefix
