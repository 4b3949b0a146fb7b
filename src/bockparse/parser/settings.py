"""What a parser needs from its run: :class:`RunSettings`, read from a run's composed config
(:meth:`bockparse.rundir.RunDir.config`, :func:`run_settings`, the one place that knows the
config's keys; :func:`with_precision` for a run saved with ``auto``) or from a model file
(:func:`checked_settings`), all plain values within stated types and ranges, the model among
them as the closed schema's spec (:mod:`bockparse.modelfile`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..compat import current_model
from ..decoders import registered_names
from ..hardware import AUTO, AUTOCAST_DTYPES
from ..metrics import PUNCT_EXCLUSIONS
from ..modelfile import spec_from_config, validate_spec
from ..untrusted import Choice, Int, ModelError, Name

# Words in a batch read from a file (a run's data.batch_size: 5,000 in the paper's runs).
MAX_BATCH_WORDS = 1_000_000


@dataclass(frozen=True)
class RunSettings:
    """What a parser needs from its run's composed config (all plain, resolved values).

    Attributes:
        model: the scorer's spec in the closed schema (:mod:`bockparse.modelfile`): ``kind``,
            ``params`` and ``encoder`` (``None`` for a parser without a transformer).
        decoder: registry name of the run's decoder; ``None`` for a parser that predicts trees
            itself (the transition parsers).
        condition: the run's condition (``hinge-bock``, ...).
        max_word_chars: characters per word seen by the character model.
        batch_size: the run's evaluation batch size in words.
        punct_field, punct_tags: how the run's data marks punctuation.
        exclude_punct: the run's punctuation exclusion for its scores, or ``None``.
        seed: the run seed.
        experiment: the run's ``experiment_name``.
        precision: the run's ``trainer.precision`` (``32-true``, ``bf16-mixed``, ...): a parser
            predicts under the autocast its run was evaluated with
            (:data:`bockparse.hardware.AUTOCAST_DTYPES`), so that its scores are the run's.
    """

    model: dict[str, Any]
    decoder: str | None
    condition: str | None
    max_word_chars: int
    batch_size: int
    punct_field: str
    punct_tags: list[str]
    exclude_punct: str | None
    seed: int | None
    experiment: str | None
    precision: str


def run_settings(cfg: Any, source: str = "the run's config") -> RunSettings:
    """The settings a parser reads from a run's composed config (``.hydra/config.yaml``).

    The one function that knows the config's key names, in the current key layout (a run
    folder's config as :meth:`bockparse.rundir.RunDir.config` reads it: old layouts moved
    there). The model and encoder nodes, in any layout a run wrote
    (:func:`bockparse.compat.current_model`), become the closed schema's spec
    (:func:`bockparse.modelfile.spec_from_config`): their ``_target_`` strings are looked up
    in a fixed table, never imported.

    Args:
        cfg: the composed config (an OmegaConf ``DictConfig``) in the current key layout.
        source: the config's file, for messages.

    Raises:
        ModelError: a needed key is missing or of the wrong type, or the model is not one of
            the project's.
    """
    from omegaconf import OmegaConf

    def get(key: str, required: bool = True) -> Any:
        try:
            node = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
            if OmegaConf.is_config(node):
                node = OmegaConf.to_container(node, resolve=True)
        except Exception as e:  # OmegaConf's interpolation errors (missing key, loop, type)
            raise ModelError(f"{source}: {key}: cannot be read ({type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''})") from None  # fmt: skip
        if node is None and required:
            raise ModelError(f"{source}: no {key}")
        return node

    model, encoder = current_model(get("model"), get("encoder", required=False))
    spec = spec_from_config(model, encoder, source)  # validated here, not again below
    values = {
        "model": spec,
        "decoder": get("decoder", required=False),
        "condition": get("name", required=False),
        "max_word_chars": get("data.max_word_chars"),
        "batch_size": get("data.batch_size"),
        "punct_field": get("data.punct_field"),
        "punct_tags": get("data.punct_tags"),
        "exclude_punct": get("exclude_punct", required=False),
        "seed": get("seed", required=False),
        "experiment": get("experiment_name", required=False),
        "precision": get("trainer.precision", required=False) or "32-true",
    }
    _check_fields(values, source)
    return _settings(values, spec, source)


# RunSettings fields besides the model: their type and range, and whether null is allowed.
_SETTINGS: dict[str, tuple[Any, bool]] = {
    "condition": (Name(), True),
    "max_word_chars": (Int(1, 2**16), False),
    "batch_size": (Int(1, MAX_BATCH_WORDS), False),
    "punct_field": (Choice(("upos", "xpos")), False),
    "exclude_punct": (Choice(tuple(sorted(PUNCT_EXCLUSIONS))), True),
    "seed": (Int(-(2**63), 2**63 - 1), True),
    "experiment": (Name(), True),
    "precision": (Choice((*AUTOCAST_DTYPES, "32-true", "32", AUTO)), False),
}
MAX_PUNCT_TAGS = 10_000


def checked_settings(values: Any, source: str) -> RunSettings:
    """:class:`RunSettings` from plain ``values`` after checking every field's type and range
    and the model spec (:func:`bockparse.modelfile.validate_spec`).

    Raises:
        ModelError: an unknown or missing field, a value of the wrong type or out of range, or
            a spec the schema refuses; the message names ``source``.
    """
    _check_fields(values, source)
    return _settings(values, validate_spec(values["model"], source), source)


def with_precision(settings: RunSettings, precision: Any, source: str) -> RunSettings:
    """``settings`` with the ``precision`` its run used (for a run saved with ``auto``:
    :attr:`bockparse.rundir.RunDir.precision`), checked as :func:`checked_settings` checks it.

    Raises:
        ModelError: a value that is not a precision; the message names ``source``.
    """
    _check_field("precision", precision, source)
    return dataclasses.replace(settings, precision=precision)


def _check_field(name: str, value: Any, source: str) -> None:
    """A field of :data:`_SETTINGS` within its type and range."""
    rule, nullable = _SETTINGS[name]
    if not (value is None and nullable) and (problem := rule.problem(value)):
        raise ModelError(f"{source}: setting {name} = {repr(value)[:60]} {problem}")


def _check_fields(values: Any, source: str) -> None:
    """``values`` a mapping of :class:`RunSettings`' fields, each but the model (checked by the
    caller) within its type and range."""
    if not isinstance(values, Mapping):
        raise ModelError(f"{source}: settings must be a mapping")
    fields = {f.name for f in dataclasses.fields(RunSettings)}
    if set(values) != fields:
        raise ModelError(f"{source}: settings must have the fields {sorted(fields)}; got "
                         f"{repr(sorted(map(str, values)))[:300]}")  # fmt: skip
    for name in _SETTINGS:
        _check_field(name, values[name], source)
    tags = values["punct_tags"]
    if (not isinstance(tags, list) or len(tags) > MAX_PUNCT_TAGS
            or any(Name().problem(t) for t in tags)):  # fmt: skip
        raise ModelError(f"{source}: setting punct_tags must be a list of tags (strings)")


def _settings(values: Mapping[str, Any], model: dict[str, Any], source: str) -> RunSettings:
    """:class:`RunSettings` of ``values`` checked by :func:`_check_fields` with ``model``, their
    spec as :func:`bockparse.modelfile.validate_spec` returned it, once the decoder fits it."""
    decoder = values["decoder"]  # a graph parser names a registered decoder; a transition one none
    if model["kind"] == "transition":
        if decoder is not None:
            raise ModelError(f"{source}: setting decoder = {decoder!r}: a transition parser "
                             "predicts trees itself (null)")  # fmt: skip
    elif not isinstance(decoder, str) or decoder not in registered_names():
        raise ModelError(f"{source}: setting decoder = {repr(decoder)[:60]} is not a decoder "
                         f"(known: {', '.join(registered_names())})")  # fmt: skip
    return RunSettings(**{**values, "model": model})
