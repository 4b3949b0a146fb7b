"""Vocabularies: specials, cutoff, unknowns, relations, saving with the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from bockparse.data import (
    PAD_INDEX,
    ROOT_INDEX,
    UNK_INDEX,
    UNKNOWN_REL,
    DataError,
    Vocab,
    Vocabs,
    base_relation,
    read_conllu,
)


@pytest.fixture
def sentences(fixtures: Path):
    return read_conllu(
        fixtures / "valid" / "mwt_empty_nodes.conllu", single_root=True, on_malformed="error"
    )


def test_specials_come_first_and_unknowns_map_to_unk(sentences) -> None:
    vocabs = Vocabs.build(sentences, min_word_freq=1)
    for vocab in (vocabs.words, vocabs.chars, vocabs.upos, vocabs.xpos, vocabs.feats):
        assert vocab.itos[:3] == ["<pad>", "<unk>", "<root>"]
        assert (PAD_INDEX, UNK_INDEX, ROOT_INDEX) == (0, 1, 2)
        assert vocab["never-seen"] == UNK_INDEX
    assert vocabs.words.itos[3] == "."  # most frequent first
    assert vocabs.words.lookup(["likes", "zebra"]) == [vocabs.words.stoi["likes"], UNK_INDEX]
    assert "VerbForm=Inf" in vocabs.feats  # FEATS is one tag: the whole column
    assert "Mary" in vocabs.words and "M" in vocabs.chars


def test_word_cutoff(sentences) -> None:
    vocabs = Vocabs.build(sentences, min_word_freq=2)
    assert vocabs.words.itos == ["<pad>", "<unk>", "<root>", "."]  # "." is the only repeat
    assert vocabs.words["Mary"] == UNK_INDEX
    assert "y" in vocabs.chars  # characters ignore the word cutoff
    with pytest.raises(DataError, match="min_word_freq must be >= 1, got 0"):
        Vocabs.build(sentences, min_word_freq=0)


def test_relations_have_no_specials_and_unknown_is_minus_one(sentences) -> None:
    rels = Vocabs.build(sentences, min_word_freq=1).rels
    assert "<pad>" not in rels
    assert rels.itos[0] == "punct"  # the most frequent label
    assert "nsubj:pass" in rels  # full labels
    assert rels["dislocated"] == UNKNOWN_REL == -1


def test_base_relation() -> None:
    assert base_relation("nmod:poss") == "nmod"
    assert base_relation("obl:tmod") == "obl"
    assert base_relation("root") == "root"
    assert base_relation("case:dec") == "case"


def test_ties_do_not_depend_on_input_order() -> None:
    a = Vocab.build(["b", "a", "c", "a"], min_freq=1, specials=(), unk_index=-1)
    b = Vocab.build(["c", "a", "a", "b"], min_freq=1, specials=(), unk_index=-1)
    assert a.itos == b.itos == ["a", "b", "c"]
    with pytest.raises(ValueError, match="unique"):
        Vocab(["x", "x"], unk_index=0)


def test_save_and_load_round_trip(sentences, tmp_path: Path) -> None:
    vocabs = Vocabs.build(sentences, min_word_freq=1)
    path = tmp_path / "vocabs.json"
    vocabs.save(path)
    loaded = Vocabs.load(path)
    assert loaded == vocabs
    assert loaded.rels.unk_index == UNKNOWN_REL
    assert Vocabs.from_dict(vocabs.to_dict()) == vocabs
    assert [p.name for p in tmp_path.iterdir()] == ["vocabs.json"]


def test_bad_vocabulary_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read vocabularies"):
        Vocabs.load(tmp_path / "missing.json")
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(DataError, match="not a saved vocabulary file"):
        Vocabs.load(tmp_path / "list.json")
    (tmp_path / "part.json").write_text('{"words": {"itos": [], "unk_index": 1}}', encoding="utf-8")
    with pytest.raises(DataError, match="saved vocabularies lack chars, upos, xpos, feats, rels"):
        Vocabs.load(tmp_path / "part.json")
