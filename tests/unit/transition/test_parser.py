"""The transition parser head and its loss: oracle scoring, greedy trees, gradients, config."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from bockparse.decoders.eisner import is_projective
from bockparse.decoders.trees import is_tree
from bockparse.heads.transition import NonProjectiveError, TransitionParser, get_system
from bockparse.losses import TransitionLoss
from bockparse.training.train import CONF_DIR

SYSTEMS = ("arc-standard", "arc-eager")


def tree_rows(heads: torch.Tensor, lengths) -> list[np.ndarray]:
    return [heads[b, : n + 1].numpy() for b, n in enumerate(lengths)]


@pytest.fixture(scope="module")
def mixed_batch(collate, projective_ids, nonprojective_ids):
    """Six projective sentences and one non-projective one."""
    return collate(projective_ids[:6] + nonprojective_ids[:1])


@pytest.mark.parametrize("system", SYSTEMS)
def test_forward_scores_the_oracle_configurations(make_parser, mixed_batch, system):
    parser = make_parser(system)
    scores = parser(mixed_batch)
    lengths = mixed_batch.lengths.tolist()
    assert scores.kept.tolist() == [True] * 6 + [False]
    T = 2 * sum(lengths[:6])
    K = len(get_system(system).kinds)
    assert scores.logits.shape == (T, K) and scores.valid.shape == (T, K)
    assert scores.targets.shape == (T,) and torch.isfinite(scores.logits).all()
    assert scores.valid[torch.arange(T), scores.targets].all()  # the oracle obeys the rules
    B, N = mixed_batch.mask.shape
    assert scores.rel_at_gold.shape == (B, N, len(parser.rel.weight))


@pytest.mark.parametrize("system", SYSTEMS)
def test_non_projective_training_tree_is_an_error_unless_left_out(
    make_parser, collate, mixed_batch, projective_ids, system
):
    strict = make_parser(system, projective_only=False)
    with pytest.raises(NonProjectiveError, match=r"sentence \d+ of the batch: .* non-projective"):
        strict(mixed_batch)
    # On projective sentences the flag changes nothing.
    batch = collate(projective_ids[:4])
    assert torch.equal(strict(batch).logits, make_parser(system)(batch).logits)


@pytest.mark.parametrize(
    ("system", "favour"),
    [(s, f) for s in SYSTEMS for f in [None, *range(len(get_system(s).kinds))]],
)
def test_predict_only_takes_allowed_transitions_and_builds_single_root_trees(
    make_parser, collate, monkeypatch, system, favour
):
    parser = make_parser(system)
    if favour is not None:
        with torch.no_grad():  # the classifier wants one type everywhere, allowed or not
            parser.classifier[-1].bias[favour] = 1e4
    taken = []
    apply = parser.system.apply

    def checked(c, t):
        assert parser.system.allowed(c, t.kind), f"{t} proposed in {c!r}"
        taken.append(t)
        apply(c, t)

    monkeypatch.setattr(parser.system, "apply", checked)
    batch = collate(list(range(24)))
    heads, rels, _ = parser.predict(batch)
    lengths = batch.lengths.tolist()
    assert len(taken) == 2 * sum(lengths)
    assert heads.dtype == torch.int64 and heads.shape == batch.mask.shape
    for h in tree_rows(heads, lengths):
        assert is_tree(h, single_root=True) and is_projective(h)
    assert (heads[~batch.mask] == -1).all() and (rels[~batch.mask] == -1).all()
    assert rels.shape == heads.shape and rels.max() < len(parser.rel.weight)
    assert (rels[batch.mask] >= 0).all()


def test_relations_are_the_best_at_the_predicted_heads(make_parser, collate):
    parser = make_parser("arc-eager")
    batch = collate(list(range(5)))
    heads, rels, _ = parser.predict(batch)
    with torch.no_grad():
        rel = parser.rel(parser.context.contextualize(batch))  # [B, N, N, R]
    for b, n in enumerate(batch.lengths.tolist()):
        for d in range(1, n + 1):
            assert rels[b, d] == int(rel[b, heads[b, d], d].argmax())


@pytest.mark.parametrize("system", SYSTEMS)
def test_loss_is_the_masked_oracle_cross_entropy_plus_relations(make_parser, mixed_batch, system):
    parser = make_parser(system)
    scores = parser(mixed_batch)
    out = TransitionLoss()(scores, mixed_batch)
    manual = sum(  # the softmax over the allowed types only
        -F.log_softmax(row[ok], dim=-1)[int(ok[: t + 1].sum()) - 1]
        for row, ok, t in zip(scores.logits, scores.valid, scores.targets.tolist(), strict=True)
    )
    assert out.arc == pytest.approx(manual.item(), rel=1e-5)
    kept_words = int(mixed_batch.lengths[:6].sum())
    assert out.words == kept_words
    expected = float(out.arc + out.rel) / kept_words
    assert out.loss.detach().item() == pytest.approx(expected, rel=1e-5)
    assert out.counts == {"oracle_sentences": 7, "nonprojective_skipped": 1}
    out.loss.backward()
    assert [n for n, p in parser.named_parameters() if p.grad is None] == []


@pytest.mark.parametrize("system", SYSTEMS)
def test_loss_reads_the_relations_at_the_gold_heads_as_all_pairs_gave(
    make_parser, mixed_batch, same_as_all_pairs, system
):
    """Training scores relations at the gold heads alone; on fixed float32 weights, with dropout
    (the same draws), the loss and every parameter's gradient equal the former path's (all
    pairs scored, the gold ones gathered) within float rounding (``same_as_all_pairs``)."""
    parser = make_parser(system, context={"dropout": 0.3}).train()
    out = same_as_all_pairs(parser, TransitionLoss(), mixed_batch)
    assert out.rel > 0 and "rel.weight" in out.grads


def test_a_batch_of_non_projective_trees_only_gives_zero_loss(make_parser, collate,
                                                              nonprojective_ids):  # fmt: skip
    parser = make_parser("arc-standard")
    batch = collate(nonprojective_ids[:2])
    out = TransitionLoss()(parser(batch), batch)
    assert out.loss.detach().item() == 0.0 and out.words == 0
    out.loss.backward()  # still a graph, so the training step runs


@pytest.mark.slow
@pytest.mark.parametrize("system", SYSTEMS)
def test_training_on_the_oracle_reproduces_the_gold_trees(make_parser, collate, sentences,
                                                          projective_ids, system):  # fmt: skip
    ids = [i for i in projective_ids if len(sentences[i]) <= 8][:3]
    batch = collate(ids)
    parser = make_parser(system, seed=1).train()
    optimizer = torch.optim.Adam(parser.parameters(), lr=0.02)
    for _ in range(60):
        out = TransitionLoss()(parser(batch), batch)
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
    heads, rels, _ = parser.eval().predict(batch)
    assert torch.equal(heads, batch.heads)
    assert (rels[batch.mask] == batch.rels[batch.mask]).all()


def test_settings_that_have_no_meaning_for_transitions_are_refused(make_parser):
    with pytest.raises(TypeError, match="linearization"):  # Stanza's arc-score terms: none here
        make_parser("arc-eager", linearization=False)
    with pytest.raises(ValueError, match="at least one feature item"):
        make_parser("arc-eager", stack_features=0, buffer_features=0)
    with pytest.raises(ValueError, match="unknown transition system"):
        make_parser("arc-hybrid")


@pytest.mark.parametrize(("stack", "buffer"), [(3, 1), (2, 2), (1, 0)])
def test_feature_items_set_the_classifier_input(make_parser, collate, stack, buffer):
    parser = make_parser("arc-eager", stack_features=stack, buffer_features=buffer)
    assert parser.classifier[0].in_features == (stack + buffer) * 2 * 12
    batch = collate([0, 1])
    heads, _, _ = parser.predict(batch)
    assert all(is_tree(h, single_root=True) for h in tree_rows(heads, batch.lengths.tolist()))


@pytest.mark.parametrize("system", SYSTEMS)
def test_condition_selects_the_transition_model_on_the_graph_encoder(vocabs, system):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke", f"condition={system}"])
        graph = compose("train", overrides=["experiment=smoke", "condition=hinge-bock"])
    assert cfg.name == system and cfg.decoder is None
    shared = set(graph.model) - {"_target_", "linearization", "distance"}
    assert {k: cfg.model[k] for k in shared} == {k: graph.model[k] for k in shared}
    parser = instantiate(cfg.model)(vocabs=vocabs, encoder=None)
    assert isinstance(parser, TransitionParser) and parser.system.name == system
    assert isinstance(instantiate(cfg.loss), TransitionLoss)


def test_the_condition_chooses_the_transition_model_under_an_experiments_sizes():
    # The transition parser is a model choice; an experiment's model.context (and head
    # sizes) apply to it as to the biaffine parser.
    overrides = ["experiment=transition-vs-graph", "condition=arc-eager",
                 "model.context.lstm_hidden=7"]  # fmt: skip
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=overrides)
        graph = compose("train", overrides=["experiment=transition-vs-graph"])
    assert cfg.model._target_ == "bockparse.heads.transition.parser.TransitionParser"
    assert cfg.model.system == "arc-eager" and cfg.model.context.lstm_hidden == 7
    assert {**cfg.model.context, "lstm_hidden": 200} == dict(graph.model.context)
    assert cfg.model.arc_hidden == graph.model.arc_hidden == 200


@pytest.mark.parametrize("overrides", [["loss=transition"], ["model=transition"]])
def test_the_transition_parser_and_its_loss_come_together(overrides):
    from bockparse.training.checks import setting_problems

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=overrides)
        paired = compose("train", overrides=["model=transition", "loss=transition"])
    (problem,) = setting_problems(cfg)
    assert "model=transition" in problem and "loss=transition" in problem
    assert setting_problems(paired) == []


def test_parser_is_the_graph_contextualiser_plus_a_classifier(make_parser):
    from bockparse.heads.biaffine import BiaffineScorer
    from bockparse.model.context import Contextualizer

    parser = make_parser("arc-standard")
    assert isinstance(parser.context, Contextualizer) and not isinstance(parser, BiaffineScorer)
    assert parser.encoder is parser.context.encoder is None
    tops = {name.split(".")[0] for name, _ in parser.named_parameters()}
    assert tops == {"context", "rel", "empty", "classifier"}  # no unused arc biaffine
