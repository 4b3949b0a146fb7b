"""Static oracles: they rebuild every projective gold tree of the shipped sample, labels
included, and refuse non-projective ones."""

from __future__ import annotations

import numpy as np
import pytest

from bockparse.decoders.eisner import is_projective
from bockparse.heads.transition import (
    NonProjectiveError,
    ProjectivityCounts,
    get_system,
    split_projective,
    static_oracle,
)

PARTS = ("train", "dev", "test")
SYSTEMS = ("arc-standard", "arc-eager")
CROSSING = [-1, 2, 0, 1]  # ROOT -> 2 crosses 1 -> 3


def gold_heads(sentence) -> np.ndarray:
    return np.asarray([-1, *sentence.heads], dtype=np.int64)


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("system", SYSTEMS)
def test_oracle_rebuilds_every_projective_sample_tree(sample, system, part):
    sys_ = get_system(system)
    projective, _, counts = split_projective(sample(part))
    assert counts.projective == len(projective) > 0
    for s in projective:
        heads, rels = [-1, *s.heads], [None, *s.rels]
        seq = static_oracle(sys_, heads, rels)
        assert len(seq) == 2 * len(s)
        c = sys_.initial(len(s))
        for t in seq:
            sys_.apply(c, t)  # raises on a transition whose precondition fails
        assert sys_.terminal(c)
        assert c.heads == heads and c.labels[1:] == rels[1:]


@pytest.mark.parametrize("system", SYSTEMS)
def test_non_projective_gold_is_an_error(sample, system):
    with pytest.raises(NonProjectiveError, match="non-projective"):
        static_oracle(get_system(system), CROSSING)
    _, nonprojective, _ = split_projective(sample("dev"))
    assert nonprojective
    for s in nonprojective:
        with pytest.raises(NonProjectiveError):
            static_oracle(get_system(system), [-1, *s.heads])


@pytest.mark.parametrize(
    "heads",
    [[-1, 0, 0], [-1, 2, 1], [0, 0], [-1, 0, 7]],
    ids=["two-roots", "cycle", "root-head", "range"],
)
def test_not_a_single_root_tree_is_a_value_error(heads):
    with pytest.raises(ValueError, match="not a single-root tree") as info:
        static_oracle(get_system("arc-eager"), heads)
    assert not isinstance(info.value, NonProjectiveError)


def test_labels_must_match_the_tree():
    with pytest.raises(ValueError, match="rels has 2 entries"):
        static_oracle(get_system("arc-standard"), [-1, 0, 1], [None, "root"])


def test_split_projective_counts(sample):
    sentences = sample("train")
    projective, nonprojective, counts = split_projective(sentences)
    assert counts == ProjectivityCounts(len(sentences), len(nonprojective))
    assert all(is_projective(gold_heads(s)) for s in projective)
    assert not any(is_projective(gold_heads(s)) for s in nonprojective)
    assert len(projective) + len(nonprojective) == len(sentences)
    order = {id(s): i for i, s in enumerate(sentences)}
    assert [order[id(s)] for s in projective] == sorted(order[id(s)] for s in projective)
    share = 100 * counts.nonprojective / counts.sentences
    assert str(counts) == (
        f"{counts.projective} of {counts.sentences} sentences projective; "
        f"{counts.nonprojective} non-projective ({share:.2f} %)"
    )
