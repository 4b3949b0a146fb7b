"""What earlier versions wrote, read in today's layout (bockparse.compat): each old layout moved
to the current one, the current layout returned as it is, and what no version wrote left for
the readers to refuse."""

from __future__ import annotations

import inspect
import os
from importlib import import_module

import pytest
import torch
from omegaconf import OmegaConf

from bockparse import compat, modelfile
from bockparse.heads import HEADS
from bockparse.heads.common import ContextHead
from bockparse.model.context import Contextualizer
from bockparse.rundir import RunLock, RunLocked

CONTEXT = {"use_words": True, "word_dim": 8, "lstm_hidden": 12, "lstm_layers": 1, "dropout": 0.0}
OWN = {"arc_hidden": 10, "rel_hidden": 6, "linearization": True}


def test_old_preset_names_read_as_their_current_ones():
    assert compat.current_name("local-ce", "cle") == "local-ce-cle"
    assert compat.current_name("crf", "cle") == "crf-cle"
    for name, decoder in [("local-ce", "bock"), ("hinge-cle", "cle"), (None, None)]:
        assert compat.current_name(name, decoder) == name


def test_every_moved_class_is_one_of_today():
    for new in compat.MOVED.values():
        module, name = new.rsplit(".", 1)
        assert inspect.isclass(getattr(import_module(module), name)), new
    heads = {old: new for old, new in compat.MOVED.items() if "Loss" not in new}
    assert set(heads.values()) == set(HEADS.values())


def test_moved_classes_are_renamed_at_any_depth_and_nothing_else():
    tree = {"model": {"_target_": "bockparse.model.scorer.BiaffineScorer", "word_dim": 8},
            "loss": {"_target_": "bockparse.transition.TransitionLoss",
                     "inner": {"_target_": "bockparse.transition.TransitionParser"}},
            "note": "bockparse.model.scorer.BiaffineScorer",  # not a _target_
            "optim": {"_target_": "torch.optim.Adam"}}  # fmt: skip
    current = compat.current_targets(tree)
    assert current["model"] == {"_target_": HEADS["biaffine"], "word_dim": 8}
    assert current["loss"]["_target_"] == "bockparse.losses.transition.TransitionLoss"
    assert current["loss"]["inner"]["_target_"] == HEADS["transition"]
    assert current["note"] == tree["note"] and current["optim"] == tree["optim"]
    assert tree["model"]["_target_"] == "bockparse.model.scorer.BiaffineScorer"  # a copy
    assert compat.current_targets([1]) == [1] and compat.current_targets(None) is None


def test_the_moved_context_parameters_are_the_contextualisers():
    # Every parameter moved under the head's context is one the Contextualizer takes, under
    # the name of the heads' parameter and of the schema's node.
    taken = set(inspect.signature(Contextualizer).parameters) - {"vocabs", "encoder"}
    assert compat.CONTEXT_PARAMS <= taken
    assert compat.CONTEXT == modelfile.CONTEXT
    assert compat.CONTEXT in inspect.signature(ContextHead).parameters


def test_flat_parameters_nest_under_context():
    flat = {"_target_": HEADS["biaffine"], **CONTEXT, **OWN}
    assert compat.nested_params(flat) == {"_target_": HEADS["biaffine"], **OWN, "context": CONTEXT}
    nested = {**OWN, "context": CONTEXT}
    assert compat.nested_params(nested) is nested
    own_only = dict(OWN)  # no contextualiser's parameter: not the old layout
    assert compat.nested_params(own_only) is own_only
    assert compat.nested_params(None) is None and compat.nested_params([1]) == [1]


def test_an_old_run_config_reads_in_the_current_key_layout():
    old = OmegaConf.create({
        "seed": 3, "data": {"root": "\\${oc.env:HOME}"},  # literal text, as read_yaml keeps it
        "condition": {"name": "local-ce", "decoder": "cle",
                      "loss": {"_target_": "bockparse.losses.LocalCrossEntropy"}},
        "model": {"_target_": "bockparse.model.scorer.BiaffineScorer", **CONTEXT},
    })  # fmt: skip
    cfg = compat.current_keys(old)
    assert "condition" not in cfg and (cfg.name, cfg.decoder) == ("local-ce-cle", "cle")
    assert cfg.loss._target_ == "bockparse.losses.LocalCrossEntropy"
    assert cfg.data.root == "${oc.env:HOME}"  # still literal text, never resolved
    assert "condition" in old  # the given config is left as it was
    assert compat.current_keys(cfg) is cfg  # the current key layout is returned as it is


def test_an_old_model_node_reads_in_the_current_layout():
    node = {"_target_": "bockparse.model.scorer.BiaffineScorer", "_partial_": True, **CONTEXT,
            **OWN}  # fmt: skip
    encoder = {"model": {"_target_": "bockparse.model.encoder.TransformerEncoder"}}
    model, same = compat.current_model(node, encoder)
    assert model == {"_target_": HEADS["biaffine"], "_partial_": True, **OWN, "context": CONTEXT}
    assert same == encoder
    current = {"_target_": HEADS["biaffine"], **OWN, "context": CONTEXT}
    assert compat.current_model(current, None) == (current, None)


def test_a_transition_parser_reads_without_the_terms_it_refused():
    own = {"system": "arc-eager", "arc_hidden": 10, "aux_hidden": 6, "context": CONTEXT}
    old = {**own, "linearization": False, "distance": False}
    assert compat.own_params("transition", old) == own
    assert compat.own_params("biaffine", old) is old  # the biaffine's own
    on = {**own, "linearization": True}  # no version wrote it: for the schema to refuse
    assert compat.own_params("transition", on) == on
    node = {"_target_": "bockparse.transition.TransitionParser", "_partial_": True, **old}
    assert compat.current_model(node, None)[0] == {"_target_": HEADS["transition"],
                                                   "_partial_": True, **own}  # fmt: skip
    spec = {"kind": "transition", "params": old, "encoder": None}
    settings, _ = compat.current_model_file({"model": spec}, {}, 3, "m.pt", None)
    assert settings["model"] == {**spec, "params": own}
    for kind, cls in modelfile.model_kinds().items():  # what it dropped, no head but one takes
        takes = set(inspect.signature(cls).parameters) & set(compat.TRANSITION_REFUSED)
        assert takes == (set() if kind == "transition" else set(compat.TRANSITION_REFUSED))


def test_a_run_saved_with_auto_takes_the_precision_its_records_name():
    def unread():
        raise AssertionError("a record read although the config names the precision")

    assert compat.recorded_precision("bf16-mixed", unread, unread) == "bf16-mixed"
    assert compat.recorded_precision("auto", lambda: {"precision": "32-true"}, unread) == "32-true"
    assert compat.recorded_precision("auto", lambda: None, lambda: {"precision": "16"}) == "16"
    assert compat.recorded_precision("auto", lambda: {}, lambda: {"precision": "auto"}) == "auto"
    assert compat.recorded_precision("auto") == "auto"


def _spec(params):
    return {"kind": "biaffine", "params": params, "encoder": None}


def test_model_files_of_every_version():
    calls = []

    def spec_from_config(model, encoder, source):
        calls.append((model, encoder, source))
        return _spec({**OWN, "context": CONTEXT})

    t = torch.zeros(1)
    flat, nested = {"lstm.weight": t, "arc.weight": t}, {"context.lstm.weight": t, "arc.weight": t}
    node = {"_target_": "bockparse.model.scorer.BiaffineScorer", **CONTEXT, **OWN}
    v1 = compat.current_model_file({"model": node, "encoder": None, "seed": 1}, flat, 1, "m.pt",
                                   spec_from_config)  # fmt: skip
    assert v1 == ({"model": _spec({**OWN, "context": CONTEXT}), "seed": 1,
                   "precision": "32-true"}, nested)  # fmt: skip
    # The run config's nodes, read as a run folder's: in the current layout, then the spec.
    assert calls == [({"_target_": HEADS["biaffine"], **OWN, "context": CONTEXT}, None, "m.pt")]
    v2 = compat.current_model_file({"model": _spec({**CONTEXT, **OWN})}, flat, 2, "m.pt", None)
    assert v2[0]["model"] == _spec({**OWN, "context": CONTEXT}) and v2[1] == nested
    current = {"model": _spec({**OWN, "context": CONTEXT}), "precision": "bf16-mixed"}
    assert compat.current_model_file(current, nested, 3, "m.pt", None) == (current, nested)
    odd = ["not", "settings"]
    assert compat.current_model_file(odd, flat, 3, "m.pt", None) == (odd, flat)


def test_weights_saved_before_the_contextualiser_get_its_prefix():
    t = torch.zeros(1)
    old = {"lstm.weight": t, "word_embedding.weight": t, "arc.weight": t}
    assert compat.current_state("biaffine", old) == {
        "context.lstm.weight": t, "context.word_embedding.weight": t, "arc.weight": t}  # fmt: skip
    current = {"context.lstm.weight": t, "arc.weight": t}
    assert compat.current_state("biaffine", current) is current
    assert compat.current_state("transition", old) is old
    odd = {1: t}  # not a mapping of names: for the tensor check to refuse
    assert compat.current_state("biaffine", odd) is odd
    assert compat.current_state("biaffine", [t]) == [t]


def test_an_earlier_module_state_has_no_schedule():
    assert compat.schedule_state({"schedule": {"stage": 1}, "decode_seconds": 0.0}) == {"stage": 1}
    assert compat.schedule_state({"stage": 1, "lr_factor": 1.0}) is None


def test_an_earlier_lock_names_its_pid_alone(tmp_path):
    assert compat.lock_fields("123", "here") == {"host": "here", "pid": 123}
    assert compat.lock_fields('{"pid": 123}', "here") is None
    assert compat.lock_fields("", "here") is None
    # The training lock reads it as a holder on this host: a live process's lock holds.
    (tmp_path / "train.lock").write_text(f"{os.getppid()}\n")
    with pytest.raises(RunLocked, match=f"process {os.getppid()} on this host"), RunLock(tmp_path):
        pass
