"""Stanza 1.15's word vocabulary (cut-off, lower-casing) and its ``augment_nopunct`` as options
(``data.min_word_freq``, ``data.lowercase_words``, ``data.augment_nopunct``): counts, lookup,
saving with the model, and the seeded final-punctuation drop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bockparse.data import (
    UNK_INDEX,
    Collator,
    DataError,
    ParserDataset,
    TokenBudgetSampler,
    Vocabs,
    read_conllu,
)
from bockparse.data.conllu import Sentence

REPO = Path(__file__).resolve().parents[3]
TRAIN = REPO / "data" / "ud-english-ewt-sample" / "en_ewt-ud-train.conllu"


def sentence(forms: list[str], heads: list[int], upos: list[str]) -> Sentence:
    n = len(forms)
    return Sentence(forms=forms, upos=upos, xpos=["_"] * n, feats=["_"] * n, heads=heads,
                    rels=["dep"] * n, lines=[], line=1)  # fmt: skip


@pytest.fixture(scope="module")
def train() -> list[Sentence]:
    return read_conllu(TRAIN, single_root=True, on_malformed="error")


def dataset(sentences, vocabs=None) -> ParserDataset:
    vocabs = vocabs or Vocabs.build(sentences, min_word_freq=1)
    return ParserDataset(sentences, vocabs, max_word_chars=20, punct_field="upos",
                         punct_tags=["PUNCT"])  # fmt: skip


def test_lower_cased_words_are_counted_together_then_cut_off() -> None:
    forms = ["The", "the", "THE", "Dog", "dog", "cat"]
    s = sentence(forms, [0] + [1] * 5, ["DET"] * 6)
    cased = Vocabs.build([s], min_word_freq=2)
    assert cased.words.itos[3:] == []  # no cased form is seen twice
    lower = Vocabs.build([s], min_word_freq=2, lowercase_words=True)
    assert lower.words.itos[3:] == ["the", "dog"]  # 3 and 2 lower-cased; "cat" once: cut off
    assert Vocabs.build([s], min_word_freq=3, lowercase_words=True).words.itos[3:] == ["the"]
    # lookup lower-cases; characters keep the case
    assert lower.words.lookup(["tHe", "DOG", "Cat"]) == [3, 4, UNK_INDEX]
    assert lower.words["THE"] == 3 and "Dog" in lower.words
    assert "T" in lower.chars and "D" in lower.chars
    assert cased.words.lower is False and lower != Vocabs.build([s], min_word_freq=2)


def test_the_lower_casing_is_saved_with_the_vocabulary_and_old_files_load_cased(tmp_path) -> None:
    s = sentence(["A", "a", "b"], [0, 1, 1], ["X"] * 3)
    lower = Vocabs.build([s], min_word_freq=1, lowercase_words=True)
    state = lower.to_dict()
    assert state["words"]["lower"] is True
    assert all("lower" not in v for k, v in state.items() if k != "words")
    lower.save(tmp_path / "v.json")
    loaded = Vocabs.load(tmp_path / "v.json")
    assert loaded == lower and loaded.words["A"] == loaded.words["a"]
    # without the option nothing is added: files written before load as they did (cased)
    cased = Vocabs.build([s], min_word_freq=1)
    assert "lower" not in cased.to_dict()["words"]
    assert Vocabs.from_dict(cased.to_dict()).words.lower is False
    for bad in ({"words": {**state["words"], "lower": "yes"}},
                {"upos": {**state["upos"], "lower": True}}):  # fmt: skip
        with pytest.raises(DataError, match="only the word vocabulary may be saved lower-cased"):
            Vocabs.from_dict({**state, **bad})


def test_an_upper_cased_word_gets_the_lower_cased_id(train) -> None:
    vocabs = Vocabs.build(train, min_word_freq=7, lowercase_words=True)
    upper = dataset([sentence(["THE", "Dog"], [2, 0], ["DET", "NOUN"])], vocabs)
    plain = dataset([sentence(["the", "dog"], [2, 0], ["DET", "NOUN"])], vocabs)
    assert upper.words.tolist() == plain.words.tolist() == [vocabs.words["the"],
                                                            vocabs.words["dog"]]  # fmt: skip
    assert vocabs.words["the"] != UNK_INDEX
    assert upper.chars.tolist() != plain.chars.tolist()  # the character model sees the case


def test_which_final_punctuation_may_be_dropped() -> None:
    ds = dataset([
        sentence(["Yes", "."], [0, 1], ["INTJ", "PUNCT"]),  # droppable
        sentence(["."], [0], ["PUNCT"]),  # the only word
        sentence(["Go", "home"], [0, 1], ["VERB", "NOUN"]),  # no final punctuation
        sentence(["(", "x", ")"], [3, 3, 0], ["PUNCT", "X", "PUNCT"]),  # heads other words
        sentence(["a", "b", "!"], [0, 1, 1], ["X", "X", "PUNCT"]),  # droppable
    ])  # fmt: skip
    assert ds.final_punct_droppable().tolist() == [True, False, False, False, True]


def batches(ds: ParserDataset, p: float, seed: int, epoch: int) -> list:
    sampler = TokenBudgetSampler(ds.lengths, 500, shuffle=True, seed=seed, augment_nopunct=p,
                                 droppable=ds.final_punct_droppable())  # fmt: skip
    sampler.set_epoch(epoch)
    return list(sampler)


def test_the_drop_is_seeded_at_its_rate_and_leaves_the_batches_as_they_were(train) -> None:
    ds = dataset(train)
    droppable = ds.final_punct_droppable()
    assert droppable.sum() > 500  # most sample sentences end in droppable punctuation
    plain = batches(ds, 0.0, 1111, 0)
    assert all(isinstance(b, list) for b in plain)  # off: the sampler's output as before
    augmented = batches(ds, 0.3, 1111, 0)
    assert [ids for ids, _ in augmented] == plain  # the same batches in the same order
    assert batches(ds, 0.3, 1111, 0) == augmented  # deterministic per seed and epoch
    assert batches(ds, 0.3, 1111, 1) != augmented and batches(ds, 0.3, 2222, 0) != augmented
    kept = np.zeros(len(ds), dtype=np.int64)
    for ids, lengths in augmented:
        kept[ids] = lengths
    dropped = ds.lengths - kept
    assert set(dropped.tolist()) <= {0, 1} and not dropped[~droppable].any()
    rate = dropped[droppable].mean()
    assert abs(rate - 0.3) < 4 * np.sqrt(0.3 * 0.7 / droppable.sum())  # binomial, 4 sd
    every = np.zeros(len(ds), dtype=np.int64)
    for ids, lengths in batches(ds, 1.0, 1111, 0):
        every[ids] = lengths
    assert (ds.lengths - every == droppable).all()  # p = 1: every droppable sentence
    with pytest.raises(DataError, match=r"augment_nopunct must be a probability in \[0, 1\]"):
        batches(ds, 1.5, 1111, 0)


def test_a_collated_sentence_without_its_final_punctuation() -> None:
    ds = dataset([sentence(["a", "b", "!"], [0, 1, 1], ["X", "X", "PUNCT"]),
                  sentence(["Go", "home"], [0, 1], ["VERB", "NOUN"])])  # fmt: skip
    full = Collator(ds)([0, 1])
    short = Collator(ds)(([0, 1], [2, 2]))
    assert short.lengths.tolist() == [2, 2] and short.words.shape == (2, 3)
    assert short.heads.tolist() == [[-1, 0, 1], [-1, 0, 1]]
    assert short.mask.tolist() == [[False, True, True]] * 2
    assert short.punct[0].tolist() == [False, False, False]
    assert (short.words == full.words[:, :3]).all() and (short.chars == full.chars[:, :3]).all()


def test_a_shortened_sentence_has_the_wordpieces_of_the_kept_words(tiny_tokenizer) -> None:
    from dataclasses import fields

    from bockparse.data import WordPieces

    def with_pieces(sentences) -> ParserDataset:
        return ParserDataset(sentences, Vocabs.build(sentences, min_word_freq=1),
                             max_word_chars=20, punct_field="upos", punct_tags=["PUNCT"],
                             wordpieces=WordPieces(tiny_tokenizer, max_length=None))  # fmt: skip

    long = sentence(["cats", "bark", "loudly", "."], [2, 0, 2, 2], ["NOUN", "VERB", "ADV", "PUNCT"])
    cut = sentence(["cats", "bark", "loudly"], [2, 0, 2], ["NOUN", "VERB", "ADV"])
    other = sentence(["the", "dog", "sat"], [2, 3, 0], ["DET", "NOUN", "VERB"])
    short = Collator(with_pieces([long, other]))(([0, 1], [3, 3])).subwords
    expected = Collator(with_pieces([cut, other]))([0, 1]).subwords
    for f in fields(expected):
        assert getattr(short, f.name).tolist() == getattr(expected, f.name).tolist(), f.name


def data_module(**options):
    from bockparse.data import ParserDataModule

    sample = TRAIN.parent
    dm = ParserDataModule(root=str(sample), train="en_ewt-ud-dev.conllu",
                          val="en_ewt-ud-dev.conllu", test=None, batch_size=300,
                          min_word_freq=1, max_word_chars=20, on_malformed="error",
                          single_root=True, punct_field="upos", punct_tags=["PUNCT"], seed=7,
                          num_workers=0, **options)  # fmt: skip
    dm.setup("fit")
    return dm


def test_the_data_module_drops_in_training_only_and_under_ddp_as_in_one_process() -> None:
    from types import SimpleNamespace

    dm = data_module(augment_nopunct=0.5, lowercase_words=True)
    assert dm.vocabs.words.lower
    assert all(isinstance(b, list) for b in dm.val_dataloader().sampler)  # never in evaluation
    one = list(dm.train_dataloader().sampler)
    assert all(isinstance(b, tuple) for b in one)
    kept = {i: n for ids, lengths in one for i, n in zip(ids, lengths, strict=True)}
    assert sum(kept.values()) < dm.dataset("train").lengths.sum()
    shards = []
    for rank in range(2):
        dm.trainer = SimpleNamespace(world_size=2, global_rank=rank)
        loader = dm.train_dataloader()
        shards += list(loader.sampler)
        batch = next(iter(loader))  # the pair collates
        assert int(batch.mask.sum()) == int(batch.lengths.sum())
    assert all(kept[i] == n for ids, lengths in shards for i, n in zip(ids, lengths, strict=True))
    assert {i for ids, _ in shards for i in ids} == set(kept)
    with pytest.raises(DataError, match=r"augment_nopunct must be a probability in \[0, 1\]"):
        data_module(augment_nopunct=2.0)
