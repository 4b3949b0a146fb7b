"""What a ``Parser`` accepts and what it refuses, on untrained parsers (random weights): the
trees must be valid whatever the scores, and bad input must fail clearly, writing nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bockparse.cli.parser import predict as predict_cli
from bockparse.data import DataError, check_conllu, parse_conllu, read_conllu, write_conllu
from bockparse.decoders import DECODERS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "conllu"
NOTAGS = "model=biaffine-notags"


def assert_tree(sentence) -> None:
    """One word on ROOT, heads in range, no cycle (``check_conllu``'s tree checks)."""
    n = len(sentence)
    heads = np.asarray(sentence.heads)
    assert len(heads) == n and ((heads >= 0) & (heads <= n)).all()
    assert (heads == 0).sum() == 1
    for d in range(1, n + 1):  # every word reaches ROOT within n steps
        h, steps = d, 0
        while h != 0:
            h, steps = int(heads[h - 1]), steps + 1
            assert steps <= n, f"cycle through word {d}"
    assert all(r != "_" for r in sentence.rels)


def blank_trees(source: Path, target: Path) -> None:
    """``source`` with HEAD and DEPREL ``_`` on every word line (text nobody has parsed)."""
    lines = []
    for line in source.read_text(encoding="utf-8").split("\n"):
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            cols[6] = cols[7] = "_"
        lines.append("\t".join(cols))
    target.write_text("\n".join(lines), encoding="utf-8")


def test_unparsed_reading_ignores_head_and_deprel_and_checks_the_rest(tmp_path):
    blank = tmp_path / "blank.conllu"
    blank_trees(FIXTURES / "valid" / "basic.conllu", blank)
    with pytest.raises(DataError, match="HEAD '_' is not an integer"):
        read_conllu(blank, single_root=True, on_malformed="error")  # training data: refused
    sentences = read_conllu(blank, single_root=True, on_malformed="error", trees=False)
    assert sentences and all(set(s.heads) == {-1} and set(s.rels) == {"_"} for s in sentences)
    # filled HEAD/DEPREL are ignored, even a cycle; other problems are still found
    cycle = FIXTURES / "malformed" / "cycle.conllu"
    assert read_conllu(cycle, single_root=True, on_malformed="error", trees=False)
    wrong = FIXTURES / "malformed" / "wrong_columns.conllu"
    sentences, _ = parse_conllu(wrong, single_root=True, trees=False)
    assert [str(p) for s in sentences for p in s.problems] == [
        str(p) for p in check_conllu(wrong, single_root=True)
    ]


def test_conllu_input_keeps_every_other_byte(untrained, tmp_path):
    parser = untrained(NOTAGS)
    source = FIXTURES / "valid" / "mwt_empty_nodes.conllu"
    blank = tmp_path / "blank.conllu"
    blank_trees(source, blank)
    out = tmp_path / "out.conllu"
    for data in (blank, source):  # HEAD/DEPREL _ or filled: the same output
        parsed = parser.predict(data)
        write_conllu(out, parsed)
        assert check_conllu(out, single_root=True) == []
        for got, given in zip(out.read_text().split("\n"), source.read_text().split("\n"),
                              strict=True):  # fmt: skip
            g, s = got.split("\t"), given.split("\t")
            if len(s) == 10 and s[0].isdigit():
                assert g[:6] + g[8:] == s[:6] + s[8:]
            else:  # comments, multiword tokens, empty nodes, blank lines
                assert got == given
        for sentence in parsed:
            assert_tree(sentence)


def test_unknown_words_unseen_characters_one_word_and_every_decoder(untrained):
    parser = untrained(NOTAGS)
    sentences = [
        ["Zxqvbnm", "flibbertigibbets", "🦜🦜", "語言", "Ελληνικά", "مرحبا", "🙂"],
        ["Hi"],
        ["\u200b", "x"],  # a zero-width space: no wordpiece, gets [UNK]
    ]
    assert "🦜" not in parser.vocabs.chars and "Zxqvbnm" not in parser.vocabs.words
    for decoder in sorted(set(DECODERS) - {"brute"}):
        parsed = parser.predict(sentences, decoder=decoder)
        assert [s.forms for s in parsed] == sentences
        for s in parsed:
            assert_tree(s)
        assert parsed[1].heads == [0]
    with pytest.raises(ValueError, match="known"):
        parser.predict(sentences, decoder="no-such-decoder")


def test_a_400_word_sentence_spans_many_windows_and_every_word_is_parsed(untrained):
    parser = untrained(NOTAGS)
    words = [f"word{i % 37}" for i in range(400)]
    pieces = sum(len(p) for p in parser.wordpieces.pieces(words))
    assert len(parser.wordpieces.windows(pieces)) > 20  # max_length 32: far past one window
    (parsed,) = parser.predict([words], batch_size=50)  # longer than a batch: a batch alone
    assert len(parsed.heads) == 400
    assert_tree(parsed)
    # never truncated: every piece of every word goes through the encoder, in some window
    (batch,) = parser.batches(parser.sentences([words]), 50)
    sub = batch.subwords
    encoded = sub.input_ids.flatten()[sub.piece_index[0, 1 : pieces + 1]]
    expected = [i for p in parser.wordpieces.pieces(words) for i in p]
    assert encoded.tolist() == expected and int(sub.piece_mask.sum()) == pieces + 1


def test_pre_tokenized_input_with_tags_and_its_errors(untrained):
    parser = untrained()  # uses UPOS, XPOS and FEATS
    tagged = {"forms": ["Dogs", "bark", "."], "upos": ["NOUN", "VERB", "PUNCT"],
              "xpos": ["NNS", "VBP", "."], "feats": ["Number=Plur", "_", "_"]}  # fmt: skip
    (parsed,) = parser.predict([tagged])
    assert_tree(parsed) and parsed.upos == tagged["upos"]
    with pytest.raises(DataError) as words_only:
        parser.predict([["Dogs", "bark", "."]])
    assert str(words_only.value) == (
        "the input: the model uses UPOS (model.context.use_upos: true), XPOS "
        "(model.context.use_xpos: true), FEATS (model.context.use_feats: true) but the input "
        "has no UPOS, XPOS, FEATS (_ on every word): give UPOS, XPOS, FEATS (CoNLL-U column "
        "4, 5, 6, or 'upos', 'xpos', 'feats' in each pre-tokenized sentence), or use a model "
        "that tags its input or reads words only: trained with a joint tagger (bockparse-train "
        "model=biaffine-tagger ..., or +model/tagger=mlp with any model) or without tag inputs "
        "(model=biaffine-notags, or model/context=notags with any model)"
    )
    with pytest.raises(DataError, match=r"has no XPOS \(_ on every word\): give XPOS \(CoNLL"):
        parser.predict([{**tagged, "xpos": ["_", "_", "_"]}])
    for bad, message in (
        (["Dogs", "bark"], "sentence 0: a str"),
        ([["Dogs", ""]], "sentence 0, word 2: FORM ''"),
        ([["Dogs", "b\tark"]], "tabs"),
        ([[]], "sentence 0: no words"),
        ([{"forms": ["a"], "upos": ["X", "Y"]}], "1 words but 2 upos"),
        ([{"words": ["a"]}], "unknown keys"),
    ):
        with pytest.raises(DataError, match=message):
            parser.predict(bad)
    assert parser.predict([]) == []


def test_words_alone_parse_with_a_model_without_tag_inputs_and_raw_text_is_pointed_to_spacy(
    untrained, tmp_path
):
    parser = untrained(NOTAGS)
    (parsed,) = parser.predict([["I", "saw", "it", "."]])
    assert_tree(parsed) and parsed.forms == ["I", "saw", "it", "."]
    for text in ("I saw it.", "x" * 100):
        with pytest.raises(DataError) as raw:
            parser.predict(text)
        message = str(raw.value)
        assert message.startswith(repr(text[:57] + "..." if len(text) > 60 else text))
        assert "is no file" in message and "bockparse-predict MODEL --text" in message
        assert "nlp.add_pipe('bockparse'" in message and "bockparse[spacy]" in message
    with pytest.raises(DataError, match="cannot read file"):  # a path: a missing file
        parser.predict(tmp_path / "missing.conllu")


def test_a_progress_bar_when_asked_and_none_otherwise(untrained, capsys):
    parser = untrained(NOTAGS)
    words = [["Dogs", "bark", "."], ["Hi"]]
    parser.predict(words, progress=True)
    assert "2/2" in capsys.readouterr().err
    for quiet in (False, None):  # None: standard error is no terminal under pytest
        parser.predict(words, progress=quiet)
        assert capsys.readouterr().err == ""
    seen = []
    parser.predict(words, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (2, 2)


def test_a_tagged_model_names_the_missing_conllu_column(untrained, tmp_path):
    parser = untrained()
    plain = tmp_path / "plain.conllu"
    lines = [f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_" for i, w in enumerate(["Dogs", "bark"], 1)]
    plain.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{plain}: the model uses UPOS .*CoNLL-U column 4, 5, 6"):
        parser.predict(plain)
    assert len(untrained(NOTAGS).predict(plain)[0].heads) == 2


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [("empty_file", ":1: empty file"), ("wrong_columns", ":12: wrong number of columns")],
)
def test_cli_writes_nothing_for_an_empty_or_malformed_file(
    smoke_run, tmp_path, capsys, fixture, reason
):
    source = FIXTURES / "malformed" / f"{fixture}.conllu"
    out = tmp_path / "out.conllu"
    assert predict_cli([str(smoke_run), str(source), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{source}{reason}" in err and err.startswith("bockparse-predict: ")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_transition_parser_predicts_its_own_trees_and_takes_no_decoder(untrained):
    parser = untrained("condition=arc-standard", "model/context=notags")
    assert parser.decoder is None
    parsed = parser.predict([["Dogs", "bark", "at", "night", "."], ["Hi"]])
    for s in parsed:
        assert_tree(s)
    with pytest.raises(ValueError, match="predicts trees itself"):
        parser.predict([["Hi"]], decoder="bock")


def test_long_sentences_are_parsed_whole_with_one_warning(untrained, caplog):
    import logging

    parser = untrained("model=biaffine-notags")
    parser.long_sentence_words = 40
    words = [["w"] * 45, ["x"] * 3, ["y"] * 60]
    with caplog.at_level(logging.WARNING, logger="bockparse.parser"):
        parsed = parser.predict(words)
    [record] = [r for r in caplog.records if r.name == "bockparse.parser"]
    assert "2 sentence(s) longer than 40 words (the longest, 60 words" in record.getMessage()
    assert [len(s.heads) for s in parsed] == [45, 3, 60]
    parser.long_sentence_words = None
    caplog.clear()
    parser.predict(words)
    assert not [r for r in caplog.records if r.name == "bockparse.parser"]
