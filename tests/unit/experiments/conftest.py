"""Fake run folders, as bockparse-train leaves them, for the experiment tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

LOSSES = {"local-ce-cle": "LocalCrossEntropy", "hinge-cle": "StructuredHinge",
          "hinge-bock": "StructuredHinge", "crf-cle": "TreeCRF",
          "local-ce": "LocalCrossEntropy", "crf": "TreeCRF"}  # fmt: skip
DECODERS = {
    "local-ce-cle": "cle",
    "hinge-cle": "cle",
    "hinge-bock": "bock",
    "crf-cle": "cle",
    "local-ce": "cle",
    "crf": "cle",
}  # the last two: names of old runs


def write_run(
    root: Path,
    experiment: str,
    condition: str,
    seed: int,
    scores: tuple[float, float, float] | None,
    *,
    data: str = "ewt-sample",
    decoder: str | None = None,
    loss: str | None = None,
    stage: str = "test",
    subdir: str | None = None,
) -> Path:
    """A run folder with ``.hydra/`` and, unless ``scores`` is None (a failed run),
    ``metrics.json`` with ``stage`` UAS/LAS/LCM = ``scores``."""
    decoder = decoder or DECODERS.get(condition, "cle")
    loss = loss or LOSSES.get(condition, "StructuredHinge")
    path = root / (subdir or f"{experiment}/{condition}/seed{seed}")
    (path / ".hydra").mkdir(parents=True)
    cfg = {
        "seed": seed,
        "experiment_name": experiment,
        "name": condition,
        "decoder": decoder,
        "loss": {"_target_": f"bockparse.losses.{loss}"},
    }
    OmegaConf.save(OmegaConf.create(cfg), path / ".hydra" / "config.yaml")
    hydra = {"hydra": {"runtime": {"cwd": str(root), "choices": {"data": data}}}}
    OmegaConf.save(OmegaConf.create(hydra), path / ".hydra" / "hydra.yaml")
    if scores is not None:
        metrics = {f"{stage}/{k}": v for k, v in zip(("uas", "las", "lcm"), scores, strict=True)}
        metrics.update(seed=seed, experiment=experiment, condition=condition, decoder=decoder,
                       loss=loss, best_step=100, train_seconds=60.0)  # fmt: skip
        (path / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return path


@pytest.fixture
def make_run(tmp_path):
    def make(*args, **kwargs):
        return write_run(tmp_path, *args, **kwargs)

    return make
