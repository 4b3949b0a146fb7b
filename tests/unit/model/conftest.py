"""Shared pieces of the model tests: real batches of the shipped sample, small scorers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from bockparse.compat import nested_params
from bockparse.data import Collator, ParserDataset, Vocabs, read_conllu
from bockparse.data.subwords import WordPieces
from bockparse.heads.biaffine import BiaffineScorer
from bockparse.model.biaffine import DeepBiaffine
from bockparse.model.encoder import TransformerEncoder

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "ud-english-ewt-sample" / "en_ewt-ud-train.conllu"
CONF = ROOT / "conf"

# Small sizes for fast tests; every input on.
SMALL = dict(
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
    arc_hidden=10,
    rel_hidden=6,
    linearization=True,
    distance=True,
    aux_hidden=6,
    biaffine_init_std=0.0,
)


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
def small_sizes():
    """Constructor arguments of a small scorer with every input on (no dropout)."""
    return dict(SMALL)


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
def make_scorer(vocabs):
    """``make_scorer(encoder, **overrides)``: a small scorer in eval mode, seeded, its biaffine
    weights random (they start at zero, which would hide how scores depend on the inputs)."""

    def make(encoder, seed: int = 0, **overrides) -> BiaffineScorer:
        torch.manual_seed(seed)
        scorer = BiaffineScorer(
            vocabs=vocabs, encoder=encoder, **nested_params({**SMALL, **overrides})
        )
        for module in scorer.modules():
            if isinstance(module, DeepBiaffine):
                torch.nn.init.normal_(module.weight, std=0.5)
        return scorer.eval()

    return make
