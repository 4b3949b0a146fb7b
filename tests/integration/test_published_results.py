"""The published tables regenerate from the run files committed beside them, byte for byte:
``bockparse-table <committed run folders>`` writes the committed ``table1.md`` and
``table1.csv`` of both Table 1 stand-ins (``experiments/table1-ud``, the runs to the development
plateau, and its ``first-budget``, 400 and 300 updates) and the loss × decoder grid of
``experiments/ablation``; with the gold treebanks, both stand-ins' sentence-level bootstrap
intervals, their punctuation-excluded re-evaluations, the transition-vs-graph summary and the
ablation's decoder comparison regenerate too, the published predicted-tag runs score as the
CoNLL 2018 evaluator does on their predictions, and a run with gold tags in training gets its
own attribution. The stop-time analysis of the plateau runs (``bockparse-stopping``)
regenerates from the committed curves alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bockparse.cli.experiments import table as table_main
from bockparse.training.train import CONF_DIR

REPO = Path(CONF_DIR).parent
# table -> (committed run folders, bockparse-table options, the folder its committed files are
# in, the files it writes). --strict: every expected run is committed and finished (a missing
# one fails the test); --expect table1: the Table 1 preset's conditions and seeds are expected.
TABLE1 = ["--strict", "--expect", "table1"]
PUBLISHED = {
    "table1-ud-first-budget": ("experiments/table1-ud/first-budget/runs", TABLE1,
                               "experiments/table1-ud/first-budget", ("table1.md", "table1.csv")),
    "ablation": ("experiments/ablation/runs", ["--layout", "grid", "--strict"],
                 "experiments/ablation", ("ablation.md", "ablation.csv")),
    "table1-ud": ("experiments/table1-ud/runs", TABLE1, "experiments/table1-ud",
                  ("table1.md", "table1.csv")),
}  # fmt: skip


@pytest.mark.parametrize("table", sorted(PUBLISHED))
def test_a_published_table_regenerates_from_its_committed_runs(table, tmp_path, monkeypatch):
    runs, options, folder, files = PUBLISHED[table]
    monkeypatch.chdir(REPO)  # the tables name the run folders as given, relative to the repo
    assert table_main([runs, *options, "--no-plots", "--out", str(tmp_path)]) == 0
    for name in files:
        committed = REPO / folder / name
        assert (tmp_path / name).read_bytes() == committed.read_bytes(), name


def test_the_stop_time_analysis_regenerates(tmp_path, monkeypatch):
    """``experiments/table1-ud/stopping``: the tables byte for byte from the committed run
    folders' curves and metrics; the figures are produced."""
    from bockparse.cli.experiments import stopping as stopping_main

    monkeypatch.chdir(REPO)  # the report names the run folders as given, relative to the repo
    assert stopping_main([PUBLISHED["table1-ud"][0], "--out", str(tmp_path)]) == 0
    committed = REPO / "experiments" / "table1-ud" / "stopping"
    for name in ("stopping.md", "matched.csv", "seeds.csv"):
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name
    for name in ("matched_dev.png", "test_vs_best.png"):
        assert (tmp_path / name).stat().st_size > 10_000, name


def test_the_holm_family_over_both_scorings_regenerates():
    """``experiments/table1-ud/holm_both_scorings.py``: the twelve TOSTs of the committed
    punctuation-included and -excluded tables, Holm over all twelve."""
    script = REPO / "experiments" / "table1-ud" / "holm_both_scorings.py"
    done = subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
    assert done.stdout == (script.parent / "holm-both-scorings.md").read_bytes()


def test_the_tie_order_trace_comparison_regenerates():
    """``experiments/tie-order/compare.py``: the canonical-tie runs' traces compared."""
    script = REPO / "experiments" / "tie-order" / "compare.py"
    done = subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
    assert done.stdout == (script.parent / "results.md").read_bytes()


def test_the_predicted_tag_table_regenerates():
    """``experiments/predicted-tags/table.py``: the published runs by the tag inputs they read,
    beside the UDPipe 2 anchors."""
    script = REPO / "experiments" / "predicted-tags" / "table.py"
    done = subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
    assert done.stdout == (script.parent / "table.md").read_bytes()


def test_the_predicted_tag_attribution_regenerates():
    """``experiments/predicted-tags/attribution.py`` (it needs the gold treebanks): each
    published joint-tagger run's test LAS with its own tags, with the gold tags in, and split by
    the words its tagger got right, from the committed prediction files."""
    data = os.environ.get("BOCKPARSE_DATA")
    if not data or not all((Path(data) / t).is_dir() for t in ("ud-english-ewt", "ud-chinese-gsd")):
        pytest.skip("BOCKPARSE_DATA does not hold the UD treebanks (the gold files)")
    script = REPO / "experiments" / "predicted-tags" / "attribution.py"
    done = subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
    assert done.stdout == (script.parent / "attribution.md").read_bytes()


def test_a_run_with_gold_tags_in_training_gets_its_own_attribution(tmp_path, monkeypatch):
    """A joint-tagger run whose parser read gold tags in training (``train_tags=gold``) is not
    averaged into row (b): ``attribution.py`` reads its own gold-input file and splits row
    (b)'s training part against it. A copy of the published English joint-tagger run, marked
    so, differs from it by exactly zero, and the published parts stay as they are."""
    data = os.environ.get("BOCKPARSE_DATA")
    if not data or not all((Path(data) / t).is_dir() for t in ("ud-english-ewt", "ud-chinese-gsd")):
        pytest.skip("BOCKPARSE_DATA does not hold the UD treebanks (the gold files)")
    folder = REPO / "experiments" / "predicted-tags"
    for name in ("table", "attribution"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(folder))
    import attribution

    copy = tmp_path / "runs" / "train-gold" / "seed1111"
    shutil.copytree(folder / "runs" / "ewt" / "tagger" / "seed1111", copy)
    config = copy / ".hydra" / "config.yaml"
    text = config.read_text()
    assert text.count("train_tags: predicted") == 1
    config.write_text(text.replace("train_tags: predicted", "train_tags: gold"))
    gold_inputs = tmp_path / "gold-inputs"
    shutil.copytree(folder / "gold-inputs", gold_inputs)
    shutil.copy(gold_inputs / "ud-english-ewt-seed1111.conllu.gz",
                gold_inputs / "ud-english-ewt-train-gold-seed1111.conllu.gz")  # fmt: skip
    monkeypatch.setattr(attribution, "GOLD_INPUTS", gold_inputs)

    report = attribution.report((folder / "runs", tmp_path / "runs")).splitlines()
    zero = "+0.00, 95 % interval [+0.00, +0.00]"
    assert f"- predicted rather than gold tags in training (gold tags in, both): {zero}" in report
    assert f"- own tags, predicted − gold tags in training: {zero}" in report
    assert any("1 joint-tagger run(s) with gold tags in training" in line for line in report)
    published = (folder / "attribution.md").read_text().splitlines()
    assert [line for line in published if line.startswith("- ")] == [
        line for line in report if line.startswith("- ") and "gold tags in training" not in line
    ]


def test_the_predicted_tag_runs_score_as_the_conll_2018_evaluator():
    """Every published predicted-tag run's test scores in ``metrics.json`` (UPOS, XPOS, UFeats,
    AllTags, UAS, LAS) equal those of the CoNLL 2018 evaluator (udtools) on its committed
    predictions; so do :func:`bockparse.metrics.evaluate_files`' on the same model's
    predictions from gold tags (``gold-inputs/``, the attribution's second row)."""
    import gzip

    from bockparse.experiments.loading import gold_file
    from bockparse.experiments.runs import discover
    from bockparse.metrics import evaluate_files
    from bockparse.rundir import RunDir

    udeval = pytest.importorskip("udtools.udeval")
    data = os.environ.get("BOCKPARSE_DATA")
    if not data or not all((Path(data) / t).is_dir() for t in ("ud-english-ewt", "ud-chinese-gsd")):
        pytest.skip("BOCKPARSE_DATA does not hold the UD treebanks (the gold files)")

    def official(gold: Path, pred: Path) -> dict[str, float]:
        with gzip.open(pred, "rt", encoding="utf-8") as f:
            system = udeval.load_conllu(f, str(pred), {})
        result = udeval.evaluate(udeval.load_conllu_file(str(gold)), system)
        assert result["Words"].correct == result["Words"].gold_total  # gold tokenisation
        return {m: 100.0 * result[k].f1 for m, k in (
            ("upos", "UPOS"), ("xpos", "XPOS"), ("ufeats", "UFeats"), ("alltags", "AllTags"),
            ("uas", "UAS"), ("las", "LAS"))}  # fmt: skip

    study = REPO / "experiments" / "predicted-tags"
    runs = discover([study / "runs"]).runs
    assert runs and all(r.ok for r in runs)
    for run in runs:
        gold, _ = gold_file(run.path, "test")
        scores = official(gold, RunDir(run.path).predictions("test"))
        metrics = {m: run.metrics[f"test/{m}"] for m in scores if f"test/{m}" in run.metrics}
        assert {"uas", "las"} <= set(metrics), run.path
        assert metrics == pytest.approx({m: scores[m] for m in metrics}, abs=1e-9), run.path
        gold_inputs = study / "gold-inputs" / f"{run.data}-seed{run.seed}.conllu.gz"
        if gold_inputs.is_file():
            ours = evaluate_files(str(gold), str(gold_inputs))
            theirs = official(gold, gold_inputs)
            assert {m: ours[m] for m in theirs} == pytest.approx(theirs, abs=1e-9), gold_inputs


@pytest.mark.parametrize("table, folder", [("table1-ud-first-budget", "table1-ud"),
                                           ("table1-ud", "table1-ud-plateau")])  # fmt: skip
def test_the_punctuation_excluded_table_regenerates(table, folder, tmp_path, monkeypatch):
    """``bockparse-reeval`` on the published predictions of both Table 1 stand-ins (it needs the
    gold treebanks), against the committed ``experiments/punct-reeval/<folder>``."""
    data = os.environ.get("BOCKPARSE_DATA")
    if not data or not all((Path(data) / t).is_dir() for t in ("ud-english-ewt", "ud-chinese-gsd")):
        pytest.skip("BOCKPARSE_DATA does not hold the UD treebanks (the gold files)")
    from bockparse.cli.experiments import reeval as reeval_main

    monkeypatch.chdir(REPO)
    runs = PUBLISHED[table][0]
    assert reeval_main([runs, "--out", str(tmp_path)]) == 0
    for name in ("table1-punct.md", "table1-punct.csv"):
        committed = REPO / "experiments" / "punct-reeval" / folder / name
        assert (tmp_path / name).read_bytes() == committed.read_bytes(), name


@pytest.mark.parametrize("table", ["table1-ud-first-budget", "table1-ud"])
def test_the_bootstrap_intervals_regenerate(table, tmp_path, monkeypatch):
    """``bockparse-table --bootstrap 1000`` on the published predictions (it needs the gold
    treebanks): the committed ``table1-bootstrap.md`` of both Table 1 stand-ins, with the
    options of their ``PUBLISHED`` entry."""
    data = os.environ.get("BOCKPARSE_DATA")
    if not data or not all((Path(data) / t).is_dir() for t in ("ud-english-ewt", "ud-chinese-gsd")):
        pytest.skip("BOCKPARSE_DATA does not hold the UD treebanks (the gold files)")
    runs, options, folder, _ = PUBLISHED[table]
    monkeypatch.chdir(REPO)
    assert table_main([runs, *options, "--no-plots", "--bootstrap", "1000",
                       "--out", str(tmp_path)]) == 0  # fmt: skip
    committed = REPO / folder / "table1-bootstrap.md"
    assert (tmp_path / "table1-bootstrap.md").read_bytes() == committed.read_bytes()


def test_the_transition_summary_regenerates(tmp_path):
    """``experiments/transition-vs-graph/summarize.py`` on the published predictions (it needs
    the gold UD English-EWT files)."""
    data = os.environ.get("BOCKPARSE_DATA")
    if not data or not (Path(data) / "ud-english-ewt").is_dir():
        pytest.skip("BOCKPARSE_DATA does not hold UD English-EWT (the gold files)")
    study = REPO / "experiments" / "transition-vs-graph"
    out = tmp_path / "summary.md"
    command = [sys.executable, str(study / "summarize.py"), str(study / "runs"),
               "--gold", str(Path(data) / "ud-english-ewt"), "--output", str(out)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    assert out.read_bytes() == (study / "summary.md").read_bytes()


def test_the_ablation_decoder_comparison_regenerates(tmp_path):
    """``experiments/ablation/identity.py`` on the published grid (the gold UD Chinese-GSD test
    file adds its non-projective count)."""
    data = os.environ.get("BOCKPARSE_DATA")
    gold = Path(data or "") / "ud-chinese-gsd" / "zh_gsd-ud1.3-test.conllu"
    if not data or not gold.is_file():
        pytest.skip("BOCKPARSE_DATA does not hold UD Chinese-GSD (the gold test file)")
    study = REPO / "experiments" / "ablation"
    out = tmp_path / "identity.md"
    command = [sys.executable, str(study / "identity.py"), str(study / "runs"),
               "--gold", str(gold), "--output", str(out)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    assert out.read_bytes() == (study / "identity.md").read_bytes()


def test_the_like_for_like_stanza_comparison_regenerates(tmp_path, monkeypatch):
    """``benchmarks/stanza_parity.py --like-stanza --report-only`` on the committed runs'
    curves, logs and dev predictions (``benchmarks/results/stanza_parity_like/``; it needs the
    gold UD Chinese-GSD files): the committed table byte for byte, each system's best dev LAS
    re-scored equal to its log's."""
    import shutil

    data = os.environ.get("BOCKPARSE_DATA")
    if not data or not (Path(data) / "ud-chinese-gsd").is_dir():
        pytest.skip("BOCKPARSE_DATA does not hold UD Chinese-GSD (the gold files)")
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import stanza_parity
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    work = Path("benchmarks/results/stanza_parity_like")  # as the committed command names it
    shutil.copytree(REPO / work, tmp_path / work)  # the script writes setup.json and curves
    monkeypatch.chdir(tmp_path)
    out = "benchmarks/results/stanza_parity_like.md"  # the table names its command line
    assert stanza_parity.main(["--data", str(Path(data) / "ud-chinese-gsd"), "--like-stanza",
                               "--threads", "1", "--seeds", "1111", "2222",
                               "--at", "100", "200", "300", "500", "1000", "--work", str(work),
                               "--report-only", "--output", out]) == 0  # fmt: skip
    assert (tmp_path / out).read_bytes() == (REPO / out).read_bytes()
