"""bockparse-table: mean and sample standard deviation, paired differences, missing and failed
runs (of the grid run, or of the Table 1 preset), treebank grouping, the paper's columns, CSV,
the grid layout, the comparisons and their power, the command line."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from bockparse.cli.experiments import table as main
from bockparse.experiments.runs import Plateau, Resume, discover, plateau, resumes
from bockparse.experiments.table import (
    PAPER_MEANS,
    aggregate,
    fmt_cell,
    fmt_difference,
    paired_differences,
    summarize,
    table1_markdown,
    write_csv,
)
from bockparse.rundir import RESUMED_EXACTLY, RESUMING, TRAIN_LOG

SAMPLE_TEST = (
    Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample" / "en_ewt-ud-test.conllu"
)


def test_mean_and_sample_std_by_hand():
    s = summarize({3333: 96.5, 1111: 94.0, 2222: 95.0})
    assert list(s.values) == [1111, 2222, 3333]
    assert s.n == 3
    assert s.mean == pytest.approx(285.5 / 3)
    # deviations -7/6, -1/6, 4/3: squares sum to 19/6; divided by n - 1 = 2 -> 19/12
    assert s.std == pytest.approx(math.sqrt(19 / 12))
    assert s.std == pytest.approx(1.2583057392)


def test_two_seeds_and_one_seed():
    two = summarize({1: 90.0, 2: 91.0})
    assert two.std == pytest.approx(math.sqrt(0.5))  # (0.25 + 0.25) / (2 - 1)
    one = summarize({1: 90.0})
    assert one.n == 1 and one.mean == 90.0 and one.std is None
    assert fmt_cell(one) == "90.00"
    assert fmt_cell(two) == "90.50 ± 0.71"
    assert fmt_cell(summarize({})) == "—"


def test_a_difference_is_signed_with_a_true_minus():
    assert fmt_difference(summarize({1: -0.5, 2: 0.1})) == "−0.20 ± 0.42"
    assert fmt_difference(summarize({1: 0.25})) == "+0.25"
    assert fmt_difference(summarize({})) == "—"


def test_paired_differences_by_hand():
    # The paper's CTB per-seed LAS differences (Appendix B): +1.32, -0.22, +1.25.
    bock = {1111: 90.32, 2222: 88.78, 3333: 90.25}
    cle = {1111: 89.00, 2222: 89.00, 3333: 89.00, 4444: 80.0}  # 4444 has no pair
    diff = paired_differences(bock, cle)
    assert list(diff) == [1111, 2222, 3333]
    assert diff[1111] == pytest.approx(1.32)
    assert diff[2222] == pytest.approx(-0.22)
    assert diff[3333] == pytest.approx(1.25)
    s = summarize(diff)
    assert s.mean == pytest.approx(2.35 / 3)
    # deviations 0.536667, -1.003333, 0.466667; squares 0.288011 + 1.006678 + 0.217778
    assert s.std == pytest.approx(math.sqrt(1.512467 / 2), abs=1e-5)


def _sweep(make_run, experiment="table1-ptb", seeds=(1111, 2222, 3333), **kwargs):
    base = {"local-ce-cle": 95.0, "hinge-cle": 94.0, "hinge-bock": 94.5}
    for condition, las in base.items():
        for i, seed in enumerate(seeds):
            make_run(experiment, condition, seed, (las + 1 + i, las + i, 50.0 + i), **kwargs)


def test_table1_cells_and_paired(make_run, tmp_path):
    _sweep(make_run)
    [group] = aggregate(discover([tmp_path]))
    assert group.label == "PTB"
    assert list(group.cells) == ["local-ce-cle", "hinge-cle", "hinge-bock"]
    las = group.cells["hinge-bock"]["las"]
    assert las.values == {1111: 94.5, 2222: 95.5, 3333: 96.5}
    assert las.mean == pytest.approx(95.5) and las.std == pytest.approx(1.0)
    diff = group.paired()
    assert diff.values == pytest.approx({1111: 0.5, 2222: 0.5, 3333: 0.5})
    assert diff.std == pytest.approx(0.0)
    assert not group.missing and not group.failed
    text = table1_markdown([group])
    assert "| Hinge (Bock) | 3 | 96.50 ± 1.00 | 95.72 | 95.50 ± 1.00 | 94.79 |" in text
    assert group.paper == PAPER_MEANS["table1-ptb"]


def test_missing_and_failed_runs_are_listed_not_averaged(make_run, tmp_path):
    _sweep(make_run, seeds=(1111, 2222))
    make_run("table1-ptb", "hinge-bock", 3333, None)  # started, never finished
    [group] = aggregate(discover([tmp_path]))  # the failed run's seed belongs to the grid
    assert group.expected_seeds == (1111, 2222, 3333)
    assert sorted(group.missing) == [("hinge-cle", 3333), ("local-ce-cle", 3333)]
    assert [(r.condition, r.seed) for r in group.failed] == [("hinge-bock", 3333)]
    assert "metrics.json" in group.failed[0].error
    assert group.cells["hinge-bock"]["las"].n == 2  # the failed run is not averaged
    from bockparse.experiments.table import runs_markdown

    text = runs_markdown([group])
    assert "missing: local-ce-cle seed 3333" in text
    assert "failed: hinge-bock seed 3333" in text
    assert "6 finished of 9 expected" in text


def test_missing_condition_and_explicit_seeds(make_run, tmp_path):
    for seed in (1, 2):
        make_run("smoke", "local-ce-cle", seed, (10.0, 5.0, 0.0))
    [group] = aggregate(discover([tmp_path]), seeds=[1, 2, 3], expect="table1")
    assert group.cells["hinge-cle"]["las"].n == 0  # the preset's rows are expected
    assert ("hinge-cle", 1) in group.missing and ("local-ce-cle", 3) in group.missing
    assert group.expected_seeds == (1, 2, 3)  # explicit seeds replace the preset's
    assert group.paired().n == 0
    with pytest.raises(ValueError, match="expect"):
        aggregate(discover([tmp_path]), layout="grid", expect="table1")


def test_rows_and_completeness_come_from_the_grid_that_was_run(make_run, tmp_path):
    """Issue 49 item 8: a sweep of other conditions (two seeds) has only its own rows, and
    ``--strict`` passes when every (condition, seed) it ran finished; the Table 1 preset is
    checked only when asked for, and a hole in the grid run fails ``--strict``."""
    for condition in ("arc-standard", "arc-eager"):
        for seed in (1, 2):
            make_run("table1-ud-ewt", condition, seed, (80.0, 70.0 + seed, 10.0))
    [group] = aggregate(discover([tmp_path]))
    assert list(group.cells) == ["arc-eager", "arc-standard"]
    assert group.expected_seeds == (1, 2) and not group.missing
    assert main([str(tmp_path), "--strict", "--no-plots"]) == 0
    [preset] = aggregate(discover([tmp_path]), expect="table1")
    assert preset.expected_seeds == (1, 2, 1111, 2222, 3333)
    assert ("hinge-bock", 1111) in preset.missing and ("arc-eager", 3333) in preset.missing
    assert main([str(tmp_path), "--strict", "--no-plots", "--expect", "table1"]) == 1
    make_run("table1-ud-ewt", "arc-eager", 3, (80.0, 73.0, 10.0))
    [group] = aggregate(discover([tmp_path]))
    assert group.missing == [("arc-standard", 3)]
    assert main([str(tmp_path), "--strict", "--no-plots"]) == 1
    assert main([str(tmp_path), "--layout", "grid", "--expect", "table1"]) == 2


def test_treebanks_grouped_by_experiment_and_data(make_run, tmp_path):
    _sweep(make_run, "table1-ud-ewt", data="ud-english-ewt")
    _sweep(make_run, "table1-ud-gsd", data="ud-chinese-gsd")
    make_run("smoke", "local-ce-cle", 1111, (1.0, 1.0, 0.0), data="ewt-sample")
    groups = aggregate(discover([tmp_path]))
    assert [g.label for g in groups] == ["UD English-EWT", "UD Chinese-GSD v1.3",
                                         "smoke (ewt-sample)"]  # fmt: skip
    assert all(g.paper is None for g in groups)
    header = table1_markdown(groups).splitlines()[2]
    assert "UD English-EWT LAS" in header and "UD Chinese-GSD v1.3 LCM" in header
    assert "(paper)" not in header


def test_duplicates_use_one_run(make_run, tmp_path):
    make_run("smoke", "local-ce-cle", 1, (10.0, 5.0, 0.0), subdir="a/local-ce-cle/seed1")
    make_run("smoke", "local-ce-cle", 1, (10.0, 6.0, 0.0), subdir="b/local-ce-cle/seed1")
    [group] = aggregate(discover([tmp_path]), seeds=[1])
    assert group.cells["local-ce-cle"]["las"].n == 1
    assert len(group.duplicates) == 1


def test_sweep_seeds_from_multirun_yaml(make_run, tmp_path):
    make_run("smoke", "local-ce-cle", 1111, (10.0, 5.0, 0.0))
    (tmp_path / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params:\n      seed: 1111,2222\n", encoding="utf-8"
    )
    [group] = aggregate(discover([tmp_path]))
    assert group.expected_seeds == (1111, 2222)
    assert ("local-ce-cle", 2222) in group.missing


def test_csv_long_form(make_run, tmp_path):
    _sweep(make_run)
    groups = aggregate(discover([tmp_path]))
    out = tmp_path / "t.csv"
    write_csv(groups, out)
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    las = next(r for r in rows if r["row"] == "local-ce-cle" and r["metric"] == "las")
    assert float(las["mean"]) == pytest.approx(96.0) and float(las["std"]) == pytest.approx(1.0)
    assert las["n"] == "3" and las["seeds"] == "1111;2222;3333"
    assert float(las["paper_mean"]) == 94.79
    diff = next(r for r in rows if r["metric"] == "las_diff")
    assert float(diff["mean"]) == pytest.approx(0.5)


def test_grid_layout(make_run, tmp_path):
    for decoder in ("cle", "bock"):
        for loss, name in (("LocalCrossEntropy", "local-ce"), ("TreeCRF", "crf")):
            for seed in (1, 2):
                make_run("abl", f"{name}-{decoder}", seed, (80.0, 70.0 + seed, 10.0),
                         decoder=decoder, loss=loss)  # fmt: skip
    [group] = aggregate(discover([tmp_path]), layout="grid")
    assert list(group.cells) == [("LocalCrossEntropy", "cle"), ("LocalCrossEntropy", "bock"),
                                 ("TreeCRF", "cle"), ("TreeCRF", "bock")]  # fmt: skip
    assert group.cells[("TreeCRF", "bock")]["las"].mean == pytest.approx(71.5)
    from bockparse.experiments.table import grid_markdown

    text = grid_markdown([group])
    assert "| Local CE | 71.50 ± 0.71 (n=2) | 71.50 ± 0.71 (n=2) |" in text


def test_cli_writes_markdown_and_csv(make_run, tmp_path, capsys):
    _sweep(make_run, seeds=(1111, 2222))
    out = tmp_path / "out"
    table = str(tmp_path / "table1-ptb")
    assert main([table, "--out", str(out), "--no-plots", "--expect", "table1"]) == 0
    printed = capsys.readouterr().out
    assert "Paired LAS difference" in printed and "missing: local-ce-cle seed 3333" in printed
    assert (out / "table1.md").read_text(encoding="utf-8") == printed
    assert (out / "table1.csv").is_file()
    assert main([table, "--strict", "--expect", "table1"]) == 1
    assert main([table, "--strict"]) == 0  # every run of the grid that was run finished
    assert main([str(tmp_path / "nowhere")]) == 2


def test_cli_plots(make_run, tmp_path):
    _sweep(make_run, "smoke", seeds=(1, 2))
    out = tmp_path / "out"
    assert main([str(tmp_path / "smoke"), "--out", str(out)]) == 0
    for name in ("table1.png", "dev_las.png"):
        assert (out / name).stat().st_size > 1000


def test_comparisons_are_tested_and_holm_corrected_across_the_table(make_run, tmp_path):
    from bockparse.experiments.stats import holm, paired_test
    from bockparse.experiments.table import comparisons_markdown

    las = {  # hinge-bock within 0.02 of hinge-cle; local CE about 3 points higher
        "local-ce-cle": {1111: 85.1, 2222: 84.9, 3333: 85.2, 4444: 85.0},
        "hinge-cle": {1111: 82.00, 2222: 82.10, 3333: 81.90, 4444: 82.05},
        "hinge-bock": {1111: 82.01, 2222: 82.11, 3333: 81.92, 4444: 82.04},
    }
    for condition, values in las.items():
        for seed, value in values.items():
            make_run("smoke", condition, seed, (90.0, value, 10.0))
    [group] = aggregate(discover([tmp_path]))
    bock_cle = group.compare(("hinge-bock", "hinge-cle"))
    bock, cle = las["hinge-bock"], las["hinge-cle"]
    expected = paired_test({s: bock[s] - cle[s] for s in cle}, 0.5)
    assert bock_cle.mean == pytest.approx(expected.mean)
    assert bock_cle.p_equivalence == pytest.approx(expected.p_equivalence)
    text = comparisons_markdown([group])
    lines = [line for line in text.splitlines() if line.startswith("| smoke")]
    assert len(lines) == 3 and "across the 3 comparisons" in text
    tests = [group.compare(rows) for rows in
             (("hinge-bock", "hinge-cle"), ("hinge-cle", "local-ce-cle"),
              ("hinge-bock", "local-ce-cle"))]  # fmt: skip
    adjusted = holm([t.p_equivalence for t in tests])
    assert f"| {adjusted[0]:.3f} | equivalent within ±0.5 |" in lines[0]
    assert lines[1].endswith("| difference detected |") and lines[2].endswith("detected |")
    assert "Hinge (CL/E) − Local CE" in lines[1]


def test_holm_and_its_caption_leave_out_the_comparisons_that_cannot_be_tested(make_run, tmp_path):
    """A partial table (one treebank complete, one with a single hinge-Bock seed) shows six
    comparisons, but only four have p-values: the caption names four and the correction is
    Holm's over exactly those four."""
    from bockparse.experiments.stats import holm
    from bockparse.experiments.table import COMPARISONS, comparisons_markdown

    las = {"local-ce-cle": (85.1, 84.9, 85.3), "hinge-cle": (84.0, 84.4, 84.1),
           "hinge-bock": (84.2, 84.3, 84.0)}  # fmt: skip
    for experiment, bock_seeds in (("full", 3), ("partial", 1)):
        for condition, values in las.items():
            n = bock_seeds if condition == "hinge-bock" else 3
            for seed, value in zip((1111, 2222, 3333)[:n], values[:n], strict=True):
                make_run(experiment, condition, seed, (90.0, value, 10.0))
    groups = aggregate(discover([tmp_path]))
    tests = [g.compare(rows) for g in groups for rows in COMPARISONS]
    assert [t.p_equivalence is not None for t in tests].count(True) == 4
    text = comparisons_markdown(groups)
    assert "across the 4 comparisons of this table that can be tested" in text
    rows = [line for line in text.splitlines() if line.startswith(("| full", "| partial"))]
    assert len(rows) == 6 and sum("not testable" in row for row in rows) == 2
    adjusted = [p for p in holm([t.p_equivalence for t in tests]) if p is not None]
    tested = [row for row in rows if "not testable" not in row]
    for row, p in zip(tested, adjusted, strict=True):
        assert f"| {p:.3f} | no difference detected" in row or f"| {p:.3f} | equivalent" in row


def test_bootstrap_reads_each_runs_predictions_against_its_gold_file(tmp_path, capsys):
    import shutil

    from bockparse.data import read_conllu, write_conllu
    from bockparse.experiments.loading import sentence_las

    gold = tmp_path / "gold.conllu"
    shutil.copy(SAMPLE_TEST, gold)
    sentences = read_conllu(gold, single_root=False, on_malformed="error")[:40]
    write_conllu(gold, sentences)
    for seed in (1, 2):
        run = tmp_path / "runs" / "x" / "hinge-cle" / f"seed{seed}"
        (run / ".hydra").mkdir(parents=True)
        (run / "predictions").mkdir()
        (run / ".hydra" / "config.yaml").write_text(
            f"seed: {seed}\nexperiment_name: x\nname: hinge-cle\ndecoder: cle\n"
            f"loss: {{_target_: bockparse.losses.StructuredHinge}}\n"
            f"data: {{root: {tmp_path}, test: gold.conllu}}\n", encoding="utf-8")  # fmt: skip
        # seed 2: every word of the longest sentence on ROOT (wrong where gold is not ROOT)
        longest = max(range(len(sentences)), key=lambda i: len(sentences[i]))
        heads = [[0] * len(s) if (seed == 2 and i == longest) else s.heads
                 for i, s in enumerate(sentences)]  # fmt: skip
        write_conllu(run / "predictions" / "test.conllu", sentences, heads)
        metrics = {"test/uas": 1.0, "test/las": 1.0, "test/lcm": 1.0, "seed": seed,
                   "experiment": "x", "condition": "hinge-cle", "decoder": "cle"}  # fmt: skip
        (run / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
        assert len(sentence_las(run, "test")) == 40
    scores = sentence_las(tmp_path / "runs" / "x" / "hinge-cle" / "seed1", "test")
    assert all(correct == words for correct, words in scores)
    assert main([str(tmp_path / "runs"), "--no-plots", "--bootstrap", "200", "--out",
                 str(tmp_path / "out")]) == 0  # fmt: skip
    text = (tmp_path / "out" / "table1-bootstrap.md").read_text(encoding="utf-8")
    assert "| x | Hinge (CL/E) | 2 |" in text and "200 resamples" in text
    low, high = (float(v) for v in text.split("| [")[1].split("]")[0].split(", "))
    assert low < 100.0 and high == 100.0  # the wrong sentence is drawn in most resamples
    capsys.readouterr()


def _dev_log(run: Path, curve: dict[int, float], best_step: int) -> None:
    """A CSV log with ``curve`` (update -> dev LAS) as Lightning writes it (step = update − 1),
    then the final re-evaluation and the test row; ``best_step`` into ``metrics.json``."""
    rows = ["epoch,step,test/las,val/las"]
    rows += [f"0,{u - 1},,{las}" for u, las in curve.items()]
    rows += [f"0,{max(curve) - 1},,{curve[best_step]}", f"0,{max(curve) - 1},50.0,"]
    (run / "csv").mkdir()
    (run / "csv" / "metrics.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    metrics.update(best_step=best_step, precision="32-true")
    (run / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")


def test_each_run_says_whether_its_best_dev_came_before_the_end(make_run, tmp_path, capsys):
    """Issue 29's acceptance, read off each run's dev curve: the best dev LAS at least two
    evaluations before the last is a plateau; at the last or the one before, still rising."""
    flat = make_run("table1-ptb", "hinge-cle", 1111, (90.0, 88.0, 40.0))
    _dev_log(flat, {100: 80.0, 200: 85.0, 300: 86.0, 400: 85.5, 500: 85.9}, 300)
    rising = make_run("table1-ptb", "hinge-bock", 1111, (90.0, 88.0, 40.0))
    _dev_log(rising, {100: 80.0, 200: 85.0, 300: 86.0, 400: 86.5, 500: 86.4}, 400)
    make_run("table1-ptb", "local-ce-cle", 1111, (90.0, 88.0, 40.0))  # no CSV log
    found = discover([tmp_path])
    by_name = {run.condition: run for run in found.runs}
    assert plateau(by_name["hinge-cle"]) == Plateau(300, 500, 5, 2)
    assert plateau(by_name["hinge-bock"]) == Plateau(400, 500, 5, 1)
    assert plateau(by_name["local-ce-cle"]) is None
    assert main([str(tmp_path), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert ("hinge-cle seed 1111 (32-true): best dev at update 300, 2 of 5 evaluations after it "
            "(last 500): plateau") in printed  # fmt: skip
    assert "hinge-bock seed 1111 (32-true): best dev at update 400, 1 of 5" in printed
    assert "(last 500): still rising" in printed
    assert "local-ce-cle seed 1111: no development curve or best update recorded" in printed


def test_each_run_says_where_it_was_resumed_and_whether_bit_for_bit(make_run, tmp_path, capsys):
    """The run list reads every resume off the run's train.log: the update, and whether the
    run continued bit for bit (an earlier bockparse logged neither)."""
    log = "[t][bockparse.training.train][INFO] - {} {}/checkpoints/last.ckpt{}"
    exact = "[t][bockparse.training.schedule][INFO] - {}: every process's generators restored"
    runs = {c: make_run("table1-ptb", c, 1111, (90.0, 88.0, 40.0))
            for c in ("hinge-cle", "hinge-bock", "local-ce-cle")}  # fmt: skip
    (runs["hinge-cle"] / TRAIN_LOG).write_text(
        "\n".join(
            [
                log.format(RESUMING, runs["hinge-cle"], " at update 200"),
                exact.format(RESUMED_EXACTLY),
                "[t][x][INFO] - update 300: dev LAS 86.00",
                log.format(RESUMING, runs["hinge-cle"], " at update 300"),
                "[t][bockparse.training.schedule][WARNING] - resumed, not bit for bit: ...",
            ]
        )
        + "\n"
    )
    (runs["hinge-bock"] / TRAIN_LOG).write_text(log.format(RESUMING, runs["hinge-bock"], ""))
    (runs["local-ce-cle"] / TRAIN_LOG).write_text("[t][x][INFO] - update 100: dev LAS 80.00\n")
    assert resumes(runs["hinge-cle"]) == [Resume(200, True), Resume(300, False)]
    assert resumes(runs["hinge-bock"]) == [Resume(None, False)]
    assert resumes(runs["local-ce-cle"]) == []
    assert main([str(tmp_path), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert ("recorded; resumed at update 200, bit for bit; resumed at update 300, not bit for "
            "bit\n") in printed  # fmt: skip
    assert (
        "hinge-bock seed 1111: no development curve or best update recorded; resumed, not "
        "bit for bit\n" in printed
    )
    assert "local-ce-cle seed 1111: no development curve or best update recorded\n" in printed


def test_an_equivalence_over_two_seeds_carries_a_caution(make_run, tmp_path):
    for seed, (cle, bock) in ((1, (82.0, 82.01)), (2, (82.1, 82.12))):
        make_run("smoke", "hinge-cle", seed, (90.0, cle, 10.0))
        make_run("smoke", "hinge-bock", seed, (90.0, bock, 10.0))
    from bockparse.experiments.table import comparisons_markdown

    [group] = aggregate(discover([tmp_path]))
    [line] = [row for row in comparisons_markdown([group]).splitlines() if row.startswith("| smo")]
    assert line.endswith("| equivalent within ±0.5 (caution: only 2 seeds) |")


def test_the_power_table_sizes_each_comparison(make_run, tmp_path):
    """Each testable comparison's detectable difference at 80 % power, uncorrected and at
    Holm's α/k, from its own sd and n (:mod:`.stats`); untestable ones are left out."""
    from bockparse.experiments.stats import detectable_difference, power
    from bockparse.experiments.table import power_markdown

    las = {"local-ce-cle": (85.1, 84.9, 85.3), "hinge-cle": (84.0, 84.4, 84.1),
           "hinge-bock": (84.2, 84.3, 84.0)}  # fmt: skip
    for condition, values in las.items():
        for seed, value in zip((1111, 2222, 3333), values, strict=True):
            make_run("smoke", condition, seed, (90.0, value, 10.0))
    [group] = aggregate(discover([tmp_path]))
    text = power_markdown([group])
    rows = [line for line in text.splitlines() if line.startswith("| smoke")]
    assert len(rows) == 3 and "α/3" in text
    test = group.compare(("hinge-bock", "hinge-cle"))
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[1:4] == ["Hinge (Bock) − Hinge (CL/E)", "3", f"{test.sd:.2f}"]
    assert cells[4] == f"{detectable_difference(test.sd, 3):.2f}"
    assert cells[5] == f"{detectable_difference(test.sd, 3, 0.05 / 3):.2f}"
    assert cells[6] == f"{100 * power(0.5, test.sd, 3):.0f} %"
    assert float(cells[5]) > float(cells[4])  # Holm's level asks for a larger difference
    make_run("other", "hinge-cle", 1, (90.0, 80.0, 10.0))  # one seed: nothing to size
    groups = aggregate(discover([tmp_path]))
    assert power_markdown(groups).count("| other") == 0 and "α/3" in power_markdown(groups)
