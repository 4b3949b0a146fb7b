"""Model files and checkpoints as data, never code: safe loading and the closed model schema.

**Loading.** :func:`load_tensors` is the project's one ``torch.load``: ``weights_only=True``, so
a file holding any Python object but tensors and plain containers, strings and numbers is
refused (:class:`ModelError` naming the file), never run; random or damaged bytes are reported
as "not a model file".

**The model schema** (:data:`SCHEMA_VERSION`). A scorer is described by plain data only::

    {"kind": "biaffine" | "transition",          # a class of this project, from MODEL_KINDS
     "params": {name: bool | int | float | str | None | list, ...,  # its keyword arguments
                "context": {name: ..., ...}},   # the Contextualizer's (inputs and BiLSTM)
     "encoder": None | {
         "transformer": {"kind": "pretrained", "name_or_path": str}
                      | {"kind": "random_bert", "params": {...}},   # random_bert's arguments
         "tokenizer": str,                        # its name or local folder (offline)
         "max_length": int,                       # pieces per window
         "params": {...}}}                        # TransformerEncoder's arguments

:func:`validate_spec` checks every kind against the fixed registries and every parameter name
against the signature of the class or function it is passed to, and every value's type, before
anything is built; :func:`build_scorer` then calls those classes directly. Specs of schema
version 2 (the contextualiser's parameters beside the head's, before ``model.context``) are
read through :func:`nested_params`, and their weights through :func:`current_state`. Nothing
read from a file reaches ``hydra.utils.instantiate`` or an import by name.
:func:`spec_from_config` turns a run's composed config (``.hydra/config.yaml``, whose
``_target_`` strings are looked up in :data:`TARGETS`, never imported) into a spec.
"""

from __future__ import annotations

import inspect
import os
import pickle
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .data.conllu import DataError
from .heads import HEADS, head_classes

SCHEMA_VERSION = 3  # 3: params.context (model.context); 2: one flat params mapping
PLAIN = (bool, int, float, str, type(None))
# Hydra targets of the project's own conf/ tree -> schema kinds (looked up, never imported).
TARGETS = {
    **{path: kind for kind, path in HEADS.items()},
    "bockparse.model.scorer.BiaffineScorer": "biaffine",  # the heads' paths before heads/
    "bockparse.transition.TransitionParser": "transition",
    "bockparse.transition.parser.TransitionParser": "transition",
    "bockparse.model.encoder.random_bert": "random_bert",
    "bockparse.model.encoder.load_pretrained": "pretrained",
    "bockparse.model.encoder.TransformerEncoder": "transformer_encoder",
    "bockparse.model.encoder.load_encoder_tokenizer": "tokenizer",
}
# Keys of a Hydra node that are Hydra's, not the callee's.
HYDRA_KEYS = frozenset({"_target_", "_partial_", "_args_", "_recursive_", "_convert_"})
CONTEXT = "context"  # the head's parameter (and the config node) holding the Contextualizer's
# The submodules the Contextualizer builds (top-level in a version-2 biaffine state dict).
CONTEXT_MODULES = ("encoder.", "word_embedding.", "upos_embedding.", "xpos_embedding.",
                   "feats_embedding.", "char_model.", "lstm.")  # fmt: skip


class ModelError(DataError):
    """A model path or file is unusable (missing, not a model, or refused as unsafe)."""


class UnsafeFileError(ModelError):
    """A file refused because loading it could run code (a pickle payload)."""


def model_kinds() -> dict[str, type[nn.Module]]:
    """The scorer classes a model file may name (imported here, never from a file)."""
    return head_classes()


def load_tensors(path: str | os.PathLike) -> dict[str, Any]:
    """A checkpoint or model file's content, loaded without running code from it.

    Raises:
        ModelError: the file is missing, not a model file (random, damaged or truncated
            bytes), not a dict, or holds Python objects other than tensors and plain
            containers, strings and numbers (refused: loading them could run code).
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: not found")
    if not zipfile.is_zipfile(path):  # torch.save writes zip archives
        raise ModelError(f"{path}: not a model file (not a torch archive)")
    try:
        content = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "GLOBAL" not in str(e):  # not a foreign object: damaged bytes
            raise ModelError(f"{path}: not a model file (damaged)") from None
        raise UnsafeFileError(
            f"{path}: refused: the file holds Python objects other than tensors and plain "
            "containers, and loading them could run code from it (weights_only). Export trusted "
            "runs with bockparse-export."
        ) from None
    except Exception as e:  # torch raises many types on files it cannot read; none runs code
        raise ModelError(f"{path}: not a bockparse model or checkpoint ({e!r})") from None
    if not isinstance(content, dict):
        kind = type(content).__name__
        raise ModelError(f"{path}: not a bockparse model or checkpoint (a {kind})")
    return content


# -- the schema ------------------------------------------------------------------------------


def context_params() -> frozenset[str]:
    """The Contextualizer's own parameters (``model.context.*``; beside the head's in schema
    version 2)."""
    from .model.context import Contextualizer

    return frozenset(inspect.signature(Contextualizer).parameters) - {"vocabs", "encoder"}


def nested_params(params: Any) -> Any:
    """A head's parameters with the contextualiser's under ``context``: schema version 2's flat
    mapping (and a run config composed before ``model.context``) moved there; anything else
    (already nested, or not a mapping) as is, for :func:`validate_spec` to judge."""
    if not isinstance(params, Mapping) or CONTEXT in params:
        return params
    own = context_params()
    flat = {k: v for k, v in params.items() if k not in own}
    return {**flat, CONTEXT: {k: v for k, v in params.items() if k in own}}


def current_state(kind: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """A scorer's weights in the current module layout: a biaffine scorer saved before it
    composed its contextualiser (schema version 2: ``lstm.*`` instead of ``context.lstm.*``)
    gets the ``context.`` prefix on the contextualiser's modules; the same tensors."""
    state = dict(state)
    if kind != "biaffine" or any(k.startswith(CONTEXT + ".") for k in state):
        return state
    return {f"{CONTEXT}.{k}" if k.startswith(CONTEXT_MODULES) else k: v for k, v in state.items()}


def _plain(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, PLAIN) and not (isinstance(value, float) and value != value)


def _check_params(
    params: Any,
    callee: Callable[..., Any],
    skip: tuple[str, ...],
    where: str,
    nested: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``params`` if it is a dict of plain values whose names ``callee`` takes (but ``skip``);
    the ``nested`` names hold a mapping instead (checked by the caller)."""
    if not isinstance(params, Mapping):
        raise ModelError(f"{where}: parameters must be a mapping, got {type(params).__name__}")
    accepted = set(inspect.signature(callee).parameters) - set(skip)
    for name, value in params.items():
        if name in nested:
            if not isinstance(value, Mapping):
                raise ModelError(f"{where}: parameter {name!r} must be a mapping")
            continue
        if name not in accepted:
            raise ModelError(f"{where}: unknown parameter {name!r} (known: {sorted(accepted)})")
        if not _plain(value):
            kind = type(value).__name__
            raise ModelError(f"{where}: parameter {name!r} is a {kind}, not a plain value "
                             "(bool, int, float, str, null or a list of them)")  # fmt: skip
    return dict(params)


def _field(node: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in node:
        raise ModelError(f"{where}: no {key!r}")
    value = node[key]
    if (isinstance(value, bool) and kind is int) or not isinstance(value, kind):
        raise ModelError(f"{where}: {key!r} must be a {getattr(kind, '__name__', kind)}")
    return value


def validate_spec(spec: Any, source: str) -> dict[str, Any]:
    """``spec`` if it follows the schema (module doc); raises :class:`ModelError` naming
    ``source`` and the first problem otherwise. Nothing is built or imported by name."""
    from .model.context import Contextualizer
    from .model.encoder import TransformerEncoder, random_bert

    where = f"{source}: model"
    if not isinstance(spec, Mapping):
        raise ModelError(f"{where}: must be a mapping")
    unknown = set(spec) - {"kind", "params", "encoder"}
    if unknown:
        raise ModelError(f"{where}: unknown keys {sorted(unknown)}")
    spec = {**spec, "params": nested_params(spec.get("params"))}
    kinds = model_kinds()
    kind = spec.get("kind")
    if kind not in kinds:
        raise ModelError(f"{where}: unknown kind {kind!r} (known: {sorted(kinds)})")
    params = _check_params(
        spec.get("params"), kinds[kind], ("self", "vocabs", "encoder"), where, nested=(CONTEXT,)
    )
    if CONTEXT not in params:
        raise ModelError(f"{where}: no {CONTEXT!r} parameters")
    _check_params(
        params[CONTEXT], Contextualizer, ("self", "vocabs", "encoder"), f"{where} {CONTEXT}"
    )
    spec = {**spec, "params": params}
    encoder = spec.get("encoder")
    if encoder is None:
        return dict(spec)
    where = f"{source}: encoder"
    if not isinstance(encoder, Mapping):
        raise ModelError(f"{where}: must be a mapping or null")
    unknown = set(encoder) - {"transformer", "tokenizer", "max_length", "params"}
    if unknown:
        raise ModelError(f"{where}: unknown keys {sorted(unknown)}")
    _field(encoder, "tokenizer", str, where)
    _field(encoder, "max_length", int, where)
    _check_params(encoder.get("params", {}), TransformerEncoder, ("self", "transformer"), where)
    transformer = _field(encoder, "transformer", Mapping, where)
    where = f"{source}: encoder transformer"
    if transformer.get("kind") == "pretrained":
        if set(transformer) != {"kind", "name_or_path"}:
            raise ModelError(f"{where}: a pretrained transformer has kind and name_or_path only")
        _field(transformer, "name_or_path", str, where)
    elif transformer.get("kind") == "random_bert":
        if set(transformer) != {"kind", "params"}:
            raise ModelError(f"{where}: a random_bert transformer has kind and params only")
        _check_params(transformer["params"], random_bert, (), where)
    else:
        raise ModelError(f"{where}: unknown kind {transformer.get('kind')!r} "
                         "(known: pretrained, random_bert)")  # fmt: skip
    return dict(spec)


def _kind_of(node: Mapping[str, Any], expected: set[str], where: str) -> str:
    target = str(node.get("_target_", ""))
    kind = TARGETS.get(target)
    if kind not in expected:
        raise ModelError(f"{where}: unknown class {target!r}; a bockparse run names one of "
                         f"{sorted(t for t, k in TARGETS.items() if k in expected)}")  # fmt: skip
    return kind


def _arguments(node: Mapping[str, Any], *drop: str) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in HYDRA_KEYS and k not in drop}


def spec_from_config(
    model: Mapping[str, Any], encoder: Mapping[str, Any] | None, source: str
) -> dict[str, Any]:
    """The schema's spec of a run's composed ``model`` and ``encoder`` nodes (resolved plain
    containers), validated; ``encoder`` ``None`` or without a ``model`` node: no transformer.

    Raises:
        ModelError: a class outside :data:`TARGETS`, or a spec :func:`validate_spec` refuses.
    """
    spec: dict[str, Any] = {
        "kind": _kind_of(model, set(HEADS), f"{source}: model"),
        "params": _arguments(model),
        "encoder": None,
    }
    if encoder is not None and encoder.get("model"):
        where = f"{source}: encoder"
        node = encoder["model"]
        _kind_of(node, {"transformer_encoder"}, where)
        tokenizer = encoder.get("tokenizer") or {}
        _kind_of(tokenizer, {"tokenizer"}, f"{where} tokenizer")
        transformer = node.get("transformer") or {}
        kind = _kind_of(transformer, {"pretrained", "random_bert"}, f"{where} transformer")
        spec["encoder"] = {
            "transformer": (
                {"kind": kind, "name_or_path": transformer.get("name_or_path")}
                if kind == "pretrained"
                else {"kind": kind, "params": _arguments(transformer)}
            ),
            "tokenizer": tokenizer.get("name_or_path"),
            "max_length": encoder.get("max_length"),
            "params": _arguments(node, "transformer"),
        }
    return validate_spec(spec, source)


def build_transformer(spec: Mapping[str, Any]) -> nn.Module:
    """The transformer skeleton of an encoder spec (configuration only; the weights come from
    the run's file), offline.

    Raises:
        ModelError: the pretrained model's configuration cannot be read offline.
    """
    from transformers import AutoConfig, AutoModel

    from .model.encoder import random_bert, resolve_encoder_path, without_pooler

    transformer = spec["transformer"]
    if transformer["kind"] == "random_bert":
        return random_bert(**transformer["params"])
    source = resolve_encoder_path(transformer["name_or_path"])
    try:
        config = AutoConfig.from_pretrained(source, local_files_only=True)
    except (OSError, ValueError) as e:
        raise ModelError(
            f"cannot read the configuration of encoder {transformer['name_or_path']!r} "
            f"({source}) offline; load an exported model file instead ({e})"
        ) from None
    return without_pooler(AutoModel.from_config(config))


def build_scorer(spec: Mapping[str, Any], vocabs: Any, transformer: nn.Module | None) -> nn.Module:
    """The scorer a spec validated by :func:`validate_spec` describes, with ``vocabs`` and
    ``transformer`` (the encoder's, or ``None`` without one)."""
    from .model.encoder import TransformerEncoder

    encoder = None
    if transformer is not None:
        encoder = TransformerEncoder(transformer=transformer, **spec["encoder"].get("params", {}))
    return model_kinds()[spec["kind"]](vocabs=vocabs, encoder=encoder, **spec["params"])
