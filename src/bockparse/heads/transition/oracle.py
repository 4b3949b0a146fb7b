"""Static training oracles: a gold projective tree to its transition sequence.

The oracle walks the parser over the sentence with the gold tree in hand and reads the correct
transition off each configuration (the section "Training the oracle"
of the textbook chapter *Dependency Parsing*). The per-system rules live in
:meth:`~bockparse.heads.transition.systems.TransitionSystem.gold_kind`; here they are driven,
checked and labelled.

Both systems produce projective trees only, so a non-projective gold tree has no transition
sequence: :func:`static_oracle` raises :class:`NonProjectiveError` for it instead of returning a
sequence for a different tree. :func:`split_projective` separates the sentences a
transition parser can be trained on from the others and counts both.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ...decoders.eisner import is_projective
from ...decoders.trees import check_tree
from .systems import ARC_KINDS, Configuration, Transition, TransitionSystem


class NonProjectiveError(ValueError):
    """A gold tree with crossing arcs: no arc-standard or arc-eager sequence builds it."""


def _gold(heads: Sequence[int]) -> list[int]:
    h = [int(x) for x in heads]
    try:
        check_tree(np.asarray(h, dtype=np.int64), single_root=True)
    except ValueError as err:
        raise ValueError(f"the gold heads are not a single-root tree: {err}") from None
    if not is_projective(np.asarray(h, dtype=np.int64)):
        raise NonProjectiveError(
            "the gold tree is non-projective (two of its arcs cross): transition systems build "
            "projective trees only; train on the projective sentences (projective_only) or "
            "projectivise the data"
        )
    return h


def oracle_walk(
    system: TransitionSystem,
    heads: Sequence[int],
    rels: Sequence[Hashable | None] | None = None,
) -> Iterator[tuple[Configuration, Transition]]:
    """Yield each configuration with the oracle's transition, then apply it.

    The configuration is yielded *before* the transition is applied and is updated in place
    afterwards: read what you need from it before advancing the iterator.

    Args:
        system: the transition system.
        heads: gold heads ``[n + 1]``, ``heads[0] == -1``: a single-root projective tree.
        rels: gold relations ``[n + 1]`` (``rels[0]`` ignored), the arc labels; ``None``:
            unlabelled arcs.

    Yields:
        ``(configuration, transition)``, ``2 n`` pairs.

    Raises:
        ValueError: ``heads`` is not a single-root tree, or ``rels`` has the wrong length.
        NonProjectiveError: the tree is non-projective.
    """
    gold = _gold(heads)
    n = len(gold) - 1
    if rels is not None and len(rels) != n + 1:
        raise ValueError(f"rels has {len(rels)} entries, heads {n + 1}")
    missing = [0] * (n + 1)  # gold dependents not yet attached, per position
    for d in range(1, n + 1):
        missing[gold[d]] += 1
    c = system.initial(n)
    while not system.terminal(c):
        kind = system.gold_kind(c, gold, missing)
        if not system.allowed(c, kind):
            raise RuntimeError(f"{system.name} oracle chose a disallowed {kind.value} in {c!r}")
        dependent = system.arc(c, kind)[1] if kind in ARC_KINDS else -1
        t = Transition(kind, rels[dependent] if rels is not None and dependent > 0 else None)
        yield c, t
        if dependent > 0:
            missing[gold[dependent]] -= 1
        system.apply(c, t)
    if c.heads[1:] != gold[1:]:
        raise RuntimeError(f"{system.name} oracle built {c.heads} instead of {gold}")


def static_oracle(
    system: TransitionSystem,
    heads: Sequence[int],
    rels: Sequence[Hashable | None] | None = None,
) -> list[Transition]:
    """The static oracle's transition sequence for a gold tree (``2 n`` transitions).

    Args and Raises: as :func:`oracle_walk`.
    """
    return [t for _, t in oracle_walk(system, heads, rels)]


@dataclass(frozen=True)
class ProjectivityCounts:
    """How many sentences a transition parser can be trained on.

    Attributes:
        sentences: all sentences.
        nonprojective: those whose gold tree is non-projective.
    """

    sentences: int
    nonprojective: int

    @property
    def projective(self) -> int:
        return self.sentences - self.nonprojective

    def __str__(self) -> str:
        share = 100.0 * self.nonprojective / self.sentences if self.sentences else 0.0
        return (
            f"{self.projective} of {self.sentences} sentences projective; "
            f"{self.nonprojective} non-projective ({share:.2f} %)"
        )


def split_projective(sentences: Sequence) -> tuple[list, list, ProjectivityCounts]:
    """Split sentences (anything with 1-based ``heads``, 0 = ROOT) by gold projectivity.

    Returns:
        The projective sentences and the non-projective ones (each in input order), and their
        counts.
    """
    projective, nonprojective = [], []
    for s in sentences:
        heads = np.asarray([-1, *s.heads], dtype=np.int64)
        (projective if is_projective(heads) else nonprojective).append(s)
    return projective, nonprojective, ProjectivityCounts(len(sentences), len(nonprojective))
