"""The parser-head contract (bockparse.heads): every registered head follows ParserHead, its
kind is its registry key and names it in model files and run configs, and the training module
decides from the contract whether a head takes the run's decoder."""

from __future__ import annotations

import inspect
from functools import partial
from pathlib import Path

import pytest
import torch

from bockparse.data import Vocabs
from bockparse.heads import HEADS, ParserHead, head_classes, kind_of
from bockparse.heads.common import ContextHead
from bockparse.model.context import Contextualizer
from bockparse.modelfile import TARGETS, model_kinds, spec_from_config
from bockparse.training.module import ParserModule
from bockparse.training.schedule import StanzaSchedule

CONTEXT = dict(
    use_words=True, word_dim=8, word_dropout=0.0, use_chars=False, char_dim=4, char_hidden=4,
    use_upos=False, use_xpos=False, use_feats=False, tag_dim=4, lstm_hidden=6, lstm_layers=1,
    dropout=0.0,
)  # fmt: skip
OWN = {
    "biaffine": dict(arc_hidden=5, rel_hidden=5, linearization=True, distance=True,
                     aux_hidden=5, biaffine_init_std=0.0),
    "transition": dict(system="arc-standard", projective_only=True, stack_features=2,
                       buffer_features=1, arc_hidden=5, rel_hidden=5, aux_hidden=5,
                       biaffine_init_std=0.0),
}  # fmt: skip


@pytest.fixture(scope="module")
def vocabs() -> Vocabs:
    tokens = {"words": ["a", "b"], "chars": ["a", "b"], "upos": ["X"], "xpos": ["X"],
              "feats": ["_"]}  # fmt: skip
    state = {
        k: {"itos": ["<pad>", "<unk>", "<root>", *v], "unk_index": 1} for k, v in tokens.items()
    }
    return Vocabs.from_dict({**state, "rels": {"itos": ["root", "dep"], "unk_index": -1}})


def build(kind: str, vocabs: Vocabs) -> ParserHead:
    return head_classes()[kind](vocabs=vocabs, encoder=None, context=CONTEXT, **OWN[kind])


def test_every_head_is_registered_once_and_tested_here():
    assert set(OWN) == set(HEADS) == set(model_kinds())
    assert len(set(HEADS.values())) == len(HEADS)


@pytest.mark.parametrize("kind", sorted(HEADS))
def test_a_head_follows_the_contract(kind, vocabs):
    head = build(kind, vocabs)
    assert isinstance(head, ContextHead) and isinstance(head.context, Contextualizer)
    assert head.kind == kind == kind_of(type(head))
    assert head.encoder is None
    assert head.predict is None or callable(head.predict)
    # Its class is the conf/model file's target, and a run config naming it gives its kind.
    assert TARGETS[HEADS[kind]] == kind
    node = {"_target_": HEADS[kind], "_partial_": True, "context": CONTEXT, **OWN[kind]}
    assert spec_from_config(node, None, "config.yaml")["kind"] == kind
    # The model schema checks a file's parameters against the head's own signature.
    assert {"vocabs", "encoder", "context"} <= set(inspect.signature(type(head)).parameters)


@pytest.mark.parametrize("kind", sorted(HEADS))
def test_every_head_takes_the_joint_tagger(kind, tmp_path):
    """A tagger on either head: its scores carry the tags, its loss adds their term, a head
    that decodes itself returns them, and evaluation is logged with the tag accuracies."""
    from bockparse.data.batch import Collator
    from bockparse.data.conllu import read_conllu
    from bockparse.data.dataset import ParserDataset
    from bockparse.losses import LocalCrossEntropy, TransitionLoss

    path = tmp_path / "two.conllu"
    path.write_text("1\ta\t_\tX\tX\tA=B\t2\tdep\t_\t_\n"
                    "2\tb\t_\tY\tX\t_\t0\troot\t_\t_\n\n", encoding="utf-8")  # fmt: skip
    sentences = read_conllu(path, single_root=True, on_malformed="error")
    vocabs = Vocabs.build(sentences, min_word_freq=1)
    tagger = dict(upos=True, xpos=False, feats=True, hidden=4, loss_weight=1.0,
                  train_tags="predicted")  # fmt: skip
    torch.manual_seed(0)
    head = head_classes()[kind](vocabs=vocabs, encoder=None, context=CONTEXT, tagger=tagger,
                                **OWN[kind])  # fmt: skip
    assert head.tagger is not None and head.tagger.columns == ("upos", "feats")
    dataset = ParserDataset(sentences, vocabs, max_word_chars=4, punct_field="upos",
                            punct_tags=["PUNCT"])  # fmt: skip
    batch = Collator(dataset)([0])
    scores = head.train()(batch)
    assert {c: s.shape for c, s in scores.tags.logits.items()} == {
        "upos": (1, 3, 2), "feats": (1, 3, 2)}  # fmt: skip
    loss = (TransitionLoss() if kind == "transition" else LocalCrossEntropy())(scores, batch)
    assert loss.tag is not None and loss.tag > 0
    if head.predict is not None:
        heads, _, tags = head.eval().predict(batch)
        assert set(tags.logits) == {"upos", "feats"} and heads.shape == (1, 3)
    assert module(head, None if head.predict else "bock").tag_names == ("upos", "ufeats")


def test_the_heads_that_decode_themselves():
    assert {k for k, c in head_classes().items() if c.predict is not None} == {"transition"}


def test_an_unregistered_class_has_no_kind():
    with pytest.raises(KeyError, match="not a registered parser head"):
        kind_of(Contextualizer)


def module(head: ParserHead, decoder: str | None) -> ParserModule:
    schedule = StanzaSchedule(
        plateau_patience=10, plateau_decay=0.8, plateau_threshold=1e-4, switch_patience=10,
        switch_step=10, stop_patience=10, stage2_warmup=0, transformer_freeze=0,
        transformer_warmup=0, transformer_lr_scale=1.0, stage2_transformer_lr_scale=1.0,
        transformer_weight_decay=0.0,
    )  # fmt: skip
    return ParserModule(
        scorer=head, loss=lambda scores, batch: None, decoder=decoder, relations=["root", "dep"],
        stage1=partial(torch.optim.Adadelta, lr=1.0), stage2=partial(torch.optim.Adam, lr=1e-3),
        schedule=schedule, max_grad_norm=1.0, exclude_punct=None,
    )  # fmt: skip


def test_the_module_gives_a_decoder_to_the_heads_that_need_one(vocabs):
    biaffine, transition = build("biaffine", vocabs), build("transition", vocabs)
    assert module(biaffine, "bock").decoder == "bock"
    assert module(transition, None).decoder is None
    with pytest.raises(ValueError, match="no predict"):
        module(biaffine, None)
    with pytest.raises(ValueError, match="predicts its trees itself"):
        module(transition, "bock")


@pytest.mark.parametrize(
    ("run", "kind"),
    [("transition-vs-graph/runs/arc-eager/seed1111", "transition"),
     ("transition-vs-graph/runs/hinge-bock/seed1111", "biaffine")],
)  # fmt: skip
def test_published_runs_name_their_heads_by_the_paths_before_heads(run, kind):
    from omegaconf import OmegaConf

    from bockparse.parser.settings import run_settings

    path = Path(__file__).resolve().parents[2] / "experiments" / run / ".hydra" / "config.yaml"
    cfg = OmegaConf.load(path)
    assert not str(cfg.model._target_).startswith("bockparse.heads.")
    assert run_settings(cfg, str(path)).model["kind"] == kind
