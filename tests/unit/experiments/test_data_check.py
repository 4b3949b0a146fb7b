"""The data check of the Table 1 experiments (a Hydra callback)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from bockparse.experiments.checks import RequireData, data_problems, swept_keys


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


def test_callback_stops_with_every_problem(tmp_path):
    cfg = OmegaConf.create({"experiment_name": "table1-ptb", "data": _data()})
    with pytest.raises(SystemExit) as stop:
        RequireData().on_run_start(cfg)
    message = str(stop.value.code)
    assert "table1-ptb" in message and "data.train is not set" in message
    assert "data.test is not set" in message and "data.root=DIR" in message


def test_multirun_leaves_swept_files_to_the_jobs(tmp_path):
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
