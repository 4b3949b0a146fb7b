"""Fixtures shared by the unit tests: small parser heads (the model and transition tests) and
their former all-pairs relation path, the CoNLL 2018 evaluator's counts (udtools, a dev
dependency: tests only) and prediction files whose tags differ from the gold ones (the metric
and parser tests)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from bockparse.metrics import PUNCT_EXCLUSIONS

# Small sizes for fast tests, every input on, no dropout: the Contextualizer's (a head's
# ``context``, model.context) and the biaffines' on its states.
SMALL_CONTEXT = dict(
    use_words=True,
    word_dim=8,
    word_dropout=0.0,
    use_chars=True,
    char_dim=6,
    char_hidden=8,
    use_upos=True,
    use_xpos=True,
    use_feats=True,
    tag_dim=4,
    lstm_hidden=12,
    lstm_layers=2,
    dropout=0.0,
)
SMALL_BIAFFINES = dict(arc_hidden=10, rel_hidden=6, aux_hidden=6, biaffine_init_std=0.0)


@pytest.fixture(scope="session")
def small_head() -> Callable[..., dict]:
    """``small_head(context=None, **own)``: a small parser head's keyword arguments (but
    ``vocabs`` and ``encoder``) in the model's layout: :data:`SMALL_CONTEXT` updated by
    ``context`` under ``context``, :data:`SMALL_BIAFFINES` updated by the head's ``own``."""

    def arguments(context: dict | None = None, **own) -> dict:
        return {**SMALL_BIAFFINES, **own, "context": {**SMALL_CONTEXT, **(context or {})}}

    return arguments


@pytest.fixture
def same_as_all_pairs(monkeypatch) -> Callable:
    """``same_as_all_pairs(head, loss, batch) -> LossOutput``: one training step of ``head`` (in
    training mode, its dropout drawn from one seed) with ``loss``; then the same step with the
    former relation path (``head.rel`` scores every pair, then gathers the gold heads'). Asserts
    that the loss, its relation term and every parameter's gradient equal the former path's
    within float rounding (float32), the other terms identical; returns the first step's
    output (its ``grads``: parameter name -> gradient)."""
    import torch

    def step(head, loss, batch):
        head.zero_grad(set_to_none=True)
        torch.manual_seed(3)
        out = loss(head(batch), batch)
        out.loss.backward()
        out.grads = {n: p.grad for n, p in head.named_parameters() if p.grad is not None}
        return out

    def check(head, loss, batch):
        gold = step(head, loss, batch)

        def gathered(u, v, heads):
            rel = head.rel.pairs(u, v)  # [B, N, N, R]
            index = heads.clamp(min=0)[:, None, :, None].expand(-1, 1, -1, rel.shape[-1])
            return rel.gather(1, index).squeeze(1)  # [B, N, R]

        with monkeypatch.context() as patch:
            patch.setattr(head.rel, "pairs_at", gathered)
            former = step(head, loss, batch)
        torch.testing.assert_close(gold.loss, former.loss, rtol=1e-6, atol=0)
        torch.testing.assert_close(gold.rel, former.rel, rtol=1e-6, atol=0)
        assert torch.equal(gold.arc, former.arc) and torch.equal(gold.aux, former.aux)
        assert gold.grads.keys() == former.grads.keys()
        for name, grad in gold.grads.items():
            torch.testing.assert_close(grad, former.grads[name], rtol=1e-5, atol=1e-7, msg=name)
        return gold

    return check


# Replacements for a word's FEATS: each either changes what UFeats compares or only what it
# ignores (language-specific and layered features, the order of the pairs).
_FEATS_EDITS: list[Callable[[str], str]] = [
    lambda f: "_" if f != "_" else "Number=Sing",  # every universal feature, or one more
    lambda f: "|".join(reversed(f.split("|"))),  # order only: same UFeats
    lambda f: "Typo=Yes" if f == "_" else f + "|Typo=Yes",  # not universal: same UFeats
    lambda f: "Number[psor]=Plur" if f == "_" else f + "|Number[psor]=Plur",  # layered: same
    lambda f: f.replace("Sing", "Plur"),  # a universal value (where there is one)
]


@pytest.fixture(scope="session")
def perturb_tags() -> Callable[[Path, Path, int], None]:
    """``perturb_tags(source, target, seed)``: ``source`` copied to ``target`` with some UPOS,
    XPOS and FEATS changed (:data:`_FEATS_EDITS`), everything else kept."""

    def perturb(source: Path, target: Path, seed: int) -> None:
        rng = random.Random(seed)
        upos = ["NOUN", "VERB", "ADJ", "PUNCT", "X"]
        lines = []
        for line in source.read_text(encoding="utf-8").split("\n"):
            cols = line.split("\t")
            if len(cols) == 10 and cols[0].isdigit():
                if rng.random() < 0.1:
                    cols[3] = rng.choice(upos)
                if rng.random() < 0.1:
                    cols[4] = cols[4] + "x"
                if rng.random() < 0.3:
                    cols[5] = rng.choice(_FEATS_EDITS)(cols[5])
            lines.append("\t".join(cols))
        target.write_text("\n".join(lines), encoding="utf-8")

    return perturb


@pytest.fixture(scope="session")
def conll2018() -> Callable[..., dict[str, int]]:
    """``conll2018(gold, pred, exclude_punct=None)``: the CoNLL 2018 evaluator's counts of a
    prediction file, named as :mod:`bockparse.metrics` names them: ``words``, ``right_upos``,
    ``right_xpos``, ``right_ufeats``, ``right_alltags``, and with every word scored also
    ``heads`` and ``labels`` (UAS and LAS). With an exclusion, the gold punctuation words (and
    their counterparts) are taken out of both files' words before the evaluator aligns and
    scores them: right for the tag scores; attachment is not compared then (a word whose head
    is taken out could no longer be matched)."""
    udeval = pytest.importorskip("udtools.udeval")
    columns = {"upos": udeval.UPOS, "xpos": udeval.XPOS}

    def counts(gold: Path, pred: Path, exclude_punct: str | None = None) -> dict[str, int]:
        g, p = udeval.load_conllu_file(str(gold)), udeval.load_conllu_file(str(pred))
        if exclude_punct is not None:
            column, tags = PUNCT_EXCLUSIONS[exclude_punct]
            keep = [w.columns[columns[column]] not in tags for w in g.words]
            g.words = [w for w, k in zip(g.words, keep, strict=True) if k]
            p.words = [w for w, k in zip(p.words, keep, strict=True) if k]
        result = udeval.evaluate(g, p)
        assert result["Words"].correct == result["Words"].gold_total  # gold tokenisation
        found = {"words": result["Words"].gold_total}
        for name, key in (("upos", "UPOS"), ("xpos", "XPOS"), ("ufeats", "UFeats"),
                          ("alltags", "AllTags")):  # fmt: skip
            found[f"right_{name}"] = result[key].correct
        if exclude_punct is None:
            found["heads"], found["labels"] = result["UAS"].correct, result["LAS"].correct
        return found

    return counts
