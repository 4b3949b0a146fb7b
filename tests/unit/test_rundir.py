"""The run folder's owner (bockparse.rundir): atomic writes that follow the umask and never
follow a planted symlink, the training lock, the layout-only recognition of run folders, the
settings refused before start-up, and the CSV history kept on resume."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from bockparse import rundir
from bockparse.training.checks import setting_problems
from bockparse.training.train import CONF_DIR, SettingsError, _csv_logger, run


def test_write_atomic_follows_the_umask_and_leaves_no_temporary(tmp_path):
    old = os.umask(0o022)
    try:
        rundir.write_atomic(tmp_path / "a.txt", "x")
        os.umask(0o077)
        rundir.write_atomic(tmp_path / "b.txt", b"y")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.txt").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_relinking_the_same_file_leaves_no_temporary(tmp_path):
    """``best-of-last.ckpt`` linked again to an unchanged ``best.ckpt``: the rename of two links
    to one file does nothing (POSIX), and the temporary name must not stay behind."""
    from bockparse.training.checkpoints import link_atomic

    best, link = tmp_path / "best.ckpt", tmp_path / "best-of-last.ckpt"
    best.write_bytes(b"weights")
    link_atomic(best, link)
    link_atomic(best, link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best-of-last.ckpt", "best.ckpt"]
    assert link.read_bytes() == b"weights"


def test_a_planted_symlink_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = tmp_path / "metrics.json"
    target.symlink_to(victim)
    (tmp_path / "metrics.json.tmp").symlink_to(victim)  # the old fixed temporary name
    rundir.write_json(target, {"a": 1})
    assert victim.read_text() == "keep"
    assert not target.is_symlink() and rundir.read_json(target) == {"a": 1}


def test_a_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), rundir.atomic_path(tmp_path / "out.conllu") as tmp:
        tmp.write_text("half")
        raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def test_one_training_per_run_folder(tmp_path):
    with rundir.RunLock(tmp_path) as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            lock.path.write_text(f"{sleeper.pid}\n")  # an earlier version's lock, held
            with pytest.raises(rundir.RunLocked, match=f"trained by process {sleeper.pid}"):
                rundir.RunLock(tmp_path).__enter__()
        finally:
            sleeper.kill()
            sleeper.wait()
        with rundir.RunLock(tmp_path) as again:  # its owner is dead: taken over
            assert json.loads(again.path.read_text())["pid"] == os.getpid()
    assert not (tmp_path / rundir.LOCK).exists()


def test_run_folders_are_recognised_by_their_layout(tmp_path):
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("seed: 1\n")
    (run / "checkpoints").mkdir()
    assert rundir.is_run_dir(run) and not rundir.is_run_dir(tmp_path)
    assert rundir.run_dir_of(run / "checkpoints" / "best.ckpt") == run
    (run / "sub").mkdir()
    with pytest.raises(FileNotFoundError, match="not in a run folder's checkpoints/"):
        rundir.run_dir_of(run / "sub" / "best.ckpt")


def _composed(*overrides):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=["experiment=smoke", *overrides])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("optim.max_steps=0", "optim.max_steps=0: must be at least 1"),
        ("optim.eval_every=0", "optim.eval_every=0: must be at least 1"),
        ("seed=abc", "seed='abc': must be an integer"),
        ("data.batch_size=-5", "data.batch_size=-5: must be at least 1"),
        ("torch_threads=0", "torch_threads=0: must be at least 1"),
    ],
)
def test_settings_that_cannot_work_are_refused_first(override, message, tmp_path):
    cfg = _composed(override)
    [problem] = setting_problems(cfg)
    assert problem.startswith(message)
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        run(cfg, tmp_path)
    assert list(tmp_path.iterdir()) == []  # refused before anything was built or written
    assert setting_problems(_composed()) == []


def test_the_command_line_refuses_a_bad_setting_in_one_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "bockparse.training.train", "experiment=smoke", "optim.eval_every=0",
         f"hydra.run.dir={tmp_path}"],
        cwd=Path(CONF_DIR).parent, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 1
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .startswith("bockparse-train: optim.eval_every=0: must be at least 1")
    )
    assert "Traceback" not in out.stderr


def test_resume_keeps_the_csv_history_up_to_the_resumed_update(tmp_path):
    path = tmp_path / rundir.CSV
    path.parent.mkdir()
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "train/loss", "val/las"])
        writer.writeheader()
        writer.writerows({"step": s, "train/loss": 1.0 / s, "val/las": ""} for s in range(1, 10))
    logger = _csv_logger(tmp_path, resumed_step=6)
    logger.log_metrics({"train/loss": 0.5}, step=7)
    logger.save()
    with open(path, newline="") as f:
        steps = [int(row["step"]) for row in csv.DictReader(f)]
    assert steps == [1, 2, 3, 4, 5, 6, 7]
