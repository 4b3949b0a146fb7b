"""``resume=true`` explains itself: a damaged ``last.ckpt``, a changed config and a finished run."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bockparse.training.resume import CONFIG_KEY, ResumeError, config_differences
from bockparse.training.train import CONF_DIR, build, run

REPO = Path(CONF_DIR).parent


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=["experiment=smoke", *overrides])


def write_last(run_dir: Path, config: dict | None) -> Path:
    """A stand-in ``last.ckpt`` with the keys of a full training checkpoint."""
    last = run_dir / "checkpoints" / "last.ckpt"
    last.parent.mkdir(parents=True)
    checkpoint = {"state_dict": {}, "optimizer_states": [], "bockparse": {}}
    if config is not None:
        checkpoint[CONFIG_KEY] = config
    torch.save(checkpoint, last)
    return last


def test_a_truncated_last_checkpoint_names_the_file_the_problem_and_the_options(tmp_path):
    cfg = composed("resume=true")
    last = write_last(tmp_path, OmegaConf.to_container(cfg, resolve=True))
    last.write_bytes(last.read_bytes()[:100])
    with pytest.raises(ResumeError) as err:
        run(cfg, tmp_path)
    message = str(err.value)
    assert str(last) in message and "damaged or unreadable" in message
    assert "resume=false" in message and f"delete {tmp_path}" in message


def test_a_checkpoint_without_training_state_is_refused(tmp_path):
    cfg = composed("resume=true")
    last = tmp_path / "checkpoints" / "last.ckpt"
    last.parent.mkdir(parents=True)
    torch.save({"state_dict": {}}, last)  # a weights-only file copied over last.ckpt
    with pytest.raises(ResumeError, match="lacks optimizer_states, bockparse"):
        run(cfg, tmp_path)


def test_a_changed_model_data_or_condition_is_refused_with_every_key(tmp_path):
    trained = OmegaConf.to_container(composed(), resolve=True)
    write_last(tmp_path, trained)
    cfg = composed("resume=true", "model.context.lstm_hidden=48", "data.batch_size=500",
                   "condition=local-ce", "data.num_workers=2", "optim.max_steps=9")  # fmt: skip
    with pytest.raises(ResumeError) as err:
        run(cfg, tmp_path)
    message = str(err.value)
    assert "model.context.lstm_hidden: 32 -> 48" in message
    assert "data.batch_size: 400 -> 500" in message
    assert "name: 'hinge-bock' -> 'local-ce-cle'" in message
    assert "decoder: 'bock' -> 'cle'" in message
    # the number of workers and the update budget may change
    assert "num_workers" not in message and "max_steps" not in message


def test_config_differences_lists_only_what_differs():
    saved = {"model": {"a": 1, "b": {"c": 2}}, "data": {"num_workers": 0}, "trainer": {"x": 1}}
    now = {"model": {"a": 1, "b": {"c": 3}, "d": 4}, "data": {"num_workers": 4}, "trainer": {}}
    assert config_differences(saved, now) == ["model.b.c: 2 -> 3", "model.d: '<absent>' -> 4"]
    assert config_differences(saved, saved) == []


def test_a_finished_run_is_not_trained_again(tmp_path, caplog):
    done = {"test/las": 12.5, "best_step": 3}
    (tmp_path / "metrics.json").write_text(json.dumps(done), encoding="utf-8")
    with caplog.at_level("INFO", logger="bockparse.training.train"):
        assert run(composed("resume=true"), tmp_path) == done
    assert "is finished" in caplog.text
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.slow
def test_the_command_line_exits_0_when_finished_and_1_on_a_damaged_checkpoint(tmp_path):
    def train(run_dir: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "bockparse.training.train", "experiment=smoke", "resume=true",
             f"hydra.run.dir={run_dir}"],
            cwd=REPO, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    finished = tmp_path / "finished"
    finished.mkdir()
    (finished / "metrics.json").write_text('{"test/las": 1.0}', encoding="utf-8")
    proc = train(finished)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "is finished" in proc.stderr + proc.stdout
    assert not (finished / "checkpoints").exists()

    damaged = tmp_path / "damaged"
    last = write_last(damaged, None)
    last.write_bytes(b"\0" * 10)
    proc = train(damaged)
    assert proc.returncode == 1
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("bockparse-train:")]
    assert str(last) in line and "damaged or unreadable" in line and "resume=false" in line


# -- a resumed run continues bit for bit ------------------------------------------------------

# Big batches make short epochs (the sample's train set, 40,220 words, packs into 4), so
# that 8 updates cross an epoch boundary; dropout and word dropout draw at every update.
BIT_EXACT = ("optim.max_steps=8", "optim.eval_every=1", "data.batch_size=10000",
             "optim.last_checkpoint.every_evaluations=1", "torch_threads=1", "trace.enabled=true",
             "trace.shadow=null", "trace.ties=false")  # fmt: skip


def trace_rows(run_dir: Path) -> list[tuple[str, str, str]]:
    """(update, loss, parameter hash) of every update of a run's trace."""
    with open(run_dir / "trace.csv", encoding="utf-8") as f:
        return [(r["update"], r["loss"], r["param_hash"]) for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Path, int]:
    """The 8-update run in one go, and the number of batches in its epochs."""
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    cfg = composed(*BIT_EXACT)
    run(cfg, run_dir)
    datamodule, _ = build(cfg)
    return run_dir, len(datamodule.train_dataloader())


@pytest.mark.parametrize("where", ["inside an epoch", "at the end of an epoch"])
def test_a_resumed_run_continues_bit_for_bit(tmp_path, uninterrupted, where):
    """Stopped after k updates and resumed, a run takes the same batches, dropout and word
    dropout masks as the uninterrupted run: the same loss and parameters at every update."""
    whole, epoch = uninterrupted
    assert 2 < epoch < 8, "the settings must put an epoch boundary inside the 8 updates"
    k = epoch if where == "at the end of an epoch" else epoch - 2
    run(composed(*BIT_EXACT, f"optim.max_steps={k}"), tmp_path)
    first = torch.load(tmp_path / "checkpoints/last.ckpt", weights_only=True)
    assert first["global_step"] == k
    (tmp_path / "metrics.json").unlink()  # as if stopped by a kill after last.ckpt
    run(composed(*BIT_EXACT, "resume=true"), tmp_path)
    expected = trace_rows(whole)
    assert [row[0] for row in expected] == [str(i) for i in range(9)]  # 0: before training
    resumed_rows = trace_rows(tmp_path)
    assert resumed_rows.pop(k + 1) == (str(k), "", expected[k][2])  # the trace's resume mark
    assert resumed_rows == expected
    resumed, once = (json.loads((d / "metrics.json").read_text()) for d in (tmp_path, whole))
    for key in ("val/las", "test/las", "best_step"):
        assert resumed[key] == once[key]
    # the training time counts the process before the resume, up to its last.ckpt
    assert resumed["train_seconds"] > first["callbacks"]["RunClock"]["fit_seconds"] > 0
