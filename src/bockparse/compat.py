"""What earlier versions of bockparse wrote, read in today's layout: every old layout in one place.

Each function takes data as an earlier version may have written it and returns it in the current
layout (data already in the current layout comes back as it is); the readers call them where
that data enters, so that the rest of the code knows the current layout alone:

- a run folder's saved config (:func:`current_keys`, called by
  :meth:`bockparse.rundir.RunDir.config`): the ``condition`` node of runs before the config
  groups mirrored the code, the names of the old presets (:data:`LEGACY_NAMES`); its model and
  encoder nodes, before the schema reads them (:func:`current_model`, called by
  :func:`bockparse.parser.settings.run_settings`, and by the resume check of a
  ``last.ckpt``'s config): classes that moved (:data:`MOVED`), the model's flat parameters
  before ``model.context`` (:func:`nested_params`), the parameters a transition parser took
  only to refuse them (:func:`own_params`);
- the precision a run used, for runs whose saved config still says ``auto``
  (:func:`recorded_precision`);
- model files (:func:`current_model_file`: format versions 1 and 2, a transition parser's
  refused parameters, files without a precision) and the weights of a biaffine scorer saved
  before it composed its contextualiser (:func:`current_state`, called by it and by the run
  checkpoint reader, :mod:`bockparse.parser.files`);
- checkpoints: the classes a ``last.ckpt``'s config names (:func:`current_targets`), a module
  state without the schedule's (:func:`schedule_state`), the checkpoint writer's state key
  (:data:`WRITER_STATE_KEY`);
- the training lock of an earlier version (:func:`lock_fields`).

Below every reader (:mod:`bockparse.rundir` calls it): the standard library only, OmegaConf
imported where a config is migrated; nothing of bockparse is imported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# -- run configs ------------------------------------------------------------------------------

# Names of runs written before a run's name was a function of its loss and decoder alone
# (issue 28): the Table 1 presets local-ce and crf named theirs after themselves.
LEGACY_NAMES = {("local-ce", "cle"): "local-ce-cle", ("crf", "cle"): "crf-cle"}

# Classes that moved (issue 51): their paths in the configs of earlier runs, checkpoints and
# version-1 model files -> today's (bockparse.heads.HEADS; the transition loss in losses/).
MOVED = {
    "bockparse.model.scorer.BiaffineScorer": "bockparse.heads.biaffine.BiaffineScorer",
    "bockparse.transition.TransitionParser": "bockparse.heads.transition.parser.TransitionParser",
    "bockparse.transition.parser.TransitionParser":
        "bockparse.heads.transition.parser.TransitionParser",
    "bockparse.transition.TransitionLoss": "bockparse.losses.transition.TransitionLoss",
}  # fmt: skip
TRANSITION = MOVED["bockparse.transition.TransitionParser"]  # a transition parser's class now

# The head's parameter (and config node) holding the Contextualizer's parameters since issue 28
# (model.context), and the parameters that moved there: the inputs and the BiLSTM, which a
# model's parameters held beside the head's before (run configs, model files of versions 1
# and 2).
CONTEXT = "context"
CONTEXT_PARAMS = frozenset({
    "use_words", "word_dim", "word_dropout", "use_chars", "char_dim", "char_hidden", "use_upos",
    "use_xpos", "use_feats", "tag_dim", "lstm_hidden", "lstm_layers", "dropout",
})  # fmt: skip


# Stanza's arc-score terms, which a transition parser took as parameters until issue 51 only to
# refuse them when on: every run config and model file of one says false, and they are dropped
# where read (:func:`own_params`; a true one, which no version wrote, is left for the schema).
TRANSITION_REFUSED = ("linearization", "distance")


def current_name(name: str | None, decoder: str | None) -> str | None:
    """A run's name as it is spelled now: ``<loss>-<decoder>`` for a run of the old presets
    (:data:`LEGACY_NAMES`), else ``name``."""
    return LEGACY_NAMES.get((name, decoder), name)


def current_targets(tree: Any) -> Any:
    """``tree`` (plain containers) with every ``_target_`` that names a moved class renamed
    (:data:`MOVED`); anything else as it is."""
    if not isinstance(tree, Mapping):
        return tree
    return {key: MOVED.get(value, value) if key == "_target_" and isinstance(value, str)
            else current_targets(value) for key, value in tree.items()}  # fmt: skip


def nested_params(params: Any) -> Any:
    """A head's parameters (or its config node) with the contextualiser's under
    :data:`CONTEXT`: the flat mapping of a model before ``model.context`` (one holding some of
    :data:`CONTEXT_PARAMS` and no :data:`CONTEXT`) moved there; anything else (already nested,
    or not a mapping) as it is, for the schema to judge."""
    if (not isinstance(params, Mapping) or CONTEXT in params
            or not any(k in CONTEXT_PARAMS for k in params)):  # fmt: skip
        return params
    own = {k: v for k, v in params.items() if k not in CONTEXT_PARAMS}
    return {**own, CONTEXT: {k: v for k, v in params.items() if k in CONTEXT_PARAMS}}


def own_params(kind: Any, params: Any) -> Any:
    """A head's parameters (or its config node) without those it took only to refuse them: a
    transition parser's :data:`TRANSITION_REFUSED` where they are false; anything else as it
    is."""
    if kind != "transition" or not isinstance(params, Mapping):
        return params
    return {k: v for k, v in params.items() if not (k in TRANSITION_REFUSED and v is False)}


def current_keys(cfg: Any) -> Any:
    """A run's saved config (an OmegaConf ``DictConfig``) in the current key layout.

    Run folders written before the config groups mirrored the code keep the run's name, decoder
    and loss (and a transition parser's system) under ``condition``; they move to ``name``,
    ``decoder``, ``loss`` and ``model.system`` (a copy; the hinge's ``decoder: ${..decoder}``
    still names the run's decoder). A run's old name becomes its current one
    (:func:`current_name`). A config in the current layout is returned as it is. (Its model
    node is read by the schema in any layout: :func:`current_model`.)
    """
    from omegaconf import OmegaConf, open_dict

    if "condition" in cfg and "loss" not in cfg:
        old = cfg.condition
        cfg = cfg.copy()
        with open_dict(cfg):
            cfg.name = old.get("name")
            cfg.decoder = old.get("decoder")
            cfg.loss = old.get("loss")
            if "system" in old and "model" in cfg:
                cfg.model.system = old.system
            del cfg["condition"]
    name = OmegaConf.select(cfg, "name", default=None, throw_on_resolution_failure=False)
    decoder = OmegaConf.select(cfg, "decoder", default=None, throw_on_resolution_failure=False)
    if current_name(name, decoder) != name:
        cfg = cfg.copy()
        with open_dict(cfg):
            cfg.name = current_name(name, decoder)
    return cfg


def current_model(model: Any, encoder: Any) -> tuple[Any, Any]:
    """A run config's ``model`` and ``encoder`` nodes (resolved plain containers, as a run
    folder or a version-1 model file holds them) in the current layout: moved classes renamed
    (:func:`current_targets`), a model's flat parameters nested (:func:`nested_params`), a
    transition parser's refused ones dropped (:func:`own_params`)."""
    model = nested_params(current_targets(model))
    transition = isinstance(model, Mapping) and model.get("_target_") == TRANSITION
    return own_params("transition" if transition else None, model), current_targets(encoder)


# The precision a run's saved config names when it let the machine choose.
AUTO = "auto"


def recorded_precision(saved: Any, *records: Callable[[], Mapping[str, Any] | None]) -> Any:
    """The precision a run used: ``saved``, its config's ``trainer.precision`` (training writes
    the one it resolved ``auto`` to), or, for a run saved with ``auto`` (before training wrote
    it resolved, or stopped before it trained), the ``precision`` of the first of ``records``
    (read only then, in order: ``environment.json``, ``metrics.json``) that names one other
    than ``auto``; ``auto`` where none does."""
    precision = saved
    for record in records:
        if precision != AUTO:
            break
        precision = (record() or {}).get("precision", AUTO)
    return precision


# -- model files and checkpoints ----------------------------------------------------------------

# A model file exported before its settings held the run's precision predicted in fp32.
PRECISION_BEFORE_RECORDED = "32-true"


def current_model_file(
    settings: Any,
    state: Any,
    version: int,
    source: str,
    spec_from_config: Callable[[Any, Any, str], Any],
) -> tuple[Any, Any]:
    """A model file's settings (:class:`bockparse.parser.RunSettings`' fields) and weights, of
    format ``version``, in the current layout.

    Version 1 held the run config's ``model`` and ``encoder`` nodes: they become the spec as a
    run folder's do (:func:`current_model`, then ``spec_from_config``:
    :func:`bockparse.modelfile.spec_from_config`, passed by the caller, the schema being above
    this module; ``source`` names the file in its messages). Version 2 held the
    contextualiser's parameters beside the head's (:func:`nested_params`); versions 1 to 3 a
    transition parser's refused ones (:func:`own_params`). A file without a
    precision predicts in fp32 (:data:`PRECISION_BEFORE_RECORDED`). The weights of a biaffine
    scorer saved before ``model.context`` are moved under it (:func:`current_state`). Settings
    that are not a mapping come back as they are, for the settings check to refuse.
    """
    if not isinstance(settings, Mapping):
        return settings, state
    settings = dict(settings)
    if version == 1:
        model, encoder = current_model(settings.get("model"), settings.pop("encoder", None))
        settings["model"] = spec_from_config(model, encoder, source)
    elif isinstance(settings.get("model"), Mapping) and "params" in settings["model"]:
        model = settings["model"]
        params = own_params(model.get("kind"), nested_params(model["params"]))
        settings["model"] = {**model, "params": params}
    settings.setdefault("precision", PRECISION_BEFORE_RECORDED)
    model = settings.get("model")
    return settings, current_state(model.get("kind") if isinstance(model, Mapping) else None, state)


# The submodules of a biaffine scorer saved before it composed its contextualiser (schema
# version 2): top-level in its state dict then, under ``context.`` now.
CONTEXT_MODULES = ("encoder.", "word_embedding.", "upos_embedding.", "xpos_embedding.",
                   "feats_embedding.", "char_model.", "lstm.")  # fmt: skip


def current_state(kind: Any, state: Any) -> Any:
    """A scorer's weights in the current module layout: a biaffine scorer saved before it
    composed its contextualiser (``lstm.*`` instead of ``context.lstm.*``) gets the
    ``context.`` prefix on the contextualiser's modules; the same tensors. Anything else (the
    current layout, another kind, not a mapping of names) as it is, for the tensor check to
    judge."""
    if (kind != "biaffine" or not isinstance(state, Mapping)
            or not all(isinstance(k, str) for k in state)
            or any(k.startswith(CONTEXT + ".") for k in state)):  # fmt: skip
        return state
    return {f"{CONTEXT}.{k}" if k.startswith(CONTEXT_MODULES) else k: v for k, v in state.items()}


def schedule_state(module_state: Mapping[str, Any]) -> Any:
    """The schedule's state in a checkpoint's module state (``checkpoint["bockparse"]``), or
    ``None`` for a checkpoint of an earlier version, which kept only the stage and the learning
    rate factor (the schedule then starts afresh)."""
    return module_state.get("schedule")


# The key of the checkpoint writer's state (every rank's random number generators) in a
# last.ckpt's callbacks (Lightning's ``state_key``): the name of the callback that kept them
# before the writer and the schedule's decisions were split, kept so that every last.ckpt, old
# or new, resumes.
WRITER_STATE_KEY = "ScheduleCallback"


# -- the training lock ------------------------------------------------------------------------


def lock_fields(text: str, host: str) -> dict[str, Any] | None:
    """The fields of a training lock of an earlier version, which held only the pid of its
    holder, a process on this ``host``; ``None`` for any other lock text."""
    return {"host": host, "pid": int(text)} if text.isdigit() else None
