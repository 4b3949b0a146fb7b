"""``bockparse-trace-bock``: print reformulated Bock (Algorithm 1, §3.2) phase by phase.

It runs the very code of :func:`bockparse.decoders.bock.solve_rooted` uncompiled
(``solve_rooted.py_func``) with a :class:`Tracer`, so the steps shown are the decoder's own.
Without a file it traces the paper's worked example (§3.2: costs 0->1 50, 0->2 60, 1->2 10,
2->1 20). A file holds a square cost matrix ``C[i, j]`` (head ``i``, dependent ``j``, node 0 the
root), one row per line, entries separated by spaces or commas; ``inf``, ``M`` or ``-`` forbid
an arc, and ``#`` starts a comment. The trace is of the rooted problem (several root children
allowed), the procedure of the paper's example.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .bock import solve_rooted
from .trees import INTERNAL_ERROR, NO_TREE, OK, load_scores

PAPER_EXAMPLE = """\
# The worked example of the Bock paper, §3.2 (node 0 is the root).
M  50 60
M  M  10
M  20 M
"""

BOT = "⊥"


def _node(v: int) -> str:
    return BOT if v < 0 else str(v)


def _arc(code: int, N: int) -> str:
    return BOT if code < 0 else f"({code // N},{code % N})"


def _num(x: float) -> str:
    return f"{x:g}"


class Tracer:
    """Receives the phase events of ``solve_rooted`` and prints them."""

    def __init__(self, N: int, out=None):
        self.N = N
        self.out = sys.stdout if out is None else out
        self._last_K = 0

    def _print(self, text: str) -> None:
        print(text, file=self.out)

    def search(self, K, H, I1, J1, adjusted, U1) -> None:
        if K != self._last_K:
            self._print(f"\nK = {K}")
            self._last_K = K
        self._print(f"  search   H = {H}: candidate {I1} -> {J1}, adjusted cost {_num(adjusted)}")
        self._print(f"  adjust   U1 = ({', '.join(_num(u) for u in U1)})")

    def trace(self, trace, bar, circuit) -> None:
        members = ", ".join(str(q) for q in np.flatnonzero(trace))
        end = "returns to the active component: circuit" if circuit else "reaches ⊥: transfer"
        self._print(f"  trace    TRACE = {{{members}}}, B = {self._bars(bar)}; {end}")

    def contract(self, comp) -> None:
        self._print(f"  contract comp = ({', '.join(str(c) for c in comp)})")

    def transfer(self, I1, J1, old, following, star, bar) -> None:
        self._print(
            f"  transfer install {I1} -> {J1}, displaced star {_node(old)}, next candidate "
            f"{_arc(following, self.N) if old >= 0 else BOT}; I* = {self._stars(star)}, "
            f"B = {self._bars(bar)}"
        )

    def _stars(self, star) -> str:
        return "(" + ", ".join(_node(v) for v in star) + ")"

    def _bars(self, bar) -> str:
        return "(" + ", ".join(_arc(c, self.N) for c in bar) + ")"


def parse_costs(text: str, source: str = "<costs>") -> np.ndarray:
    """Parse a cost matrix (see the module docstring) into float64 ``[N, N]``, ``inf`` forbidden."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].replace(",", " ").strip()
        if not line:
            continue
        row = []
        for tok in line.split():
            if tok in ("M", "-", "inf", "+inf"):
                row.append(np.inf)
                continue
            try:
                row.append(float(tok))
            except ValueError:
                raise ValueError(f"{source}:{lineno}: not a number: {tok!r}") from None
        rows.append((lineno, row))
    if not rows:
        raise ValueError(f"{source}: no cost matrix found")
    N = len(rows)
    for lineno, row in rows:
        if len(row) != N:
            raise ValueError(f"{source}:{lineno}: row has {len(row)} entries, expected {N}")
    return np.array([row for _, row in rows])


def trace_bock(costs: np.ndarray, out=None) -> np.ndarray | None:
    """Print the phases of Algorithm 1 on ``costs``; return ``I*``, or ``None`` if infeasible."""
    out = sys.stdout if out is None else out
    N = costs.shape[0]
    W = np.empty((N, N))
    if load_scores(-costs, W) != OK:
        raise ValueError("costs contain NaN or -inf")
    heads = np.empty(N, dtype=np.int64)
    tracer = Tracer(N, out)
    print(f"Reformulated Bock on {N} nodes (0 = root), costs C = -S:", file=out)
    for i in range(N):
        print(
            "  " + " ".join(f"{_num(c) if np.isfinite(c) else 'M':>6}" for c in costs[i]), file=out
        )
    status = solve_rooted.py_func(W, heads, np.empty(N), tracer)
    if status == NO_TREE:
        print("\nNo arborescence: a candidate search found no admissible arc.", file=out)
        return None
    if status == INTERNAL_ERROR:
        raise RuntimeError("transfer invariant broken; please report this matrix")
    total = sum(costs[heads[d], d] for d in range(1, N))
    print(f"\nI* = ({', '.join(_node(v) for v in heads)}), cost {_num(total)}", file=out)
    return heads


def trace_file(path: Path | None) -> np.ndarray | None:
    """:func:`trace_bock` on the cost matrix in the file ``path`` (``None``: the paper's
    example); the heads, or ``None`` when no tree exists.

    Raises:
        ValueError: the file cannot be read, or holds no cost matrix of at least two nodes.
    """
    if path is None:
        costs = parse_costs(PAPER_EXAMPLE, "<paper example>")
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise ValueError(f"{path}: cannot read: {err.strerror}") from None
        costs = parse_costs(text, str(path))
    if costs.shape[0] < 2:
        raise ValueError("need at least the root and one word")
    return trace_bock(costs)
