"""Batch contents, token budgets, seeded shuffles, file-order restoration of predictions."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from bockparse.data import (
    PAD_INDEX,
    ROOT_INDEX,
    UNK_INDEX,
    Batch,
    Collator,
    ParserDataset,
    TokenBudgetSampler,
    Vocabs,
    WordPieces,
    read_conllu,
    write_predictions,
)


def load(path: Path, *, vocab_from: Path | None = None, **options) -> ParserDataset:
    def read(p: Path):
        return read_conllu(p, single_root=True, on_malformed="error")

    sentences = read(path)
    vocabs = Vocabs.build(read(vocab_from or path), min_word_freq=1)
    settings = {"max_word_chars": 4, "punct_field": "upos", "punct_tags": ["PUNCT"], **options}
    return ParserDataset(sentences, vocabs, **settings)


@pytest.fixture
def mwt(fixtures: Path) -> ParserDataset:
    return load(fixtures / "valid" / "mwt_empty_nodes.conllu")


def test_batch_tensors_follow_the_conventions(mwt: ParserDataset) -> None:
    batch = Collator(mwt)([2, 0])  # 9 words, then 5 words
    v = mwt.vocabs
    assert batch.lengths.tolist() == [9, 5]
    assert batch.sentence_ids.tolist() == [2, 0]
    assert batch.words.shape == (2, 10)
    assert batch.words[:, 0].tolist() == [ROOT_INDEX, ROOT_INDEX]
    assert (
        batch.words[1].tolist()
        == [ROOT_INDEX, *v.words.lookup(["I", "do", "n't", "know", "."])] + [PAD_INDEX] * 4
    )
    assert batch.heads.tolist() == [
        [-1, 2, 4, 4, 0, 7, 7, 2, 4, 4],
        [-1, 4, 4, 4, 0, 4, -1, -1, -1, -1],
    ]
    assert (
        batch.rels[1].tolist()
        == [-1, *v.rels.lookup(["nsubj", "aux", "advmod", "root", "punct"])] + [-1] * 4
    )
    assert batch.mask.tolist() == [[False] + [True] * 9, [False] + [True] * 5 + [False] * 4]
    assert batch.punct[1].tolist() == [False] * 5 + [True] + [False] * 4
    assert batch.upos[1, 1] == v.upos["PRON"] and batch.xpos[1, 1] == v.xpos["PRP"]
    assert batch.feats[1, 3] == v.feats["_"] and batch.upos[1, 0] == ROOT_INDEX
    # characters: at most max_word_chars (4) per word; ROOT is one ROOT character
    assert batch.chars.shape == (2, 10, 4)
    assert batch.chars[0, 0].tolist() == [ROOT_INDEX, 0, 0, 0]
    assert batch.chars[0, 4].tolist() == v.chars.lookup("sche")  # "scheduled", cut
    assert batch.chars[1, 3].tolist() == [*v.chars.lookup("n't"), PAD_INDEX]
    assert (batch.chars[1, 6:] == PAD_INDEX).all()
    for name in ("words", "chars", "upos", "xpos", "feats", "heads", "rels", "lengths"):
        assert getattr(batch, name).dtype == torch.int64
    assert batch.subwords is None and len(batch) == 2


def test_unknown_words_and_relations(fixtures: Path) -> None:
    ds = load(
        fixtures / "valid" / "mwt_empty_nodes.conllu",
        vocab_from=fixtures / "valid" / "basic.conllu",
    )
    batch = Collator(ds)([0])
    assert batch.words[0, 1:].tolist() == [UNK_INDEX] * 4 + [ds.vocabs.words["."]]
    r = ds.vocabs.rels  # "aux" is not in basic.conllu
    assert batch.rels[0].tolist() == [-1, r["nsubj"], -1, r["advmod"], r["root"], r["punct"]]


def test_punctuation_column_setting_changes_the_mask(fixtures: Path) -> None:
    path = fixtures / "valid" / "mwt_empty_nodes.conllu"
    by_upos = Collator(load(path))([0]).punct
    by_xpos = Collator(load(path, punct_field="xpos", punct_tags=["PRP", "VB"]))([0]).punct
    assert by_upos[0].tolist() == [False, False, False, False, False, True]
    assert by_xpos[0].tolist() == [False, True, False, False, True, False]


def test_to_moves_every_tensor(fixtures: Path, tiny_tokenizer) -> None:
    ds = load(
        fixtures / "valid" / "basic.conllu", wordpieces=WordPieces(tiny_tokenizer, max_length=None)
    )
    batch = Collator(ds)([0, 1])
    moved = batch.to("meta")
    assert isinstance(moved, Batch)
    tensors = [getattr(moved, n) for n in moved.__dataclass_fields__ if n != "subwords"]
    tensors += [getattr(moved.subwords, n) for n in moved.subwords.__dataclass_fields__]
    assert all(t.device.type == "meta" for t in tensors)
    assert batch.words.device.type == "cpu"  # the original stays


def lengths_for_budget_tests() -> np.ndarray:
    return np.random.default_rng(0).integers(1, 60, size=500)


def test_batches_respect_the_word_budget_and_cover_every_sentence() -> None:
    lengths = lengths_for_budget_tests()
    for shuffle in (False, True):
        sampler = TokenBudgetSampler(lengths, 300, shuffle=shuffle, seed=1)
        batches = list(sampler)
        assert len(batches) == len(sampler)
        assert sorted(i for b in batches for i in b) == list(range(500))
        assert all(lengths[b].sum() <= 300 for b in batches)
        # length-bucketed: the batches' length ranges do not overlap
        ranges = sorted((lengths[b].min(), lengths[b].max()) for b in batches)
        assert all(hi <= lo for (_, hi), (lo, _) in itertools.pairwise(ranges))


def test_a_sentence_longer_than_the_budget_is_a_batch_alone() -> None:
    sampler = TokenBudgetSampler([3, 50, 4, 2], 10, shuffle=False, seed=0)
    assert list(sampler) == [[3, 0, 2], [1]]


def test_same_seed_same_batches_new_epoch_new_order() -> None:
    lengths = lengths_for_budget_tests()

    def order(seed: int, epoch: int) -> list[list[int]]:
        sampler = TokenBudgetSampler(lengths, 300, shuffle=True, seed=seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert order(7, 0) == order(7, 0)
    assert order(7, 3) == order(7, 3)
    assert order(7, 0) != order(7, 1)
    assert order(7, 0) != order(8, 0)
    assert len(order(7, 0)) == len(order(7, 1))


def test_evaluation_batches_are_sorted_and_fixed() -> None:
    lengths = lengths_for_budget_tests()
    sampler = TokenBudgetSampler(lengths, 300, shuffle=False, seed=1)
    first = list(sampler)
    sampler.set_epoch(5)
    assert list(sampler) == first
    flat = [i for b in first for i in b]
    assert (np.diff(lengths[flat]) >= 0).all()


def test_bad_budget() -> None:
    with pytest.raises(ValueError, match="batch_size must be a positive number of words, got 0"):
        TokenBudgetSampler([1, 2], 0, shuffle=False, seed=0)


def test_predictions_restored_to_file_order(
    mwt: ParserDataset, fixtures: Path, tmp_path: Path
) -> None:
    loader = DataLoader(
        mwt,
        sampler=TokenBudgetSampler(mwt.lengths, 10, shuffle=True, seed=3),
        batch_size=None,
        collate_fn=Collator(mwt),
    )
    heads, rels = {}, {}
    for batch in loader:  # out of file order, padded rows
        for b, i in enumerate(batch.sentence_ids.tolist()):
            heads[i], rels[i] = batch.heads[b], batch.rels[b]
    out = tmp_path / "pred.conllu"
    write_predictions(out, mwt, heads, rels)
    assert out.read_bytes() == (fixtures / "valid" / "mwt_empty_nodes.conllu").read_bytes()
    # label strings are accepted too, and only HEAD/DEPREL change
    chains = [[-1, *range(len(s))] for s in mwt.sentences]
    labels = [["_", *["dep"] * len(s)] for s in mwt.sentences]
    write_predictions(out, mwt, chains, labels)
    assert [s.heads for s in read_conllu(out, single_root=True, on_malformed="error")] == [
        c[1:] for c in chains
    ]


def test_write_predictions_rejects_bad_input(mwt: ParserDataset, tmp_path: Path) -> None:
    out = tmp_path / "pred.conllu"
    heads = [[-1, *range(len(s))] for s in mwt.sentences]
    rels = [[-1, *[0] * len(s)] for s in mwt.sentences]
    with pytest.raises(ValueError, match=r"no prediction for sentence 2 \(line 23\)"):
        write_predictions(out, mwt, heads[:2], rels)
    with pytest.raises(ValueError, match=r"sentence 0 \(line 1\): need 6 positions"):
        write_predictions(out, mwt, [heads[0][:3], *heads[1:]], rels)
    with pytest.raises(ValueError, match=r"sentence 0 \(line 1\): head out of range 0..5"):
        write_predictions(out, mwt, [[-1, 9, 0, 0, 0, 0], *heads[1:]], rels)
    with pytest.raises(ValueError, match=r"sentence 0 \(line 1\): relation id 99 unknown"):
        write_predictions(out, mwt, heads, [[-1, 99, 0, 0, 0, 0], *rels[1:]])
    assert not out.exists()
