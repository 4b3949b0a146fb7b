"""``ParserDataModule`` under DDP: training batches shared out per rank, evaluation batches
dealt out without padding (every sentence once, in the batches of one process)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from bockparse.data import ParserDataModule
from bockparse.data.conllu import DataError
from bockparse.data.datamodule import split_batches

SAMPLE = Path(__file__).resolve().parents[3] / "data/ud-english-ewt-sample"


def data_module(batch_size: int = 300, batch_budget: str = "per_rank") -> ParserDataModule:
    dm = ParserDataModule(
        root=str(SAMPLE),
        train="en_ewt-ud-dev.conllu",  # small: the dev file stands in for training
        val="en_ewt-ud-dev.conllu",
        test="en_ewt-ud-test.conllu",
        batch_size=batch_size,
        min_word_freq=1,
        max_word_chars=20,
        on_malformed="error",
        single_root=True,
        punct_field="upos",
        punct_tags=["PUNCT"],
        seed=7,
        num_workers=0,
        batch_budget=batch_budget,
    )
    dm.setup("fit")
    return dm


def batches(dm: ParserDataModule, split: str, world: int, rank: int, epoch: int = 0):
    dm.trainer = SimpleNamespace(world_size=world, global_rank=rank)
    loader = dm.train_dataloader() if split == "train" else dm.val_dataloader()
    loader.sampler.set_epoch(epoch)
    return [list(b) for b in loader.sampler]


def test_evaluation_shards_hold_every_sentence_once_in_the_single_process_batches():
    dm = data_module()
    one = batches(dm, "val", 1, 0)
    shards = [batches(dm, "val", 3, r) for r in range(3)]
    assert sorted(tuple(b) for shard in shards for b in shard) == sorted(map(tuple, one))
    ids = [i for shard in shards for b in shard for i in b]
    assert sorted(ids) == list(range(len(dm.dataset("val"))))  # each sentence exactly once
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_training_shards_are_even_disjoint_up_to_padding_and_deterministic():
    dm = data_module()
    one = batches(dm, "train", 1, 0, epoch=3)
    shards = [batches(dm, "train", 2, r, epoch=3) for r in range(2)]
    assert len(shards[0]) == len(shards[1]) == (len(one) + 1) // 2
    dealt = shards[0] + shards[1]
    assert sorted(map(tuple, set(map(tuple, dealt)))) == sorted(map(tuple, one))
    assert len(dealt) - len(one) == len(one) % 2  # padding: at most one repeated batch
    assert shards[0] == batches(dm, "train", 2, 0, epoch=3)  # same seed and epoch
    assert shards[0] != batches(dm, "train", 2, 0, epoch=4)  # reshuffled each epoch


def test_total_budget_splits_the_batch_among_ranks():
    lengths = data_module().dataset("train").lengths
    per_rank = data_module(batch_size=600)
    total = data_module(batch_size=600, batch_budget="total")
    assert per_rank.rank_batch_size(2) == 600 and total.rank_batch_size(2) == 300
    assert total.rank_batch_size(1) == 600  # one process: the same
    for batch in batches(total, "train", 2, 1):
        assert len(batch) == 1 or lengths[batch].sum() <= 300
    wide = max(lengths[b].sum() for b in batches(per_rank, "train", 2, 1))
    assert 300 < wide <= 600
    with pytest.raises(DataError, match="batch_budget must be"):
        data_module(batch_budget="global")


def test_split_batches_halves_the_largest_until_every_rank_has_one():
    assert split_batches([[0, 1, 2, 3], [4]], 2) == [[0, 1, 2, 3], [4]]
    assert split_batches([[0, 1, 2, 3], [4]], 3) == [[0, 1], [2, 3], [4]]
    assert split_batches([[0, 1, 2]], 3) == [[0], [1], [2]]
    with pytest.raises(DataError, match="2 sentences cannot be shared among 3 processes"):
        split_batches([[0, 1]], 3)
