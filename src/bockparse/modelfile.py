"""Model files and checkpoints as data, never code: safe loading and the closed model schema.

**Loading.** :func:`load_tensors` is the project's one ``torch.load``: ``weights_only=True``, so
a file holding any Python object but tensors and plain containers, strings and numbers is
refused (:class:`ModelError` naming the file), never run; random or damaged bytes are reported
as "not a model file". Before it, the archive's table of contents is checked (every member
stored uncompressed, as ``torch.save`` writes it, so that no member inflates beyond the file's
own size; the pickle at most :data:`MAX_PICKLE_BYTES`), and after it every tensor
(:func:`check_tensors`: contiguous, within its storage). The small files of a run folder are
read by :class:`bockparse.rundir.RunDir`.

**The model schema** (:data:`SCHEMA_VERSION`). A scorer is described by plain data only::

    {"kind": "biaffine" | "transition",          # a class of this project, from MODEL_KINDS
     "params": {name: bool | int | float | str | None | list, ...,  # its keyword arguments
                "context": {name: ..., ...},    # the Contextualizer's (inputs and BiLSTM)
                "tagger": {name: ..., ...}},    # the Tagger's (model.tagger); absent: none
     "encoder": None | {
         "transformer": {"kind": "pretrained", "name_or_path": str}
                      | {"kind": "random_bert", "params": {...}},   # random_bert's arguments
         "tokenizer": str,                        # its name or local folder (offline)
         "max_length": int,                       # pieces per window
         "params": {...}}}                        # TransformerEncoder's arguments

:func:`validate_spec` checks every kind against the fixed registries, every parameter name
against the signature of the class or function it is passed to, and every value against its
stated type and range (:data:`PARAMETERS`, the one table of them, which training's config check
uses too), before anything is built; :func:`check_transformer_config` holds a transformer's
configuration (``config.json``) to the same sizes and refuses custom code (``auto_map``) and
attention kernels from the hub. :func:`build_checked` then builds the scorer on the ``meta``
device (no memory), compares its tensors with the file's (names, shapes, dtypes: the weights
the spec implies are the weights the file holds) and only then builds it for real, with the
project's classes called directly. Everything here is the current layout: older specs,
configs and weights are moved to it where they are read (:mod:`bockparse.compat`). Nothing
read from a file reaches ``hydra.utils.instantiate`` or an import by name.
:func:`spec_from_config` turns a run's composed config (``.hydra/config.yaml``, whose
``_target_`` strings are looked up in :data:`TARGETS`, never imported) into a spec.
"""

from __future__ import annotations

import inspect
import os
import pickle
import stat
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .heads import HEADS, head_classes
from .heads.transition.systems import SYSTEMS
from .model.tagger import TRAIN_TAGS
from .rundir import shown
from .untrusted import (
    INTERMEDIATE,
    LAYERS,
    PIECES,
    RATE,
    WIDTH,
    Choice,
    Flag,
    Int,
    ModelError,
    Name,
    Real,
    UnsafeFileError,
)

SCHEMA_VERSION = 3  # 3: params.context (model.context); 2: one flat params mapping
# Hydra targets of the project's own conf/ tree -> schema kinds (looked up, never imported).
TARGETS = {
    **{path: kind for kind, path in HEADS.items()},
    "bockparse.model.encoder.random_bert": "random_bert",
    "bockparse.model.encoder.load_pretrained": "pretrained",
    "bockparse.model.encoder.TransformerEncoder": "transformer_encoder",
    "bockparse.model.encoder.load_encoder_tokenizer": "tokenizer",
}
# Keys of a Hydra node that are Hydra's, not the callee's.
HYDRA_KEYS = frozenset({"_target_", "_partial_", "_args_", "_recursive_", "_convert_"})
CONTEXT = "context"  # the head's parameter (and the config node) holding the Contextualizer's
TAGGER = "tagger"  # the head's parameter (and the config node) holding the Tagger's, optional
# A torch archive's pickle (the containers around the tensors: a checkpoint's is ~100 KB).
MAX_PICKLE_BYTES = 256 * 2**20
MAX_MEMBERS = 1_000_000  # members of a torch archive (one per tensor storage)


def model_kinds() -> dict[str, type[nn.Module]]:
    """The scorer classes a model file may name (imported here, never from a file)."""
    return head_classes()


# -- reading files ----------------------------------------------------------------------------


def _check_archive(path: Path) -> None:
    """The torch archive's table of contents, before anything is unpacked: every member stored
    uncompressed (as ``torch.save`` writes them; a compressed member could inflate far beyond
    the file), their sizes consistent and within the file, the pickle bounded."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise ModelError(f"{path}: not a model file (damaged archive: {e})") from None
    if len(members) > MAX_MEMBERS:
        raise ModelError(f"{path}: not a model file ({len(members):,} archive members)")
    total = 0
    for member in members:
        name = member.filename
        if member.compress_type != zipfile.ZIP_STORED or member.file_size != member.compress_size:
            raise ModelError(f"{path}: refused: archive member {name!r} is compressed "
                             f"({member.file_size:,} bytes unpacked); torch.save stores its "
                             "members as they are")  # fmt: skip
        if name.endswith(".pkl") and member.file_size > MAX_PICKLE_BYTES:
            raise ModelError(f"{path}: refused: archive member {name!r} holds "
                             f"{member.file_size:,} bytes of containers (at most "
                             f"{MAX_PICKLE_BYTES:,})")  # fmt: skip
        total += member.file_size
    if total > path.stat().st_size:
        raise ModelError(f"{path}: not a model file (its members claim {total:,} bytes, more "
                         "than the file holds)")  # fmt: skip


def load_tensors(path: str | os.PathLike) -> dict[str, Any]:
    """A checkpoint or model file's content, loaded without running code from it.

    Raises:
        ModelError: the file is missing, not a regular file, not a model file (random, damaged,
            truncated or inflating bytes), not a dict, or holds Python objects other than
            tensors and plain containers, strings and numbers (refused: loading them could run
            code).
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError:
        raise ModelError(f"{path}: not found") from None
    if not stat.S_ISREG(mode):
        raise ModelError(f"{path}: not a regular file" if path.exists() else f"{path}: not found")
    if not zipfile.is_zipfile(path):  # torch.save writes zip archives
        raise ModelError(f"{path}: not a model file (not a torch archive)")
    _check_archive(path)
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
        raise ModelError(f"{path}: not a bockparse model or checkpoint ({shown(e)})") from None
    if not isinstance(content, dict):
        kind = type(content).__name__
        raise ModelError(f"{path}: not a bockparse model or checkpoint (a {kind})")
    return content


def check_tensors(
    tensors: Any, where: str, dtype: torch.dtype | None = None, dims: int | None = None
) -> dict[str, torch.Tensor]:
    """``tensors`` if it maps names to dense tensors laid out as ``torch.save`` writes them:
    contiguous (no stride-0 broadcast that would materialise far more than the file holds),
    within their storage; of ``dtype`` and ``dims`` dimensions where given.

    Raises:
        ModelError: naming ``where`` and the first tensor at fault.
    """
    if not isinstance(tensors, Mapping):
        raise ModelError(f"{where}: must map names to tensors, got a {type(tensors).__name__}")
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            raise ModelError(f"{where}: tensor name {shown(name)} is not a string")
        at = f"{where}: tensor {name!r}"
        if not isinstance(tensor, torch.Tensor):
            raise ModelError(f"{at} is a {type(tensor).__name__}, not a tensor")
        if tensor.layout != torch.strided or tensor.is_quantized:
            raise ModelError(f"{at} is not a dense tensor ({tensor.layout})")
        if not tensor.is_contiguous():
            raise ModelError(f"{at} is not contiguous (strides {tensor.stride()} for shape "
                             f"{tuple(tensor.shape)}); torch.save writes contiguous "
                             "tensors")  # fmt: skip
        needed = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
        if tensor.numel() and tensor.untyped_storage().nbytes() < needed:
            raise ModelError(f"{at} reaches beyond its storage")
        if dtype is not None and tensor.dtype != dtype:
            raise ModelError(f"{at} is {tensor.dtype}, not {dtype}")
        if dims is not None and tensor.dim() != dims:
            raise ModelError(f"{at} has {tensor.dim()} dimensions, not {dims}")
    return dict(tensors)


# -- the schema ------------------------------------------------------------------------------


# Every parameter a model file or a run config may give a scorer, a Contextualizer, a
# TransformerEncoder or random_bert (by name: the same name means the same thing in each), with
# its type and range. The one table of them: validate_spec checks model files and run folders
# with it, spec_from_config training's config before anything is built.
PARAMETERS: dict[str, Int | Real | Flag | Choice | Name] = {
    "use_words": Flag(), "use_chars": Flag(), "use_upos": Flag(), "use_xpos": Flag(),
    "use_feats": Flag(), "linearization": Flag(), "distance": Flag(), "projective_only": Flag(),
    "word_dim": WIDTH, "char_dim": WIDTH, "char_hidden": WIDTH, "tag_dim": WIDTH,
    "lstm_hidden": WIDTH, "arc_hidden": WIDTH, "rel_hidden": WIDTH, "aux_hidden": WIDTH,
    "lstm_layers": LAYERS, "word_dropout": RATE, "dropout": RATE,
    "biaffine_init_std": Real(0.0, 100.0),
    "system": Choice(tuple(SYSTEMS)),
    "stack_features": Int(0, 64), "buffer_features": Int(0, 64),
    # Tagger (model.tagger)
    "upos": Flag(), "xpos": Flag(), "feats": Flag(), "hidden": WIDTH,
    "loss_weight": Real(0.0, 1000.0), "train_tags": Choice(TRAIN_TAGS),
    # TransformerEncoder
    "layers": Int(1, LAYERS.high + 1), "pooling": Choice(("first", "mean")),
    "chunk_pieces": Int(1, 2**20), "max_padding": Real(1.0, 100.0),
    # random_bert (and the encoder's max_length)
    "tokenizer": Name(), "num_layers": LAYERS, "hidden_size": WIDTH, "num_heads": Int(1, 256),
    "intermediate_size": INTERMEDIATE, "max_length": PIECES,
}  # fmt: skip


def _check_params(
    params: Any,
    callee: Callable[..., Any],
    skip: tuple[str, ...],
    where: str,
    nested: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``params`` if it is a mapping of the parameters ``callee`` takes (but ``skip``), each
    within its :data:`PARAMETERS` rule, the required ones present; the ``nested`` names hold a
    mapping instead (checked by the caller)."""
    if not isinstance(params, Mapping):
        raise ModelError(f"{where}: parameters must be a mapping, got {type(params).__name__}")
    signature = inspect.signature(callee).parameters
    accepted = set(signature) - set(skip)
    for name, value in params.items():
        if name in nested:
            if not isinstance(value, Mapping):
                raise ModelError(f"{where}: parameter {name!r} must be a mapping")
            continue
        if name not in accepted:
            named = shown(name) if isinstance(name, str) else f"{shown(name)} (not a name)"
            raise ModelError(f"{where}: unknown parameter {named} (known: {sorted(accepted)})")
        problem = PARAMETERS[name].problem(value)
        if problem:
            raise ModelError(f"{where}: parameter {name!r} = {shown(value)} {problem}")
    required = [n for n in accepted if signature[n].default is inspect.Parameter.empty]
    missing = sorted(set(required) - set(params))
    if missing:
        raise ModelError(f"{where}: no parameter {missing[0]!r}")
    return dict(params)


def _field(node: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in node:
        raise ModelError(f"{where}: no {key!r}")
    value = node[key]
    if (isinstance(value, bool) and kind is int) or not isinstance(value, kind):
        raise ModelError(f"{where}: {key!r} must be a {getattr(kind, '__name__', kind)}")
    return value


def _rule(node: Mapping[str, Any], key: str, where: str) -> Any:
    """``node[key]`` within its :data:`PARAMETERS` rule."""
    if key not in node:
        raise ModelError(f"{where}: no {key!r}")
    problem = PARAMETERS[key].problem(node[key])
    if problem:
        raise ModelError(f"{where}: {key!r} = {shown(node[key])} {problem}")
    return node[key]


def validate_spec(spec: Any, source: str) -> dict[str, Any]:
    """``spec`` if it follows the schema (module doc), every value within its stated type and
    range (:data:`PARAMETERS`); raises :class:`ModelError` naming ``source`` and the first
    problem otherwise. Nothing is built or imported by name."""
    from .model.context import Contextualizer
    from .model.encoder import TransformerEncoder, random_bert
    from .model.tagger import Tagger

    where = f"{source}: model"
    if not isinstance(spec, Mapping):
        raise ModelError(f"{where}: must be a mapping")
    unknown = set(spec) - {"kind", "params", "encoder"}
    if unknown:
        raise ModelError(f"{where}: unknown keys {shown(sorted(map(str, unknown)))}")
    kinds = model_kinds()
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in kinds:
        raise ModelError(f"{where}: unknown kind {shown(kind)} (known: {sorted(kinds)})")
    params = spec.get("params")
    if isinstance(params, Mapping) and TAGGER in params and params[TAGGER] is None:
        params = {k: v for k, v in params.items() if k != TAGGER}  # null: no tagger
    params = _check_params(
        params, kinds[kind], ("self", "vocabs", "encoder"), where, nested=(CONTEXT, TAGGER)
    )
    if CONTEXT not in params:
        raise ModelError(f"{where}: no {CONTEXT!r} parameters")
    _check_params(
        params[CONTEXT], Contextualizer, ("self", "vocabs", "encoder"), f"{where} {CONTEXT}"
    )
    if TAGGER in params:
        skip = ("self", "vocabs", "width", "dropout")
        _check_params(params[TAGGER], Tagger, skip, f"{where} {TAGGER}")
    spec = {**spec, "params": params}
    encoder = spec.get("encoder")
    if encoder is None:
        return dict(spec)
    where = f"{source}: encoder"
    if not isinstance(encoder, Mapping):
        raise ModelError(f"{where}: must be a mapping or null")
    unknown = set(encoder) - {"transformer", "tokenizer", "max_length", "params"}
    if unknown:
        raise ModelError(f"{where}: unknown keys {shown(sorted(map(str, unknown)))}")
    _rule(encoder, "tokenizer", where)
    _rule(encoder, "max_length", where)
    _check_params(encoder.get("params", {}), TransformerEncoder, ("self", "transformer"), where)
    transformer = _field(encoder, "transformer", Mapping, where)
    where = f"{source}: encoder transformer"
    if transformer.get("kind") == "pretrained":
        if set(transformer) != {"kind", "name_or_path"}:
            raise ModelError(f"{where}: a pretrained transformer has kind and name_or_path only")
        if PARAMETERS["tokenizer"].problem(transformer["name_or_path"]):
            raise ModelError(f"{where}: 'name_or_path' = {shown(transformer['name_or_path'])} "
                             "must be a name or a folder (printable text)")  # fmt: skip
    elif transformer.get("kind") == "random_bert":
        if set(transformer) != {"kind", "params"}:
            raise ModelError(f"{where}: a random_bert transformer has kind and params only")
        _check_params(transformer["params"], random_bert, (), where)
    else:
        raise ModelError(f"{where}: unknown kind {shown(transformer.get('kind'))} "
                         "(known: pretrained, random_bert)")  # fmt: skip
    return dict(spec)


def _kind_of(node: Mapping[str, Any], expected: set[str], where: str) -> str:
    target = str(node.get("_target_", ""))
    kind = TARGETS.get(target)
    if kind not in expected:
        raise ModelError(f"{where}: unknown class {shown(target)}; a bockparse run names one of "
                         f"{sorted(t for t, k in TARGETS.items() if k in expected)}")  # fmt: skip
    return kind


def _arguments(node: Mapping[str, Any], *drop: str) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in HYDRA_KEYS and k not in drop}


def spec_from_config(
    model: Mapping[str, Any], encoder: Mapping[str, Any] | None, source: str
) -> dict[str, Any]:
    """The schema's spec of a run's composed ``model`` and ``encoder`` nodes (resolved plain
    containers in the current layout; what earlier runs wrote is moved to it by
    :func:`bockparse.compat.current_model`), validated; ``encoder`` ``None`` or without a
    ``model`` node: no transformer.

    Raises:
        ModelError: a node that is not a mapping, a class outside :data:`TARGETS`, or a spec
            :func:`validate_spec` refuses.
    """
    if not isinstance(model, Mapping):
        raise ModelError(f"{source}: model: must be a mapping")
    if encoder is not None and not isinstance(encoder, Mapping):
        raise ModelError(f"{source}: encoder: must be a mapping or null")
    spec: dict[str, Any] = {
        "kind": _kind_of(model, set(HEADS), f"{source}: model"),
        "params": _arguments(model),
        "encoder": None,
    }
    if encoder is not None and encoder.get("model"):
        where = f"{source}: encoder"
        node = encoder["model"]
        tokenizer = encoder.get("tokenizer") or {}
        transformer = node.get("transformer") if isinstance(node, Mapping) else None
        for name, value in (
            ("model", node),
            ("tokenizer", tokenizer),
            ("transformer", transformer or {}),
        ):
            if not isinstance(value, Mapping):
                raise ModelError(f"{where}: {name} must be a mapping")
        _kind_of(node, {"transformer_encoder"}, where)
        _kind_of(tokenizer, {"tokenizer"}, f"{where} tokenizer")
        transformer = transformer or {}
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
    the run's file), offline, its configuration checked (:func:`check_transformer_config`).

    Raises:
        ModelError: the pretrained model's configuration cannot be read offline, or is refused.
    """
    from transformers import AutoConfig, AutoModel

    from .model.encoder import random_bert, without_pooler
    from .untrusted import pretrained

    transformer = spec["transformer"]
    if transformer["kind"] == "random_bert":
        return random_bert(**transformer["params"])
    try:
        config = pretrained(AutoConfig, transformer["name_or_path"])
    except OSError as e:
        raise ModelError(f"cannot read the configuration of encoder "
                         f"{shown(transformer['name_or_path'])} offline; load an exported model "
                         f"file instead ({e})") from None  # fmt: skip
    return without_pooler(AutoModel.from_config(config))


def build_scorer(spec: Mapping[str, Any], vocabs: Any, transformer: nn.Module | None) -> nn.Module:
    """The scorer a spec validated by :func:`validate_spec` describes, with ``vocabs`` and
    ``transformer`` (the encoder's, or ``None`` without one)."""
    from .model.encoder import TransformerEncoder

    encoder = None
    if transformer is not None:
        encoder = TransformerEncoder(transformer=transformer, **spec["encoder"].get("params", {}))
    return model_kinds()[spec["kind"]](vocabs=vocabs, encoder=encoder, **spec["params"])


def build_checked(
    spec: Mapping[str, Any],
    vocabs: Any,
    transformer: Callable[[], nn.Module] | None,
    state: Any,
    source: str,
) -> nn.Module:
    """The scorer ``spec`` describes with the weights ``state`` of the file ``source``.

    The scorer is first built on the ``meta`` device (shapes only, no memory) and its tensors
    compared with ``state`` (:func:`check_tensors`, then the same names, shapes and dtypes):
    sizes that a few bytes of spec imply but the file does not hold are refused before any
    allocation; a spec whose classes refuse it (layers out of range, no input) too. Then it is
    built for real and the weights loaded.

    Args:
        transformer: builds the encoder's transformer (called twice); ``None`` without one.

    Raises:
        ModelError: the weights do not fit the spec, or the spec cannot be built.
    """
    state = check_tensors(state, f"{source}: weights")
    try:
        with torch.device("meta"):
            skeleton = build_scorer(spec, vocabs, transformer and transformer()).state_dict()
    except Exception as e:  # the project's classes and transformers refuse values many ways
        raise ModelError(f"{source}: the model its settings describe cannot be built "
                         f"({shown(e, 200)})") from None  # fmt: skip
    encoder = spec.get("encoder")
    positions = skeleton.get(f"{CONTEXT}.encoder.transformer.embeddings.position_embeddings.weight")
    if encoder is not None and positions is not None and encoder["max_length"] > positions.shape[0]:
        raise ModelError(f"{source}: encoder max_length {encoder['max_length']} exceeds the "
                         f"transformer's {positions.shape[0]} positions")  # fmt: skip
    names = set(skeleton) | set(state)
    for name in sorted(names):
        want, got = skeleton.get(name), state.get(name)
        if want is None or got is None:
            which = "holds an unexpected" if want is None else "lacks the"
            raise ModelError(f"{source}: the weights do not fit the model its config describes "
                             f"(the file {which} tensor {name!r})")  # fmt: skip
        if want.shape != got.shape or want.dtype != got.dtype:
            raise ModelError(f"{source}: the weights do not fit the model its config describes "
                             f"({name!r} is {got.dtype} {tuple(got.shape)} in the file, "
                             f"{want.dtype} {tuple(want.shape)} in the model)")  # fmt: skip
    scorer = build_scorer(spec, vocabs, transformer and transformer())
    scorer.load_state_dict(state)
    return scorer
