"""Decoder substitution: pairwise identity counts and scores on fixed synthetic matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from bockparse.data.conllu import read_conllu
from bockparse.experiments import substitute as sub
from bockparse.experiments.loading import LoadedRun, ScoredSentence

FIXTURE = Path(__file__).parents[2] / "fixtures" / "conllu" / "valid" / "basic.conllu"


class _Module:
    relations = ("det", "nsubj", "root", "punct", "advmod")


def _fake_run(tmp_path):
    cfg = OmegaConf.create({"exclude_punct": None, "seed": 1, "name": "local-ce", "decoder": "cle"})
    return LoadedRun(tmp_path, cfg, datamodule=None, module=_Module())


def _sentences():
    gold = read_conllu(FIXTURE, single_root=True, on_malformed="error")
    s1 = gold[0]  # 4 words: The cat sat .
    N = len(s1) + 1
    # The best tree 0->1, 1->2, 1->3, 2->4 is non-projective (1->3 crosses 2->4).
    nonproj = np.full((N, N), -10.0, dtype=np.float32)
    for h, d in ((0, 1), (1, 2), (1, 3), (2, 4)):
        nonproj[h, d] = 0.0
    rng = np.random.default_rng(3)
    plain = rng.normal(size=(N, N)).astype(np.float32)
    best_rel = np.tile(np.arange(N) % 5, (N, 1))  # relation id = dependent % 5
    return [ScoredSentence(0, nonproj, best_rel, s1), ScoredSentence(1, plain, best_rel, s1)]


def test_pairs_and_scores(tmp_path, monkeypatch):
    monkeypatch.setattr(sub, "scored_sentences", lambda run, stage: iter(_sentences()))
    res = sub.compare(_fake_run(tmp_path), "val", ["cle", "bock", "bock-original", "eisner"])
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
    text = sub.to_markdown({"run": "r", "condition": "local-ce", "seed": 1,
                            "stages": {"val": res}})  # fmt: skip
    assert "| cle vs bock | 2 (100.00 %) | 2 (100.00 %) | 2 (100.00 %) | 0 |" in text
