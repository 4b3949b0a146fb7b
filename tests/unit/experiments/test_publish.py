"""bockparse-publish: the small files of finished runs, predictions gzip-compressed, and the
tools reading the published copies as they read the run folders."""

from __future__ import annotations

import gzip
import os
import shutil

import pytest
from test_reeval import FIXTURE, _run

from bockparse.cli.experiments import publish as main
from bockparse.data.conllu import DataError, parse_conllu
from bockparse.experiments.publish import publish_run
from bockparse.experiments.reeval import reevaluate
from bockparse.experiments.runs import read_run
from bockparse.rundir import RunDir


def _finished_run(tmp_path):
    (tmp_path / "multirun" / "gold").mkdir(parents=True)
    shutil.copy(FIXTURE, tmp_path / "multirun" / "gold" / "basic.conllu")
    run = _run(tmp_path / "multirun", "table1-ud-ewt", "local-ce-cle", 1111)
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "best.ckpt").write_bytes(b"weights")
    (run / "csv").mkdir()
    (run / "csv" / "metrics.csv").write_text("step,val/las\n100,50.0\n", encoding="utf-8")
    (run / "train.log").write_text("log\n", encoding="utf-8")
    (run / "predictions" / "val.conllu").write_bytes(FIXTURE.read_bytes())
    return run


def test_publish_copies_the_small_files_and_no_checkpoint(tmp_path, monkeypatch, capsys):
    run = _finished_run(tmp_path)
    monkeypatch.chdir(tmp_path / "multirun")  # the runs' data.root ("gold") is relative
    assert main([str(tmp_path / "multirun"), "--out", str(tmp_path / "published")]) == 0
    dest = tmp_path / "published" / "table1-ud-ewt" / "local-ce-cle" / "seed1111"
    assert str(dest) in capsys.readouterr().out
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == [".hydra/config.yaml", ".hydra/hydra.yaml", "csv/metrics.csv",
                     "metrics.json", "predictions/test.conllu.gz", "predictions/val.conllu.gz",
                     "train.log"]  # fmt: skip
    for name in ("metrics.json", "csv/metrics.csv", ".hydra/config.yaml", "train.log"):
        assert (dest / name).read_bytes() == (run / name).read_bytes()
    for stage in ("val", "test"):
        packed = (dest / "predictions" / f"{stage}.conllu.gz").read_bytes()
        assert gzip.decompress(packed) == (run / "predictions" / f"{stage}.conllu").read_bytes()
        assert packed[4:8] == bytes(4)  # gzip's MTIME field: no time stamp
    # the same predictions give the same bytes (no time stamp in the gzip header)
    again = publish_run(run, tmp_path / "again")
    assert (tmp_path / "again" / "predictions" / "test.conllu.gz").read_bytes() == (
        dest / "predictions" / "test.conllu.gz"
    ).read_bytes()
    assert len(again) == 7
    # the published copy re-evaluates as the run folder does
    assert RunDir(dest).predictions("test").name == "test.conllu.gz"
    assert RunDir(run).predictions("test").name == "test.conllu"
    original, gap = reevaluate(read_run(run), "test", "upos")
    published, published_gap = reevaluate(read_run(dest), "test", "upos")
    assert published.metrics == original.metrics and published_gap == gap == 0.0


def test_an_unfinished_run_is_named_and_skipped(tmp_path, capsys):
    run = _finished_run(tmp_path)
    (run / "metrics.json").unlink()
    assert main([str(tmp_path / "multirun"), "--out", str(tmp_path / "published")]) == 1
    assert f"skipped {run}: no metrics.json" in capsys.readouterr().err
    assert not (tmp_path / "published").exists()


def test_a_gzip_file_reads_as_the_plain_one(tmp_path):
    packed = tmp_path / "basic.conllu.gz"
    packed.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    plain, _ = parse_conllu(FIXTURE, single_root=True)
    unpacked, _ = parse_conllu(packed, single_root=True)
    assert [(s.forms, s.heads, s.rels) for s in unpacked] == [
        (s.forms, s.heads, s.rels) for s in plain
    ]
    broken = tmp_path / "broken.conllu.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(DataError, match=r"broken\.conllu\.gz: cannot read file"):
        parse_conllu(broken, single_root=True)


@pytest.mark.parametrize(
    "name", ["train.log", "timing.json", "predictions/test.conllu", "metrics.json"]
)
def test_a_symlink_in_a_run_is_refused_and_nothing_of_the_run_written(tmp_path, capsys, name):
    run = _finished_run(tmp_path)
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY\n", encoding="utf-8")
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(secret)
    out = tmp_path / "published"
    assert main([str(tmp_path / "multirun"), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"bockparse-publish: refused {run}: {run / name}: refused: a symbolic link (a run "
        "folder's files are read only where they are, never followed)"
    ]
    assert not [p for p in out.rglob("*") if p.is_file()]
    assert not any("PRIVATE" in p.read_text() for p in tmp_path.rglob("*.gz") if p.is_file())


def test_a_symlinked_folder_or_a_fifo_in_a_run_is_refused(tmp_path, capsys):
    run = _finished_run(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (run / ".hydra").rename(elsewhere)
    (run / ".hydra").symlink_to(elsewhere)
    with pytest.raises(ValueError, match=r"\.hydra: refused: a symbolic link"):
        publish_run(run, tmp_path / "out")
    (run / ".hydra").unlink()
    elsewhere.rename(run / ".hydra")
    (run / "train.log").unlink()
    os.mkfifo(run / "train.log")  # opening it for reading would wait for a writer forever
    with pytest.raises(ValueError, match=r"train\.log: not a regular file"):
        publish_run(run, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_nothing_is_written_through_a_symlinked_destination(tmp_path, capsys):
    run = _finished_run(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "published"
    out.symlink_to(victim)  # --out itself
    assert main([str(tmp_path / "multirun"), "--out", str(out)]) == 1
    assert capsys.readouterr().err == (
        f"bockparse-publish: --out {out} is a symlink: publish writes into real folders only\n"
    )
    with pytest.raises(ValueError, match=f"{out} is a symlink where a destination folder belongs"):
        publish_run(run, out / "run", out)
    out.unlink()
    (out / "table1-ud-ewt").mkdir(parents=True)
    (out / "table1-ud-ewt" / "local-ce-cle").symlink_to(victim)  # a folder below it
    assert main([str(tmp_path / "multirun"), "--out", str(out)]) == 1
    assert "local-ce-cle is a symlink" in capsys.readouterr().err
    (out / "table1-ud-ewt" / "local-ce-cle").unlink()
    assert list(victim.iterdir()) == []
    assert main([str(tmp_path / "multirun"), "--out", str(out)]) == 0
    assert (out / "table1-ud-ewt" / "local-ce-cle" / "seed1111" / "train.log").is_file()
    assert run.is_dir()


def test_copies_get_the_umask_mode_not_the_sources(tmp_path):
    run = _finished_run(tmp_path)
    (run / "train.log").chmod(0o600)
    (run / "metrics.json").chmod(0o640)
    old = os.umask(0o022)
    try:
        publish_run(run, tmp_path / "out")
    finally:
        os.umask(old)
    for name in ("train.log", "metrics.json", "predictions/val.conllu.gz"):
        assert (tmp_path / "out" / name).stat().st_mode & 0o777 == 0o644, name


def test_out_inside_or_holding_an_input_folder_is_refused(tmp_path, capsys):
    run = _finished_run(tmp_path)
    sweep = tmp_path / "multirun"
    for out, given in ((run / "published", sweep), (run / "published", run), (tmp_path, sweep)):
        before = sorted(tmp_path.rglob("*"))
        assert main([str(given), "--out", str(out)]) == 1
        line = capsys.readouterr().err.strip()
        assert str(out) in line and str(given) in line and "\n" not in line, line
        assert sorted(tmp_path.rglob("*")) == before


def test_a_run_given_as_dot_goes_under_its_own_name(tmp_path, monkeypatch, capsys):
    """``bockparse-publish . --out DIR`` from inside a run folder: the run's files go to
    ``DIR/<run folder name>``, as for a run named by its path, not loose into ``DIR``."""
    run = _finished_run(tmp_path)
    monkeypatch.chdir(run)
    out = tmp_path / "published"
    assert main([".", "--out", str(out)]) == 0
    assert (out / run.name / "metrics.json").read_bytes() == (run / "metrics.json").read_bytes()
    assert not (out / "metrics.json").exists()
