"""Shared conventions of every decoder: validation, status codes, root handling, tree checks.

Orientation (the Bock paper, §2): ``scores[h, d]`` is the score of arc ``h -> d``; rows are heads,
columns dependents, node 0 the artificial root. Column 0 and the diagonal are ignored and ``-inf``
forbids an arc. A tree is an int64 array ``heads`` of length ``N = n + 1`` with ``heads[0] == -1``.

Every method is a compiled ``solve(W, single_root, heads) -> status`` on a float64 work matrix
``W`` made by :func:`load_scores` (which ``solve`` may overwrite); its registered entry kernel is
``kernel(S, root, heads) = run_kernel(solve, S, root, heads) -> status``:

* ``S``: float32 or float64 ``[N, N]`` (any layout), read only;
* ``root``: one of ``UNCONSTRAINED``, ``SINGLE_ROOT`` (the method's own single-root procedure) or
  ``REWEIGHT`` (single root by the root penalty of :func:`reweight_root`);
* ``heads``: int64 ``[N]``, written on success;
* ``status``: ``OK``, ``BAD_VALUE`` (a NaN anywhere, or ``+inf`` on an admissible cell),
  ``NO_TREE`` (no spanning tree, or no single-root tree, avoids the forbidden arcs) or
  ``INTERNAL_ERROR`` (a broken invariant: a bug to report).

Kernels never raise: the Python wrappers turn a status into :class:`NoTreeError` or
``ValueError`` with a message from :func:`explain_no_tree` / :func:`find_bad_cell` (slow path only).
"""

from __future__ import annotations

import numba as nb
import numpy as np

OK = 0
BAD_VALUE = 1
NO_TREE = 2
INTERNAL_ERROR = 3  # an invariant of the algorithm failed: a bug, reported, never looped on

UNCONSTRAINED = 0
SINGLE_ROOT = 1
REWEIGHT = 2

NEG_INF = -np.inf


class NoTreeError(ValueError):
    """No spanning tree (or no single-root tree, when asked) avoids the forbidden arcs."""


@nb.njit(nogil=True, cache=True)
def load_scores(S, W):
    """Copy ``S`` into the float64 work matrix ``W``, masking column 0 and the diagonal.

    Args:
        S: float ``[N, N]``, ``S[h, d]``; never modified.
        W: float64 ``[N, N]``, overwritten.

    Returns:
        ``OK``, or ``BAD_VALUE`` if a cell is NaN anywhere or ``+inf`` at an admissible cell.
    """
    N = S.shape[0]
    # Branch-free copy that only flags NaN and +inf (vectorisable); column 0 and the diagonal
    # are masked afterwards, and a flag is looked at again cell by cell (rare slow path).
    flagged = False
    for h in range(N):
        for d in range(N):
            x = np.float64(S[h, d])
            flagged |= (x != x) | (x == np.inf)
            W[h, d] = x
    for v in range(N):
        W[v, 0] = NEG_INF
        W[v, v] = NEG_INF
    if flagged:
        for h in range(N):
            for d in range(N):
                x = S[h, d]
                if x != x or (x == np.inf and d != 0 and d != h):
                    return BAD_VALUE
    return OK


@nb.njit(nogil=True, cache=True)
def reweight_root(W):
    """Subtract a root penalty ``P`` from every admissible root arc of ``W`` in place.

    ``P = 1 + 2 R`` where ``R = sum_d (max_h W[h, d] - min_h W[h, d])`` over admissible arcs
    bounds the spread of all tree scores, so every extra root child costs more than any
    rearrangement gains: the unconstrained optimum of the reweighted matrix has one root child
    whenever a single-root tree exists, and it is the best such tree (the root penalty of the
    CL/E tutorial and of the Bock paper §4.3; Stanojević and Cohen 2021). Exact for scores of
    any sign, since ``R`` is computed from the range, not the magnitude.

    Args:
        W: float64 ``[N, N]`` from :func:`load_scores`; row 0 is modified.
    """
    N = W.shape[0]
    lo = np.full(N, np.inf)
    hi = np.full(N, -np.inf)
    for h in range(N):  # row by row, for contiguous reads
        for d in range(1, N):
            x = W[h, d]
            hi[d] = max(hi[d], x)
            lo[d] = min(lo[d], x if x != NEG_INF else np.inf)
    spread = 0.0
    for d in range(1, N):
        if hi[d] >= lo[d]:
            spread += hi[d] - lo[d]
    penalty = 1.0 + 2.0 * spread
    for d in range(1, N):
        if W[0, d] != NEG_INF:
            W[0, d] -= penalty


@nb.njit(nogil=True, cache=True)
def count_root_children(heads):
    """Number of words ``d >= 1`` with ``heads[d] == 0``."""
    k = 0
    for d in range(1, heads.shape[0]):
        if heads[d] == 0:
            k += 1
    return k


@nb.njit(nogil=True, cache=True)
def tree_score_kernel(W, heads):
    """Sum of ``W[heads[d], d]`` over ``d >= 1`` (float64)."""
    total = 0.0
    for d in range(1, heads.shape[0]):
        total += W[heads[d], d]
    return total


def as_float_array(scores) -> np.ndarray:
    """A float32/float64 numpy array of an array or tensor (moved to CPU once), never copied
    when it already is one; other numeric dtypes become float64."""
    if hasattr(scores, "detach"):  # torch.Tensor
        import torch

        t = scores.detach()
        if t.dtype not in (torch.float32, torch.float64):
            t = t.float()
        scores = t.cpu().numpy()
    a = np.asarray(scores)
    if a.dtype not in (np.float32, np.float64):
        if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
            raise ValueError(f"scores must be a float array, got dtype {a.dtype}")
        a = a.astype(np.float64)
    return a


def work_matrix(scores) -> np.ndarray:
    """The float64 work matrix of :func:`load_scores` for a square array or tensor.

    Raises:
        ValueError: not a square non-empty matrix, a NaN cell, or a ``+inf`` admissible cell.
    """
    S = as_float_array(scores)
    check_square(S)
    W = np.empty(S.shape)
    if load_scores(S, W) != OK:
        raise ValueError(find_bad_cell(S))
    return W


def check_square(S: np.ndarray, where: str = "scores") -> None:
    """``ValueError`` unless ``S`` is a square ``[N, N]`` matrix with ``N >= 2``."""
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"{where} must be a square [N, N] matrix, got shape {S.shape}")
    if S.shape[0] < 2:
        raise ValueError(f"{where} is empty: need N = n + 1 >= 2 (at least one word)")


def tree_score(scores, heads) -> float:
    """Score of a tree: ``sum_{d >= 1} scores[heads[d], d]``.

    Args:
        scores: float ``[N, N]``, ``scores[h, d]``.
        heads: int ``[N]``, ``heads[0] == -1``.

    Returns:
        The tree score as a Python float (float64 accumulation).
    """
    S = np.asarray(scores, dtype=np.float64)
    h = np.asarray(heads, dtype=np.int64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or h.shape != (S.shape[0],):
        raise ValueError(f"tree_score: scores {S.shape} and heads {h.shape} do not match")
    return float(S[h[1:], np.arange(1, S.shape[0])].sum())


def is_tree(heads, *, single_root: bool = False) -> bool:
    """Whether ``heads`` is a spanning arborescence rooted at 0 (one root child if asked).

    Args:
        heads: int ``[N]``, ``heads[0] == -1``.
        single_root: also require exactly one word attached to 0.
    """
    try:
        check_tree(heads, single_root=single_root)
    except ValueError:
        return False
    return True


def check_tree(heads, *, single_root: bool = False) -> None:
    """Raise ``ValueError`` saying why ``heads`` is not a (single-root) dependency tree.

    Args:
        heads: int ``[N]``, ``heads[0] == -1``; ``heads[d]`` in ``0..N-1`` for ``d >= 1``.
        single_root: also require exactly one word attached to 0.
    """
    h = np.asarray(heads)
    N = h.shape[0]
    if h.ndim != 1 or N < 2:
        raise ValueError(f"heads must be a 1-D array of length n + 1 >= 2, got shape {h.shape}")
    if h[0] != -1:
        raise ValueError(f"heads[0] must be -1 (ROOT has no head), got {h[0]}")
    for d in range(1, N):
        if not 0 <= h[d] < N:
            raise ValueError(f"word {d}: head {h[d]} out of range 0..{N - 1}")
        if h[d] == d:
            raise ValueError(f"word {d}: self-loop")
    state = np.zeros(N, dtype=np.int8)  # 0 unseen, 1 on the current walk, 2 reaches ROOT
    state[0] = 2
    for start in range(1, N):
        path = []
        v = start
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = h[v]
        if state[v] == 1:
            cycle = path[path.index(v) :]
            raise ValueError(f"cycle through words {sorted(int(u) for u in cycle)}")
        state[path] = 2
    k = int(np.count_nonzero(h[1:] == 0))
    if single_root and k != 1:
        raise ValueError(f"{k} words attached to ROOT, expected exactly one")


def find_bad_cell(scores) -> str:
    """Describe the first NaN cell (or ``+inf`` admissible cell) of ``scores``, row-major."""
    S = np.asarray(scores, dtype=np.float64)
    nan = np.argwhere(np.isnan(S))
    if nan.size:
        h, d = (int(x) for x in nan[0])
        return f"scores[{h}, {d}] is NaN (arc {h} -> {d})"
    pos = np.isposinf(S)
    pos[:, 0] = False
    np.fill_diagonal(pos, False)
    h, d = (int(x) for x in np.argwhere(pos)[0])
    return f"scores[{h}, {d}] is +inf (arc {h} -> {d}); use -inf to forbid an arc"


def explain_no_tree(scores, *, single_root: bool) -> str:
    """Say why no (single-root) spanning tree avoids the forbidden arcs of ``scores``."""
    S = np.asarray(scores, dtype=np.float64)
    N = S.shape[0]
    ok = np.isfinite(S)
    ok[:, 0] = False
    np.fill_diagonal(ok, False)
    orphans = [d for d in range(1, N) if not ok[:, d].any()]
    if orphans:
        return f"no spanning tree: word(s) {orphans} have no admissible head"
    if single_root and not ok[0, 1:].any():
        return "no single-root tree: ROOT has no admissible child"
    reached = np.zeros(N, dtype=bool)
    reached[0] = True
    frontier = [0]
    while frontier:
        u = frontier.pop()
        for v in np.flatnonzero(ok[u] & ~reached):
            reached[v] = True
            frontier.append(int(v))
    if not reached.all():
        unreached = np.flatnonzero(~reached).tolist()
        return f"no spanning tree: word(s) {unreached} cannot be reached from ROOT"
    children = np.flatnonzero(ok[0, 1:]) + 1
    return (
        "no single-root tree: with any one of the admissible ROOT children "
        f"{children.tolist()}, some words cannot be reached from ROOT"
    )


@nb.njit(nogil=True, cache=True)
def run_kernel(solve, S, root, heads):
    """Validate ``S`` into a float64 work matrix and run a method's ``solve`` on it.

    Args:
        solve: compiled ``solve(W, single_root, heads) -> status`` of one method; it may
            overwrite ``W`` and handles ``single_root=True`` by the method's own procedure.
        S: float ``[N, N]``, ``S[h, d]``; never modified.
        root: ``UNCONSTRAINED``, ``SINGLE_ROOT`` or ``REWEIGHT``.
        heads: int64 ``[N]``, the result.

    Returns:
        ``OK``, ``BAD_VALUE`` or ``NO_TREE``.
    """
    N = S.shape[0]
    W = np.empty((N, N))
    status = load_scores(S, W)
    if status != OK:
        return status
    heads[0] = -1
    if root == REWEIGHT:
        reweight_root(W)
        status = solve(W, False, heads)
        if status == OK and count_root_children(heads) != 1:
            return NO_TREE
        return status
    return solve(W, root == SINGLE_ROOT, heads)


@nb.njit(nogil=True, cache=True)
def enumerate_root_children(solve, W, heads):
    """Single root by enumeration (the Bock paper §4.2 and §4.3), in place of ``solve``.

    Solve the unrestricted rooted problem; if its optimum ``T0`` has one root child it is
    optimal. Otherwise solve once per admissible sole root child ``c`` (every other root arc
    forbidden) and keep the best tree, the smallest ``c`` among equal scores, i.e. the first
    best of the enumeration ``c = 1..n``.

    Children that cannot win are skipped: by LP duality the rooted optimum's dual (Bock's
    column adjustments ``U1``) bounds every tree containing ``0 -> c`` by ``S(T0) - slack[c]``,
    with ``slack[c] = C[0, c] - U1[c] >= 0`` the final adjusted cost of the root arc. Children
    are tried in increasing slack (those of ``T0`` first, slack 0) until the bound falls below
    the best tree found by more than the rounding error of the quantities compared. In float64
    ``S(T0)``, ``U1`` and the trial scores are sums of up to ``N^2`` terms each bounded by
    ``scale = sum_d max_h |W[h, d]|`` (finite entries), so each is off by less than
    ``N^2 eps scale``; the margin ``4 (N + 1)^2 eps scale`` covers them, large column offsets
    that cancel included (with those, pruning simply stops). Hence the result is the one of
    the unpruned enumeration, the smallest best ``c`` included (tested against it on integer
    graphs and on matrices with column offsets up to ``1e14``).

    Args:
        solve: compiled unconstrained ``solve(W, heads, slack) -> status`` that must not modify
            ``W`` and writes each root arc's final adjusted cost into ``slack`` (float64
            ``[N]``, ``inf`` where forbidden).
        W: float64 ``[N, N]`` work matrix; restored before returning.
        heads: int64 ``[N]``, the result.
    """
    N = W.shape[0]
    slack = np.full(N, np.inf)
    status = solve(W, heads, slack)
    if status != OK or count_root_children(heads) == 1:
        return status
    ceiling = tree_score_kernel(W, heads)
    largest = np.zeros(N)  # max_h |W[h, d]| over finite entries, read row by row
    for h in range(N):
        for d in range(1, N):
            x = abs(W[h, d])
            if x != np.inf and x > largest[d]:
                largest[d] = x
    scale = largest.sum()
    margin = 4.0 * (N + 1.0) ** 2 * np.finfo(np.float64).eps * scale
    row0 = W[0].copy()
    unused = np.empty(N)
    trial = np.empty(N, dtype=np.int64)
    trial[0] = -1
    best = -np.inf
    best_c = -1
    for c in np.argsort(slack[1:]) + 1:
        if row0[c] == NEG_INF:
            break  # forbidden root arcs have infinite slack and sort last
        bound = ceiling - slack[c]
        if best_c > 0 and bound < best - margin:
            break  # no remaining child can win or tie, rounding included
        W[0, :] = NEG_INF
        W[0, c] = row0[c]
        if solve(W, trial, unused) == OK:
            s = tree_score_kernel(W, trial)
            if best_c < 0 or s > best or (s == best and c < best_c):
                best = s
                best_c = c
                heads[:] = trial
    W[0, :] = row0
    return OK if best_c > 0 else NO_TREE
