"""Scores split by gold projectivity (the experiment's non-projective column)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bockparse.data import write_conllu
from bockparse.decoders.eisner import is_projective
from bockparse.heads.transition.analysis import main, projective_ceiling, scores_by_projectivity
from bockparse.metrics import evaluate_files

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"


@pytest.fixture(scope="module")
def files(tmp_path_factory, sample):
    """The sample's dev file and a prediction that chains the non-projective sentences."""
    gold = sample("dev")
    nonprojective = [not is_projective(np.asarray([-1, *s.heads])) for s in gold]
    heads = [
        list(range(len(s))) if bad else s.heads for s, bad in zip(gold, nonprojective, strict=True)
    ]
    pred = tmp_path_factory.mktemp("pred") / "pred.conllu"
    write_conllu(pred, gold, heads=heads, rels=[s.rels for s in gold])
    return str(SAMPLE / "en_ewt-ud-dev.conllu"), str(pred), gold, nonprojective


def test_subsets_add_up_and_match_the_evaluator(files):
    gold_path, pred_path, gold, nonprojective = files
    s = scores_by_projectivity(gold_path, pred_path)
    assert s["projective"]["uas"] == 100.0 and s["projective"]["lcm"] == 100.0
    assert s["non-projective"]["sentences"] == sum(nonprojective) > 0
    assert s["non-projective"]["lcm"] < 100.0  # a chain is projective, the gold is not
    for key in ("words", "heads", "labels", "sentences", "complete"):
        assert s["all"][key] == s["projective"][key] + s["non-projective"][key]
    overall = evaluate_files(gold_path, pred_path)
    assert {k: s["all"][k] for k in ("uas", "las", "lcm")} == pytest.approx(
        {k: overall[k] for k in ("uas", "las", "lcm")}
    )
    chained = [
        (np.asarray(g.heads) == np.arange(len(g))).sum()
        for g, bad in zip(gold, nonprojective, strict=True)
        if bad
    ]
    assert s["non-projective"]["heads"] == sum(chained)


def test_command_line_prints_one_row_per_file(files, capsys):
    gold_path, pred_path, *_ = files
    assert main([gold_path, gold_path, pred_path]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 4 and rows[2].startswith(f"| {gold_path} | 100.00 | 100.00 | 100.00 |")
    assert main([gold_path, str(SAMPLE / "en_ewt-ud-test.conllu")]) == 1


def test_projective_ceiling(files, capsys):
    gold_path, _, gold, nonprojective = files
    c = projective_ceiling(gold_path)
    assert c["projective"]["uas"] == 100.0
    assert c["non-projective"]["sentences"] == sum(nonprojective)
    words = sum(len(g) for g, bad in zip(gold, nonprojective, strict=True) if bad)
    assert c["non-projective"]["words"] == words
    # Each crossing costs at least one head; a projective tree keeps most of them.
    assert words - c["non-projective"]["sentences"] >= c["non-projective"]["heads"] > words / 2
    assert c["all"]["heads"] == c["projective"]["heads"] + c["non-projective"]["heads"]
    assert main([gold_path, "--ceiling"]) == 0
    assert capsys.readouterr().out.startswith(f"projective ceiling: UAS {c['all']['uas']:.2f}")
