"""Original Bock: a faithful port of Bock's (1971) Algol procedure, as given in the appendix of
Wang & Park (2026) (§3.1 and the appendix text on labels L2–L10, L98, L99).

The port keeps the procedure's own representation, unlike the reformulation in :mod:`.bock`:

* origin 1 and 1-based node indices ``1..N`` (index 0 of every array is unused), so node ``v``
  of the score matrix is Bock's node ``v + 1`` and ROOT is the origin ``j0 = 1``;
* ``0`` as the empty predecessor and ``(0, 0)`` as the empty bar pair;
* parallel bar arrays ``IBAR`` and ``JBAR`` (Ī, J̄);
* ``SPAN`` component labels, negated to mark the components visited by a backward trace and
  relabelled with the fresh label ``SS + 1`` on contraction;
* the label-directed control flow, kept as a state machine over the labels L3–L10, L98, L99;
* candidates replaced only under strict inequality (the first minimum in scan order).

The paper's faithfulness result (§3.3) is that, with exact arithmetic and these scan and tie
rules, this procedure and Algorithm 1 return the same predecessor array; the tests check it on
every input. Single root by enumeration of root children (§4.2), as for :mod:`.bock`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import bock_original as _self  # numba caches a function passed as a value only via a module
from .pool import decode_rows
from .registry import register, register_batch
from .trees import INTERNAL_ERROR, NO_TREE, OK, enumerate_root_children, run_kernel

M = np.inf  # Bock's "M": the cost of a forbidden link


@nb.njit(nogil=True, cache=True)
def solve_rooted(W, heads, slack):
    """Minimum-cost arborescence of ``C = -W`` rooted at the origin, by Bock's procedure.

    Args:
        W: float64 ``[N, N]`` scores with ``-inf`` on forbidden arcs, column 0 and diagonal;
            read only.
        heads: int64 ``[N]``; on success ``heads[v] = ISTAR[v + 1] - 1`` and ``heads[0] = -1``.
        slack: float64 ``[N]``; on success ``slack[v] = C[1, v + 1] - U1[v + 1]``, the final
            adjusted cost of each origin link (``inf`` where forbidden).

    Returns:
        ``OK``; ``NO_TREE`` at L98 (no feasible link enters the active span);
        ``INTERNAL_ERROR`` if L10 displaces a star with an empty bar to continue from (a bug).
    """
    N = W.shape[0]
    C = np.empty((N + 1, N + 1))
    for I in range(1, N + 1):
        for J in range(1, N + 1):
            C[I, J] = -W[I - 1, J - 1]  # -(-inf) = M on forbidden links
    # L2: initialise.
    U1 = np.zeros(N + 1)
    ISTAR = np.zeros(N + 1, dtype=np.int64)
    IBAR = np.zeros(N + 1, dtype=np.int64)
    JBAR = np.zeros(N + 1, dtype=np.int64)
    SPAN = np.arange(N + 1)
    SS = N
    K = 1  # the origin column is skipped
    H = I1 = J1 = I2 = J2 = I = J = 0
    DU = 0.0
    label = 3
    while True:
        if label == 3:  # L3: next column.
            K += 1
            label = 99 if K > N else 4
        elif label == 4:  # L4: least adjusted cost link into the active span.
            H = SPAN[K]
            DU = M
            I1 = 0
            J1 = 0
            for J in range(1, K + 1):
                if SPAN[J] == H:
                    for I in range(1, N + 1):
                        if SPAN[I] != H and C[I, J] < M and C[I, J] - U1[J] < DU:
                            DU = C[I, J] - U1[J]
                            I1 = I
                            J1 = J
            label = 98 if I1 == 0 else 5
        elif label == 5:  # L5: adjust the columns of the active span.
            for J in range(1, K + 1):
                if SPAN[J] == H:
                    U1[J] += DU
            label = 6
        elif label == 6:  # L6: start the backward trace at the candidate's head.
            J = I1
            label = 7
        elif label == 7:  # L7: back in the active span: contract with a fresh label.
            if SPAN[J] == H:
                SS += 1
                for q in range(1, K + 1):
                    if SPAN[q] == H or SPAN[q] < 0:
                        SPAN[q] = SS
                label = 4
            else:
                label = 8
        elif label == 8:  # L8: mark the span, fill an empty bar, follow the star.
            if ISTAR[J] > 0:
                if SPAN[J] > 0:
                    H1 = SPAN[J]
                    for q in range(1, K + 1):
                        if SPAN[q] == H1:
                            SPAN[q] = -H1
                if IBAR[J] == 0 and JBAR[J] == 0:
                    IBAR[J] = I1
                    JBAR[J] = J1
                J = ISTAR[J]
                label = 7
            else:
                label = 9
        elif label == 9:  # L9: no circuit: unmark the spans, start the exchange chain.
            for q in range(1, K + 1):
                if SPAN[q] < 0:
                    SPAN[q] = -SPAN[q]
            I2 = 0
            J2 = 0
            label = 10
        elif label == 10:  # L10: global bar replacement, local read, star update.
            for q in range(1, N + 1):
                if IBAR[q] == I1 and JBAR[q] == J1:
                    IBAR[q] = I2
                    JBAR[q] = J2
            I = IBAR[J1]
            J = JBAR[J1]
            IBAR[J1] = I2
            JBAR[J1] = J2
            I2 = ISTAR[J1]
            ISTAR[J1] = I1
            if I2 == 0:
                label = 3
            elif I == 0:
                return INTERNAL_ERROR
            else:
                J2 = J1
                I1 = I
                J1 = J
        elif label == 98:  # L98: infeasible.
            return NO_TREE
        else:  # L99: done; ISTAR holds the arborescence.
            heads[0] = -1
            for v in range(2, N + 1):
                heads[v - 1] = ISTAR[v] - 1
                slack[v - 1] = C[1, v] - U1[v] if C[1, v] < M else np.inf
            return OK


@nb.njit(nogil=True, cache=True)
def solve(W, single_root, heads):
    """Original Bock (Algol procedure, §3.1 and appendix), single root by enumeration (§4.2)."""
    if single_root:
        return enumerate_root_children(_self.solve_rooted, W, heads)
    return solve_rooted(W, heads, np.empty(W.shape[0]))


@register("bock-original")
@nb.njit(nogil=True, cache=True)
def kernel(S, root, heads):
    """Entry point: ``run_kernel`` conventions (:mod:`.trees`)."""
    return run_kernel(_self.solve, S, root, heads)


@register_batch("bock-original")
@nb.njit(nogil=True, cache=True)
def batch(S, lengths, root, heads, status, start, step):
    """Batch loop: ``decode_rows`` conventions (:mod:`.pool`)."""
    decode_rows(_self.kernel, S, lengths, root, heads, status, start, step)
