"""Arc-standard and arc-eager transition systems over (stack, buffer, arcs) configurations.

The textbook chapter *Dependency Parsing* (sections
"Transition-based parsing", "The arc-standard transitions" and "Arc-eager: attaching right
dependents early") defines both systems; this module adds the preconditions under which every
complete transition sequence yields a *single-root* tree, the tree constraint that the graph
decoders of bockparse enforce too.

Positions follow the project's convention (ARCHITECTURE.md): ROOT is 0, the words are ``1..n``.
In both systems the buffer is always a suffix ``front..n`` of the sentence, so a configuration
stores its first position.
Both systems take exactly ``2 n`` transitions: every word enters the stack once (SHIFT, or
RIGHT-ARC in arc-eager) and leaves it once (an arc, or REDUCE in arc-eager).

Arc-standard (arcs over the top two stack items ``s1`` (below) and ``s0`` (top)):

- SHIFT: push the buffer front; needs a non-empty buffer.
- LEFT-ARC(r): ``s0 -> s1``, pop ``s1``; ``s1`` is never ROOT.
- RIGHT-ARC(r): ``s1 -> s0``, pop ``s0``; when ``s1`` is ROOT only as the very last transition
  (buffer empty, stack ``[ROOT, s0]``), so that ROOT takes exactly one dependent.

Arc-eager (arcs between the stack top ``s0`` and the buffer front ``b0``):

- SHIFT: push ``b0``; needs at least two buffer words (a word shifted last could never get a
  head).
- LEFT-ARC(r): ``b0 -> s0``, pop ``s0``; ``s0`` is a word without a head.
- RIGHT-ARC(r): ``s0 -> b0``, push ``b0``; from ROOT only while ROOT has no dependent; on the
  last buffer word only when every stack word already has its head.
- REDUCE: pop ``s0``, which has its head; not the ROOT dependent while the buffer is non-empty
  (the remaining words could then only hang from ROOT a second time).

Under these preconditions every non-final configuration reached from the initial one allows at
least one transition and every allowed transition keeps the configuration completable, so any
walk that only takes allowed transitions ends, after ``2 n`` steps, in a projective tree with
exactly one word on ROOT (checked exhaustively for short sentences in
``tests/unit/transition``).

Everything here is plain Python (no torch, no I/O): configurations are small mutable objects,
``apply`` updates one in place in O(1) (O(stack) for arc-eager's last RIGHT-ARC check).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


class Kind(enum.Enum):
    """The unlabelled transition types."""

    SHIFT = "SHIFT"
    LEFT_ARC = "LEFT-ARC"
    RIGHT_ARC = "RIGHT-ARC"
    REDUCE = "REDUCE"


ARC_KINDS = frozenset({Kind.LEFT_ARC, Kind.RIGHT_ARC})


@dataclass(frozen=True)
class Transition:
    """A transition; arcs carry a relation label (``None`` for an unlabelled arc).

    Attributes:
        kind: the transition type.
        label: the relation of the arc that LEFT-ARC / RIGHT-ARC adds; ``None`` otherwise.
    """

    kind: Kind
    label: Hashable | None = None

    def __post_init__(self) -> None:
        if self.label is not None and self.kind not in ARC_KINDS:
            raise ValueError(f"{self.kind.value} takes no label, got {self.label!r}")

    def __str__(self) -> str:
        return self.kind.value if self.label is None else f"{self.kind.value}({self.label})"


class InvalidTransition(ValueError):
    """A transition was applied where its precondition does not hold."""


class Configuration:
    """Stack, buffer and arcs of a sentence of ``n`` words.

    Attributes:
        n: number of words.
        stack: positions, bottom first; ``stack[0]`` is ROOT (0) and ``stack[-1]`` the top.
        front: first buffer position; the buffer is ``front..n`` (empty when ``front > n``).
        heads: ``[n + 1]`` head of each position, -1 while unattached (always -1 at ROOT).
        labels: ``[n + 1]`` relation of each attached position, ``None`` otherwise.
        root_dependents: number of words attached to ROOT.
    """

    __slots__ = ("front", "heads", "labels", "n", "root_dependents", "stack")

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"a sentence has at least one word, got n = {n}")
        self.n = n
        self.stack = [0]
        self.front = 1
        self.heads = [-1] * (n + 1)
        self.labels: list[Hashable | None] = [None] * (n + 1)
        self.root_dependents = 0

    @property
    def buffer(self) -> range:
        """The buffer positions, front first."""
        return range(self.front, self.n + 1)

    @property
    def buffer_size(self) -> int:
        return self.n + 1 - self.front

    @property
    def arcs(self) -> list[tuple[int, Hashable | None, int]]:
        """The arcs so far as ``(head, label, dependent)``, by dependent."""
        return [(h, self.labels[d], d) for d, h in enumerate(self.heads) if h >= 0]

    def stack_item(self, i: int) -> int:
        """Position of the ``i``-th stack item from the top (``0``: the top), -1 if none."""
        return self.stack[-1 - i] if i < len(self.stack) else -1

    def buffer_item(self, i: int) -> int:
        """Position of the ``i``-th buffer item (``0``: the front), -1 if none."""
        p = self.front + i
        return p if p <= self.n else -1

    def features(self, stack_items: int, buffer_items: int) -> list[int]:
        """Positions ``[s0, ..., s_{k-1}, b0, ..., b_{m-1}]``, -1 where there is none."""
        return [self.stack_item(i) for i in range(stack_items)] + [
            self.buffer_item(i) for i in range(buffer_items)
        ]

    def copy(self) -> Configuration:
        other = Configuration.__new__(Configuration)
        other.n, other.front, other.root_dependents = self.n, self.front, self.root_dependents
        other.stack, other.heads = list(self.stack), list(self.heads)
        other.labels = list(self.labels)
        return other

    def _attach(self, head: int, dependent: int, label: Hashable | None) -> None:
        self.heads[dependent] = head
        self.labels[dependent] = label
        if head == 0:
            self.root_dependents += 1

    def __repr__(self) -> str:
        return (
            f"Configuration(stack={self.stack}, buffer={list(self.buffer)}, "
            f"arcs={[(h, d) for h, _, d in self.arcs]})"
        )


class TransitionSystem:
    """Common interface of the two systems (module docstring for the preconditions).

    ``kinds`` fixes the order of the transition types, the classes of a transition classifier.
    """

    name: str
    kinds: tuple[Kind, ...]

    def initial(self, n: int) -> Configuration:
        """ROOT on the stack, the ``n`` words in the buffer, no arcs."""
        return Configuration(n)

    def terminal(self, c: Configuration) -> bool:
        """Empty buffer and only ROOT on the stack: ``c.heads`` is the tree."""
        return c.front > c.n and len(c.stack) == 1

    def allowed(self, c: Configuration, kind: Kind) -> bool:
        """Whether the precondition of ``kind`` holds in ``c`` (any label)."""
        raise NotImplementedError

    def valid(self, c: Configuration) -> list[bool]:
        """The allowed transition types of ``c``, in ``kinds`` order."""
        return [self.allowed(c, k) for k in self.kinds]

    def apply(self, c: Configuration, t: Transition) -> None:
        """Apply ``t`` to ``c`` in place.

        Raises:
            InvalidTransition: ``t`` is not allowed in ``c`` (the configuration is unchanged).
        """
        if t.kind not in self.kinds or not self.allowed(c, t.kind):
            raise InvalidTransition(f"{self.name}: {t} is not allowed in {c!r}")
        self._apply(c, t)

    def _apply(self, c: Configuration, t: Transition) -> None:
        raise NotImplementedError

    def arc(self, c: Configuration, kind: Kind) -> tuple[int, int]:
        """``(head, dependent)`` of the arc that LEFT-ARC or RIGHT-ARC would add in ``c``."""
        raise NotImplementedError

    def gold_kind(self, c: Configuration, heads: Sequence[int], missing: Sequence[int]) -> Kind:
        """The static oracle's transition type in ``c`` for the gold tree ``heads``.

        Args:
            c: a configuration reached by the oracle's own earlier transitions.
            heads: gold heads, ``heads[0] == -1``.
            missing: per position, the number of its gold dependents not yet attached.
        """
        raise NotImplementedError


class ArcStandard(TransitionSystem):
    """Arc-standard: SHIFT, LEFT-ARC and RIGHT-ARC over the top two stack items."""

    name = "arc-standard"
    kinds = (Kind.SHIFT, Kind.LEFT_ARC, Kind.RIGHT_ARC)

    def allowed(self, c: Configuration, kind: Kind) -> bool:
        if kind is Kind.SHIFT:
            return c.front <= c.n
        if len(c.stack) < 2:
            return False
        if kind is Kind.LEFT_ARC:
            return c.stack[-2] != 0
        if kind is Kind.RIGHT_ARC:
            # ROOT's one dependent is attached last, when nothing else is left.
            return c.stack[-2] != 0 or (len(c.stack) == 2 and c.front > c.n)
        return False

    def arc(self, c: Configuration, kind: Kind) -> tuple[int, int]:
        s0, s1 = c.stack[-1], c.stack[-2]
        return (s0, s1) if kind is Kind.LEFT_ARC else (s1, s0)

    def _apply(self, c: Configuration, t: Transition) -> None:
        if t.kind is Kind.SHIFT:
            c.stack.append(c.front)
            c.front += 1
            return
        head, dependent = self.arc(c, t.kind)
        c._attach(head, dependent, t.label)
        del c.stack[-2 if t.kind is Kind.LEFT_ARC else -1]  # the dependent leaves the stack

    def gold_kind(self, c: Configuration, heads: Sequence[int], missing: Sequence[int]) -> Kind:
        if len(c.stack) >= 2:
            s0, s1 = c.stack[-1], c.stack[-2]
            if s1 != 0 and heads[s1] == s0:
                return Kind.LEFT_ARC
            # s0 may only leave the stack once it has collected all its dependents.
            if heads[s0] == s1 and missing[s0] == 0:
                return Kind.RIGHT_ARC
        return Kind.SHIFT


class ArcEager(TransitionSystem):
    """Arc-eager: SHIFT, LEFT-ARC, RIGHT-ARC and REDUCE over the stack top and buffer front."""

    name = "arc-eager"
    kinds = (Kind.SHIFT, Kind.LEFT_ARC, Kind.RIGHT_ARC, Kind.REDUCE)

    def allowed(self, c: Configuration, kind: Kind) -> bool:
        remaining = c.n + 1 - c.front
        s0 = c.stack[-1]
        if kind is Kind.SHIFT:
            return remaining >= 2
        if kind is Kind.LEFT_ARC:
            return remaining >= 1 and s0 != 0 and c.heads[s0] < 0
        if kind is Kind.RIGHT_ARC:
            if remaining < 1 or (s0 == 0 and c.root_dependents > 0):
                return False
            # b0 is the last word: after it nobody can give a headless stack word its head.
            return remaining >= 2 or all(c.heads[w] >= 0 for w in c.stack[1:])
        if kind is Kind.REDUCE:
            if s0 == 0 or c.heads[s0] < 0:
                return False
            return remaining == 0 or len(c.stack) > 2
        return False

    def arc(self, c: Configuration, kind: Kind) -> tuple[int, int]:
        s0, b0 = c.stack[-1], c.front
        return (b0, s0) if kind is Kind.LEFT_ARC else (s0, b0)

    def _apply(self, c: Configuration, t: Transition) -> None:
        if t.kind is Kind.LEFT_ARC:
            c._attach(c.front, c.stack.pop(), t.label)
            return
        if t.kind is Kind.RIGHT_ARC:
            c._attach(c.stack[-1], c.front, t.label)
        if t.kind is Kind.REDUCE:
            c.stack.pop()
        else:  # SHIFT and RIGHT-ARC push the buffer front
            c.stack.append(c.front)
            c.front += 1

    def gold_kind(self, c: Configuration, heads: Sequence[int], missing: Sequence[int]) -> Kind:
        s0 = c.stack[-1]
        if c.front <= c.n:
            b0 = c.front
            if s0 != 0 and heads[s0] == b0:
                return Kind.LEFT_ARC
            if heads[b0] == s0:
                return Kind.RIGHT_ARC
        # A complete word (its head and all its dependents attached) leaves the stack at once.
        if s0 != 0 and c.heads[s0] >= 0 and missing[s0] == 0:
            return Kind.REDUCE
        return Kind.SHIFT


SYSTEMS: dict[str, type[TransitionSystem]] = {
    ArcStandard.name: ArcStandard,
    ArcEager.name: ArcEager,
}


def get_system(name: str) -> TransitionSystem:
    """The transition system called ``name`` (``"arc-standard"`` or ``"arc-eager"``).

    Raises:
        ValueError: unknown name (the message lists the known ones).
    """
    try:
        return SYSTEMS[name]()
    except KeyError:
        raise ValueError(
            f"unknown transition system {name!r}; known: {', '.join(SYSTEMS)}"
        ) from None
