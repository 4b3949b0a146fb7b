"""What the command-line tools read and write: ``-`` is standard input or output for every
command that reads or writes CoNLL-U (everything else they print then goes to standard error);
an output inside a run folder being read, a FIFO or a device is refused before any work; a
model that never saw a file's labels or tags says so in one line (issues 49 and 50)."""

from __future__ import annotations

import io
import logging
import os
import sys
from pathlib import Path

import pytest
import torch

from bockparse.cli.data import check as check_cli
from bockparse.cli.metrics import eval_files as eval_cli
from bockparse.cli.parser import evaluate as evaluate_cli
from bockparse.cli.parser import export as export_cli
from bockparse.cli.parser import predict as predict_cli
from bockparse.parser import Parser

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"
TEST = SAMPLE / "en_ewt-ud-test.conllu"
NOTAGS = "model=biaffine-notags"


def _first(path: Path, sentences: int, *, relabel: str | None = None, upos: str | None = None):
    """The first ``sentences`` of the sample's test file written to ``path``, their DEPREL or
    UPOS replaced by another treebank's stand-ins when asked."""
    blocks = TEST.read_text(encoding="utf-8").split("\n\n")[:sentences]
    lines = []
    for line in "\n\n".join(blocks).split("\n"):
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            cols[7] = relabel or cols[7]
            cols[3] = upos or cols[3]
        lines.append("\t".join(cols))
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def model_file(untrained, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.pt"
    untrained(NOTAGS).save(path)
    return path


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_predict_reads_standard_input_and_writes_standard_output(
    model_file, tmp_path, monkeypatch, capsysbinary
):
    data = _first(tmp_path / "in.conllu", 12)
    out = tmp_path / "out.conllu"
    assert predict_cli([str(model_file), str(data), "--out", str(out)]) == 0
    capsysbinary.readouterr()
    assert predict_cli([str(model_file), str(data), "--out", "-"]) == 0
    captured = capsysbinary.readouterr()
    assert captured.out == out.read_bytes()  # only the CoNLL-U on standard output
    assert b"12 sentences" in captured.err and b"-> -" in captured.err
    _stdin(monkeypatch, data.read_bytes())
    assert predict_cli([str(model_file), "-", "--out", "-"]) == 0
    assert capsysbinary.readouterr().out == out.read_bytes()
    assert not Path("-").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "in.conllu",
        "out.conllu",
    ]
    _stdin(monkeypatch, b"1\tword\n")
    assert predict_cli([str(model_file), "-", "--out", "-"]) == 1
    assert "<stdin>:1: wrong number of columns" in capsysbinary.readouterr().err.decode()


def test_evaluate_eval_and_check_read_standard_input(model_file, tmp_path, monkeypatch, capsys):
    gold = _first(tmp_path / "gold.conllu", 12)
    assert evaluate_cli([str(model_file), str(gold)]) == 0
    from_file = capsys.readouterr().out
    _stdin(monkeypatch, gold.read_bytes())
    assert evaluate_cli([str(model_file), "-"]) == 0
    assert capsys.readouterr().out == from_file

    assert eval_cli([str(gold), str(gold)]) == 0
    same = capsys.readouterr().out
    _stdin(monkeypatch, gold.read_bytes())
    assert eval_cli(["-", str(gold)]) == 0
    assert capsys.readouterr().out == same and same.startswith("UAS 100.00  LAS 100.00")
    assert eval_cli(["-", "-"]) == 1
    assert _line(capsys) == (
        "bockparse-eval: the gold and the predicted file cannot both be standard input (-)"
    )

    _stdin(monkeypatch, gold.read_bytes())
    assert check_cli(["-"]) == 0
    assert capsys.readouterr().out == "<stdin>: OK\n"
    with pytest.raises(SystemExit):
        check_cli(["-", "-"])


def test_the_device_is_checked_in_one_line(model_file, tmp_path, capsys):
    with pytest.raises(ValueError, match="unknown device 'gpu0'"):
        Parser.load(model_file, device="gpu0")
    gold = _first(tmp_path / "gold.conllu", 3)
    assert evaluate_cli([str(model_file), str(gold), "--device", "gpu0"]) == 1
    assert _line(capsys).startswith("bockparse-evaluate: unknown device 'gpu0'")
    assert predict_cli([str(model_file), str(gold), "--out", "-", "--device", "cpu"]) == 0
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device 'cuda': no CUDA device is available here"):
            Parser.load(model_file, device="cuda")


@pytest.fixture
def never_loaded(monkeypatch):
    """Fails the test if a model is loaded (the output was to be refused first)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(Parser, "load", refuse)


def _run_folder(path: Path) -> Path:
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "config.yaml").write_text("seed: 1\n", encoding="utf-8")
    (path / "checkpoints").mkdir()
    (path / "checkpoints" / "best.ckpt").write_bytes(b"weights")
    (path / "predictions").mkdir()
    return path


def test_an_output_inside_the_run_read_is_refused_before_any_work(tmp_path, capsys, never_loaded):
    run = _run_folder(tmp_path / "run")
    best = run / "checkpoints" / "best.ckpt"
    data = _first(tmp_path / "in.conllu", 3)
    cases = [
        (export_cli, [str(run), "--out", str(best)], run),
        (export_cli, [str(best), "--out", str(run / "model.pt")], best),
        (export_cli, [str(run), "--out", str(run / "checkpoints" / ".." / "x.pt")], run),
        (predict_cli, [str(best), str(data), "--out", str(run / "predictions" / "t.conllu")], best),
        (predict_cli, [str(run), str(data), "--out", str(run / "test.conllu")], run),
    ]
    (tmp_path / "link").symlink_to(run)  # another spelling of the same folder
    cases.append((export_cli, [str(run), "--out", str(tmp_path / "link" / "m.pt")], run))
    for command, argv, given in cases:
        assert command(argv) == 1
        line = _line(capsys)
        assert f"is inside the run folder {run}" in line and str(given) in line, line
        assert argv[argv.index("--out") + 1] in line and line.endswith("write outside it")
    assert best.read_bytes() == b"weights"
    assert sorted(p.name for p in run.rglob("*")) == [
        ".hydra",
        "best.ckpt",
        "checkpoints",
        "config.yaml",
        "predictions",
    ]


def test_a_fifo_or_a_device_output_is_refused_before_any_work(tmp_path, capsys, never_loaded):
    data = _first(tmp_path / "in.conllu", 3)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "null").symlink_to("/dev/null")
    for name, what in (("fifo", "a FIFO"), ("null", "a symlink to a character device")):
        out = tmp_path / name
        assert predict_cli(["model.pt", str(data), "--out", str(out)]) == 1
        assert _line(capsys).startswith(f"bockparse-predict: cannot write {out}: it is {what}")
        assert export_cli(["run", "--out", str(out)]) == 1
        assert _line(capsys).startswith(f"bockparse-export: cannot write {out}: it is {what}")
    assert os.path.realpath(tmp_path / "null") == "/dev/null"
    assert export_cli(["run", "--out", "-"]) == 1
    assert "a model file is not written to standard output" in _line(capsys)
    assert not Path("-").exists()


def test_a_model_that_never_saw_the_labels_or_tags_warns_in_one_line(untrained, tmp_path, caplog):
    parser = untrained()  # uses UPOS; vocabularies of the English sample
    own = _first(tmp_path / "own.conllu", 20)
    other = _first(tmp_path / "other.conllu", 20, relabel="nsubj:外", upos="名词")
    with caplog.at_level(logging.INFO, logger="bockparse.parser"):
        parser.evaluate(own)
        parser.predict(own)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "own.conllu: not in the model's vocabularies: 0.0 % of UPOS tags" in caplog.text
    assert "% of gold relations" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bockparse.parser"):
        parser.evaluate(other)
    [record] = caplog.records
    relations, tags = len(parser.relations), len(parser.vocabs.upos) - 3
    assert record.getMessage() == (
        f"{other}: 100.0 % of the UPOS tags are not in the model's {tags} UPOS tags; 100.0 % of "
        f"the gold relations are not in the model's {relations} relations (trained on another "
        "treebank? scores and trees will be poor)"
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bockparse.parser"):
        parser.predict(other)  # no gold relations in prediction: the tags alone
    [record] = caplog.records
    assert "100.0 % of the UPOS tags" in record.getMessage()
    assert "relations" not in record.getMessage()


def test_the_experiment_commands_refuse_an_output_inside_a_run_they_read(tmp_path, capsys):
    from bockparse.cli.experiments import reeval, rootstudy, substitute, table

    sweep = tmp_path / "multirun"
    run = _run_folder(sweep / "smoke" / "hinge-bock" / "seed1")
    out = run / "tables"
    cases = [(table, sweep, 2), (reeval, sweep, 2), (substitute, run, 1),
             (rootstudy, run, 1)]  # fmt: skip
    for command, given, status in cases:
        assert command([str(given), "--out", str(out)]) == status
        line = _line(capsys)
        assert f"--out {out} is inside the run folder {run}, which is read" in line, line
    assert not out.exists()
    assert table([str(sweep), "--out", str(sweep / "table"), "--no-plots"]) == 0  # make sweep
    assert (sweep / "table" / "table1.md").is_file()


def test_a_relation_label_with_a_line_break_is_never_written(untrained, tmp_path):
    """A model whose vocabulary holds ``nsubj\\n1\\tinjected...`` (a crafted file; the model
    loader refuses such vocabularies too) cannot write it into a prediction: no injected
    line, one clear error."""
    from bockparse.data import DataError

    parser = untrained(NOTAGS)
    parser.relations = [f"{label}\n1\tinjected\t_\t_\t_\t_\t0\troot\t_\t_" for label in
                        parser.relations]  # fmt: skip
    with pytest.raises(
        DataError,
        match=r"relation label '[a-z:]+\\n1\\tinjected.* holds the control character U\+000A",
    ):
        parser.predict(_first(tmp_path / "in.conllu", 3))
