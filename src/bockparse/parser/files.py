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
describe is validated against the schema, and its weights against the file's
(:func:`bockparse.modelfile.build_checked`), before anything is built. The embedded encoder
files are limited to :data:`ENCODER_FILES` and loaded without custom code or hub access
(:func:`bockparse.untrusted.pretrained`). A run folder's files are read as they are:
through :class:`bockparse.rundir.RunDir`: never through a symbolic link, its config as plain
data (no resolver runs, nothing from the environment is read).

A model file holds the scorer's weights (no optimiser state), and one JSON string with the
vocabularies, the settings (the model spec among them) and the run's metadata; the
transformer's configuration and tokenizer files travel as byte tensors. Files of versions 1
and 2, and the weights of runs saved before ``model.context``, are read in the current layout
(:func:`bockparse.compat.current_model_file`, :func:`~bockparse.compat.current_state`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from .. import compat, rundir
from ..data.conllu import DataError
from ..data.subwords import WordPieces
from ..data.vocab import Vocabs
from ..hardware import AUTO
from ..modelfile import (
    ModelError,
    UnsafeFileError,
    build_checked,
    build_transformer,
    check_tensors,
    load_tensors,
    spec_from_config,
)
from .settings import RunSettings, checked_settings, run_settings, with_precision

FORMAT = "bockparse-model"
FORMAT_VERSION = 3  # 3: the spec's params.context (1 and 2 read: bockparse.compat)
CONTENT_KEYS = frozenset({"format", "version", "config", "state_dict", "encoder_files"})
# The transformer files a model file may carry: its configuration and the tokenizer files
# transformers writes (weights travel in state_dict); no code, nothing else.
ENCODER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json", "added_tokens.json", "vocab.txt", "vocab.json",
                 "merges.txt", "spiece.model", "sentencepiece.bpe.model")  # fmt: skip
REQUIRED_ENCODER_FILES = ("config.json", "tokenizer.json")
MAX_ENCODER_FILE_BYTES = 64 * 2**20  # a multilingual tokenizer.json is ~17 MB


class Loaded(NamedTuple):
    """A model read from a file: the scorer (weights loaded), the training vocabularies, the
    transformer's wordpieces (``None`` without one), the run's settings and metadata."""

    scorer: nn.Module
    vocabs: Vocabs
    wordpieces: WordPieces | None
    settings: RunSettings
    metadata: dict[str, Any]


def load(path: str | os.PathLike) -> Loaded:
    """Load a run folder, one of its checkpoints, or an exported model file (module doc): read
    as data (:class:`Stored`), then its tokenizer (probed: it must tokenize
    :data:`PROBE_WORDS`) and the scorer its settings describe with the weights of its file
    (:func:`bockparse.modelfile.build_checked`).

    Raises:
        ModelError: the path is none of these, or the file is refused (its vocabularies
            unusable among them).
    """
    stored = _read(Path(path))
    source, settings = stored.path, stored.settings
    wordpieces = transformer = None
    if stored.encoder is not None:
        tokenizer, transformer = stored.encoder()
        try:  # its settings come from a file: a value transformers accepts at loading may
            wordpieces = WordPieces(tokenizer, settings.model["encoder"]["max_length"])
            wordpieces.pieces(PROBE_WORDS)  # break tokenization only later
        except Exception as e:  # transformers fails on odd settings in many ways
            first = str(e).splitlines()[0] if str(e) else ""
            raise ModelError(f"{source}: the tokenizer cannot tokenize ({type(e).__name__}: "
                             f"{first[:200]})") from None  # fmt: skip
    scorer = build_checked(settings.model, stored.vocabs, transformer, stored.state, str(source))
    return Loaded(scorer, stored.vocabs, wordpieces, settings, stored.metadata)


# Words a loaded tokenizer must turn into pieces before it is used (cased, accented, digits,
# punctuation, a CJK character).
PROBE_WORDS = ["Probe", "naïve", "1,000", "--", "中"]


class Stored(NamedTuple):
    """A model as a run's checkpoint or a model file holds it, read as data (nothing built).

    Attributes:
        path: the file of the weights (named in messages).
        settings: the run's settings, checked (the spec validated).
        vocabs: the training vocabularies.
        state: the scorer's weights (in the current module layout; checked when built).
        encoder: makes the transformer's tokenizer and its skeleton's builder (from the encoder
            the run's config names, offline, or from the model file's encoder files); ``None``
            without a transformer.
        metadata: the run's metadata.
    """

    path: Path
    settings: RunSettings
    vocabs: Vocabs
    state: Any
    encoder: Callable[[], tuple[Any, Callable[[], nn.Module]]] | None
    metadata: dict[str, Any]


def _read(path: Path) -> Stored:
    """A run folder (its ``best.ckpt``), one of its checkpoints, or a model file
    (:func:`_model_file`), read as data.

    The file is loaded once (:func:`bockparse.modelfile.load_tensors`). A run's files are read
    through :class:`bockparse.rundir.RunDir` (never through a link): its settings (its
    precision the one it used: :attr:`bockparse.rundir.RunDir.precision`) and scores; its
    checkpoint holds the vocabularies (the data module's state) and the scorer's weights (the
    module's ``scorer.*``).
    """
    try:
        folder = rundir.run_dir_of(path)  # None: a model file, a checkpoint moved out of its run
        run = None if folder is None else rundir.RunDir(folder)
        if path.is_dir():
            if run is None:
                raise ModelError(f"{path}: not a run folder (no {rundir.CONFIG})")
            path = run.best
        content = load_tensors(path)
        if content.get("format") == FORMAT:
            return _model_file(path, content)
        if "state_dict" not in content:
            raise ModelError(f"{path}: neither a bockparse model file nor a Lightning checkpoint")
        if run is None:
            raise ModelError(f"{path}: not in a run folder's {rundir.CHECKPOINTS}/; give the run "
                             "folder, or a model file from bockparse-export")  # fmt: skip
        config = run.path / rundir.CONFIG
        cfg, metrics = run.config(), run.metrics()
        settings = run_settings(cfg, str(config))
        if settings.precision == AUTO:  # saved before training wrote the one it resolved
            settings = with_precision(settings, run.precision, str(config))
        vocabs = next((value["vocabs"] for value in content.values() if isinstance(value, dict)
                       and isinstance(value.get("vocabs"), dict)), None)  # fmt: skip
        if vocabs is None:
            raise ModelError(f"{path}: the checkpoint carries no vocabularies (not a "
                             "bockparse run?)")  # fmt: skip
        module = check_tensors(content["state_dict"], f"{path}: state_dict")
        state = {k.removeprefix("scorer."): v for k, v in module.items()
                 if k.startswith("scorer.")}  # fmt: skip
        if not state:
            raise ModelError(f"{path}: the checkpoint holds no scorer weights")
        state = compat.current_state(settings.model["kind"], state)
        metadata = {
            "condition": settings.condition,
            "decoder": settings.decoder,
            "seed": settings.seed,
            "experiment": settings.experiment,
            "checkpoint": path.name,
            "step": content.get("global_step"),
            **({} if metrics is None else {"metrics": metrics}),
        }
        encoder = settings.model["encoder"]
        encoder = encoder and partial(_named_encoder, config, encoder)
        return Stored(path, settings, Vocabs.from_dict(vocabs), state, encoder, metadata)
    except rundir.LinkRefused as e:
        raise UnsafeFileError(str(e)) from None
    except (rundir.RunFileError, FileNotFoundError) as e:  # (no saved config)
        raise ModelError(str(e)) from None
    except ModelError:  # (a DataError) as it is
        raise
    except DataError as e:  # the saved vocabularies are unusable
        raise ModelError(f"{path}: {e}") from None


def _named_encoder(config: Path, encoder: Mapping[str, Any]) -> tuple[Any, Callable[[], nn.Module]]:
    """The tokenizer a run's config (``config``) names for its ``encoder`` spec, offline, and
    the transformer skeleton's builder (:func:`bockparse.modelfile.build_transformer`)."""
    from transformers import AutoTokenizer

    from ..untrusted import pretrained

    try:
        tokenizer = pretrained(AutoTokenizer, encoder["tokenizer"], True)
    except OSError as e:  # the encoder the run's config names is not here
        raise ModelError(f"{config}: {e}") from None
    return tokenizer, lambda: build_transformer(encoder)


def _embedded_encoder(path: Path, files: Any) -> tuple[Any, Callable[[], nn.Module]]:
    """The tokenizer and the transformer skeleton's builder of a model file's encoder
    ``files``, written to a temporary folder and read from there."""
    with tempfile.TemporaryDirectory(prefix="bockparse-encoder-") as tmp:
        _files_from_tensors(path, files, Path(tmp))
        return _encoder_from_files(path, Path(tmp))


def _files_from_tensors(path: Path, files: Any, folder: Path) -> None:
    """Write a model file's encoder files into ``folder``: :data:`ENCODER_FILES` only, each
    a byte tensor of at most :data:`MAX_ENCODER_FILE_BYTES`, the required ones present."""
    files = check_tensors(files, f"{path}: encoder files", dtype=torch.uint8, dims=1)
    for name, data in files.items():
        if name not in ENCODER_FILES:
            raise UnsafeFileError(f"{path}: refused: encoder file {name[:80]!r} (a model file "
                                  f"carries only {', '.join(ENCODER_FILES)})")  # fmt: skip
        if data.numel() > MAX_ENCODER_FILE_BYTES:
            raise ModelError(f"{path}: encoder file {name!r} is larger than "
                             f"{MAX_ENCODER_FILE_BYTES:,} bytes")  # fmt: skip
    missing = [name for name in REQUIRED_ENCODER_FILES if name not in files]
    if missing:
        raise ModelError(f"{path}: the model has an encoder but the file carries no "
                         f"{' or '.join(missing)}")  # fmt: skip
    for name, data in files.items():
        (folder / name).write_bytes(data.numpy().tobytes())


def _tensors_from_folder(folder: Path) -> dict[str, torch.Tensor]:
    return {
        p.name: torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8)
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _encoder_from_files(path: Path, folder: Path) -> tuple[Any, Callable[[], nn.Module]]:
    """The tokenizer and the transformer skeleton's builder of a model file's encoder files
    (written to ``folder``), loaded offline without custom code; the tokenizer's pieces must
    fit the transformer's vocabulary."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from ..model.encoder import without_pooler
    from ..untrusted import pretrained

    try:
        config = pretrained(AutoConfig, str(folder))
        tokenizer = pretrained(AutoTokenizer, str(folder))
    except ModelError as e:  # names the temporary folder: name the model file
        raise type(e)(
            f"{path}: encoder files: {str(e).replace(str(folder) + os.sep, '')}"
        ) from None
    except OSError as e:
        raise ModelError(f"{path}: damaged encoder files ({str(e).splitlines()[0]})") from None
    if len(tokenizer) > config.vocab_size:
        raise ModelError(f"{path}: the tokenizer has {len(tokenizer):,} pieces, more than the "
                         f"transformer's vocabulary ({config.vocab_size:,})")  # fmt: skip
    return tokenizer, lambda: without_pooler(AutoModel.from_config(config))


def _model_file(path: Path, content: dict[str, Any]) -> Stored:
    """A model file of :func:`save` (format version 1, 2 or 3: earlier ones read in the current
    layout by :func:`bockparse.compat.current_model_file`), its vocabularies read and its
    settings checked."""
    version = content.get("version")
    if version not in range(1, FORMAT_VERSION + 1) or isinstance(version, bool):
        raise ModelError(
            f"{path}: model file version {repr(version)[:40]}; this bockparse reads versions 1 "
            f"to {FORMAT_VERSION}"
        )
    unknown = set(content) - CONTENT_KEYS
    if unknown:
        raise ModelError(f"{path}: unknown keys in the model file: "
                         f"{repr(sorted(map(str, unknown)))[:200]}")  # fmt: skip
    try:
        meta = json.loads(content["config"])
    except KeyError:
        raise ModelError(f"{path}: damaged model file (no config)") from None
    except (TypeError, ValueError, RecursionError) as e:
        raise ModelError(f"{path}: damaged model file (its config is not JSON: "
                         f"{type(e).__name__})") from None  # fmt: skip
    if not isinstance(meta, dict) or set(meta) != {"settings", "vocabs", "metadata"}:
        raise ModelError(f"{path}: damaged model file (its config must hold settings, vocabs "
                         "and metadata)")  # fmt: skip
    values, metadata = meta["settings"], meta["metadata"]
    if not isinstance(values, dict) or not isinstance(metadata, dict):
        raise ModelError(f"{path}: damaged model file (settings or metadata not a mapping)")
    if "state_dict" not in content:
        raise ModelError(f"{path}: damaged model file (no weights)")
    vocabs = Vocabs.from_dict(meta["vocabs"])
    values, state = compat.current_model_file(
        values, content["state_dict"], version, str(path), spec_from_config
    )
    settings = checked_settings(values, str(path))
    encoder = None
    if settings.model["encoder"] is not None:
        if "encoder_files" not in content:
            raise ModelError(f"{path}: the model has an encoder but the file carries no "
                             "encoder files")  # fmt: skip
        encoder = partial(_embedded_encoder, path, content["encoder_files"])
    return Stored(path, settings, vocabs, state, encoder, metadata)


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
