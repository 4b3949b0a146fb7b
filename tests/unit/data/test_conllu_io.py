"""CoNLL-U reading, validation messages, malformed-data policies and line-exact writing."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pytest

from bockparse.data import DataError, Problem, check_conllu, read_conllu, write_conllu
from bockparse.data import conllu as conllu_module

# fixture name -> (line, reason); in each file sentence s2 starts at line 8, its words at 10-13
MALFORMED = {
    "wrong_columns": (12, "wrong number of columns: 9 (expected 10, tab-separated)"),
    "spaces_not_tabs": (12, "wrong number of columns: 1 (expected 10, tab-separated)"),
    "empty_column": (12, "empty LEMMA column (use _ for no value)"),
    "id_not_integer": (
        12,
        "ID '3a' is not an integer, a range like 3-4 or an empty node like 5.1",
    ),
    "mwt_bad_range": (
        12,
        "ID '3-2' is not an integer, a range like 3-4 or an empty node like 5.1",
    ),
    "head_not_integer": (12, "HEAD 'two' is not an integer"),
    "id_out_of_order": (12, "word ID 4 out of order: expected 3"),
    "id_gap": (13, "word ID 5 out of order: expected 4"),
    "id_duplicate": (12, "word ID 2 out of order: expected 3"),
    "head_out_of_range": (12, "HEAD 7 out of range 0..4"),
    "head_negative": (12, "HEAD -1 out of range 0..4"),
    "self_loop": (12, "word 3 is its own head"),
    "cycle": (10, "cycle 1 -> 3 -> 1 (word -> head)"),
    "no_root": (10, "no word attaches to ROOT (HEAD 0)"),
    "several_roots": (12, "2 words attach to ROOT (words 2, 3); expected exactly one"),
    "empty_sentence": (8, "empty sentence: no word lines"),
    "extra_blank_line": (8, "empty sentence: extra blank line"),
    "missing_blank_line": (13, "missing blank line after the last sentence"),
    "bad_utf8": (12, "invalid UTF-8 (byte 0xff at column 4)"),
    "duplicate_sent_id": (8, "duplicate sent_id 's1' (first at line 1)"),
    "carriage_return": (12, "carriage return: lines must end with LF only"),
    "control_character": (12, "control character U+001B in DEPREL"),
    "empty_file": (1, "empty file: no sentences"),
    "byte_order_mark": (1, "byte order mark: CoNLL-U is UTF-8 without BOM"),
}
FILE_LEVEL = {"extra_blank_line", "missing_blank_line", "empty_file", "byte_order_mark"}


def read(path: Path, **kwargs):
    options = {"single_root": True, "on_malformed": "error", **kwargs}
    return read_conllu(path, **options)


def test_every_malformed_fixture_has_its_expected_message(fixtures: Path) -> None:
    names = {p.stem for p in (fixtures / "malformed").glob("*.conllu")}
    assert names == set(MALFORMED)
    assert len(names) >= 15


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_file_gives_exactly_its_problem(fixtures: Path, name: str) -> None:
    path = fixtures / "malformed" / f"{name}.conllu"
    line, reason = MALFORMED[name]
    problems = check_conllu(path, single_root=True)
    assert problems == [Problem(str(path), line, reason)]
    assert str(problems[0]) == f"{path}:{line}: {reason}"


@pytest.mark.parametrize("name", sorted(set(MALFORMED) - FILE_LEVEL))
def test_error_mode_raises_with_the_problem_listed(fixtures: Path, name: str) -> None:
    path = fixtures / "malformed" / f"{name}.conllu"
    line, reason = MALFORMED[name]
    with pytest.raises(DataError) as info:
        read(path)
    message = str(info.value)
    assert message.startswith(
        f"{path}: 1 problem(s) (fix the file, or set data.on_malformed=skip to drop"
    )
    assert f"\n{path}:{line}: {reason}" in message
    assert info.value.problems == [Problem(str(path), line, reason)]


def test_error_mode_lists_the_first_problems_and_the_total(fixtures: Path, tmp_path: Path) -> None:
    good = (fixtures / "valid" / "basic.conllu").read_text(encoding="utf-8").split("\n\n")[0]
    bad = good.replace("# sent_id = s1\n", "").replace("\t0\troot", "\t2\troot")  # no root
    path = tmp_path / "many.conllu"
    path.write_text((bad + "\n\n") * 25, encoding="utf-8")
    with pytest.raises(DataError) as info:
        read(path)
    lines = str(info.value).split("\n")
    assert lines[0].startswith(f"{path}: 25 problem(s) (")
    assert len(lines) == 1 + conllu_module.MAX_LISTED + 1
    assert lines[-1] == "... and 5 more"


@pytest.mark.parametrize("name", sorted(FILE_LEVEL - {"empty_file"}))
def test_error_mode_stops_on_file_level_problems_too(fixtures: Path, name: str) -> None:
    path = fixtures / "malformed" / f"{name}.conllu"
    line, reason = MALFORMED[name]
    with pytest.raises(DataError, match=f"\n{re.escape(str(path))}:{line}: {re.escape(reason)}$"):
        read(path)


def test_skip_mode_drops_bad_sentences_and_logs_each_and_the_total(
    fixtures: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = fixtures / "malformed" / "several_roots.conllu"
    with caplog.at_level(logging.WARNING, logger="bockparse.data.conllu"):
        sentences = read(path, on_malformed="skip")
    assert [s.sent_id for s in sentences] == ["s1"]
    assert caplog.messages == [
        f"{path}:12: 2 words attach to ROOT (words 2, 3); expected exactly one "
        "(sentence at line 8 dropped)",
        f"{path}: dropped 1 of 2 sentences (4 words) with problems (on_malformed: skip)",
    ]


def test_skip_mode_counts_words_of_unreadable_sentences(
    fixtures: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = fixtures / "malformed" / "wrong_columns.conllu"
    with caplog.at_level(logging.WARNING, logger="bockparse.data.conllu"):
        assert len(read(path, on_malformed="skip")) == 1
    assert caplog.messages[-1].endswith(
        "dropped 1 of 2 sentences (4 words) with problems (on_malformed: skip)"
    )


def test_skip_mode_keeps_sentences_on_blank_line_problems(
    fixtures: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = fixtures / "malformed" / "missing_blank_line.conllu"
    with caplog.at_level(logging.WARNING, logger="bockparse.data.conllu"):
        sentences = read(path, on_malformed="skip")
    assert [s.sent_id for s in sentences] == ["s1", "s2"]
    assert caplog.messages == [f"{path}:13: missing blank line after the last sentence"]


def test_skip_mode_with_no_valid_sentence_left_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.conllu"
    path.write_text("1\tA\ta\tX\tX\t_\t1\tdep\t_\t_\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.conllu: no valid sentence$"):
        read(path, on_malformed="skip")


def test_single_root_check_can_be_turned_off(fixtures: Path) -> None:
    path = fixtures / "malformed" / "several_roots.conllu"
    assert check_conllu(path, single_root=False) == []
    sentences = read(path, single_root=False)
    assert sentences[1].heads == [2, 0, 0, 2]
    # a sentence with no root child is never a tree
    assert len(check_conllu(fixtures / "malformed" / "no_root.conllu", single_root=False)) == 1


def test_unreadable_file_and_bad_policy_are_clear_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.conllu"
    with pytest.raises(DataError, match=r"missing\.conllu: cannot read file \(No such file"):
        read(missing)
    with pytest.raises(DataError, match="on_malformed must be 'error' or 'skip', got 'drop'"):
        read(missing, on_malformed="drop")


@pytest.mark.parametrize("name", ["basic", "mwt_empty_nodes"])
def test_round_trip_is_byte_exact(fixtures: Path, tmp_path: Path, name: str) -> None:
    path = fixtures / "valid" / f"{name}.conllu"
    out = tmp_path / "out.conllu"
    write_conllu(out, read(path))
    assert out.read_bytes() == path.read_bytes()


def test_multiword_tokens_and_empty_nodes_are_kept_but_not_parsed(fixtures: Path) -> None:
    mwt, empty, nonprojective = read(fixtures / "valid" / "mwt_empty_nodes.conllu")
    assert mwt.forms == ["I", "do", "n't", "know", "."]
    assert mwt.heads == [4, 4, 4, 0, 4]
    assert mwt.rels == ["nsubj", "aux", "advmod", "root", "punct"]
    assert mwt.upos == ["PRON", "AUX", "PART", "VERB", "PUNCT"]
    assert mwt.feats[3] == "VerbForm=Inf"
    assert mwt.lemmas[2] == "not"
    assert mwt.sent_id == "mwt-1"
    assert mwt.lines[5].startswith("2-3\tdon't")  # kept for writing
    assert empty.forms == ["Mary", "likes", "tea", "and", "John", "coffee", "."]
    assert empty.heads == [2, 0, 2, 5, 2, 5, 2]
    assert any(line.startswith("5.1\t") for line in empty.lines)
    assert nonprojective.heads[1] == 4 and nonprojective.heads[6] == 2


def test_writing_predictions_replaces_only_head_and_deprel(fixtures: Path, tmp_path: Path) -> None:
    path = fixtures / "valid" / "mwt_empty_nodes.conllu"
    sentences = read(path)
    heads = [list(range(len(s))) for s in sentences]  # a chain from ROOT
    rels = [[f"rel{i}" for i in range(len(s))] for s in sentences]
    out = tmp_path / "pred.conllu"
    write_conllu(out, sentences, heads, rels)
    gold_lines = path.read_text(encoding="utf-8").split("\n")
    pred_lines = out.read_text(encoding="utf-8").split("\n")
    assert len(pred_lines) == len(gold_lines)
    changed = 0
    for gold, pred in zip(gold_lines, pred_lines, strict=True):
        gold_cols, pred_cols = gold.split("\t"), pred.split("\t")
        if len(gold_cols) == 10 and gold_cols[0].isdigit():
            assert pred_cols[:6] + pred_cols[8:] == gold_cols[:6] + gold_cols[8:]
            assert pred_cols[7].startswith("rel")
            changed += 1
        else:  # comments, blank lines, MWT lines, empty nodes
            assert pred == gold
    assert changed == sum(len(s) for s in sentences)
    assert read(out, single_root=True)[0].heads == [0, 1, 2, 3, 4]


def test_writing_a_taggers_tags_replaces_only_their_columns(fixtures: Path, tmp_path: Path) -> None:
    path = fixtures / "valid" / "mwt_empty_nodes.conllu"
    sentences = read(path)
    tags = [{"upos": ["X"] * len(s), "feats": [f"N={i}" for i in range(len(s))]}
            for s in sentences]  # fmt: skip
    out = tmp_path / "tagged.conllu"
    write_conllu(out, sentences, tags=tags)
    for gold, pred in zip(path.read_text(encoding="utf-8").split("\n"),
                          out.read_text(encoding="utf-8").split("\n"), strict=True):  # fmt: skip
        gold_cols, pred_cols = gold.split("\t"), pred.split("\t")
        if len(gold_cols) == 10 and gold_cols[0].isdigit():
            kept = (0, 1, 2, 4, 6, 7, 8, 9)  # every column but UPOS and FEATS
            assert [pred_cols[k] for k in kept] == [gold_cols[k] for k in kept]
            assert pred_cols[3] == "X" and pred_cols[5].startswith("N=")
        else:
            assert pred == gold
    with pytest.raises(DataError, match=re.escape("UPOS 'A\\tB' holds the control character")):
        write_conllu(out, sentences, tags=[{"upos": ["A\tB"] * len(s)} for s in sentences])
    with pytest.raises(ValueError, match=r"unknown tag fields \['lemmas'\]"):
        write_conllu(out, sentences, tags=[{"lemmas": ["x"] * len(s)} for s in sentences])
    with pytest.raises(ValueError, match=r"upos: expected \d+ values"):
        write_conllu(out, sentences, tags=[{"upos": ["X"]} for _ in sentences])


def test_write_checks_lengths(fixtures: Path, tmp_path: Path) -> None:
    sentences = read(fixtures / "valid" / "basic.conllu")
    with pytest.raises(ValueError, match="heads: expected 4 values for the sentence at line 1"):
        write_conllu(tmp_path / "x.conllu", sentences, [[0, 1], [0, 1, 2, 3]])
    with pytest.raises(ValueError, match="rels: expected 2 sentences, got 1"):
        write_conllu(tmp_path / "x.conllu", sentences, rels=[["a"] * 4])
    assert not list(tmp_path.iterdir())


def test_write_is_atomic(fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sentences = read(fixtures / "valid" / "basic.conllu")
    out = tmp_path / "out.conllu"
    out.write_text("previous\n", encoding="utf-8")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_conllu(out, sentences)
    assert out.read_text(encoding="utf-8") == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.conllu"]  # no temporary file left
    monkeypatch.undo()
    write_conllu(out, sentences)
    assert out.read_bytes() == (fixtures / "valid" / "basic.conllu").read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["out.conllu"]


def test_a_reader_without_a_skip_option_only_says_to_fix_the_file(fixtures: Path) -> None:
    path = fixtures / "malformed" / f"{sorted(set(MALFORMED) - FILE_LEVEL)[0]}.conllu"
    with pytest.raises(DataError) as info:
        read_conllu(path, single_root=True, on_malformed="error", skip_option=None)
    assert str(info.value).startswith(f"{path}: 1 problem(s) (fix the file):")
    assert "on_malformed" not in str(info.value)


@pytest.mark.parametrize(
    "label", ["nsubj\n1\tinjected\t_", "a\tb", "a\x85b", "a\u2028b", "a\x00", ""]
)
def test_a_label_that_could_inject_lines_or_columns_is_never_written(
    fixtures: Path, tmp_path: Path, label: str
) -> None:
    sentences = read(fixtures / "valid" / "basic.conllu")
    rels = [["det", "nsubj", label, "punct"], ["nsubj", "root", "advmod", "punct"]]
    with pytest.raises(DataError, match=re.escape(f"relation label {label!r}")):
        write_conllu(tmp_path / "out.conllu", sentences, rels=rels)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("char", ["\x0b", "\x0c", "\x1c", "\x7f", "\x85", "\u2028", "\x00"])
def test_every_field_with_a_control_character_is_refused_when_read(
    fixtures: Path, tmp_path: Path, char: str
) -> None:
    text = (fixtures / "valid" / "basic.conllu").read_text(encoding="utf-8")
    path = tmp_path / "bad.conllu"
    path.write_text(text.replace("\tloudly\t", f"\tloud{char}ly\t", 1), encoding="utf-8")
    code = f"U+{ord(char):04X}"
    assert [str(p) for p in check_conllu(path, single_root=True)] == [
        f"{path}:12: control character {code} in FORM"
    ]


def test_dash_reads_standard_input_and_writes_standard_output(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    import io
    import sys

    data = (fixtures / "valid" / "basic.conllu").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    sentences = read("-")
    assert [s.forms[0] for s in sentences] == ["The", "Dogs"]
    write_conllu("-", sentences)
    assert capsysbinary.readouterr().out == data
    assert not Path("-").exists()
    bad = (fixtures / "malformed" / "cycle.conllu").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bad)))
    with pytest.raises(DataError, match=re.escape("<stdin>:10: cycle 1 -> 3 -> 1")):
        read("-")
