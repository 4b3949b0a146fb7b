"""Lightning DDP on the CPU (two gloo processes) on the smoke experiment: the run completes,
its evaluation equals a one-process evaluation of the same checkpoint file for file, every test
sentence is predicted once and scored as the CoNLL 2018 evaluator scores the file; a run killed
with SIGKILL resumes, bit for bit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from bockparse.data import read_conllu
from bockparse.metrics import evaluate_files
from bockparse.rundir import RESUMED_EXACTLY
from bockparse.training.predictions import PredictionWriter, evaluate
from bockparse.training.resume import CONFIG_KEY
from bockparse.training.train import CONF_DIR, build

REPO = Path(CONF_DIR).parent
SAMPLE = REPO / "data/ud-english-ewt-sample"
DDP = ["trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2", "trainer.precision=32-true"]


def train(run_dir: Path, *overrides: str, kill_when=None) -> subprocess.CompletedProcess | None:
    """``bockparse-train experiment=smoke`` in ``run_dir`` (its own process group); with
    ``kill_when``, SIGKILL to the whole group (both ranks) once it returns True."""
    cmd = [sys.executable, "-m", "bockparse.training.train", "experiment=smoke",
           f"hydra.run.dir={run_dir}", "trainer.enable_progress_bar=false", *overrides]  # fmt: skip
    env = {**os.environ, "WANDB_MODE": "disabled"}
    if kill_when is None:
        return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800, env=env)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)  # fmt: skip
    while not kill_when():
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return None


def schedule_lines(log: Path, logger: str = "bockparse.training.schedule") -> list[str]:
    """The schedule's decisions (or another logger's lines) in a rank's log, without the time
    stamps."""
    lines = log.read_text(encoding="utf-8").splitlines()
    return [line.split(" - ", 1)[1] for line in lines if f"[{logger}]" in line]


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory) -> Path:
    """The issue's command: ``experiment=smoke`` with two CPU processes."""
    run_dir = tmp_path_factory.mktemp("ddp")
    proc = train(run_dir, *DDP)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return run_dir


@pytest.mark.slow
def test_ddp_predicts_every_test_sentence_once_scored_as_the_conll_2018_evaluator(ddp_run):
    udeval = pytest.importorskip("udtools.udeval")
    gold, pred = SAMPLE / "en_ewt-ud-test.conllu", ddp_run / "predictions" / "test.conllu"
    gold_sentences = read_conllu(gold, single_root=True, on_malformed="error")
    pred_sentences = read_conllu(pred, single_root=True, on_malformed="error")
    assert [(s.sent_id, s.forms) for s in pred_sentences] == [
        (s.sent_id, s.forms) for s in gold_sentences
    ]
    metrics = json.loads((ddp_run / "metrics.json").read_text(encoding="utf-8"))
    theirs = udeval.evaluate(udeval.load_conllu_file(str(gold)), udeval.load_conllu_file(str(pred)))
    assert metrics["test/uas"] == pytest.approx(100 * theirs["UAS"].f1, abs=1e-9)
    assert metrics["test/las"] == pytest.approx(100 * theirs["LAS"].f1, abs=1e-9)
    # the evaluator has no LCM: the file-based scorer that matches it on UAS/LAS gives it
    assert metrics["test/lcm"] == pytest.approx(evaluate_files(str(gold), str(pred))["lcm"])
    assert CONFIG_KEY in torch.load(ddp_run / "checkpoints/last.ckpt", weights_only=False)
    # both ranks saw the same dev LAS and took the same decisions (rank 1 logs to its own file)
    ranks = [schedule_lines(ddp_run / name) for name in ("train.log", "train_ddp_process_1.log")]
    assert ranks[0] == ranks[1] and len(ranks[0]) == 2


@pytest.mark.slow
def test_one_process_evaluates_the_checkpoint_exactly_as_two(ddp_run, tmp_path):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke", "trainer.enable_progress_bar=false"])
    datamodule, module = build(cfg)
    writer = PredictionWriter()
    trainer = instantiate(cfg.trainer, logger=False, default_root_dir=str(tmp_path),
                          callbacks=[writer])  # fmt: skip
    one = evaluate(trainer, module, datamodule, writer, ddp_run / "checkpoints/best.ckpt",
                   tmp_path)  # fmt: skip
    two = json.loads((ddp_run / "metrics.json").read_text(encoding="utf-8"))
    assert one == {key: two[key] for key in one}  # exactly: the same counts
    for stage in ("val", "test"):
        name = f"predictions/{stage}.conllu"
        assert (tmp_path / name).read_bytes() == (ddp_run / name).read_bytes(), stage


@pytest.mark.slow
def test_a_killed_ddp_run_resumes(tmp_path):
    budget = [
        "optim.max_steps=24",
        "optim.eval_every=3",
        "optim.last_checkpoint.every_evaluations=1",
        "optim.schedule.switch_step=12",
    ]
    last = tmp_path / "checkpoints/last.ckpt"
    train(tmp_path, *DDP, *budget, "condition=local-ce", kill_when=last.exists)
    saved = torch.load(last, map_location="cpu", weights_only=False)["global_step"]
    assert 0 < saved < 24 and not (tmp_path / "metrics.json").exists()
    refused = train(tmp_path, *DDP, *budget, "condition=local-ce", "resume=true",
                    "model.context.lstm_hidden=48")  # fmt: skip
    assert refused.returncode == 1 and "model.context.lstm_hidden: 32 -> 48" in refused.stderr
    proc = train(tmp_path, *DDP, *budget, "condition=local-ce", "resume=true")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"resuming from {last}" in (tmp_path / "train.log").read_text(encoding="utf-8")
    for rank_log in ("train.log", "train_ddp_process_1.log"):  # every rank switched and reloaded
        assert any(line.startswith("update 12: stage 2") and "reloaded the best model" in line
                   for line in schedule_lines(tmp_path / rank_log))  # fmt: skip
    final = torch.load(last, map_location="cpu", weights_only=True)
    assert final["global_step"] == 24
    assert json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))["best_step"] >= 3
    # bit for bit: each rank got its own generators back, and the run ends where one that was
    # never killed ends
    for rank_log in ("train.log", "train_ddp_process_1.log"):
        written = schedule_lines(tmp_path / rank_log, "bockparse.training.checkpoints")
        assert any(line.startswith(RESUMED_EXACTLY) for line in written)
    once = tmp_path / "once"
    proc = train(once, *DDP, *budget, "condition=local-ce")
    assert proc.returncode == 0, proc.stderr[-4000:]
    whole = torch.load(once / "checkpoints/last.ckpt", map_location="cpu", weights_only=True)
    assert whole["state_dict"].keys() == final["state_dict"].keys()
    for name, tensor in whole["state_dict"].items():
        assert torch.equal(tensor, final["state_dict"][name]), name
