"""What a parser needs from its run: :class:`RunSettings`, read from a run's composed config
(:func:`run_settings`, the one place that knows the config's keys) or from a model file
(:func:`checked_settings`), all plain values, the model among them as the closed schema's spec
(:mod:`bockparse.modelfile`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import rundir
from ..modelfile import ModelError, spec_from_config, validate_spec


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
    precision: str = "32-true"  # model files exported before this field predicted in fp32


def run_settings(cfg: Any, source: str = "the run's config") -> RunSettings:
    """The settings a parser reads from a run's composed config (``.hydra/config.yaml``).

    The one function that knows the config's key names (configs of the old layout, with a
    ``condition`` group, are read through :func:`bockparse.rundir.current_keys`).
    The model and encoder nodes become the closed schema's spec
    (:func:`bockparse.modelfile.spec_from_config`): their ``_target_`` strings are looked up
    in a fixed table, never imported.

    Args:
        cfg: the composed config (an OmegaConf ``DictConfig``).
        source: the config's file, for messages.

    Raises:
        ModelError: a needed key is missing or of the wrong type, or the model is not one of
            the project's.
    """
    from omegaconf import OmegaConf

    cfg = rundir.current_keys(cfg)

    def get(key: str, required: bool = True) -> Any:
        node = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if node is None and required:
            raise ModelError(f"{source}: no {key}")
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node

    return checked_settings(
        {
            "model": spec_from_config(get("model"), get("encoder", required=False), source),
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
        },
        source,
    )


# RunSettings fields besides the model: their types (None allowed where listed).
_SETTING_TYPES: dict[str, tuple[type, ...]] = {
    "decoder": (str, type(None)),
    "condition": (str, type(None)),
    "max_word_chars": (int,),
    "batch_size": (int,),
    "punct_field": (str,),
    "punct_tags": (list,),
    "exclude_punct": (str, type(None)),
    "seed": (int, type(None)),
    "experiment": (str, type(None)),
    "precision": (str,),
}


def checked_settings(values: Any, source: str) -> RunSettings:
    """:class:`RunSettings` from plain ``values`` after checking every field's type and the
    model spec (:func:`bockparse.modelfile.validate_spec`).

    Raises:
        ModelError: an unknown or missing field, a value of the wrong type, or a spec the
            schema refuses; the message names ``source``.
    """
    if not isinstance(values, Mapping):
        raise ModelError(f"{source}: settings must be a mapping")
    fields = {f.name for f in dataclasses.fields(RunSettings)}
    if set(values) - fields or {"model"} - set(values):
        raise ModelError(f"{source}: settings must have the fields {sorted(fields)}; got "
                         f"{sorted(values)}")  # fmt: skip
    for name, types in _SETTING_TYPES.items():
        value = values.get(name)
        if name in values and (isinstance(value, bool) or not isinstance(value, types)):
            raise ModelError(f"{source}: setting {name} = {value!r} has the wrong type")
    if not all(isinstance(t, str) for t in values.get("punct_tags", [])):
        raise ModelError(f"{source}: setting punct_tags must be a list of strings")
    return RunSettings(**{**values, "model": validate_spec(values["model"], source)})
