"""The Hydra tree composes, every condition instantiates, and a short run writes its outputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import get_class, instantiate

from bockparse.decoders import DECODERS
from bockparse.training.train import CONF_DIR, run

CONDITIONS = sorted(p.stem for p in (Path(CONF_DIR) / "condition").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml"))
REPO = Path(CONF_DIR).parent


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=list(overrides))


@pytest.mark.parametrize("condition", CONDITIONS)
def test_every_condition_composes_and_instantiates(condition):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[f"condition={condition}"], return_hydra_config=True)
    loss_choice = cfg.hydra.runtime.choices.loss
    if cfg.decoder is None:  # a head that decodes itself (bockparse.heads.transition)
        assert get_class(cfg.model._target_).predict is not None
        assert cfg.name == cfg.model.system == condition
    else:
        assert cfg.decoder in DECODERS
        # a preset of a loss and a decoder: its runs are named <loss>-<decoder>
        spelled = composed(f"loss={loss_choice}", f"decoder={cfg.decoder}")
        assert cfg.name == spelled.name == f"{loss_choice}-{cfg.decoder}"
    loss = instantiate(cfg.loss)
    assert callable(loss)
    if hasattr(loss, "decoder"):
        assert loss.decoder == cfg.decoder


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes(experiment):
    cfg = composed(f"experiment={experiment}")
    assert cfg.experiment_name
    instantiate(cfg.optim.stage1)
    instantiate(cfg.optim.stage2)
    instantiate(cfg.optim.schedule)
    instantiate(cfg.loss)


def test_short_run_writes_every_output(tmp_path, monkeypatch, caplog):
    import logging

    import torch

    from bockparse.training.module import ParserModule

    monkeypatch.chdir(REPO)  # the sample's path is relative to the repository
    modes: list[bool] = []
    validation_step = ParserModule.validation_step

    def recording(self, batch, batch_idx):
        modes.append(torch.is_inference_mode_enabled())
        return validation_step(self, batch, batch_idx)

    monkeypatch.setattr(ParserModule, "validation_step", recording)
    cfg = composed("experiment=smoke", "condition=local-ce", "optim.schedule.switch_step=3")
    with caplog.at_level(logging.INFO, logger="bockparse"):
        result = run(cfg, tmp_path)
    assert modes and all(modes)  # every evaluation under torch.inference_mode
    best = torch.load(tmp_path / "checkpoints/best.ckpt", weights_only=False)
    assert "optimizer_states" not in best  # weights only
    last = torch.load(tmp_path / "checkpoints/last.ckpt", weights_only=False)
    stage1, stage2 = last["optimizer_states"]  # after the switch at update 3: Adam's state only
    assert stage1["state"] == {} and len(stage2["state"]) > 0
    progress = caplog.text  # what train.log receives through Hydra's job logging
    for line in ("experiment smoke, seed 1111", "update 3: dev LAS", "update 3: stage 2",
                 "update 6: dev LAS",
                 "training ended at update 6", "max_steps=6 reached", "checkpoints: best.ckpt",
                 f"predictions in {tmp_path}", f"metrics in {tmp_path}"):  # fmt: skip
        assert line in progress, line
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics == result
    for key in ("val/uas", "val/las", "val/lcm", "test/uas", "test/las", "test/lcm"):
        assert 0.0 <= metrics[key] <= 100.0
    assert metrics["condition"] == "local-ce-cle" and metrics["decoder"] == "cle"
    assert metrics["seed"] == 1111 and metrics["best_step"] in (3, 6)
    for name in ("checkpoints/best.ckpt", "checkpoints/last.ckpt", "predictions/val.conllu",
                 "predictions/test.conllu", "csv/metrics.csv"):  # fmt: skip
        assert (tmp_path / name).is_file(), name
    assert not list(tmp_path.rglob("*.tmp"))
    timing = json.loads((tmp_path / "timing.json").read_text())
    assert timing["n_updates"] == 6 and timing["n_evaluations"] == 2  # sanity check excluded
    parts = ("startup", "updates", "evaluations", "checkpoints", "final_evaluation", "other")
    assert all(timing[k] > 0 for k in parts if k != "other")
    assert sum(timing[k] for k in parts) == pytest.approx(timing["total"], abs=0.01)
    assert "wall time: startup" in progress
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


def _train(tmp_path: Path, *overrides: str, wait_for: Callable[[], bool] | None = None):
    """Run bockparse-train in a subprocess; with ``wait_for``, kill -9 once it returns True."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [
        sys.executable,
        "-m",
        "bockparse.training.train",
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
    while not wait_for():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return None


def test_make_train_runs_on_a_cpu_without_native_bf16(tmp_path):
    """make train's experiment, 2 updates, with the probe forced to "no" and oneDNN limited to
    AVX2 as on such a CPU (where bf16 LSTMs fail): it resolves to fp32, says why, records it,
    and its test scores are the CoNLL 2018 evaluator's on its predictions."""
    import os
    import subprocess
    import sys

    from bockparse.hardware import FORCE_ENV, ISA_ENV
    from bockparse.metrics import evaluate_files

    env = {**os.environ, FORCE_ENV: "0", ISA_ENV: "AVX2"}
    cmd = [sys.executable, "-m", "bockparse.training.train", "experiment=ewt-sample-cpu",
           "optim.max_steps=2", "optim.eval_every=2", "logger.wandb.enabled=false",
           "trainer.enable_progress_bar=false", f"hydra.run.dir={tmp_path}"]  # fmt: skip
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    log = (tmp_path / "train.log").read_text(encoding="utf-8")
    assert f"precision 32-true (auto: {FORCE_ENV}=0)" in log
    environment = json.loads((tmp_path / "environment.json").read_text())
    assert environment["precision"] == "32-true"
    assert environment["env"][ISA_ENV] == "AVX2"
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["precision"] == "32-true"
    gold = REPO / "data/ud-english-ewt-sample/en_ewt-ud-test.conllu"
    scores = evaluate_files(str(gold), str(tmp_path / "predictions/test.conllu"))
    for name in ("uas", "las"):
        assert scores[name] == pytest.approx(metrics[f"test/{name}"])


@pytest.mark.slow
def test_resume_after_kill(tmp_path):
    import torch

    budget = ["optim.max_steps=30", "optim.eval_every=5"]
    last = tmp_path / "checkpoints/last.ckpt"
    _train(tmp_path, *budget, "optim.last_checkpoint.every_minutes=0", wait_for=last.exists)
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
def test_resume_after_kill_between_two_last_writes(tmp_path):
    """last.ckpt every second evaluation: a kill after the evaluation of update 15 resumes
    from update 10, and best.ckpt goes back to the best model last.ckpt knows of."""
    import torch

    budget = [
        "optim.max_steps=30",
        "optim.eval_every=5",
        "optim.last_checkpoint.every_evaluations=2",
    ]
    log = tmp_path / "train.log"
    _train(tmp_path, *budget, wait_for=lambda: log.exists() and "update 15: dev" in log.read_text())
    ckpts = tmp_path / "checkpoints"
    assert torch.load(ckpts / "last.ckpt", weights_only=False)["global_step"] == 10
    out = _train(tmp_path, *budget, "resume=true")
    assert "resuming from" in out and "update 15: dev" in out and "update 5: dev" not in out
    known = torch.load(ckpts / "last.ckpt", weights_only=False)
    assert known["global_step"] == 30 and "optimizer_states" in known
    best = torch.load(ckpts / "best.ckpt", weights_only=False)
    assert "optimizer_states" not in best
    assert best["global_step"] == known["bockparse"]["schedule"]["best_step"]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["best_step"] == best["global_step"]


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


PAPER = {  # Wang & Park (2026), §5 and Appendix B; Stanza 1.15's defaults where the paper is silent
    "encoder.lr_scale": 1.0,  # "BERT is fully fine-tuned"
    "encoder.layers": 4,
    "model.context.lstm_layers": 3,  # "three-layer bidirectional LSTM with hidden-size setting 400"
    "model.context.lstm_hidden": 400,
    "model.context.use_words": True,  # "Word and character representations, UPOS, XPOS, and
    "model.context.use_chars": True,  # morphological features"
    "model.context.use_upos": True,
    "model.context.use_xpos": True,
    "model.context.use_feats": True,
    "model.context.word_dim": 75,
    "model.context.char_dim": 100,
    "model.context.char_hidden": 400,
    "model.context.tag_dim": 50,
    "model.context.dropout": 0.5,
    "model.context.word_dropout": 0.33,
    "model.arc_hidden": 400,
    "model.rel_hidden": 400,
    "model.aux_hidden": 400,
    "model.linearization": True,  # "auxiliary losses"
    "model.distance": True,
    "data.batch_size": 5000,  # "a token budget of 5,000 per batch"
    "data.single_root": True,
    "optim.stage1._target_": "torch.optim.Adadelta",  # "Stanza's Adadelta-to-Adam schedule"
    "optim.stage1.lr": 2.0,
    "optim.stage1.weight_decay": 1e-5,
    "optim.stage2._target_": "torch.optim.Adam",
    "optim.stage2.lr": 2e-4,
    "optim.stage2.betas": [0.9, 0.999],
    "optim.stage2.eps": 1e-6,
    "optim.stage2_warmup": 200,
    "optim.transformer_warmup": 500,  # "500 BERT warm-up steps"
    "optim.max_grad_norm": 1.0,
    "optim.max_steps": 50000,  # "at most 50,000 updates"
    "optim.eval_every": 100,  # "Development evaluation occurs every 100 updates"
    "optim.schedule.plateau_patience": 500,
    "optim.schedule.plateau_decay": 0.8,
    "optim.schedule.plateau_threshold": 1e-4,
    "optim.schedule.switch_patience": 2000,
    "optim.schedule.switch_step": 10000,
    "optim.schedule.stop_patience": 2000,
    "optim.schedule.stage2_warmup": 200,
    "optim.schedule.transformer_freeze": 500,
    "optim.schedule.transformer_warmup": 500,
    "optim.schedule.transformer_lr_scale": 1.0,
    "optim.schedule.stage2_transformer_lr_scale": 1e-3,
    "optim.schedule.transformer_weight_decay": 0.0,
    "trainer.precision": "32-true",
    "trainer.deterministic": False,  # "Deterministic algorithms are disabled"
    "trainer.log_every_n_steps": 20,  # "The first recorded training loss is at update 20"
    "trainer.accelerator": "gpu",
}


@pytest.mark.parametrize(
    ("experiment", "extra"),
    [
        ("table1-ptb", {"encoder.name_or_path": "bert-base-cased", "data.on_malformed": "error"}),
        ("table1-ctb", {"encoder.name_or_path": "bert-base-chinese", "data.on_malformed": "skip"}),
    ],
)
def test_paper_experiments_compose_to_the_paper_settings(experiment, extra):
    from omegaconf import OmegaConf

    cfg = composed(f"experiment={experiment}")
    got = {key: OmegaConf.select(cfg, key) for key in {**PAPER, **extra}}
    got = {k: OmegaConf.to_container(v) if OmegaConf.is_config(v) else v for k, v in got.items()}
    assert got == {**PAPER, **extra}
    assert cfg.exclude_punct is None  # punctuation scored, as in the main results


def test_a_transition_parser_refuses_a_graph_decoder(tmp_path, monkeypatch):
    from bockparse.training.train import build

    monkeypatch.chdir(REPO)
    cfg = composed("experiment=smoke", "condition=arc-standard", "decoder=bock")
    with pytest.raises(ValueError, match=r"predicts its trees itself.*decoder=bock"):
        build(cfg)
    assert composed("experiment=smoke", "condition=arc-standard").decoder is None
