"""The module's evaluation: counts from the batch equal the CoNLL-U file evaluation of the
predictions it writes, every sentence once, punctuation excluded by the data's mask."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest
from hydra import compose, initialize_config_dir

from bockparse.metrics import evaluate_files
from bockparse.training.predictions import PredictionWriter
from bockparse.training.train import CONF_DIR, build

REPO = Path(__file__).resolve().parents[3]
GOLD = REPO / "data" / "ud-english-ewt-sample" / "en_ewt-ud-dev.conllu"


def validated(monkeypatch, exclude: str | None, *overrides: str):
    """The smoke experiment's untrained module (seed 7) with ``overrides``, validated once with
    the punctuation exclusion ``exclude``: ``(datamodule, module, trainer, writer)``."""
    monkeypatch.chdir(REPO)  # the sample's path is relative to the repository
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke", *overrides])
    pl.seed_everything(7)
    datamodule, module = build(cfg)
    module.exclude_punct = exclude
    writer = PredictionWriter()
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[writer])  # fmt: skip
    trainer.validate(module, datamodule=datamodule, verbose=False)
    return datamodule, module, trainer, writer


@pytest.mark.parametrize(("condition", "exclude"), [("hinge-bock", "upos"), ("arc-eager", None)])
def test_batch_counts_equal_the_written_file(tmp_path, monkeypatch, condition, exclude):
    datamodule, module, trainer, writer = validated(monkeypatch, exclude, f"condition={condition}")
    sentences = datamodule.dataset("val").sentences
    assert sorted(writer.trees["val"]) == list(range(len(sentences)))
    writer.write(trainer, "val", tmp_path / "val.conllu")
    from_file = evaluate_files(str(GOLD), str(tmp_path / "val.conllu"), exclude)
    assert module.rates["val"] == {k: from_file[k] for k in ("uas", "las", "lcm")}
    words = sum(len(s) for s in sentences)
    assert (from_file["words"] < words) == (exclude is not None)
    assert 0 < from_file["heads"] < from_file["words"]
    module.exclude_punct = "ctb"  # not what the data marks: refused before any prediction
    with pytest.raises(
        ValueError, match="exclude_punct=ctb but the data marks punctuation as upos"
    ):
        trainer.validate(module, datamodule=datamodule, verbose=False)


@pytest.mark.parametrize("exclude", [None, "upos"])
def test_a_taggers_accuracies_equal_the_evaluators_on_the_file_it_writes(
    tmp_path, monkeypatch, conll2018, exclude
):
    _, module, trainer, writer = validated(monkeypatch, exclude, "condition=local-ce",
                                           "model=biaffine-tagger")  # fmt: skip
    out = tmp_path / "val.conllu"
    writer.write(trainer, "val", out)
    from_file = evaluate_files(str(GOLD), str(out), exclude)
    names = ("uas", "las", "lcm", "upos", "xpos", "ufeats", "alltags")
    assert module.rates["val"] == {k: from_file[k] for k in names}
    official = conll2018(GOLD, out, exclude)
    assert {k: from_file[k] for k in official} == official
    assert 0 < from_file["right_upos"] < from_file["words"]  # the tagger's tags, not the gold


def test_the_writer_gathers_trees_and_tags_from_every_rank():
    """Under DDP each rank keeps its own sentences; the gather gives every rank all of them,
    the tagger's tags with their trees (a stand-in for Lightning's all_gather of two ranks)."""
    from types import SimpleNamespace

    import numpy as np
    import torch

    lengths = np.array([2, 3, 1])
    dataset = type("Dataset", (), {"lengths": lengths, "__len__": lambda self: 3})()
    rows = {sid: (torch.arange(n + 1) - 1, torch.arange(n + 1) + 10,
                  {"upos": torch.arange(n + 1) + 3, "feats": torch.arange(n + 1) + 5})
            for sid, n in enumerate(lengths.tolist())}  # fmt: skip
    ranks = [PredictionWriter(), PredictionWriter()]
    for sid, (heads, rels, tags) in rows.items():
        writer = ranks[sid % 2]  # rank 0: sentences 0 and 2, rank 1: sentence 1
        writer.trees["val"][sid], writer.tags["val"][sid] = (heads, rels), tags
    trainer = SimpleNamespace(world_size=2, datamodule=SimpleNamespace(dataset=lambda s: dataset))
    tables = []

    class Recorded(Exception):
        pass

    def record(table):
        tables.append(table)
        raise Recorded

    scorer = SimpleNamespace(tagger=SimpleNamespace(columns=("upos", "feats")))
    with pytest.raises(Recorded):  # rank 1's table
        ranks[1]._gather(trainer, SimpleNamespace(device="cpu", all_gather=record, scorer=scorer),
                         "val")  # fmt: skip
    gather = SimpleNamespace(device="cpu", all_gather=lambda t: torch.stack([t, tables[0]]),
                             scorer=scorer)  # fmt: skip
    ranks[0]._gather(trainer, gather, "val")
    assert sorted(ranks[0].trees["val"]) == [0, 1, 2]
    for sid, (heads, rels, tags) in rows.items():
        got_heads, got_rels = ranks[0].trees["val"][sid]
        assert torch.equal(got_heads, heads) and torch.equal(got_rels, rels)
        got = ranks[0].tags["val"][sid]
        assert set(got) == {"upos", "feats"}
        assert all(torch.equal(got[f], tags[f]) for f in tags)
