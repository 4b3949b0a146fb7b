"""The data check of every run (a Hydra callback), and where the configs find the data."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bockparse.training import checks
from bockparse.training.checks import DATA_ENV, RequireData, data_problems, swept_keys
from bockparse.training.train import CONF_DIR

REPO = Path(CONF_DIR).parent


def _data(**kw):
    base = {"root": None, "train": "???", "val": "???", "test": "???"}
    return OmegaConf.create({**base, **kw})


def test_unset_and_absent_files(tmp_path):
    (tmp_path / "train.conllu").write_text("", encoding="utf-8")
    assert data_problems(_data()) == [f"data.{s} is not set" for s in ("train", "val", "test")]
    problems = data_problems(_data(root=str(tmp_path), train="train.conllu", val="dev.conllu",
                                   test=None))  # fmt: skip
    assert problems == [f"data.val: {tmp_path / 'dev.conllu'} does not exist", "data.test is null"]
    assert data_problems(_data(root=str(tmp_path), train="train.conllu", val="train.conllu",
                               test=str(tmp_path / "train.conllu"))) == []  # fmt: skip
    assert data_problems(_data(), skip=("train", "val", "test")) == []


def test_callback_stops_with_every_problem(tmp_path, monkeypatch):
    # The data files alone: the settings' check (tests/integration/test_settings.py) passes.
    monkeypatch.setattr(checks, "setting_problems", lambda config: [])
    cfg = OmegaConf.create({"experiment_name": "table1-ptb", "data": _data()})
    with pytest.raises(SystemExit) as stop:
        RequireData().on_run_start(cfg)
    message = str(stop.value.code)
    assert "table1-ptb" in message and "data.train is not set" in message
    assert "data.test is not set" in message and "data.root=DIR" in message


def test_multirun_leaves_swept_files_to_the_jobs(tmp_path, monkeypatch):
    monkeypatch.setattr(checks, "setting_problems", lambda config: [])
    cfg = OmegaConf.create({
        "experiment_name": "table1-ptb",
        "data": _data(root=str(tmp_path)),
        "hydra": {"sweeper": {"params": {"seed": "1,2"}},
                  "overrides": {"task": ["data.train=a.conllu,b.conllu", "data.val=x"]}},
    })  # fmt: skip
    assert swept_keys(cfg) == {"seed", "data.train"}
    with pytest.raises(SystemExit) as stop:
        RequireData().on_multirun_start(cfg)
    message = str(stop.value.code)
    assert "data.train is not set" not in message and "data.val is not set" in message
    cfg.hydra.sweeper.params = {"experiment": "a,b"}
    RequireData().on_multirun_start(cfg)  # the experiment is per job: nothing to check here


@pytest.mark.parametrize(
    ("data", "folder", "train"),
    [("ud-english-ewt", "ud-english-ewt", "en_ewt-ud-train.conllu"),
     ("ud-chinese-gsd", "ud-chinese-gsd", "zh_gsd-ud1.3-train.conllu")],
)  # fmt: skip
def test_ud_treebanks_live_under_the_data_folder(data, folder, train, tmp_path, monkeypatch):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[f"data={data}"])
    monkeypatch.delenv(DATA_ENV, raising=False)
    [problem] = data_problems(cfg.data)
    assert problem.startswith("data.root cannot be resolved") and DATA_ENV in problem
    assert f"export {DATA_ENV}=DIR" in problem and "data.root=DIR" in problem
    for check in (RequireData().on_run_start, RequireData().on_job_start):
        with pytest.raises(SystemExit) as stop:
            check(cfg)
        assert f"export {DATA_ENV}=DIR" in str(stop.value.code)
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    RequireData().on_job_start(cfg)  # the root resolves; the files are the run's check
    assert cfg.data.root == str(tmp_path / folder)
    assert data_problems(cfg.data)[0] == f"data.train: {tmp_path / folder / train} does not exist"
    (tmp_path / folder).mkdir()
    for split in ("train", "val", "test"):
        (tmp_path / folder / cfg.data[split]).write_text("", encoding="utf-8")
    assert data_problems(cfg.data) == []


def test_no_config_names_a_machine_folder():
    for path in sorted((REPO / "conf").rglob("*")):
        if path.is_file() and "local" not in path.relative_to(REPO / "conf").parts:
            text = path.read_text(encoding="utf-8")
            assert "../shared" not in text and "/work/shared" not in text, path
