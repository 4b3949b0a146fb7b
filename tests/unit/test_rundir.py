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
from bockparse.training.loggers import _csv_logger
from bockparse.training.train import CONF_DIR, SettingsError, run


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
    assert rundir.run_dir_of(run) == rundir.run_dir_of(run / "checkpoints" / "best.ckpt") == run
    (run / "sub").mkdir()
    assert rundir.run_dir_of(run / "sub" / "best.ckpt") is None
    assert rundir.run_dir_of(tmp_path) is rundir.run_dir_of(tmp_path / "checkpoints" / "x") is None


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


# -- RunDir: the one reader of a run folder -------------------------------------------------

PUBLISHED_AUTO = Path("experiments/table1-ud/runs/table1-ud-ewt/hinge-cle/seed1111")
PUBLISHED_GZ = Path("experiments/table1-ud/first-budget/runs/table1-ud-ewt/hinge-bock/seed1111")
PUBLISHED_NO_ENVIRONMENT = Path(
    "experiments/trajectory-identity/runs/ewt-minilm/local-ce-rerun/seed1111"
)
REPO = Path(__file__).resolve().parents[2]


def _written_run(tmp_path: Path, precision: str = "bf16-mixed") -> Path:
    """A run folder as training leaves it (the files RunDir reads)."""
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / rundir.CONFIG).write_text(
        "seed: 7\nname: hinge-${decoder}\ndecoder: bock\nloss: {_target_: x.StructuredHinge}\n"
        f"trainer: {{precision: {precision}}}\ntrace: {{enabled: true, file: trace.csv}}\n"
        "data:\n  root: ${oc.env:HOME}\n"
    )
    (run / rundir.HYDRA).write_text("hydra: {runtime: {cwd: /start}}\n")
    rundir.write_json(run / rundir.METRICS, {"test/las": 80.0, "precision": "32-true"})
    rundir.write_json(run / rundir.ENVIRONMENT, {"precision": "bf16-mixed"})
    (run / rundir.PREDICTIONS).mkdir()
    rundir.predictions(run, "test").write_text("1\tx\n")
    return run


def test_run_dir_reads_each_file_of_a_run(tmp_path):
    run = rundir.RunDir(_written_run(tmp_path))
    cfg = run.config()
    assert (cfg.name, cfg.seed, cfg.data.root) == ("hinge-bock", 7, "${oc.env:HOME}")
    assert run.config(resolvers=True).data.root == os.environ["HOME"]
    assert run.hydra().hydra.runtime.cwd == "/start"
    assert run.metrics() == {"test/las": 80.0, "precision": "32-true"}
    assert run.environment() == {"precision": "bf16-mixed"}
    assert run.precision == "bf16-mixed"
    assert run.best == run.path / rundir.BEST and run.last == run.path / rundir.LAST
    assert run.trace == run.path / "trace.csv"
    assert run.predictions("test") == run.path / "predictions" / "test.conllu"
    assert run.predictions("val") == run.path / "predictions" / "val.conllu"  # neither exists
    assert [r.path for r in rundir.discover(tmp_path)] == [run.path]
    assert [r.path for r in rundir.discover(run.path)] == [run.path]


def test_run_dir_precision_is_the_saved_one_then_the_records(tmp_path):
    """The saved config's precision (training writes it resolved); a run saved with ``auto``
    (a published run from before): environment.json, else metrics.json, else ``auto``."""
    path = _written_run(tmp_path, precision="32-true")
    assert rundir.RunDir(path).precision == "32-true"  # not environment.json's bf16-mixed
    rundir.RunDir(path).config()  # (the written config is readable)
    (path / rundir.CONFIG).write_text((path / rundir.CONFIG).read_text().replace("32-true", "auto"))
    assert rundir.RunDir(path).precision == "bf16-mixed"
    (path / rundir.ENVIRONMENT).unlink()
    assert rundir.RunDir(path).precision == "32-true"
    (path / rundir.METRICS).unlink()
    assert rundir.RunDir(path).precision == "auto"


def test_run_dir_reads_a_published_run_folder():
    """Published runs whose configs say ``auto``: the precision comes from environment.json,
    else (a run from before it) from metrics.json; predictions are the committed ``.gz``
    copies."""
    run = rundir.RunDir(REPO / PUBLISHED_AUTO)
    assert run.config().trainer.precision == "auto"
    assert run.precision == run.environment()["precision"] == "bf16-mixed"
    no_record = rundir.RunDir(REPO / PUBLISHED_NO_ENVIRONMENT)
    assert no_record.config().trainer.precision == "auto" and no_record.environment() is None
    assert no_record.precision == no_record.metrics()["precision"] != "auto"
    assert no_record.trace.is_file()
    gz = rundir.RunDir(REPO / PUBLISHED_GZ)
    assert gz.predictions("test").name == "test.conllu.gz" and gz.predictions("test").is_file()
    found = [r.path for r in rundir.discover(REPO / PUBLISHED_GZ.parent)]
    assert REPO / PUBLISHED_GZ in found and all(rundir.is_run_dir(p) for p in found)


@pytest.mark.parametrize(
    ("name", "read"),
    [(str(rundir.CONFIG), lambda r: r.config()), (rundir.METRICS, lambda r: r.metrics()),
     (rundir.ENVIRONMENT, lambda r: r.environment()), (str(rundir.HYDRA), lambda r: r.hydra()),
     (str(rundir.BEST), lambda r: r.best), (rundir.PREDICTIONS, lambda r: r.predictions("test")),
     ("trace.csv", lambda r: r.trace)],
)  # fmt: skip
def test_run_dir_never_follows_a_planted_link(tmp_path, name, read):
    path = _written_run(tmp_path)
    (path / rundir.CHECKPOINTS).mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = path / name
    if planted.exists():
        os.rename(planted, outside / planted.name)
    planted.symlink_to(outside / planted.name)
    with pytest.raises(rundir.LinkRefused, match=f"{planted}: refused: a symbolic link"):
        read(rundir.RunDir(path))


def test_a_linked_run_folder_is_not_discovered(tmp_path):
    """A planted link to a run folder elsewhere is no run folder of the sweep."""
    run = _written_run(tmp_path)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "seed1").symlink_to(run)
    (sweep / "metrics.json.d").mkdir()
    assert list(rundir.discover(sweep)) == [] and not rundir.is_run_dir(sweep / "seed1" / "x")


def test_run_dir_refuses_damaged_records_in_one_line(tmp_path):
    path = _written_run(tmp_path)
    (path / rundir.METRICS).write_text("{")
    with pytest.raises(rundir.RunFileError, match=r"metrics\.json: damaged, not JSON"):
        rundir.RunDir(path).metrics()
    os.mkfifo(path / "fifo")
    with pytest.raises(rundir.RunFileError, match="fifo: not a regular file"):
        rundir.read_file(path / "fifo", 10)
    (path / rundir.CONFIG).unlink()
    with pytest.raises(FileNotFoundError, match="not a run folder with its config"):
        rundir.RunDir(path).config()
