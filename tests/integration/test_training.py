"""The Hydra tree composes, every condition instantiates, and a short run writes its outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import get_class, instantiate

from bockparse.decoders import METHODS
from bockparse.train import CONF_DIR, run

CONDITIONS = sorted(p.stem for p in (Path(CONF_DIR) / "condition").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml"))
REPO = Path(CONF_DIR).parent


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=list(overrides))


@pytest.mark.parametrize("condition", CONDITIONS)
def test_every_condition_composes_and_instantiates(condition):
    cfg = composed(f"condition={condition}")
    assert cfg.condition.name == condition
    if cfg.condition.decoder is None:  # a parser that decodes itself (bockparse.transition)
        assert callable(getattr(get_class(cfg.model._target_), "predict", None))
    else:
        assert cfg.condition.decoder in METHODS
    loss = instantiate(cfg.condition.loss)
    assert callable(loss)
    if hasattr(loss, "decoder"):
        assert loss.decoder == cfg.condition.decoder


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes(experiment):
    cfg = composed(f"experiment={experiment}")
    assert cfg.experiment_name
    instantiate(cfg.optim.stage1)
    instantiate(cfg.condition.loss)


def test_short_run_writes_every_output(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the sample's path is relative to the repository
    cfg = composed("experiment=smoke", "condition=local-ce")
    result = run(cfg, tmp_path)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics == result
    for key in ("val/uas", "val/las", "val/lcm", "test/uas", "test/las", "test/lcm"):
        assert 0.0 <= metrics[key] <= 100.0
    assert metrics["condition"] == "local-ce" and metrics["decoder"] == "cle"
    assert metrics["seed"] == 1111 and metrics["best_step"] in (3, 6)
    for name in ("checkpoints/best.ckpt", "checkpoints/last.ckpt", "predictions/val.conllu",
                 "predictions/test.conllu", "csv/metrics.csv"):  # fmt: skip
        assert (tmp_path / name).is_file(), name
    assert not list(tmp_path.rglob("*.tmp"))
    from bockparse.metrics import evaluate_files

    gold = REPO / "data/ud-english-ewt-sample/en_ewt-ud-test.conllu"
    scores = evaluate_files(str(gold), str(tmp_path / "predictions/test.conllu"))
    assert scores["las"] == pytest.approx(metrics["test/las"])
