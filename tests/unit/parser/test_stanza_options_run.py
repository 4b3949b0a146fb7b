"""A real ``bockparse-train`` smoke run with Stanza 1.15's word vocabulary (cut-off 7,
lower-cased) and its ``augment_nopunct``: it trains, and its folder, checkpoint and exported
model file look words up lower-cased, as in training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bockparse.cli.parser import export as export_cli
from bockparse.data import UNK_INDEX, Vocabs, read_conllu
from bockparse.parser import Parser

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"
TRAIN, TEST = SAMPLE / "en_ewt-ud-train.conllu", SAMPLE / "en_ewt-ud-test.conllu"


@pytest.mark.slow
def test_a_run_with_stanzas_vocabulary_predicts_with_it_after_export(stanza_options_run, tmp_path):
    config = (stanza_options_run / ".hydra" / "config.yaml").read_text(encoding="utf-8")
    assert "lowercase_words: true" in config and "augment_nopunct: 0.5" in config
    assert json.loads((stanza_options_run / "metrics.json").read_text())["val/las"] >= 0
    exported = tmp_path / "model.pt"
    assert export_cli([str(stanza_options_run), "--out", str(exported)]) == 0
    train = read_conllu(TRAIN, single_root=True, on_malformed="error")
    expected = Vocabs.build(train, min_word_freq=7, lowercase_words=True).words
    for source in (stanza_options_run, stanza_options_run / "checkpoints" / "best.ckpt", exported):
        parser = Parser.load(source)
        assert parser.vocabs.words == expected and parser.vocabs.words.lower
        the = parser.vocabs.words["the"]
        assert the != UNK_INDEX
        [upper] = parser.batches(parser.sentences([["THE", "Dog", "barks"]]))
        [lower] = parser.batches(parser.sentences([["the", "dog", "barks"]]))
        assert upper.words.tolist() == lower.words.tolist()
        assert upper.words[0, 1] == the
    folder, model_file = Parser.load(stanza_options_run), Parser.load(exported)
    assert [s.heads for s in folder.predict(TEST)] == [s.heads for s in model_file.predict(TEST)]
