"""Punctuation-excluded re-evaluation of saved predictions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bockparse.cli.experiments import reeval as main
from bockparse.experiments.reeval import PAPER_PUNCT_EXCLUDED
from bockparse.metrics import evaluate_files, punct_exclusion

FIXTURE = Path(__file__).parents[2] / "fixtures" / "conllu" / "valid" / "basic.conllu"


def test_exclusion_from_the_data_config():
    def of(data):
        cfg = OmegaConf.create(data)
        return punct_exclusion(cfg.punct_field, cfg.punct_tags)

    assert of({"punct_field": "upos", "punct_tags": ["PUNCT"]}) == "upos"
    assert of({"punct_field": "xpos", "punct_tags": ["PU"]}) == "ctb"
    assert of({"punct_field": "xpos", "punct_tags": ["``", "''", ":", ",", "."]}) == "ptb"
    with pytest.raises(ValueError, match="no punctuation exclusion matches xpos"):
        of({"punct_field": "xpos", "punct_tags": ["X"]})


def _run(root: Path, experiment: str, condition: str, seed: int, scores=None) -> Path:
    """A run whose test prediction is the gold file with every punctuation head wrong."""
    run = root / experiment / condition / f"seed{seed}"
    (run / ".hydra").mkdir(parents=True)
    (run / "predictions").mkdir()
    data = {"root": "gold", "train": "basic.conllu", "val": "basic.conllu",
            "test": "basic.conllu", "punct_field": "upos", "punct_tags": ["PUNCT"]}  # fmt: skip
    cfg = {"seed": seed, "experiment_name": experiment, "data": data, "name": condition,
           "decoder": "cle",
           "loss": {"_target_": "bockparse.losses.LocalCrossEntropy"}}  # fmt: skip
    OmegaConf.save(OmegaConf.create(cfg), run / ".hydra" / "config.yaml")
    hydra = {"hydra": {"runtime": {"cwd": str(root), "choices": {"data": "ewt-sample"}}}}
    OmegaConf.save(OmegaConf.create(hydra), run / ".hydra" / "hydra.yaml")
    lines = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit() and cols[3] == "PUNCT":
            cols[6] = "1" if cols[6] != "1" else "2"
        lines.append("\t".join(cols))
    pred = run / "predictions" / "test.conllu"
    pred.write_text("\n".join(lines) + "\n", encoding="utf-8")
    included = evaluate_files(str(root / "gold" / "basic.conllu"), str(pred))
    metrics = scores or {f"test/{k}": included[k] for k in ("uas", "las", "lcm")}
    metrics.update(seed=seed, experiment=experiment, condition=condition, decoder="cle",
                   loss="LocalCrossEntropy")  # fmt: skip
    (run / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return run


def test_punctuation_excluded_table(tmp_path, capsys):
    (tmp_path / "gold").mkdir()
    shutil.copy(FIXTURE, tmp_path / "gold" / "basic.conllu")
    for seed in (1, 2):
        _run(tmp_path, "table1-ptb", "local-ce-cle", seed)
    out = tmp_path / "out"
    assert main([str(tmp_path / "table1-ptb"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    # every non-punctuation word is right: 100 % with punctuation excluded
    assert "| Local CE | 2 | 100.00 ± 0.00 | — | 100.00 ± 0.00 | 95.10 |" in text
    assert "Punctuation excluded (upos)" in text and "matches metrics.json" in text
    assert (out / "table1-punct.md").is_file() and (out / "table1-punct.csv").is_file()
    assert PAPER_PUNCT_EXCLUDED["table1-ptb"]["local-ce-cle"][1:] == (95.10, 57.71)


def test_mismatch_with_metrics_json_is_reported(tmp_path, capsys):
    (tmp_path / "gold").mkdir()
    shutil.copy(FIXTURE, tmp_path / "gold" / "basic.conllu")
    _run(tmp_path, "smoke", "local-ce-cle", 1, {"test/uas": 1.0, "test/las": 1.0, "test/lcm": 1.0})
    assert main([str(tmp_path / "smoke")]) == 1
    assert "Check FAILED" in capsys.readouterr().out
