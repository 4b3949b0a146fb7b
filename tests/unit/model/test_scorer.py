"""The biaffine scorer on real batches of the sample: shapes, padding, switches, gradient."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from bockparse.data import UNK_INDEX
from bockparse.heads.biaffine import BiaffineScorer
from bockparse.losses import LocalCrossEntropy, StructuredHinge, TreeCRF
from bockparse.model import ParserScores

SPECIALS = 3  # PAD, UNK, ROOT: the first ids of every word-level vocabulary


def shifted(ids: torch.Tensor, where: torch.Tensor, size: int) -> torch.Tensor:
    """``ids`` with every id at ``where`` moved to another non-special id of a vocabulary."""
    moved = (ids - SPECIALS + 1) % (size - SPECIALS) + SPECIALS
    return torch.where(where, moved, ids)


def perturbed(batch, field: str, vocabs):
    """The batch with one input changed at every word (ROOT and padding kept)."""
    if field == "encoder":
        sw = batch.subwords
        real = sw.attention_mask.bool() & (sw.input_ids > 999)  # not a special piece
        ids = torch.where(real, 1000 + (sw.input_ids * 7919) % 20000, sw.input_ids)
        return replace(batch, subwords=replace(sw, input_ids=ids))
    if field == "chars":
        where = (batch.chars >= SPECIALS) & batch.mask[..., None]
        return replace(batch, chars=shifted(batch.chars, where, len(vocabs.chars)))
    size = len(getattr(vocabs, field))
    return replace(batch, **{field: shifted(getattr(batch, field), batch.mask, size)})


@pytest.fixture(scope="module")
def batch(collate):
    return collate([3, 0, 4, 11])  # lengths 16, 29, 36, 29: padding in every row but one


@pytest.fixture(scope="module")
def full(make_scorer, make_encoder):
    """Every input on, the tiny transformer included."""
    return make_scorer(make_encoder())


def test_shapes_and_finite(full, batch, vocabs):
    with torch.no_grad():
        scores = full(batch)
    B, N = batch.words.shape
    R = len(vocabs.rels)
    assert isinstance(scores, ParserScores)
    assert scores.arc.shape == (B, N, N)
    assert scores.rel.shape == (B, N, N, R)
    assert scores.linearization.shape == scores.distance.shape == (B, N, N)
    for t in (scores.arc, scores.rel, scores.linearization, scores.distance):
        assert torch.isfinite(t).all()


def test_padding_invariance(full, collate):
    """A sentence scored alone equals the same sentence inside a padded batch."""
    alone, inside = collate([3]), collate([0, 3, 4])  # 16 words; 29 and 36 around it
    assert inside.subwords.input_ids.shape[0] > 3  # the long ones span several windows
    with torch.no_grad():
        a, b = full(alone), full(inside)
    N = int(alone.lengths[0]) + 1
    for x, y in ((a.arc, b.arc), (a.rel, b.rel), (a.linearization, b.linearization)):
        torch.testing.assert_close(x[0], y[1, :N, :N], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(a.distance[0], b.distance[1, :N, :N], rtol=1e-4, atol=1e-5)


def test_eval_is_deterministic(full, batch):
    with torch.no_grad():
        first, second = full(batch), full(batch)
    assert torch.equal(first.arc, second.arc) and torch.equal(first.rel, second.rel)


def test_train_equals_eval_without_dropout(make_scorer, batch):
    scorer = make_scorer(None)
    with torch.no_grad():
        evaluated = scorer(batch)
        trained = scorer.train()(batch)
    assert torch.equal(evaluated.arc, trained.arc) and torch.equal(evaluated.rel, trained.rel)


def test_dropout_acts_in_training_only(make_scorer, batch):
    scorer = make_scorer(None, context={"dropout": 0.5})
    with torch.no_grad():
        evaluated = scorer(batch)
        torch.manual_seed(1)
        trained = scorer.train()(batch)
    assert not torch.allclose(evaluated.arc, trained.arc)
    with torch.no_grad():  # as above: oneDNN's LSTM rounds some shapes apart with a graph
        assert torch.equal(evaluated.arc, scorer.eval()(batch).arc)


SWITCHES = [
    ("use_words", "words"),
    ("use_chars", "chars"),
    ("use_upos", "upos"),
    ("use_xpos", "xpos"),
    ("use_feats", "feats"),
    ("encoder", "encoder"),
]


@pytest.mark.parametrize(("switch", "field"), SWITCHES)
@pytest.mark.parametrize("on", [True, False])
def test_input_switch(switch, field, on, make_scorer, make_encoder, vocabs, batch):
    """With its switch on the scores depend on that input; off, not at all."""
    encoder = make_encoder() if switch != "encoder" or on else None
    context = {} if switch == "encoder" else {switch: on}
    scorer = make_scorer(encoder, context=context)
    changed = perturbed(batch, field, vocabs)
    with torch.no_grad():
        before, after = scorer(batch), scorer(changed)
    if on:
        assert not torch.allclose(before.arc, after.arc)
        assert not torch.allclose(before.rel, after.rel)
    else:
        assert torch.equal(before.arc, after.arc) and torch.equal(before.rel, after.rel)


ONLY = ["use_words", "use_chars", "use_upos", "use_xpos", "use_feats", "encoder"]


@pytest.mark.parametrize("only", ONLY)
def test_runs_with_a_single_input(only, make_scorer, make_encoder, batch):
    flags = {name: name == only for name in ONLY if name != "encoder"}
    encoder = make_encoder() if only == "encoder" else None
    scorer = make_scorer(encoder, context=flags)
    if encoder is None:
        batch = replace(batch, subwords=None)  # a data module without a tokenizer
    with torch.no_grad():
        scores = scorer(batch)
    assert scores.arc.shape == batch.words.shape + batch.words.shape[1:]
    assert torch.isfinite(scores.arc).all() and torch.isfinite(scores.rel).all()
    assert scores.arc.std() > 0


def test_needs_an_input(vocabs, small_sizes):
    flags = {name: False for name in ONLY if name != "encoder"}
    with pytest.raises(ValueError, match="at least one input"):
        BiaffineScorer(vocabs=vocabs, encoder=None, **small_sizes(context=flags))


def test_encoder_needs_subwords(full, batch):
    with pytest.raises(ValueError, match="no subwords"):
        full(replace(batch, subwords=None))


@pytest.mark.parametrize(
    ("linearization", "distance"), [(True, False), (False, True), (True, True)]
)
def test_auxiliary_terms(linearization, distance, make_scorer, batch):
    """The switches add exactly Stanza's detached terms to the arc scores, and return the raw
    auxiliary scores; off, the arc scores are the plain biaffine ones."""
    on = make_scorer(None, linearization=linearization, distance=distance)
    off = make_scorer(None, linearization=False, distance=False)
    missing, unexpected = off.load_state_dict(on.state_dict(), strict=False)
    assert not missing and unexpected  # `off` is `on` without the auxiliary scorers
    with torch.no_grad():
        with_terms, plain = on(batch), off(batch)
    assert plain.linearization is None and plain.distance is None
    assert (with_terms.linearization is not None) == linearization
    assert (with_terms.distance is not None) == distance
    N = batch.words.shape[1]
    offset = (torch.arange(N)[:, None] - torch.arange(N)[None, :]).float()  # h - d
    expected = plain.arc.clone()
    if linearization:
        expected += F.logsigmoid(with_terms.linearization * torch.sign(offset))
    if distance:
        expected -= torch.log1p((offset.abs() - 1 - F.softplus(with_terms.distance)) ** 2 / 2)
    torch.testing.assert_close(with_terms.arc, expected)
    torch.testing.assert_close(with_terms.rel, plain.rel)


def test_auxiliary_terms_are_detached(make_scorer, batch):
    """The auxiliary scorers learn from their own losses only, not through the arc scores."""
    scorer = make_scorer(None).train()
    scorer(batch).arc.sum().backward()
    for module in (scorer.linearization, scorer.distance):
        assert all(p.grad is None for p in module.parameters())
    assert scorer.arc.weight.grad.abs().sum() > 0


def test_word_dropout(make_scorer, batch):
    """Word dropout 1 in training is the eval output with every word id <unk> (ROOT kept)."""
    flags = {name: name == "use_words" for name in ONLY if name != "encoder"}
    scorer = make_scorer(None, context={"word_dropout": 1.0, **flags})
    unknown = replace(batch, words=batch.words.masked_fill(batch.mask, UNK_INDEX))
    with torch.no_grad():
        expected = scorer(unknown)
        untouched = scorer(batch)
        trained = scorer.train()(batch)
    assert torch.equal(trained.arc, expected.arc)
    assert not torch.allclose(untouched.arc, expected.arc)


def test_gradient_reaches_the_transformer(make_scorer, make_encoder, batch):
    encoder = make_encoder()
    scorer = make_scorer(encoder).train()
    LocalCrossEntropy()(scorer(batch), batch).loss.backward()
    dead = [
        name
        for name, p in encoder.named_parameters()
        if p.grad is None or not p.grad.abs().sum() > 0
    ]
    assert not dead
    assert all(p.requires_grad for p in encoder.parameters())


def test_biaffine_init_switch(vocabs, small_sizes, batch):
    """Zero biaffine weights (the default) give distance-only arc scores: in every column,
    heads at the same distance on either side tie; ``biaffine_init_std > 0`` breaks the ties."""
    torch.manual_seed(0)
    zero = BiaffineScorer(vocabs=vocabs, encoder=None, **small_sizes()).eval()
    torch.manual_seed(0)
    sizes = small_sizes(biaffine_init_std=0.1)
    drawn = BiaffineScorer(vocabs=vocabs, encoder=None, **sizes).eval()
    biaffines = [zero.arc, zero.rel, zero.linearization, zero.distance]
    assert all(not b.weight.any() for b in biaffines)
    for b in (drawn.arc, drawn.rel, drawn.linearization, drawn.distance):
        assert 0.05 < b.weight.std().item() < 0.2
    d = 3  # a word with words at distance 1 and 2 on both sides
    assert int(batch.lengths.min()) >= d + 2
    with torch.no_grad():
        arc_zero, arc_drawn = zero(batch).arc, drawn(batch).arc
    assert torch.equal(arc_zero[:, d - 1, d], arc_zero[:, d + 1, d])
    assert torch.equal(arc_zero[:, d - 2, d], arc_zero[:, d + 2, d])
    assert not torch.equal(arc_drawn[:, d - 1, d], arc_drawn[:, d + 1, d])


@pytest.mark.parametrize(
    "loss",
    [
        LocalCrossEntropy(),
        StructuredHinge("bock", margin=1.0, single_root=True),
        StructuredHinge("cle", margin=1.0, single_root=True, canonical_ties=True),
        TreeCRF(single_root=True),
    ],
    ids=["local-ce", "hinge-bock", "hinge-cle-canonical", "crf"],
)
def test_losses_read_the_relations_at_the_gold_heads_as_all_pairs_gave(
    loss, make_scorer, batch, same_as_all_pairs
):
    """Training scores relations at the gold heads alone; on fixed float32 weights, with dropout
    (the same draws), every loss and every parameter's gradient equal the former path's (all
    pairs scored, the gold ones gathered) within float rounding (``same_as_all_pairs``)."""
    scorer = make_scorer(None, context={"dropout": 0.3}).train()
    out = same_as_all_pairs(scorer, loss, batch)
    assert out.rel > 0 and out.grads.keys() == {n for n, _ in scorer.named_parameters()}
