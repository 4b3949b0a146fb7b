"""Decoder substitution: pairwise identity counts and scores on fixed synthetic matrices."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from bockparse.data import Collator, ParserDataset, Vocabs, read_conllu, write_predictions
from bockparse.decoders import registry
from bockparse.experiments import substitute as sub
from bockparse.experiments.loading import LoadedRun
from bockparse.model.outputs import ParserScores

FIXTURE = Path(__file__).parents[2] / "fixtures" / "conllu" / "valid" / "basic.conllu"


def _dataset() -> ParserDataset:
    two = read_conllu(FIXTURE, single_root=True, on_malformed="error")[:2]  # 4 words each
    vocabs = Vocabs.build(two, min_word_freq=1)
    return ParserDataset(two, vocabs, max_word_chars=4, punct_field="upos",
                         punct_tags=["PUNCT"])  # fmt: skip


class _Parser:
    def __init__(self, relations):
        self.relations = list(relations)


def _fake_run(tmp_path, dataset):
    cfg = OmegaConf.create({"exclude_punct": None, "seed": 1,
                            "name": "local-ce-cle", "decoder": "cle"})  # fmt: skip
    return LoadedRun(tmp_path, cfg, parser=_Parser(dataset.vocabs.rels.itos))


def _scored(dataset):
    """Sentence 0: a non-projective best tree; sentence 1: random scores; relation id of
    every arc = dependent % R."""
    batch = Collator(dataset)([0, 1])
    N = batch.mask.shape[1]
    # The best tree 0->1, 1->2, 1->3, 2->4 is non-projective (1->3 crosses 2->4).
    nonproj = np.full((N, N), -10.0, dtype=np.float32)
    for h, d in ((0, 1), (1, 2), (1, 3), (2, 4)):
        nonproj[h, d] = 0.0
    plain = np.random.default_rng(3).normal(size=(N, N)).astype(np.float32)
    R = len(dataset.vocabs.rels)
    rel = torch.zeros(2, N, N, R)
    rel[:, :, torch.arange(N), torch.arange(N) % R] = 1.0
    return batch, ParserScores(arc=torch.from_numpy(np.stack([nonproj, plain])), rel=rel)


def test_pairs_and_scores(tmp_path, monkeypatch):
    dataset = _dataset()
    monkeypatch.setattr(sub, "scored_batches", lambda run, stage: iter([_scored(dataset)]))
    res = sub.compare(_fake_run(tmp_path, dataset), "val", ["cle", "bock", "bock-original",
                                                             "eisner"])  # fmt: skip
    assert res["sentences"] == 2
    pairs = {(p["a"], p["b"]): p for p in res["pairs"]}
    for a, b in (("cle", "bock"), ("cle", "bock-original"), ("bock", "bock-original")):
        p = pairs[(a, b)]
        assert (p["heads"], p["labels"], p["tree_scores"]) == (2, 2, 2)
        assert p["heads_share"] == 1.0 and p["max_score_difference"] == 0.0
    p = pairs[("cle", "eisner")]  # Eisner cannot return the non-projective optimum
    assert p["heads"] <= 1 and p["tree_scores"] <= 1 and p["max_score_difference"] > 0
    assert res["scores"]["cle"] == res["scores"]["bock"]
    assert res["scores"]["cle"]["words"] == 8 and res["scores"]["cle"]["sentences"] == 2
    assert res["reproduced"] is None  # no saved predictions in this folder
    text = sub.to_markdown({"run": "r", "condition": "local-ce-cle", "seed": 1,
                            "stages": {"val": res}})  # fmt: skip
    assert "| cle vs bock | 2 (100.00 %) | 2 (100.00 %) | 2 (100.00 %) | 0 |" in text


def test_the_runs_decoder_reproduces_its_saved_predictions(tmp_path, monkeypatch):
    dataset = _dataset()
    batch, scores = _scored(dataset)
    monkeypatch.setattr(sub, "scored_batches", lambda run, stage: iter([(batch, scores)]))
    from bockparse.predict import predict_trees

    heads, rels = predict_trees(scores, batch.lengths, "cle")
    (tmp_path / "predictions").mkdir()
    write_predictions(tmp_path / "predictions" / "val.conllu", dataset, heads, rels)
    res = sub.compare(_fake_run(tmp_path, dataset), "val", ["cle", "eisner"])
    assert res["reproduced"]["identical"] == 2 and res["reproduced"]["sentences"] == 2
    rels[1, 1] = (rels[1, 1] + 1) % len(dataset.vocabs.rels)  # one label changed: one differs
    write_predictions(tmp_path / "predictions" / "val.conllu", dataset, heads, rels)
    res = sub.compare(_fake_run(tmp_path, dataset), "val", ["cle"])
    assert res["reproduced"]["identical"] == 1


def test_default_decoders_add_stanza_cle_when_registered(monkeypatch, caplog):
    try:
        registry.get_decoder("stanza-cle")
        registered = True
    except ValueError:
        registered = False
    if registered:
        assert sub.default_decoders() == [*sub.SUBSTITUTED, "stanza-cle"]
        real = registry._REGISTRY["stanza-cle"]
        monkeypatch.delitem(registry._REGISTRY, "stanza-cle")
    with caplog.at_level(logging.WARNING, logger="bockparse.substitute"):
        assert sub.default_decoders() == list(sub.SUBSTITUTED)
    assert "stanza-cle left out of the comparison: unknown decoder 'stanza-cle'" in caplog.text
    monkeypatch.setitem(registry._REGISTRY, "stanza-cle", real if registered else
                        registry.get_decoder("cle"))  # fmt: skip
    assert sub.default_decoders() == [*sub.SUBSTITUTED, "stanza-cle"]
    with pytest.raises(ValueError, match="unknown decoder"):
        sub.compare(None, "val", ["no-such-decoder"])


def test_log_softmax_scores_give_the_raw_scores_trees_and_admit_stanza_cle(tmp_path, monkeypatch):
    pytest.importorskip("stanza")
    dataset = _dataset()
    monkeypatch.setattr(sub, "scored_batches", lambda run, stage: iter([_scored(dataset)]))
    run = _fake_run(tmp_path, dataset)
    with pytest.raises(ValueError, match="stanza-cle' needs log-probabilities"):
        sub.compare(run, "val", ["cle", "stanza-cle"], "raw")  # sentence 1 has positive scores
    raw = sub.compare(run, "val", ["cle", "bock", "tarjan"], "raw")
    logp = sub.compare(run, "val", ["cle", "bock", "tarjan", "stanza-cle"], "log-softmax")
    assert {d: raw["scores"][d] for d in ("cle", "bock", "tarjan")} == {
        d: logp["scores"][d] for d in ("cle", "bock", "tarjan")
    }  # a column shift keeps the optimal trees
    pairs = {(p["a"], p["b"]): p for p in logp["pairs"]}
    assert (pairs[("cle", "stanza-cle")]["heads"], pairs[("cle", "stanza-cle")]["tree_scores"]) == (
        2, 2)  # fmt: skip
    assert sub.scores_for(["cle", "stanza-cle"]) == "log-softmax"
    assert sub.scores_for(["cle", "bock"]) == "raw" and sub.scores_for(["cle"], "log-softmax") == (
        "log-softmax")  # fmt: skip
    with pytest.raises(ValueError, match="scores must be"):
        sub.scores_for(["cle"], "softmax")


def test_scores_are_computed_in_the_runs_precision(tmp_path):
    """A bf16-mixed run's fixed scores come from the parser under its autocast (as the run was
    evaluated), not in fp32: else its saved predictions are not reproduced."""
    from bockparse.experiments.loading import scored_batches
    from bockparse.parser import Parser

    dataset = _dataset()
    (tmp_path / "gold.conllu").write_bytes(FIXTURE.read_bytes())
    batch, scores = _scored(dataset)
    seen = []

    class _BF16Parser(_Parser):
        precision = "bf16-mixed"
        autocast = Parser.autocast
        device = torch.device("cpu")
        settings = OmegaConf.create({"exclude_punct": None})

        def batches(self, sentences, exclude_punct=None):
            yield batch

        def scorer(self, batch):
            seen.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
            return scores

    data = {"root": str(tmp_path), "val": "gold.conllu", "single_root": True,
            "on_malformed": "error"}  # fmt: skip
    run = LoadedRun(tmp_path, OmegaConf.create({"data": data}),
                    parser=_BF16Parser(dataset.vocabs.rels.itos))  # fmt: skip
    assert [s for _, s in scored_batches(run, "val")] == [scores]
    assert seen == [(True, torch.bfloat16)]
