"""Real trainings into run folders (issue 49, items 1, 3 and 4): a sweep over a model setting
gets a folder per configuration, and of two trainings started at once into one folder exactly
one trains while the other is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bockparse import rundir
from bockparse.training.train import CONF_DIR

REPO = Path(CONF_DIR).parent
SAMPLE = REPO / "data" / "ud-english-ewt-sample"


def _command(*overrides: str, multirun: bool = False) -> list[str]:
    return [sys.executable, "-m", "bockparse.training.train", *(["-m"] if multirun else []),
            "experiment=smoke",
            f"data.root={SAMPLE}", "trainer.enable_progress_bar=false", *overrides]  # fmt: skip


def _env() -> dict[str, str]:
    return {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(REPO / "src")}


@pytest.mark.slow
def test_a_sweep_over_a_model_setting_keeps_every_run(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.run(
        _command("model=biaffine,biaffine-notags", "optim.max_steps=3",
                 f"hydra.sweep.dir={sweep}", multirun=True),
        cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    folders = sorted(p.relative_to(sweep).as_posix() for p in sweep.glob("*/seed1111"))
    assert folders == ["hinge-bock,model=biaffine,optim.max_steps=3/seed1111",
                       "hinge-bock,model=biaffine-notags,optim.max_steps=3/seed1111"]  # fmt: skip
    for folder in folders:
        run = sweep / folder
        assert json.loads((run / rundir.METRICS).read_text())["best_step"] >= 1
        assert (run / rundir.CONFIG).is_file() and (run / rundir.TRAIN_LOG).is_file()
        assert not (run / rundir.LOCK).exists()


@pytest.mark.slow
def test_two_trainings_into_one_folder_one_trains(tmp_path):
    run = tmp_path / "run"
    command = _command("optim.max_steps=2", f"hydra.run.dir={run}")
    procs = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=_env())
             for _ in range(2)]  # fmt: skip
    results = [(proc.wait(timeout=1800), proc.stderr.read()) for proc in procs]
    assert sorted(code for code, _ in results) == [0, 1], [err[-2000:] for _, err in results]
    [refusal] = [err for code, err in results if code == 1]
    assert "Traceback" not in refusal
    last = refusal.strip().splitlines()[-1]
    assert last.startswith(f"bockparse-train: {run}")  # locked, or finished by then
    assert "is being trained by process" in last or "it holds a finished run" in last, last
    assert json.loads((run / rundir.METRICS).read_text())["best_step"] >= 1
    assert not (run / rundir.LOCK).exists()
