"""``benchmarks/stanza_speed.py`` on fixtures: the update timer, the window of updates 2..U,
the tables and ratios from run folders; and ``stanza_parity``'s command helpers it shares and
its tables of runs as far as they got."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def speed(benchmark):
    return benchmark("stanza_speed")


@pytest.fixture(scope="module")
def parity(speed, benchmark):
    return benchmark("stanza_parity")  # the module stanza_speed imported from its folder


def records(seconds: list[float], words: list[int]) -> list[dict]:
    out, end = [], 100.0
    for s, w in zip(seconds, words, strict=True):
        end += s + 0.5  # half a second of loading between updates
        out.append({"seconds": s, "words": w, "end": end, "threads": 2})
    return out


def test_the_timer_records_each_call_with_its_words(speed):
    calls: list[dict] = []
    fn = speed.timed(lambda x, batch, flag=False: (x, flag), calls, lambda _x, b, **_: len(b))
    assert fn(1, [1, 2, 3], flag=True) == (1, True)
    fn(2, [4])
    assert [c["words"] for c in calls] == [3, 1]
    assert all(c["seconds"] >= 0 and c["threads"] >= 1 for c in calls)
    assert calls[0]["end"] <= calls[1]["end"]


def test_updates_two_to_u_are_timed(speed):
    summary = speed.training_summary(records([9.0, 1.0, 2.0, 1.0, 7.0], [50, 100, 300, 100, 1]), 4)
    assert summary["words"] == 500 and summary["seconds"] == 4.0  # updates 2, 3, 4
    assert summary["words/s"] == 125.0 and summary["median ms"] == 1000.0
    assert summary["wall"] == pytest.approx(5.5)  # end of update 1 to end of update 4
    with pytest.raises(ValueError, match="3 updates timed, 4 needed"):
        speed.training_summary(records([1.0, 1.0, 1.0], [1, 1, 1]), 4)


def run_folder(work: Path, system: str, pair: int, seconds: list[float], passes: list[float]):
    folder = work / system / f"pair{pair}"
    folder.mkdir(parents=True)
    (folder / "timings.json").write_text(json.dumps(
        {"updates": records(seconds, [1000] * len(seconds))}))  # fmt: skip
    (folder / "prediction.json").write_text(json.dumps(
        {"seconds": passes, "words": 12000, "sentences": 500, "threads": 2,
         "precision": "32-true"}))  # fmt: skip


def test_tables_and_ratios_from_run_folders(speed, tmp_path, capsys):
    work = tmp_path / "work"
    run_folder(work, "bockparse", 1, [5.0, 1.0, 1.0], [4.0, 6.0, 5.0])
    run_folder(work, "stanza", 1, [5.0, 2.0, 2.0], [10.0, 10.0, 10.0])
    run_folder(work, "bockparse", 2, [5.0, 1.0, 1.0], [5.0])  # Stanza's pair 2 did not finish
    setup = {"date": "2026-12-06", "cpu": "a CPU", "cpus": 2, "threads": 2, "torch": "2.x",
             "machine": "x86_64"}  # fmt: skip
    (work / "setup.json").write_text(json.dumps(setup))
    out = tmp_path / "speed.md"
    argv = ["--report-only", "--updates", "3", "--work", str(work), "--output", str(out)]
    assert speed.main(argv) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert "## Training: updates 2–3" in text
    assert "| 1 | bockparse | 2 | 2,000 | 2.0 | 1000 | 1,000 | 3.0 | 667 |" in text
    assert "| 1 | stanza | 2 | 2,000 | 4.0 | 2000 | 500 | 5.0 | 400 |" in text
    assert "**2.00×** (update time), 1.67× (wall)" in text  # pair 1 alone: pair 2 incomplete
    assert "| 1 | bockparse | 32-true | 2 | 500 | 12,000 | 5.00 | 2,400 |" in text
    assert "bockparse / Stanza, words/s over the complete pairs: **2.00×**." in text
    assert "Incomplete pairs (one system only): 2." in text
    assert "bockparse trained in 32-true (the preset's), Stanza in fp32." in text
    setup["precision"] = "bf16-mixed"  # --precision bf16-mixed
    (work / "setup.json").write_text(json.dumps(setup))
    assert speed.main(argv) == 0
    assert "bockparse trained in bf16-mixed, Stanza in fp32." in out.read_text()


def test_a_used_work_folder_is_refused(speed, tmp_path):
    (tmp_path / "old").mkdir()
    with pytest.raises(SystemExit):
        speed.main(["--data", str(tmp_path), "--work", str(tmp_path)])


def test_the_parity_commands_are_unchanged_and_the_speed_runs_use_the_preset_schedule(parity):
    setup = parity.Setup(2)
    data, run = Path("/d"), Path("/r")
    assert parity.bockparse_arguments(data, 7, 300, run, setup) == [
        "experiment=table1-ud-gsd", "condition=local-ce", "data.root=/d", "seed=7",
        "optim.max_steps=300", "optim.eval_every=100", *parity.STANZA_SCHEDULE,
        "torch_threads=2", "logger.wandb.enabled=false", "trainer.enable_progress_bar=false",
        "hydra.run.dir=/r"]  # fmt: skip
    fast = parity.bockparse_arguments(data, 7, 101, run, setup, eval_every=101, schedule=())
    assert "optim.eval_every=101" in fast and not set(parity.STANZA_SCHEDULE) & set(fast)
    assert parity.stanza_train_arguments(data, 7, 300, run, setup) == [
        "--mode", "train", "--train_file", f"/d/{parity.TRAIN}", "--eval_file", f"/d/{parity.DEV}",
        "--output_file", "/r/dev.conllu", "--lang", "zh-hans", "--shorthand", "zh-hans_gsd",
        "--no_pretrain", "--batch_size", "1000", "--save_dir", "/r", "--cpu", "--max_steps",
        "300", "--eval_interval", "100", "--seed", "7"]  # fmt: skip


def test_parity_report_only_tables_runs_not_started_as_unfinished(parity, tmp_path, monkeypatch):
    """``--report-only`` over a work folder where seed 1's bockparse run is still training and
    its Stanza run has not started, and seed 2 has no run at all: a table, each unfinished."""
    monkeypatch.setattr(parity, "torch_threads_seen", lambda setup: 1)  # no subprocess
    work = tmp_path / "work"
    bock = work / "bockparse" / "seed1" / "csv"
    bock.mkdir(parents=True)
    (bock / "metrics.csv").write_text("step,val/las,train/loss\n99,61.5,\n150,,0.7\n")
    out = tmp_path / "parity.md"
    argv = ["--data", str(tmp_path / "gsd"), "--seeds", "1", "2", "--at", "100", "300",
            "--work", str(work), "--report-only", "--output", str(out)]  # fmt: skip
    assert parity.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert "| 1 | bockparse | 61.50 | - |" in text and "| 1 | stanza | - | - |" in text
    assert "| 2 | bockparse | - | - |" in text and "| 2 | bockparse − Stanza | - | - |" in text
    assert (
        "Not finished when this table was written: seed 1 bockparse (last evaluation: "
        "update 100); seed 1 stanza (last evaluation: update 0); seed 2 bockparse"
    ) in text
    assert not (work / "stanza").exists()  # nothing trained
