"""K-best non-projective dependency trees (Zmigrod, Vieira & Cotterell 2021), exact with ties.

Public API::

    kbest(scores, k, *, single_root=True) -> [(tree_score, heads), ...]   best first
    iter_kbest(scores, *, single_root=True) -> iterator of (tree_score, heads), nonincreasing

Conventions as :func:`bockparse.decoders.decode` (``scores[h, d]``, node 0 the root, ``-inf``
forbids an arc, column 0 and the diagonal ignored, the input never modified).

The search (Zmigrod et al. 2021 §4, ``kbest``; Camerini et al. 1980). A *cell* is a set of
trees given by constraints on the score matrix: banned arcs, forced arcs (every other head of
their dependent banned) and, under the root constraint, possibly a sole admissible root child.
A priority queue holds disjoint cells, each keyed by the best tree in it that has not been
output; popping the largest key outputs that tree and splits the rest of the cell into cells
again. Three kinds:

* ``U(G', T, e)``: the trees of ``G'`` except its best tree ``T`` (already output), keyed by the
  second-best weight ``w(G'^(2))``, with an arc ``e`` of ``T`` such that ``G'^(2) = (G' - e)^(1)``
  (the second-best theorem, §3). Popping outputs ``T2 = (G' - e)^(1)`` and pushes
  ``U(G' - e, T2, .)`` and ``U(G' + e, T, .)``: a tree other than ``T`` and ``T2`` either lacks
  ``e`` or contains it.
* ``R(B)`` (root constraint, ``kbest_dep`` of §5): the dependency trees whose root child is not
  in ``B``, keyed by their best ``T`` (the compiled Gabow–Tarjan decoder of :mod:`.tarjan` on
  the matrix without the root arcs to ``B``). Popping outputs ``T``, with root child ``j``, and
  pushes ``R(B + j)`` and ``U(G' + (0 -> j), T, .)``, where every root arc but ``0 -> j`` is
  banned, so that every tree of the cell is a dependency tree (the lemma of §5 that
  ``G^[2]`` is ``(G - e_root)^[1]`` or ``(G + e_root)^[2]``).
* ``F(G', T)``: a cell whose best tree ``T`` has not been output (see the tie guard below).

Second best (``next`` of §3: the blue-edge base case and the expansion lemma, unrolled over
the contraction sequence). The contraction engine of the ``tarjan`` decoder
(:func:`.tarjan.contract`, the same run with the same tie rule) keeps, for every component, its
incoming array with the best and the second-best arc from every source node (different
dependents), and the reconstruction forest.
Every arc of ``T`` is a forest node that the recovery keeps, the selection of one component
``c`` at one level of the contraction sequence (the base graph for the top-level components,
the graph of a contracted cycle for its other members). Its best swap replaces it by the best
arc entering ``c`` whose source is not a descendant, in ``T``, of the arc's dependent (a blue
arc: the swap leaves a tree at that level), or by the second-best arc from the same source;
the swap with the least loss gives ``w(G^(2))`` and the arc ``e``. One pass over the incoming
arrays: O(N^2) for ``next``, so O(K N^2) beyond the first tree.

Ties. ``U(G' + e, T, .)`` needs the cell's best tree to be ``T`` itself, which a fresh solve
of ``G' + e`` may not return among equal-weight trees: the second best is then computed for a
different tree and ``T`` would come out twice. The result of the solve is therefore compared
with ``T``; on a mismatch the cell ``G' + e`` minus ``T`` is split instead by Lawler's
partition around ``T`` (ban its first free arc; force it and ban the second; ...), each part
an ``F`` cell solved afresh (O(N^3) for that split). With the engine's tie order (Theorem 1's,
a fixed order on original arcs) no mismatch was seen on 20,000 tie-heavy small graphs; the
guard stays for ties that float64 rounding breaks differently in the two solves. It keeps the
cells disjoint, so no tree is output twice, and every list equals the brute-force top-k (as a
multiset of scores) on ties of any kind.

The reference implementation of the paper is known to misorder and repeat trees under the
root constraint with negative scores; nothing here depends on the sign of the scores: root
children are handled only by partitioning on the root arc, never by reweighting.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator

import numba as nb
import numpy as np

from .tarjan import contract, solve_tarjan
from .trees import (
    NEG_INF,
    NO_TREE,
    OK,
    NoTreeError,
    as_float_array,
    check_square,
    explain_no_tree,
    find_bad_cell,
    load_scores,
    tree_score_kernel,
)

MISMATCH = 10  # the fresh solve returned another tree than the reference (ties)

_R, _U, _F = 0, 1, 2


@nb.njit(nogil=True, cache=True)
def _build(W0, store, bans, forced, root_only, Wm):
    """The cell's matrix: ``W0`` with its forced arcs, banned arcs and sole root child.

    ``bans`` and ``forced`` are chains in ``store`` (``store[0, i]`` the previous link, -1 at
    the end; ``store[1, i]`` an arc code ``h * N + d``), shared between the cells.
    """
    N = W0.shape[0]
    Wm[:, :] = W0
    i = forced
    while i >= 0:
        code = store[1, i]
        h = code // N
        d = code % N
        keep = Wm[h, d]
        for u in range(N):
            Wm[u, d] = NEG_INF
        Wm[h, d] = keep
        i = store[0, i]
    i = bans
    while i >= 0:
        code = store[1, i]
        Wm[code // N, code % N] = NEG_INF
        i = store[0, i]
    if root_only >= 0:
        keep = Wm[0, root_only]
        for d in range(N):
            Wm[0, d] = NEG_INF
        Wm[0, root_only] = keep


@nb.njit(nogil=True, cache=True)
def _best_swap(W, heads, forest, MW2, nf):
    """The least-loss swap of one tree arc (§3): ``(loss, source, dependent)``, or ``inf``.

    ``forest``, ``MW2`` and ``nf``: what :func:`.tarjan.contract` left of its run on ``W``,
    whose recovery gave ``heads``.
    """
    N = W.shape[0]
    tin = np.empty(N, dtype=np.int64)  # preorder of the tree
    size = np.empty(N + 1, dtype=np.int64)  # subtree sizes (first a fill cursor)
    cstart = np.empty(N + 1, dtype=np.int64)  # children of u: clist[cstart[u]:cstart[u + 1]]
    clist = np.empty(N, dtype=np.int64)
    stack = np.empty(N, dtype=np.int64)
    # Preorder intervals of the tree: u is below v iff tin[v] <= tin[u] < tin[v] + size[v].
    for u in range(N + 1):
        cstart[u] = 0
    for d in range(1, N):
        cstart[heads[d] + 1] += 1
    for u in range(N):
        cstart[u + 1] += cstart[u]
    for u in range(N):
        size[u] = cstart[u]  # fill cursor
    for d in range(1, N):
        h = heads[d]
        clist[size[h]] = d
        size[h] += 1
    sp = 1
    stack[0] = 0
    t = 0
    while sp > 0:
        sp -= 1
        u = stack[sp]
        tin[u] = t
        t += 1
        for i in range(cstart[u], cstart[u + 1]):
            stack[sp] = clist[i]
            sp += 1
    order = stack  # the stack is empty: reuse it for the preorder list
    for u in range(N):
        order[tin[u]] = u
    for u in range(N):
        size[u] = 1
    for i in range(N - 1, 0, -1):
        u = order[i]
        size[heads[u]] += size[u]
    # Swaps of the arcs kept at the singleton level, all at once in one row-major pass: the
    # best arc into d from a source outside d's subtree, other than d's head.
    alt1 = np.full(N, NEG_INF)
    for u in range(N):
        tu = tin[u]
        row = W[u]
        for d in range(1, N):
            x = row[d]
            if x > alt1[d] and u != heads[d] and not (tin[d] <= tu < tin[d] + size[d]):
                alt1[d] = x
    best = np.inf
    bsrc = -1
    bdep = -1
    for f in range(nf):
        if forest.deleted[f]:
            continue
        c = forest.fcomp[f]
        v = forest.fdep[f]
        uf = forest.fsrc[f]
        lo = tin[v]
        hi = lo + size[v]
        if c < N:
            alt = alt1[v]
        else:
            alt = NEG_INF
            row = forest.MW[c - N]
            for u in range(N):
                tu = tin[u]
                if tu >= lo and tu < hi:
                    continue
                x = MW2[c - N, u] if u == uf else row[u]
                if x > alt:
                    alt = x
        if alt > NEG_INF:
            loss = forest.sel_w[c] - alt
            if loss < best:
                best = loss
                bsrc = uf
                bdep = v
    return best, bsrc, bdep


@nb.njit(nogil=True, cache=True)
def _next(W0, store, bans, forced, root_only, ref, heads):
    """Best tree of a cell and its best swap: ``(status, score, second score, e code)``.

    ``ref``: the tree the cell's best must be (length 0: none); ``MISMATCH`` otherwise.
    """
    N = W0.shape[0]
    Wm = np.empty((N, N))
    _build(W0, store, bans, forced, root_only, Wm)
    MW2 = np.empty((max(N - 2, 1), N))
    status, nf, forest = contract(Wm, False, heads, MW2, None)
    if status != OK:
        return status, NEG_INF, NEG_INF, -1
    if ref.shape[0] > 0:
        for d in range(1, N):
            if heads[d] != ref[d]:
                return MISMATCH, NEG_INF, NEG_INF, -1
    score = tree_score_kernel(W0, heads)
    loss, esrc, edep = _best_swap(Wm, heads, forest, MW2, nf)
    if esrc < 0:
        return OK, score, NEG_INF, -1
    return OK, score, score - loss, esrc * N + edep


@nb.njit(nogil=True, cache=True)
def _single(W0, store, bans, heads):
    """Best single-root tree without the root arcs in ``bans``: ``(status, score, root child)``."""
    Wm = np.empty_like(W0)
    _build(W0, store, bans, -1, -1, Wm)
    status = solve_tarjan(Wm, True, heads)
    if status != OK:
        return status, NEG_INF, -1
    child = -1
    for d in range(1, heads.shape[0]):
        if heads[d] == 0:
            child = d
    return OK, tree_score_kernel(W0, heads), child


class _Cells:
    """The shared store of constraint chains, and the compiled steps."""

    def __init__(self, W0: np.ndarray):
        N = W0.shape[0]
        self.W0 = W0
        self.N = N
        self.store = np.empty((2, 64), dtype=np.int64)
        self.size = 0
        self.none = np.empty(0, dtype=np.int64)

    def link(self, chain: int, code: int) -> int:
        """A new chain: ``chain`` plus the arc ``code``."""
        if self.size == self.store.shape[1]:
            self.store = np.concatenate((self.store, np.empty_like(self.store)), axis=1)
        i = self.size
        self.store[0, i] = chain
        self.store[1, i] = code
        self.size = i + 1
        return i

    def codes(self, chain: int) -> list[int]:
        out = []
        while chain >= 0:
            out.append(int(self.store[1, chain]))
            chain = int(self.store[0, chain])
        return out

    def next(self, bans: int, forced: int, root_only: int, ref=None):
        heads = np.empty(self.N, dtype=np.int64)
        status, score, second, e = _next(
            self.W0, self.store, bans, forced, root_only, self.none if ref is None else ref, heads
        )
        return status, heads, score, second, e

    def single(self, bans: int):
        heads = np.empty(self.N, dtype=np.int64)
        status, score, child = _single(self.W0, self.store, bans, heads)
        return status, heads, score, child


def _prepare(scores) -> tuple[np.ndarray, np.ndarray]:
    S = as_float_array(scores)
    check_square(S)
    W0 = np.empty(S.shape, dtype=np.float64)
    if load_scores(S, W0) != OK:
        raise ValueError(find_bad_cell(S))
    return S, W0


def iter_kbest(scores, *, single_root: bool = True) -> Iterator[tuple[float, np.ndarray]]:
    """Every (dependency) tree of ``scores`` in nonincreasing order of score.

    Args:
        scores: float ``[N, N]`` array or tensor, ``scores[h, d]``; ``-inf`` forbids an arc.
        single_root: only trees with exactly one word attached to ROOT (``kbest_dep``).

    Returns:
        An iterator of ``(tree_score, heads)``: ``tree_score`` a float64 sum of the original
        scores, ``heads`` a fresh int64 ``[N]`` array with ``heads[0] == -1``; it stops after
        the last tree. Equal scores come in an unspecified order; scores that differ only by
        float64 rounding may too.

    Raises:
        ValueError: not a square non-empty matrix, a NaN cell, or a ``+inf`` admissible cell.
        NoTreeError: no (single-root) tree avoids the forbidden arcs (raised by this call).
    """
    S, W0 = _prepare(scores)
    cells = _Cells(W0)
    none = -1  # the empty chain
    if single_root:
        status, heads, score, child = cells.single(none)
        first = (_R, (heads, score, none, child))
    else:
        status, heads, score, second, e = cells.next(none, none, -1)
        first = (_F, (heads, score, none, none, -1, second, e))
    if status != OK:
        if status == NO_TREE:
            raise NoTreeError(explain_no_tree(S, single_root=single_root))
        raise RuntimeError("kbest: decoder invariant broken; please report this matrix")
    return _search(cells, score, first)


def _search(cells: _Cells, key: float, first) -> Iterator[tuple[float, np.ndarray]]:
    N = cells.N
    none = -1
    seq = itertools.count()
    heap = [(-key, next(seq), *first)]

    def push_rest(bans, forced, root_only, ref):
        """Push the cell (bans, forced, root_only) minus its best tree ``ref``."""
        status, heads, _, second, e = cells.next(bans, forced, root_only, ref)
        if status == OK:
            if e >= 0:
                heapq.heappush(heap, (-second, next(seq), _U, (ref, bans, forced, root_only, e)))
            return
        if status != MISMATCH:
            raise RuntimeError("kbest: decoder invariant broken; please report this matrix")
        # Ties: the fresh solve found another best tree. Lawler's partition around ref.
        fixed = {c % N for c in cells.codes(forced)}
        if root_only >= 0:
            fixed.add(root_only)
        for d in range(1, N):
            if d in fixed:
                continue
            arc = int(ref[d]) * N + d
            banned = cells.link(bans, arc)
            status, heads, score, second, e = cells.next(banned, forced, root_only)
            if status == OK:
                cell = (heads, score, banned, forced, root_only, second, e)
                heapq.heappush(heap, (-score, next(seq), _F, cell))
            elif status != NO_TREE:
                raise RuntimeError("kbest: decoder invariant broken; please report this matrix")
            forced = cells.link(forced, arc)

    while heap:
        _, _, kind, cell = heapq.heappop(heap)
        if kind == _R:
            heads, score, bans, j = cell
            yield score, heads.copy()
            banned = cells.link(bans, j)  # the root arc 0 -> j has code j
            status, other, other_score, child = cells.single(banned)
            if status == OK:
                cell = (other, other_score, banned, child)
                heapq.heappush(heap, (-other_score, next(seq), _R, cell))
            elif status != NO_TREE:
                raise RuntimeError("kbest: decoder invariant broken; please report this matrix")
            push_rest(none, none, j, heads)
        elif kind == _F:
            heads, score, bans, forced, root_only, second, e = cell
            yield score, heads.copy()
            if e >= 0:
                heapq.heappush(heap, (-second, next(seq), _U, (heads, bans, forced, root_only, e)))
        else:
            best, bans, forced, root_only, e = cell
            without = cells.link(bans, e)
            status, heads, score, second, e2 = cells.next(without, forced, root_only)
            if status != OK:
                raise RuntimeError("kbest: decoder invariant broken; please report this matrix")
            yield score, heads.copy()
            if e2 >= 0:
                heapq.heappush(
                    heap, (-second, next(seq), _U, (heads, without, forced, root_only, e2))
                )
            push_rest(bans, cells.link(forced, e), root_only, best)


def kbest(scores, k: int, *, single_root: bool = True) -> list[tuple[float, np.ndarray]]:
    """The ``k`` highest-scoring (dependency) trees, best first (fewer if fewer exist).

    Args:
        scores: float ``[N, N]`` array or tensor, ``scores[h, d]``; ``-inf`` forbids an arc.
        k: number of trees, ``>= 0``.
        single_root: only trees with exactly one word attached to ROOT (``kbest_dep``, §5).

    Returns:
        ``[(tree_score, heads), ...]`` in nonincreasing order of score, no tree twice;
        ``tree_score`` is the float64 sum of the original scores of the tree's arcs.

    Raises:
        ValueError: ``k`` negative or not an integer; a malformed matrix as in ``decode``.
        NoTreeError: ``k >= 1`` and no (single-root) tree avoids the forbidden arcs.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    if k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k}")
    if k == 0:
        _prepare(scores)
        return []
    return list(itertools.islice(iter_kbest(scores, single_root=single_root), int(k)))
