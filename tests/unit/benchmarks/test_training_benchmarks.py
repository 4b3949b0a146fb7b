"""``benchmarks/training_step.py`` composes its model from the config tree, and
``benchmarks/make_train.py`` tabulates run folders (parity and the wall-time split)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from bockparse.losses import LocalCrossEntropy


def test_training_step_builds_the_paper_scorer_on_sample_batches(benchmark):
    training_step = benchmark("training_step")
    args = argparse.Namespace(encoder="tiny-random", batch_words=200, batches=1, seed=1)
    batches, scorer = training_step.build(args)
    assert len(batches) == 2 and batches[0].subwords is not None
    lstm = scorer.context.lstm  # conf/model/context/bilstm.yaml
    assert scorer.encoder is not None and lstm.num_layers == 3 and lstm.hidden_size == 400


def _run(folder: Path, seed: int, las: float, total: float | None) -> None:
    folder.mkdir(parents=True)
    metrics = {"seed": seed, "val/uas": las + 3, "val/las": las, "test/uas": las + 4,
               "test/las": las + 1}  # fmt: skip
    (folder / "metrics.json").write_text(json.dumps(metrics))
    if total is not None:
        parts = {"startup": 1.0, "updates": total - 4.0, "evaluations": 1.0, "checkpoints": 1.0,
                 "final_evaluation": 0.5, "other": 0.5}  # fmt: skip
        timing = {**parts, "total": total, "n_updates": 10, "n_evaluations": 2}
        (folder / "timing.json").write_text(json.dumps(timing))


def test_make_train_tables_parity_and_split(benchmark, tmp_path):
    make_train = benchmark("make_train")
    _run(tmp_path / "fp32" / "seed1", 1, 80.0, None)  # an older run without timing.json
    _run(tmp_path / "fp32" / "seed2", 2, 82.0, 100.0)
    _run(tmp_path / "bf16" / "seed1", 1, 79.0, 70.0)
    _run(tmp_path / "bf16" / "seed2", 2, 81.0, 80.0)
    text = make_train.tables(make_train.read(tmp_path))
    assert "| fp32 | val/las | 80.00 | 82.00 | 81.00 ± 1.41 |" in text
    assert "| bf16 | test/las | 80.00 | 82.00 | 81.00 ± 1.41 |" in text
    assert "| fp32 | 1 | 1.0 (1 %) | 96.0 (96 %) |" in text  # one timed fp32 run
    assert "| bf16 | 2 |" in text and "| 75.0 | 7.100 |" in text  # mean total, s per update
    assert "bf16 / fp32 wall time, same seed: 0.80 (n = 1)" in text
    keep = tmp_path / "kept"
    make_train.keep(tmp_path, keep)
    assert make_train.tables(make_train.read(keep)) == text


def test_training_step_code_paths_give_the_same_loss_on_the_same_weights(benchmark):
    """The timed paths compare like with like: the former relation path (``all-pairs``) and the
    former code (``legacy``) give the current path's loss within float rounding, and each path
    leaves the scorer as it found it."""
    training_step = benchmark("training_step")
    args = argparse.Namespace(encoder="tiny-random", batch_words=200, batches=1, seed=1)
    batches, scorer = training_step.build(args)
    torch.nn.init.normal_(scorer.rel.weight, std=0.1)  # zero at first: every relation ties
    scorer.eval()
    batch = batches[1]
    losses = {}
    for path in training_step.PATHS:
        with torch.no_grad(), training_step.code_path(scorer, path):
            losses[path] = LocalCrossEntropy()(scorer(batch), batch)
        assert "pairs_at" not in vars(scorer.rel)  # the class's method again
    current = losses["current"]
    assert current.rel > 0
    for path in ("all-pairs", "legacy"):
        torch.testing.assert_close(losses[path].rel, current.rel, rtol=1e-5, atol=0)
        torch.testing.assert_close(losses[path].loss, current.loss, rtol=1e-5, atol=0)
