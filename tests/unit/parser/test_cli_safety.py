"""bockparse-predict and bockparse-export under careless use: an output that is the input, a
missing or unwritable folder (found before any parsing), a full disk, a damaged run config and
Ctrl-C each end in one line naming the real path, with nothing partial left."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from bockparse.cli.parser import evaluate as evaluate_cli
from bockparse.cli.parser import export as export_cli
from bockparse.cli.parser import predict as predict_cli
from bockparse.parser import Parser

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"
TEST = SAMPLE / "en_ewt-ud-test.conllu"


def _line(capsys) -> str:
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("parsed ")]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


@pytest.fixture
def never_loaded(monkeypatch):
    """Fails the test if a model is loaded (the output was to be refused first)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(Parser, "load", refuse)


def test_the_output_is_checked_before_any_work(tmp_path, capsys, never_loaded):
    data = tmp_path / "in.conllu"
    shutil.copy(TEST, data)
    assert predict_cli(["model.pt", str(data), "--out", str(data)]) == 1
    assert (
        _line(capsys) == f"bockparse-predict: --out {data} is the input {data}: give another file"
    )
    assert data.read_bytes() == TEST.read_bytes()
    missing = tmp_path / "no" / "such" / "out.conllu"
    assert predict_cli(["model.pt", str(data), "--out", str(missing)]) == 1
    assert _line(capsys) == f"bockparse-predict: cannot write {missing}: no folder {missing.parent}"
    assert predict_cli(["model.pt", str(data), "--out", str(tmp_path)]) == 1
    assert "is a folder" in _line(capsys)
    assert export_cli(["run", "--out", str(missing)]) == 1
    assert "no folder" in _line(capsys)


def test_a_full_disk_names_the_output_and_leaves_nothing(smoke_run, tmp_path, capsys, monkeypatch):
    import torch

    out = tmp_path / "out" / "pred.conllu"
    out.parent.mkdir()
    real_replace = __import__("os").replace

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("bockparse.rundir.os.replace", full)
    assert predict_cli([str(smoke_run), str(TEST), "--out", str(out)]) == 1
    assert _line(capsys) == f"bockparse-predict: cannot write {out}: no space left on the device"
    assert list(out.parent.iterdir()) == []
    monkeypatch.setattr("bockparse.rundir.os.replace", real_replace)

    def too_large(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(torch, "save", too_large)
    model = tmp_path / "out" / "model.pt"
    assert export_cli([str(smoke_run), "--out", str(model)]) == 1
    assert _line(capsys) == f"bockparse-export: cannot write {model}: file too large"
    assert list(out.parent.iterdir()) == []

    def torch_full_disk(*args, **kwargs):  # what torch's zip writer raises on a full disk
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")

    monkeypatch.setattr(torch, "save", torch_full_disk)
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=1000))
    assert export_cli([str(smoke_run), "--out", str(model)]) == 1
    line = _line(capsys)
    assert line.startswith(f"bockparse-export: cannot write {model}: no space left on the device ")
    assert line.endswith(" MiB needed, 0.0 MiB free)") and list(out.parent.iterdir()) == []


def test_a_damaged_run_config_is_one_line(smoke_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    (run / ".hydra" / "config.yaml").write_text("model: [unclosed\n  - {")
    assert export_cli([str(run), "--out", str(tmp_path / "m.pt")]) == 1
    line = _line(capsys)
    assert line.startswith(f"bockparse-export: {run / '.hydra' / 'config.yaml'}: not a readable")
    assert not (tmp_path / "m.pt").exists()


def test_ctrl_c_during_prediction_writes_nothing(smoke_run, tmp_path, capsys, monkeypatch):
    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Parser, "predict", interrupted)
    out = tmp_path / "pred.conllu"
    assert predict_cli([str(smoke_run), str(TEST), "--out", str(out)]) == 130
    assert _line(capsys) == "bockparse-predict: interrupted; nothing written"
    assert list(tmp_path.iterdir()) == []


def test_a_malformed_input_gives_no_advice_the_command_cannot_follow(smoke_run, tmp_path, capsys):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tword\n\n")  # two columns
    assert predict_cli([str(smoke_run), str(bad), "--out", str(tmp_path / "o.conllu")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"bockparse-predict: {bad}: 1 problem(s) (fix the file):")
    assert "on_malformed" not in err


@pytest.mark.parametrize("size", ["0", "-5", "1e3", "10000000000"])
def test_a_batch_size_out_of_range_is_refused_before_any_work(size, tmp_path, capsys, never_loaded):
    """``--batch-size`` within the cap on a model file's batch size (a batch of 10^10 words
    would try to allocate it), refused before the model is loaded, for both commands."""
    data = tmp_path / "in.conllu"
    shutil.copy(TEST, data)
    out = str(tmp_path / "out.conllu")
    for run, args in ((predict_cli, [str(data), "--out", out]), (evaluate_cli, [str(data)])):
        with pytest.raises(SystemExit) as exit_:
            run(["model.pt", *args, "--batch-size", size])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "--batch-size: " in err and "Traceback" not in err
    assert not (tmp_path / "out.conllu").exists()
