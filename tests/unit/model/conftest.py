"""Shared pieces of the model tests: real batches of the shipped sample, small scorers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from bockparse.data import Collator, ParserDataset, Vocabs, read_conllu
from bockparse.data.subwords import WordPieces
from bockparse.heads.biaffine import BiaffineScorer
from bockparse.model.biaffine import DeepBiaffine
from bockparse.model.encoder import TransformerEncoder

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "ud-english-ewt-sample" / "en_ewt-ud-train.conllu"
CONF = ROOT / "conf"


def load_encoder_config(name: str, *overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(overrides=[f"+encoder={name}", *overrides]).encoder


@pytest.fixture(scope="session")
def encoder_config():
    """``encoder_config(name, *overrides)``: ``conf/encoder/<name>.yaml`` (with the files it
    inherits) as the ``encoder`` node of a config (so its interpolations resolve)."""
    return load_encoder_config


@pytest.fixture(scope="session")
def sentences():
    """The first 200 sentences of the shipped training sample."""
    return read_conllu(SAMPLE, single_root=True, on_malformed="error")[:200]


@pytest.fixture(scope="session")
def vocabs(sentences):
    return Vocabs.build(sentences, min_word_freq=1)


@pytest.fixture(scope="session")
def tiny_config():
    return load_encoder_config("tiny-random")


@pytest.fixture(scope="session")
def dataset(sentences, vocabs, tiny_config):
    """The sentences tensorised with the tiny encoder's wordpieces and window size."""
    tokenizer = instantiate(tiny_config.tokenizer)
    return ParserDataset(
        sentences,
        vocabs,
        max_word_chars=20,
        punct_field="upos",
        punct_tags=["PUNCT"],
        wordpieces=WordPieces(tokenizer, tiny_config.max_length),
    )


@pytest.fixture(scope="session")
def collate(dataset):
    """``collate(indices) -> Batch`` over ``dataset``."""
    return Collator(dataset)


@pytest.fixture(scope="session")
def small_sizes(small_head):
    """``small_sizes(context=None, **own)``: a small biaffine scorer's arguments with every
    input and Stanza's auxiliary scorers on, no dropout (``small_head``)."""

    def sizes(context: dict | None = None, **own) -> dict:
        return small_head(context, **{"linearization": True, "distance": True, **own})

    return sizes


@pytest.fixture(scope="session")
def make_encoder(tiny_config):
    """``make_encoder(**overrides)``: the tiny-random encoder (``overrides`` of its config),
    seeded."""

    def make(seed: int = 0, **overrides) -> TransformerEncoder:
        torch.manual_seed(seed)
        root = tiny_config._get_root().copy()
        OmegaConf.set_struct(root, False)  # overrides may add constructor arguments
        root = OmegaConf.merge(root, {"encoder": overrides})
        return instantiate(root.encoder.model)

    return make


@pytest.fixture(scope="session")
def make_scorer(vocabs, small_sizes):
    """``make_scorer(encoder, seed=0, context=None, **own)``: a small scorer (``small_sizes``)
    in eval mode, seeded, its biaffine weights random (they start at zero, which would hide how
    scores depend on the inputs)."""

    def make(encoder, seed: int = 0, context: dict | None = None, **own) -> BiaffineScorer:
        torch.manual_seed(seed)
        scorer = BiaffineScorer(vocabs=vocabs, encoder=encoder, **small_sizes(context, **own))
        for module in scorer.modules():
            if isinstance(module, DeepBiaffine):
                torch.nn.init.normal_(module.weight, std=0.5)
        return scorer.eval()

    return make
