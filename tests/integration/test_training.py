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
    assert cfg.name == condition
    if cfg.decoder is None:  # a parser that decodes itself (bockparse.transition)
        assert callable(getattr(get_class(cfg.model._target_), "predict", None))
    else:
        assert cfg.decoder in METHODS
    loss = instantiate(cfg.loss)
    assert callable(loss)
    if hasattr(loss, "decoder"):
        assert loss.decoder == cfg.decoder


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes(experiment):
    cfg = composed(f"experiment={experiment}")
    assert cfg.experiment_name
    instantiate(cfg.optim.stage1)
    instantiate(cfg.loss)


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


def test_nan_loss_stops_with_the_update_named(tmp_path, monkeypatch):
    from bockparse.losses import LocalCrossEntropy

    monkeypatch.chdir(REPO)
    original = LocalCrossEntropy.__call__

    def nan_after_two(self, scores, batch):
        out = original(self, scores, batch)
        calls.append(1)
        if len(calls) > 2:
            out.loss = out.loss * float("nan")
        return out

    calls: list[int] = []
    monkeypatch.setattr(LocalCrossEntropy, "__call__", nan_after_two)
    cfg = composed("experiment=smoke", "condition=local-ce")
    with pytest.raises(FloatingPointError, match="training loss is nan at update 2"):
        run(cfg, tmp_path)


def _train(tmp_path: Path, *overrides: str, wait_for: Path | None = None):
    """Run bockparse-train in a subprocess; with ``wait_for``, kill -9 once that file exists."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [
        sys.executable,
        "-m",
        "bockparse.train",
        "experiment=smoke",
        "condition=local-ce",
        f"hydra.run.dir={tmp_path}",
        "trainer.enable_progress_bar=false",
        *overrides,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    if wait_for is None:
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, out
        return out
    deadline = time.monotonic() + 900
    while not wait_for.exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return None


@pytest.mark.slow
def test_resume_after_kill(tmp_path):
    import torch

    budget = ["optim.max_steps=30", "optim.eval_every=5"]
    last = tmp_path / "checkpoints/last.ckpt"
    _train(tmp_path, *budget, wait_for=last)
    assert (tmp_path / "checkpoints/best.ckpt").exists()
    saved = torch.load(last, map_location="cpu", weights_only=False)["global_step"]
    assert 0 < saved < 30
    out = _train(tmp_path, *budget, "resume=true")
    assert "Restoring states from the checkpoint" in out
    final = torch.load(last, map_location="cpu", weights_only=False)
    assert final["global_step"] == 30
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["best_step"] >= 5


@pytest.mark.slow
def test_same_seed_same_metrics(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    _train(first, "seed=2222")
    _train(second, "seed=2222")
    a = json.loads((first / "metrics.json").read_text())
    b = json.loads((second / "metrics.json").read_text())
    for timing in ("train_seconds", "decode_seconds"):
        a.pop(timing), b.pop(timing)
    assert a == b
