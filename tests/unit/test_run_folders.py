"""A run folder holds one configuration (issue 49, items 1 and 3; issue 50's planted links):
its name is a function of the whole command, a folder holding another config or a finished run
is refused in one line naming what differs (or set aside with overwrite=true), nothing is
written into it before its lock and checks, and no file of the run is written through a
planted symbolic link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf, open_dict

from bockparse import rundir
from bockparse.rundir import write_hydra_config
from bockparse.training.claim import claim
from bockparse.training.loggers import attach_job_log, detach_job_log
from bockparse.training.train import CONF_DIR, RunFolderCheck, run
from bockparse.training.trajectory import TrajectoryTrace

REPO = Path(CONF_DIR).parent


def _composed(*overrides: str) -> DictConfig:
    """``bockparse-train experiment=smoke OVERRIDES``, with Hydra's own config (the job named
    as the console script names it)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=["experiment=smoke", "hydra.job.name=train", *overrides],
                       return_hydra_config=True)  # fmt: skip


def _split(full: DictConfig) -> tuple[DictConfig, DictConfig]:
    """The task's config and Hydra's (``{hydra: ...}``), as Hydra hands them to a job."""
    OmegaConf.resolve(full.hydra)
    hydra = OmegaConf.create({"hydra": full.hydra})
    cfg = full.copy()
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, hydra


@pytest.mark.parametrize(
    ("overrides", "folder"),
    [
        ((), "hinge-bock/seed1111"),
        (("model=biaffine-notags", "optim.max_steps=3"),
         "hinge-bock,model=biaffine-notags,optim.max_steps=3/seed1111"),
        (("optim.max_steps=3", "model=biaffine-notags"),  # the order does not matter
         "hinge-bock,model=biaffine-notags,optim.max_steps=3/seed1111"),
        (("loss.margin=2", "decoder=cle"), "hinge-cle,loss.margin=2/seed1111"),
        # in the path already, or changing nothing computed: no part of the name
        (("seed=7", "decoder=cle", "resume=true", "overwrite=true", "torch_threads=1",
          "loss.workers=2", "logger.wandb.enabled=false", "trace.enabled=true",
          "data.num_workers=1", "data.root=/data/ewt", "trainer.enable_progress_bar=false"),
         "hinge-cle/seed7"),
        (("condition=hinge-cle",), "hinge-cle/seed1111"),
        (("name=mine", "model=biaffine-notags"), "mine,model=biaffine-notags/seed1111"),
        # an explicit name spells neither loss nor decoder: a sweep over them keeps apart
        (("name=mine", "decoder=cle"), "mine,decoder=cle/seed1111"),
        (("name=mine", "decoder=bock"), "mine,decoder=bock/seed1111"),
    ],
)  # fmt: skip
def test_a_run_folder_is_named_by_its_whole_config(overrides, folder):
    cfg = _composed(*overrides)
    assert cfg.hydra.run.dir == f"outputs/smoke/{folder}"
    assert cfg.hydra.sweep.subdir == folder  # a multirun job: the same name


def test_a_folder_name_is_one_safe_component_and_distinct():
    cut = rundir.folder_name("hinge-bock", ["data.train=../../../etc/x.conllu"])
    assert "/" not in cut and cut.startswith("hinge-bock,data.train=.._.._.._etc_x.conllu-")
    assert rundir.folder_name("hinge-bock", ["data.train=a_b"]) != rundir.folder_name(
        "hinge-bock", ["data.train=a/b"]
    )
    long = rundir.folder_name("hinge-bock", [f"model.arc_hidden={'9' * 300}"])
    assert len(long) == rundir.MAX_NAME
    assert long != rundir.folder_name("hinge-bock", [f"model.arc_hidden={'9' * 299}"])
    assert not rundir.folder_name("..", []).startswith(".")
    assert rundir.folder_name("x", ["a=1\nb"]).count("\n") == 0


def test_a_changed_setting_is_named_escaped():
    changes = rundir.config_changes({"a\nb": 1, "logger": {"x": 1}, "m": {"k": [1]}},
                                    {"logger": {"x": 2}, "m": {"k": [2]}})  # fmt: skip
    assert changes == ["'a\\nb': 1 -> '<absent>'", "m.k: [1] -> [2]"]


def _saved_run(tmp_path: Path, *overrides: str, finished: bool = False) -> Path:
    """A run folder as a run of ``experiment=smoke OVERRIDES`` leaves it (without weights)."""
    cfg, hydra = _split(_composed(*overrides))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_hydra_config(run_dir, cfg, hydra)
    (run_dir / rundir.TRAIN_LOG).write_text("[...] - the first run\n")
    if finished:
        (run_dir / rundir.METRICS).write_text(json.dumps({"test/las": 1.0}))
    return run_dir


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def test_a_folder_of_another_config_is_refused_untouched(tmp_path):
    run_dir = _saved_run(tmp_path)
    before = _files(run_dir)
    cfg, hydra = _split(_composed("decoder=cle", "seed=7", "model.arc_hidden=64"))
    with pytest.raises(rundir.RunFolderError) as refused:
        run(cfg, run_dir, hydra)
    assert str(refused.value) == (
        f"{run_dir}: it holds a run of another config (decoder: 'bock' -> 'cle'; "
        "model.arc_hidden: 32 -> 64; seed: 1111 -> 7); choose resume=true to continue it, "
        "name=... for a new run, or overwrite=true to replace it (the old folder kept as "
        "<folder>.replaced-<UTC time>)"
    )
    assert _files(run_dir) == before  # its saved config (and all else) as it was


def test_a_finished_run_is_refused_and_resume_finds_nothing_to_do(tmp_path):
    run_dir = _saved_run(tmp_path, finished=True)
    before = _files(run_dir)
    cfg, hydra = _split(_composed())
    with pytest.raises(rundir.RunFolderError, match=r"a finished run of this config \(metrics"):
        run(cfg, run_dir, hydra)
    cfg, hydra = _split(_composed("resume=true"))
    assert run(cfg, run_dir, hydra) == {"test/las": 1.0}  # nothing to resume
    assert _files(run_dir) == before
    # resume=true over a finished run of another config is refused, not taken for it
    cfg, hydra = _split(_composed("resume=true", "decoder=cle"))
    with pytest.raises(rundir.RunFolderError, match=r"a finished run of another config \(decoder"):
        run(cfg, run_dir, hydra)
    assert _files(run_dir) == before


def test_resume_over_its_own_unfinished_run_is_accepted(tmp_path):
    run_dir = _saved_run(tmp_path)
    (run_dir / rundir.LAST).parent.mkdir()
    (run_dir / rundir.LAST).write_bytes(b"")  # what resume=true compares with (check_resume)
    cfg, _ = _split(_composed("resume=true", "optim.max_steps=12"))
    with rundir.RunLock(run_dir) as lock:
        assert claim(cfg, lock) is None
    cfg, _ = _split(_composed("optim.max_steps=12"))  # without resume: another config
    with rundir.RunLock(run_dir) as lock, pytest.raises(rundir.RunFolderError, match="max_steps"):
        claim(cfg, lock)


def test_the_saved_precision_is_the_resolved_one_an_auto_command_takes(tmp_path):
    """Training saves the precision ``auto`` resolved to (``RunDir.precision`` reads it there):
    the same command, still saying ``auto``, finds a run of this config; an explicit other
    precision finds another."""
    cfg, hydra = _split(_composed("trainer.precision=auto"))
    with open_dict(cfg):
        cfg.trainer.precision = "bf16-mixed"  # as resolve_run_precision leaves it
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_hydra_config(run_dir, cfg, hydra)
    (run_dir / rundir.METRICS).write_text(json.dumps({"test/las": 1.0}))
    assert rundir.RunDir(run_dir).precision == "bf16-mixed"
    cfg, hydra = _split(_composed("trainer.precision=auto"))
    with pytest.raises(rundir.RunFolderError, match=r"a finished run of this config \(metrics"):
        run(cfg, run_dir, hydra)
    cfg, hydra = _split(_composed("trainer.precision=32-true"))
    changed = r"trainer\.precision: 'bf16-mixed' -> '32-true'"
    with pytest.raises(rundir.RunFolderError, match=changed):
        run(cfg, run_dir, hydra)


def test_overwrite_sets_the_old_folder_aside(tmp_path):
    run_dir = _saved_run(tmp_path, finished=True)
    before = _files(run_dir)
    cfg, _ = _split(_composed("overwrite=true", "model.arc_hidden=64"))
    with rundir.RunLock(run_dir) as lock:
        assert claim(cfg, lock) is None
        assert sorted(p.name for p in run_dir.iterdir()) == [rundir.LOCK]  # a fresh folder
    [kept] = tmp_path.glob(f"run{rundir.REPLACED}*")
    assert _files(kept) == before


@pytest.mark.parametrize("planted", [rundir.TRAIN_LOG, ".hydra", str(rundir.CONFIG)])
@pytest.mark.parametrize("resume", [False, True])
def test_a_planted_link_is_refused_and_never_written_through(planted, resume, tmp_path):
    run_dir = _saved_run(tmp_path)
    (run_dir / rundir.LAST).parent.mkdir()
    (run_dir / rundir.LAST).write_bytes(b"")
    outside = tmp_path / "outside"  # e.g. a shell rc file, or a folder of one
    outside.mkdir()
    (outside / "config.yaml").write_text("kept\n")
    (outside / "rc").write_text("kept\n")
    link = run_dir / planted
    if link.is_dir():
        for child in link.iterdir():
            child.unlink()
        link.rmdir()
    else:
        link.unlink()
    link.symlink_to(outside if planted == ".hydra" else outside / "rc")
    cfg, hydra = _split(_composed(*(["resume=true"] if resume else [])))
    with pytest.raises(rundir.RunFolderError, match="symbolic links where a run writes") as refused:
        run(cfg, run_dir, hydra)
    assert "\n" not in str(refused.value) and str(link) in str(refused.value)
    assert sorted(p.name for p in outside.iterdir()) == ["config.yaml", "rc"]
    assert (outside / "rc").read_text() == (outside / "config.yaml").read_text() == "kept\n"


def test_the_job_log_is_opened_without_following_a_link(tmp_path):
    _, hydra = _split(_composed())
    outside = tmp_path / "bashrc"
    outside.write_text("kept\n")
    (tmp_path / rundir.TRAIN_LOG).symlink_to(outside)
    with pytest.raises(rundir.RunFolderError, match=r"train\.log: cannot open the run's log"):
        attach_job_log(tmp_path, hydra)
    (tmp_path / rundir.TRAIN_LOG).unlink()
    attach_job_log(tmp_path, hydra)
    try:
        import logging

        logging.getLogger("bockparse.test").warning("line\n")
    finally:
        detach_job_log()
    assert "[bockparse.test][WARNING] - line" in (tmp_path / rundir.TRAIN_LOG).read_text()
    assert outside.read_text() == "kept\n"


@pytest.mark.parametrize("append", [False, True])
def test_the_trace_never_writes_through_a_link(append, tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("kept\n")
    trace = tmp_path / "trace.csv"
    trace.symlink_to(outside)
    if append:  # a resumed run appends: a link there is refused
        with pytest.raises(rundir.RunFolderError, match=r"trace\.csv: cannot open the trace"):
            TrajectoryTrace(trace, shadow=None, tol=1e-9, ties=False, append=True)
    else:  # a new trace replaces the link by a file of its own
        TrajectoryTrace(trace, shadow=None, tol=1e-9, ties=False, append=False).close()
        assert not trace.is_symlink() and trace.read_text().startswith("update,")
    assert outside.read_text() == "kept\n"


def test_a_run_folder_that_cannot_be_made_is_refused_before_hydra_makes_it(tmp_path):
    (tmp_path / "file").write_text("")
    cfg = _composed(f"hydra.run.dir={tmp_path / 'file' / 'run'}")
    with pytest.raises(SystemExit) as stopped:
        RunFolderCheck().on_run_start(cfg)
    assert str(stopped.value) == (f"bockparse-train: {tmp_path / 'file'} is a file, not a "
                                  "folder; give another hydra.run.dir or name=")  # fmt: skip
    RunFolderCheck().on_run_start(_composed(f"hydra.run.dir={tmp_path / 'new'}"))  # fine


def test_a_refused_job_leaves_no_folder_behind(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    sweep = tmp_path / "sweep"
    out = subprocess.run(
        [sys.executable, "-m", "bockparse.training.train", "-m", "experiment=smoke",
         "optim.eval_every=0", f"data.root={REPO / 'data' / 'ud-english-ewt-sample'}",
         f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 1, out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1].startswith("bockparse-train: optim.eval_every=0")
    # a setting that fails every job stops the sweep before Hydra makes its folder
    assert not sweep.exists()


def test_a_refused_resume_leaves_the_saved_config_as_it_was(tmp_path):
    from bockparse.training.resume import ResumeError

    run_dir = _saved_run(tmp_path)
    (run_dir / rundir.LAST).parent.mkdir()
    (run_dir / rundir.LAST).write_bytes(b"\0" * 10)  # damaged: check_resume refuses it
    before = _files(run_dir)
    cfg, hydra = _split(_composed("resume=true", "model.arc_hidden=64"))
    with pytest.raises(ResumeError, match="cannot resume from"):
        run(cfg, run_dir, hydra)
    assert _files(run_dir) == before
