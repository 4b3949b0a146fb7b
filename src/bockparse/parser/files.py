"""Model files and run checkpoints: read into a :class:`Loaded` model, and written.

:func:`load` takes a run folder of ``bockparse-train`` (its ``checkpoints/best.ckpt``), a
Lightning checkpoint in a run folder's ``checkpoints/`` (``best.ckpt``, ``last.ckpt``, full or
weights only) or a model file written by :func:`save` (``bockparse-export``). It rebuilds the
scorer from the closed model schema (:mod:`bockparse.modelfile`: the run's composed model and
encoder config as plain, validated data, :func:`.settings.run_settings`), with the
vocabularies and the weights from the file: no Hydra application, no ``instantiate``, no
training data, no hub access. The transformer is built from its configuration only (the
weights come from the file); its tokenizer comes from the encoder's local folder or embedded
name for a run, and from the model file itself for an exported model.

Model files are data, never code: they are read with ``torch.load(weights_only=True)``
(:func:`bockparse.modelfile.load_tensors`), which only admits tensors and plain containers,
strings and numbers (anything else is refused with :class:`ModelError`), and the model they
describe is validated against the schema before anything is built. A model file holds the
scorer's weights (no optimiser state), and one JSON string with the vocabularies, the settings
(the model spec among them) and the run's metadata; the transformer's configuration and
tokenizer files travel as byte tensors. Version 1 files (whose settings held the Hydra nodes)
are read through the same closed lookup; version 1 and 2 files (and run folders written
before ``model.context``) through :func:`bockparse.modelfile.nested_params` and
:func:`~bockparse.modelfile.current_state`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from .. import rundir
from ..data.subwords import WordPieces
from ..data.vocab import Vocabs
from ..hardware import AUTO, AUTOCAST_DTYPES
from ..modelfile import (
    ModelError,
    build_scorer,
    build_transformer,
    current_state,
    load_tensors,
    spec_from_config,
)
from .settings import RunSettings, checked_settings, run_settings

FORMAT = "bockparse-model"
FORMAT_VERSION = 3  # 3: the spec's params.context; 2: the spec flat; 1: Hydra nodes (all read)


class Loaded(NamedTuple):
    """A model read from a file: the scorer (weights loaded), the training vocabularies, the
    transformer's wordpieces (``None`` without one), the run's settings and metadata."""

    scorer: nn.Module
    vocabs: Vocabs
    wordpieces: WordPieces | None
    settings: RunSettings
    metadata: dict[str, Any]


def load(path: str | os.PathLike) -> Loaded:
    """Load a run folder, one of its checkpoints, or an exported model file (module doc).

    Raises:
        ModelError: the path is none of these, or the file is refused.
        DataError: the saved vocabularies are unusable.
    """
    path = Path(path)
    if path.is_dir():
        if not rundir.is_run_dir(path):
            raise ModelError(f"{path}: not a run folder (no {rundir.CONFIG})")
        return _load_checkpoint(path / rundir.BEST, path)
    content = load_tensors(path)
    if content.get("format") == FORMAT:
        return _load_exported(path, content)
    if "state_dict" in content:
        try:
            run_dir = rundir.run_dir_of(path)
        except FileNotFoundError as e:
            raise ModelError(str(e)) from None
        return _load_checkpoint(path, run_dir, content)
    raise ModelError(f"{path}: neither a bockparse model file nor a Lightning checkpoint")


def _files_from_tensors(files: Mapping[str, torch.Tensor], folder: Path) -> None:
    for name, data in files.items():
        if Path(name).name != name:
            raise ModelError(f"encoder file name {name!r} is not a plain file name")
        (folder / name).write_bytes(data.numpy().tobytes())


def _tensors_from_folder(folder: Path) -> dict[str, torch.Tensor]:
    return {
        p.name: torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8)
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _transformer_from_files(folder: Path) -> nn.Module:
    from transformers import AutoConfig, AutoModel

    from ..model.encoder import without_pooler

    return without_pooler(AutoModel.from_config(AutoConfig.from_pretrained(folder)))


def _vocabs_of_checkpoint(path: Path, checkpoint: Mapping[str, Any]) -> Vocabs:
    """The vocabularies a Lightning checkpoint carries (the data module's state)."""
    for value in checkpoint.values():
        if isinstance(value, dict) and isinstance(value.get("vocabs"), dict):
            return Vocabs.from_dict(value["vocabs"])
    raise ModelError(f"{path}: the checkpoint carries no vocabularies (not a bockparse run?)")


def _scorer_state(path: Path, state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The scorer's weights from a LightningModule state dict (keys ``scorer.*``)."""
    prefix = "scorer."
    state = {k[len(prefix) :]: v for k, v in state_dict.items() if k.startswith(prefix)}
    if not state:
        raise ModelError(f"{path}: the checkpoint holds no scorer weights")
    return state


def _run_precision(run_dir: Path) -> str:
    """The precision a run with ``trainer.precision: auto`` used (its ``environment.json``);
    ``auto`` for a run without one (stopped before training): the parser resolves it."""
    path = run_dir / rundir.ENVIRONMENT
    try:
        precision = json.loads(path.read_text(encoding="utf-8"))["precision"]
    except FileNotFoundError:
        return AUTO
    except (ValueError, KeyError, TypeError) as e:
        raise ModelError(f"{path}: damaged ({e!r}); it should name the run's precision") from None
    if precision not in (*AUTOCAST_DTYPES, "32-true", "32"):
        raise ModelError(f"{path}: unknown precision {precision!r}")
    return str(precision)


def _load_checkpoint(path: Path, run_dir: Path, content: dict[str, Any] | None = None) -> Loaded:
    """A run's checkpoint, with the run's settings, vocabularies and metadata."""
    from omegaconf import OmegaConf

    from ..model.encoder import load_encoder_tokenizer

    if content is None:
        content = load_tensors(path)
    config = run_dir / rundir.CONFIG
    try:
        settings = run_settings(OmegaConf.load(config), str(config))
    except ModelError:
        raise
    except Exception as e:  # a damaged YAML file: OmegaConf/yaml raise many types
        raise ModelError(f"{config}: not a readable run config ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''})") from None  # fmt: skip
    if settings.precision == AUTO:
        settings = replace(settings, precision=_run_precision(run_dir))
    vocabs = _vocabs_of_checkpoint(path, content)
    wordpieces = transformer = None
    encoder = settings.model["encoder"]
    if encoder is not None:
        tokenizer = load_encoder_tokenizer(encoder["tokenizer"], local_files_only=True)
        wordpieces = WordPieces(tokenizer, encoder["max_length"])
        transformer = build_transformer(encoder)
    metadata = {
        "condition": settings.condition,
        "decoder": settings.decoder,
        "seed": settings.seed,
        "experiment": settings.experiment,
        "checkpoint": path.name,
        "step": content.get("global_step"),
    }
    metrics = run_dir / rundir.METRICS
    if metrics.is_file():
        metadata["metrics"] = rundir.read_json(metrics)
    scorer = build_scorer(settings.model, vocabs, transformer)
    _load_weights(path, scorer, settings.model["kind"], _scorer_state(path, content["state_dict"]))
    return Loaded(scorer, vocabs, wordpieces, settings, metadata)


def _load_exported(path: Path, content: dict[str, Any]) -> Loaded:
    """A model file of :func:`save` (format version 1, 2 or 3)."""
    from transformers import AutoTokenizer

    version = content.get("version")
    if version not in range(1, FORMAT_VERSION + 1):
        raise ModelError(
            f"{path}: model file version {version!r}; this bockparse reads versions 1 to "
            f"{FORMAT_VERSION}"
        )
    try:
        meta = json.loads(content["config"])
        values = dict(meta["settings"])
        metadata = meta["metadata"]
        if version == 1:  # the Hydra nodes, through the same closed lookup
            encoder = values.pop("encoder")
            values["model"] = spec_from_config(values["model"], encoder, str(path))
        settings = checked_settings(values, str(path))
        vocabs = Vocabs.from_dict(meta["vocabs"])
        state = content["state_dict"]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ModelError(f"{path}: damaged model file ({e!r})") from None
    if not isinstance(metadata, dict) or not isinstance(state, dict):
        raise ModelError(f"{path}: damaged model file (metadata or weights not a mapping)")
    wordpieces = transformer = None
    encoder = settings.model["encoder"]
    if encoder is not None:
        with tempfile.TemporaryDirectory(prefix="bockparse-encoder-") as tmp:
            _files_from_tensors(content.get("encoder_files", {}), Path(tmp))
            tokenizer = AutoTokenizer.from_pretrained(tmp, local_files_only=True)
            transformer = _transformer_from_files(Path(tmp))
        wordpieces = WordPieces(tokenizer, encoder["max_length"])
    scorer = build_scorer(settings.model, vocabs, transformer)
    _load_weights(path, scorer, settings.model["kind"], state)
    return Loaded(scorer, vocabs, wordpieces, settings, metadata)


def _load_weights(
    path: Path, scorer: nn.Module, kind: str, state: Mapping[str, torch.Tensor]
) -> None:
    try:
        scorer.load_state_dict(current_state(kind, state))
    except RuntimeError as e:
        raise ModelError(
            f"{path}: the weights do not fit the model its config describes ({e})"
        ) from None


def save(path: str | os.PathLike, model: Loaded) -> int:
    """Write the model file (``bockparse-export``), atomically.

    It holds the scorer's weights, the vocabularies, the settings and the metadata, and the
    transformer's configuration and tokenizer files (so that it loads anywhere, offline); no
    optimiser state. It loads with ``torch.load(weights_only=True)``.

    Returns:
        The bytes written.
    """
    meta = {
        "settings": asdict(model.settings),
        "vocabs": model.vocabs.to_dict(),
        "metadata": model.metadata,
    }
    content: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "config": json.dumps(meta, ensure_ascii=False),
        "state_dict": {k: v.detach().cpu() for k, v in model.scorer.state_dict().items()},
    }
    if model.wordpieces is not None:
        with tempfile.TemporaryDirectory(prefix="bockparse-encoder-") as tmp:
            model.wordpieces.tokenizer.save_pretrained(tmp)
            model.scorer.encoder.transformer.config.save_pretrained(tmp)
            content["encoder_files"] = _tensors_from_folder(Path(tmp))
    target = Path(path)
    with rundir.atomic_path(target) as tmp:
        torch.save(content, tmp)
    return target.stat().st_size
