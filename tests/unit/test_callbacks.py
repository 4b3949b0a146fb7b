"""The callbacks of a training run come in the one order that RunCallbacks.ordered states."""

from __future__ import annotations

import re

import lightning.pytorch as pl
from hydra import compose, initialize_config_dir

from bockparse.training.callbacks import RunCallbacks, run_callbacks
from bockparse.training.train import CONF_DIR


def documented_order() -> list[str]:
    """The class names of the numbered list in RunCallbacks.ordered's docstring."""
    return re.findall(r"^\s*\d+\. ``(\w+)``", RunCallbacks.ordered.__doc__, flags=re.MULTILINE)


def test_the_trainer_runs_the_callbacks_in_the_documented_order(tmp_path):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke", "trace.enabled=true",
                                          "trace.shadow=null"])  # fmt: skip
    callbacks = run_callbacks(cfg, tmp_path)
    ordered = callbacks.ordered()
    assert [type(c).__name__ for c in ordered] == documented_order()
    assert len(ordered) == 6 and callbacks.checkpoints.decisions is callbacks.decisions
    # Lightning adds its own callbacks and moves some to the end, but keeps ours in this order
    trainer = pl.Trainer(callbacks=ordered, logger=False, enable_progress_bar=False,
                         enable_checkpointing=False, default_root_dir=str(tmp_path))  # fmt: skip
    assert [c for c in trainer.callbacks if any(c is o for o in ordered)] == ordered
    callbacks.trace.trace.close()


def test_without_the_trace_the_order_is_the_rest_of_the_list(tmp_path):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke"])
    ordered = run_callbacks(cfg, tmp_path).ordered()
    assert [type(c).__name__ for c in ordered] == documented_order()[:-1]
