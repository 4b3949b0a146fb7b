"""Reloading a trained run (its saved config and ``checkpoints/best.ckpt``) and scoring its
development and test sentences once, for analyses on fixed score matrices."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from ..data.batch import Batch
from ..data.conllu import DataError
from ..data.vocab import Vocabs
from ..model.outputs import ParserScores
from .runs import CONFIG_FILE, HYDRA_FILE, current_keys

CHECKPOINT = Path("checkpoints") / "best.ckpt"


@dataclass
class LoadedRun:
    """A run's composed config, data module (vocabularies from its checkpoint) and module
    (best weights, eval mode, on the CPU)."""

    path: Path
    cfg: DictConfig
    datamodule: object
    module: object

    @property
    def relations(self) -> list[str]:
        return self.module.relations


@dataclass
class ScoredSentence:
    """One sentence's fixed arc scores.

    Attributes:
        index: position in the split's dataset (file order).
        arc: float32 ``[N, N]``, ``arc[h, d]`` (exactly what the run's decoder receives).
    """

    index: int
    arc: np.ndarray


def run_config(run_dir: str | Path) -> DictConfig:
    """A run's saved config (``.hydra/config.yaml``) with absolute data paths.

    Relative data paths are resolved from the directory the run started in (Hydra's
    ``runtime.cwd`` in ``.hydra/hydra.yaml``; the current directory without it), as the data
    module resolved them during training, so that analyses work from anywhere.

    Raises:
        FileNotFoundError: no saved config.
    """
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise FileNotFoundError(f"{run_dir / CONFIG_FILE}: not found (is {run_dir} a run folder?)")
    cfg = current_keys(OmegaConf.load(run_dir / CONFIG_FILE))
    start = Path.cwd()
    if (run_dir / HYDRA_FILE).is_file():
        cwd = OmegaConf.select(OmegaConf.load(run_dir / HYDRA_FILE), "hydra.runtime.cwd")
        if cwd:
            start = Path(cwd)
    with open_dict(cfg):
        root = cfg.data.get("root")
        if root is None:
            cfg.data.root = str(start)
        elif not os.path.isabs(os.path.expanduser(str(root))):
            cfg.data.root = str(start / str(root))
    return cfg


def load_run(run_dir: str | Path) -> LoadedRun:
    """Rebuild a finished run's model from ``.hydra/config.yaml`` and ``best.ckpt`` (data
    paths as :func:`run_config`).

    Raises:
        FileNotFoundError: no saved config or checkpoint.
        DataError: the vocabularies rebuilt from the training file differ from the
            checkpoint's (the file changed since training).
    """
    from ..train import build

    run_dir = Path(run_dir)
    cfg = run_config(run_dir)
    if not (run_dir / CHECKPOINT).is_file():
        raise FileNotFoundError(f"{run_dir / CHECKPOINT}: not found (did the run finish?)")
    datamodule, module = build(cfg, run_dir)
    checkpoint = torch.load(run_dir / CHECKPOINT, map_location="cpu", weights_only=False)
    saved = checkpoint.get(type(datamodule).__name__, {}).get("vocabs")
    if saved is not None and Vocabs.from_dict(saved) != datamodule.vocabs:
        raise DataError(
            f"{run_dir}: the vocabularies of {cfg.data.train} differ from the checkpoint's; "
            "the training file changed since the run"
        )
    module.load_state_dict(checkpoint["state_dict"])
    module.eval()
    return LoadedRun(run_dir, cfg, datamodule, module)


def scored_batches(run: LoadedRun, stage: str) -> Iterator[tuple[Batch, ParserScores]]:
    """The batches of ``stage`` (``"val"`` or ``"test"``) with their fixed scores, computed
    once by the scorer in eval mode (batches as in evaluation, sorted by length)."""
    dm = run.datamodule
    loader = dm.val_dataloader() if stage == "val" else dm.test_dataloader()
    with torch.inference_mode():
        for batch in loader:
            yield batch, run.module.scorer(batch)


def scored_sentences(run: LoadedRun, stage: str) -> Iterator[ScoredSentence]:
    """:func:`scored_batches` one sentence at a time, its arc scores cut to ``[N, N]``."""
    for batch, scores in scored_batches(run, stage):
        arc = scores.arc.detach().float().cpu().numpy()  # [B, M, M]
        for b, (sid, n) in enumerate(
            zip(batch.sentence_ids.tolist(), batch.lengths.tolist(), strict=True)
        ):
            yield ScoredSentence(index=sid, arc=np.ascontiguousarray(arc[b, : n + 1, : n + 1]))
