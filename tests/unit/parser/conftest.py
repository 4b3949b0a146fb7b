"""Parsers for the ``Parser`` tests: untrained ones built in-process (fast), and real runs of
``bockparse-train experiment=smoke model=biaffine-notags`` (and of a joint tagger model) shared
by every test worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from bockparse.data import Vocabs, read_conllu
from bockparse.data.subwords import WordPieces
from bockparse.parser import Parser, run_settings
from bockparse.training.train import CONF_DIR

REPO = Path(CONF_DIR).parent
SAMPLE = REPO / "data" / "ud-english-ewt-sample"
TRAIN = SAMPLE / "en_ewt-ud-train.conllu"
TEST = SAMPLE / "en_ewt-ud-test.conllu"
# The tag-free smoke model, two updates: enough to have a best.ckpt, metrics.json and
# predictions/test.conllu, in well under a minute.
RUN_OVERRIDES = ("experiment=smoke", "model=biaffine-notags", "optim.max_steps=2",
                 "optim.eval_every=2")  # fmt: skip


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=["experiment=smoke", *overrides])


@pytest.fixture(scope="session")
def untrained():
    """``untrained(*overrides)``: a ``Parser`` with the smoke settings (tiny random encoder,
    ``max_length`` 32 pieces) and random weights, vocabularies from 300 sample sentences."""
    vocabs = Vocabs.build(
        read_conllu(TRAIN, single_root=True, on_malformed="error")[:300], min_word_freq=2
    )

    def build(*overrides: str) -> Parser:
        cfg = composed(*overrides)
        settings = run_settings(cfg)
        encoder = instantiate(cfg.encoder.model)
        scorer = instantiate(cfg.model)(vocabs=vocabs, encoder=encoder)
        wordpieces = WordPieces(instantiate(cfg.encoder.tokenizer), cfg.encoder.max_length)
        return Parser(scorer, vocabs, wordpieces, settings, {}, "cpu")

    return build


def _shared_run(tmp_path_factory, name: str, *overrides: str) -> Path:
    """The folder of a ``bockparse-train`` run with ``RUN_OVERRIDES`` and ``overrides``,
    trained once per test session, whichever worker comes first."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the session's
    run_dir = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not (run_dir / "metrics.json").is_file():
            env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bockparse.training.train",
                    *RUN_OVERRIDES,
                    *overrides,
                    f"hydra.run.dir={run_dir}",
                ],
                cwd=REPO,
                env=env,
                check=True,
                capture_output=True,
            )
    return run_dir


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """The run folder of a real ``bockparse-train`` smoke run of the tag-free model."""
    return _shared_run(tmp_path_factory, "parser-smoke-run")


@pytest.fixture(scope="session")
def smoke_run_bf16(tmp_path_factory) -> Path:
    """The same run trained and evaluated in bf16-mixed (``trainer=cpu-bf16``)."""
    return _shared_run(tmp_path_factory, "parser-smoke-run-bf16", "trainer=cpu-bf16")


@pytest.fixture(scope="session")
def stanza_options_run(tmp_path_factory) -> Path:
    """The smoke run with Stanza 1.15's word vocabulary (cut-off 7, lower-cased) and its
    ``augment_nopunct`` (here 0.5)."""
    return _shared_run(tmp_path_factory, "parser-stanza-options-run", "data.min_word_freq=7",
                       "data.lowercase_words=true", "data.augment_nopunct=0.5")  # fmt: skip


@pytest.fixture(scope="session")
def tagger_run(tmp_path_factory) -> Path:
    """The smoke run of a joint tagger model that reads the tags it predicts (UPOS, XPOS and
    FEATS inputs, ``model=biaffine-tagger``'s settings on the smoke sizes)."""
    return _shared_run(tmp_path_factory, "parser-tagger-run", "model/context=bilstm",
                       "+model/tagger=mlp")  # fmt: skip
