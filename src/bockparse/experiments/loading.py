"""Reloading a trained run (its saved config and ``checkpoints/best.ckpt``, by
:meth:`bockparse.parser.Parser.load`) and scoring its development and test sentences once, for
analyses on fixed score matrices; a run's gold files and its saved predictions' per-sentence
scores (:func:`sentence_las`, and :func:`file_sentence_las` for any prediction file: the
bootstrap intervals)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from ..data.batch import Batch
from ..data.conllu import DataError, read_conllu
from ..metrics import aligned_files, sentence_counts
from ..model.outputs import ParserScores
from ..parser import Parser
from ..predict import sentence_rows
from ..rundir import RunDir


@dataclass
class LoadedRun:
    """A run's composed config (absolute data paths) and its parser (best weights, eval mode,
    on the CPU)."""

    path: Path
    cfg: DictConfig
    parser: Parser

    @property
    def relations(self) -> list[str]:
        return self.parser.relations


@dataclass
class ScoredSentence:
    """One sentence's fixed arc scores.

    Attributes:
        index: position in the split's file (file order).
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
        bockparse.rundir.RunFileError: a file of the run that cannot be read as data.
    """
    run = RunDir(run_dir)
    cfg = run.config(resolvers=True)  # the data root may name the data folder by ${oc.env:...}
    hydra = run.hydra()
    cwd = None if hydra is None else OmegaConf.select(hydra, "hydra.runtime.cwd")
    start = Path(cwd) if cwd else Path.cwd()
    with open_dict(cfg):
        root = cfg.data.get("root")
        if root is None:
            cfg.data.root = str(start)
        elif not os.path.isabs(os.path.expanduser(str(root))):
            cfg.data.root = str(start / str(root))
    return cfg


def gold_file(run_dir: str | Path, stage: str) -> tuple[Path, DictConfig]:
    """The gold CoNLL-U file of a run's split (``val`` or ``test``) and the run's data config."""
    data = run_config(run_dir).data
    return Path(str(data.root)) / str(data[stage]), data


def sentence_las(run_dir: str | Path, stage: str) -> list[tuple[int, int]]:
    """Per sentence of a run's split, ``(words with the right head and label, words)`` of its
    saved predictions against the gold file (every word scored, as ``metrics.json``).

    Raises:
        DataError: a prediction or gold file is missing, malformed or misaligned.
    """
    gold_path, _ = gold_file(run_dir, stage)
    pred_path = RunDir(run_dir).predictions(stage)
    if not pred_path.is_file():
        raise DataError(f"{pred_path}: no saved predictions")
    return file_sentence_las(gold_path, pred_path)


def file_sentence_las(gold_path: str | Path, pred_path: str | Path) -> list[tuple[int, int]]:
    """Per sentence, ``(words with the right head and label, words)`` of a prediction file
    against its gold file (every word scored; either may be gzip-compressed).

    Raises:
        DataError: a file is missing, malformed or misaligned.
    """
    gold, pred = aligned_files(str(gold_path), str(pred_path))
    scores = []
    for g, p in zip(gold, pred, strict=True):
        words, _, labels, _, _ = sentence_counts([g], [p.heads], [p.rels], None).tolist()
        scores.append((labels, words))
    return scores


def load_run(run_dir: str | Path) -> LoadedRun:
    """A finished run: its config (data paths as :func:`run_config`) and its parser
    (:meth:`Parser.load`: vocabularies and weights from ``best.ckpt``, no training data).

    Raises:
        FileNotFoundError: no saved config.
        bockparse.parser.ModelError: no usable checkpoint.
    """
    run_dir = Path(run_dir)
    cfg = run_config(run_dir)
    return LoadedRun(run_dir, cfg, Parser.load(run_dir))


def scored_batches(run: LoadedRun, stage: str) -> Iterator[tuple[Batch, ParserScores]]:
    """The batches of ``stage`` (``"val"`` or ``"test"``) with their fixed scores, computed
    once by the scorer in eval mode and in the run's precision (:meth:`Parser.autocast`: a
    ``bf16-mixed`` run's scores come from bfloat16 autocast, as when it was evaluated, so that
    its saved predictions are reproduced); batches as in evaluation: the run's batch size,
    sorted by length; ``Batch.punct`` marks the run's punctuation exclusion, if any."""
    data = run.cfg.data
    path = Path(str(data.root)).expanduser() / Path(str(data[stage])).expanduser()
    sentences = read_conllu(
        os.path.normpath(path), single_root=data.single_root, on_malformed=data.on_malformed
    )
    exclude = run.parser.settings.exclude_punct
    for batch in run.parser.batches(sentences, exclude_punct=exclude):
        with torch.inference_mode(), run.parser.autocast():
            scores = run.parser.scorer(batch)
        yield batch, scores


def scored_sentences(run: LoadedRun, stage: str) -> Iterator[ScoredSentence]:
    """:func:`scored_batches` one sentence at a time, its arc scores cut to ``[N, N]``."""
    for batch, scores in scored_batches(run, stage):
        arc = scores.arc.detach().float().cpu().numpy()  # [B, M, M]
        for sid, sentence_arc in sentence_rows(batch, arc):
            yield ScoredSentence(index=sid, arc=np.ascontiguousarray(sentence_arc))
