"""Arc-standard and arc-eager: textbook traces, preconditions, and exhaustive soundness and
completeness for short sentences."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bockparse.decoders.eisner import is_projective
from bockparse.decoders.trees import is_tree
from bockparse.heads.transition import (
    ArcEager,
    ArcStandard,
    InvalidTransition,
    Kind,
    Transition,
    get_system,
    oracle_walk,
    static_oracle,
)

SYSTEMS = ("arc-standard", "arc-eager")

# "Book the flight through Houston" (the chapter's worked trace, §"A worked trace" and
# §"Arc-eager" of ../shared/papers/004_a5a61b154c91c7c0.txt): ROOT -> book, flight -> the,
# book -> flight, Houston -> through, flight -> Houston.
BOOK = [-1, 0, 3, 1, 5, 3]
BOOK_RELS = [None, "root", "det", "obj", "case", "nmod"]
S, L, R, D = Kind.SHIFT, Kind.LEFT_ARC, Kind.RIGHT_ARC, Kind.REDUCE


def first_step_with_arc(system: str, head: int, dependent: int) -> int:
    for step, (c, t) in enumerate(oracle_walk(get_system(system), BOOK, BOOK_RELS)):
        if t.kind in (L, R) and get_system(system).arc(c, t.kind) == (head, dependent):
            return step
    raise AssertionError("the arc is never added")


def test_arc_standard_textbook_trace():
    seq = static_oracle(ArcStandard(), BOOK, BOOK_RELS)
    assert [t.kind for t in seq] == [S, S, S, L, S, S, L, R, R, R]
    assert [t.label for t in seq if t.kind is not S] == ["det", "case", "nmod", "obj", "root"]
    # book and flight are adjacent on the stack from step 4, but the arc must wait until
    # flight has collected Houston.
    assert first_step_with_arc("arc-standard", 1, 3) == 8


def test_arc_eager_textbook_trace():
    seq = static_oracle(ArcEager(), BOOK, BOOK_RELS)
    assert [t.kind for t in seq] == [R, S, L, R, S, L, R, D, D, D]
    assert first_step_with_arc("arc-eager", 1, 3) == 3
    assert first_step_with_arc("arc-eager", 3, 2) == 2  # the <- flight, flight in the buffer


def test_trace_configurations_of_arc_eager():
    walk = [(list(c.stack), list(c.buffer), str(t)) for c, t in
            oracle_walk(ArcEager(), BOOK, BOOK_RELS)]  # fmt: skip
    assert walk[3] == ([0, 1], [3, 4, 5], "RIGHT-ARC(obj)")
    assert walk[7] == ([0, 1, 3, 5], [], "REDUCE")


def all_walks(system, n: int):
    """Every complete sequence of allowed transitions from the initial configuration (DFS)."""
    stack = [(system.initial(n), 0)]
    while stack:
        c, steps = stack.pop()
        if system.terminal(c):
            yield c, steps
            continue
        valid = system.valid(c)
        assert any(valid), f"no transition allowed in the non-final {c!r}"
        for kind, ok in zip(system.kinds, valid, strict=True):
            if ok:
                nxt = c.copy()
                system.apply(nxt, Transition(kind))
                stack.append((nxt, steps + 1))


def projective_trees(n: int) -> set[tuple[int, ...]]:
    trees = set()
    for heads in itertools.product(range(n + 1), repeat=n):
        h = np.array([-1, *heads], dtype=np.int64)
        if is_tree(h, single_root=True) and is_projective(h):
            trees.add(tuple(heads))
    return trees


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_allowed_walks_build_exactly_the_projective_single_root_trees(system, n):
    # Sound: every walk of allowed transitions ends, after 2 n steps, in a single-root
    # projective tree. Complete: every such tree is reached.
    built = set()
    for c, steps in all_walks(get_system(system), n):
        assert steps == 2 * n
        assert c.root_dependents == 1
        built.add(tuple(c.heads[1:]))
    assert built == projective_trees(n)


@pytest.mark.parametrize("system", SYSTEMS)
def test_random_walks_on_long_sentences_end_in_trees(system):
    rng = np.random.default_rng(0)
    sys_ = get_system(system)
    for n in (1, 7, 40, 200):
        c = sys_.initial(n)
        steps = 0
        while not sys_.terminal(c):
            options = [k for k, ok in zip(sys_.kinds, sys_.valid(c), strict=True) if ok]
            sys_.apply(c, Transition(options[rng.integers(len(options))]))
            steps += 1
        heads = np.array(c.heads, dtype=np.int64)
        assert steps == 2 * n and is_tree(heads, single_root=True) and is_projective(heads)


def test_arc_standard_never_takes_root_as_dependent():
    system = ArcStandard()
    c = system.initial(2)
    system.apply(c, Transition(S))  # stack [ROOT, 1]
    assert not system.allowed(c, L)
    with pytest.raises(InvalidTransition, match="LEFT-ARC"):
        system.apply(c, Transition(L, "nsubj"))
    assert c.stack == [0, 1] and c.heads == [-1, -1, -1]  # unchanged
    # ROOT takes its dependent only as the last transition.
    assert not system.allowed(c, R)
    system.apply(c, Transition(S))
    system.apply(c, Transition(L, "nsubj"))  # 2 -> 1; stack [ROOT, 2], buffer empty
    assert system.allowed(c, R)


def test_arc_eager_preconditions():
    system = ArcEager()
    c = system.initial(3)
    assert system.valid(c) == [True, False, True, False]  # SHIFT, or RIGHT-ARC from ROOT
    system.apply(c, Transition(R, "root"))  # ROOT -> 1
    assert not system.allowed(c, D)  # ROOT's dependent stays while words are left
    system.apply(c, Transition(S))  # stack [ROOT, 1, 2], buffer [3]
    assert not system.allowed(c, S)  # 3 could never get a head
    assert not system.allowed(c, R)  # 2 has no head, and only 3 could still give it one
    system.apply(c, Transition(L, "det"))  # 3 -> 2
    system.apply(c, Transition(R, "obj"))  # 1 -> 3
    assert c.heads == [-1, 0, 3, 1] and not system.terminal(c)
    assert system.valid(c) == [False, False, False, True]


def test_arc_eager_root_takes_one_dependent():
    system = ArcEager()
    c = system.initial(2)
    c.front, c.heads[1], c.root_dependents = 2, 0, 1  # ROOT -> 1, then 1 reduced
    assert c.stack == [0] and not system.allowed(c, R)


def test_arc_eager_reduce_needs_a_head():
    system = ArcEager()
    c = system.initial(3)
    system.apply(c, Transition(S))
    with pytest.raises(InvalidTransition, match="REDUCE"):
        system.apply(c, Transition(D))


def test_kinds_not_in_the_system_are_invalid():
    c = ArcStandard().initial(2)
    with pytest.raises(InvalidTransition):
        ArcStandard().apply(c, Transition(D))


def test_transition_labels_only_on_arcs():
    assert str(Transition(L, "det")) == "LEFT-ARC(det)"
    assert str(Transition(S)) == "SHIFT"
    with pytest.raises(ValueError, match="takes no label"):
        Transition(S, "det")


def test_unknown_system_lists_the_known_ones():
    with pytest.raises(ValueError, match="arc-standard, arc-eager"):
        get_system("arc-hybrid")


def test_configuration_views():
    c = ArcEager().initial(4)
    assert list(c.buffer) == [1, 2, 3, 4] and c.buffer_size == 4
    assert c.features(3, 2) == [0, -1, -1, 1, 2]
    ArcEager().apply(c, Transition(R, "root"))
    assert c.arcs == [(0, "root", 1)]
    assert c.features(2, 1) == [1, 0, 2]
