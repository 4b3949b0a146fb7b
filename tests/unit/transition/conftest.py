"""Shared pieces of the transition tests: the shipped sample, its batches, small parsers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bockparse.data import Collator, ParserDataset, Vocabs, read_conllu
from bockparse.decoders.eisner import is_projective
from bockparse.heads.transition import TransitionParser

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "ud-english-ewt-sample"

# The transition head's own arguments in the tests (its sizes: small_head's).
OWN = dict(projective_only=True, stack_features=3, buffer_features=1)


def gold_heads(sentence) -> np.ndarray:
    return np.asarray([-1, *sentence.heads], dtype=np.int64)


@pytest.fixture(scope="session")
def sample():
    """``sample(part)``: the sentences of the shipped sample's ``part`` file (cached)."""
    cache: dict[str, list] = {}

    def load(part: str):
        if part not in cache:
            path = SAMPLE / f"en_ewt-ud-{part}.conllu"
            cache[part] = read_conllu(path, single_root=True, on_malformed="error")
        return cache[part]

    return load


@pytest.fixture(scope="session")
def sentences(sample):
    """The first 120 training sentences of the sample (some of them non-projective)."""
    return sample("train")[:120]


@pytest.fixture(scope="session")
def vocabs(sentences):
    return Vocabs.build(sentences, min_word_freq=1)


@pytest.fixture(scope="session")
def collate(sentences, vocabs):
    """``collate(indices) -> Batch`` over ``sentences`` (no wordpieces)."""
    dataset = ParserDataset(
        sentences, vocabs, max_word_chars=20, punct_field="upos", punct_tags=["PUNCT"],
        wordpieces=None,
    )  # fmt: skip
    return Collator(dataset)


@pytest.fixture(scope="session")
def projective_ids(sentences):
    return [i for i, s in enumerate(sentences) if is_projective(gold_heads(s))]


@pytest.fixture(scope="session")
def nonprojective_ids(sentences):
    ids = [i for i, s in enumerate(sentences) if not is_projective(gold_heads(s))]
    assert ids, "the fixture needs a non-projective sentence"
    return ids


@pytest.fixture(scope="session")
def make_parser(vocabs, small_head):
    """``make_parser(system, seed=0, context=None, **own)``: a small parser (``small_head``,
    :data:`OWN`) in eval mode, seeded, its relation biaffine random (it starts at zero)."""

    def make(system: str, seed: int = 0, context: dict | None = None, **own) -> TransitionParser:
        torch.manual_seed(seed)
        arguments = small_head(context, system=system, **{**OWN, **own})
        parser = TransitionParser(vocabs=vocabs, encoder=None, **arguments)
        torch.nn.init.normal_(parser.rel.weight, std=0.5)
        return parser.eval()

    return make
