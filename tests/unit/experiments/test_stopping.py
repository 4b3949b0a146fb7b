"""The stop-time analysis (issue 53): paired development differences at matched updates, the
final difference split into the matched one and the later-best run's gain, test LAS against
the best update."""

from __future__ import annotations

import csv
import json

import pytest

from bockparse.cli.experiments import stopping as main
from bockparse.experiments.runs import discover
from bockparse.experiments.stopping import matched_rows, pairs, regressions, shares
from bockparse.experiments.table import aggregate


def _run(make_run, condition, seed, curve, test_las):
    """A finished run with its development curve (update -> dev LAS), its best at the curve's
    maximum (the later one on ties) and test LAS ``test_las``."""
    path = make_run("table1-ud-ewt", condition, seed, (90.0, test_las, 50.0))
    best = max(curve, key=lambda u: (curve[u], u))
    metrics = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
    metrics["best_step"] = best
    (path / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    (path / "csv").mkdir()
    with open(path / "csv" / "metrics.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "val/las", "test/las"])
        for update, value in sorted(curve.items()):
            writer.writerow([update - 1, value, ""])  # Lightning logs update u at step u - 1
        writer.writerow([max(curve) - 1, curve[best], ""])  # the final re-evaluation
        writer.writerow([max(curve) - 1, "", test_las])


def test_the_final_difference_is_the_matched_one_plus_the_later_runs_gain(make_run, tmp_path):
    # hinge-bock peaks at 300 (80.0) and stops; hinge-cle is ahead at 300 and gains after it
    _run(make_run, "hinge-bock", 1, {100: 70.0, 200: 78.0, 300: 80.0, 400: 79.0}, 85.0)
    _run(make_run, "hinge-cle", 1, {100: 71.0, 200: 80.5, 300: 79.0, 400: 81.0, 500: 82.0,
                                    600: 81.5}, 86.0)  # fmt: skip
    [group] = aggregate(discover([tmp_path]))
    [pair] = pairs([group])
    assert pair.rows == ("hinge-bock", "hinge-cle") and pair.best_updates == (300, 500)
    assert pair.matched() == pytest.approx({100: -1.0, 200: -2.5, 300: 1.0, 400: -2.0})
    [share] = shares([pair], slope=0.5)
    assert share.matched_update == 300
    assert share.dev_matched == pytest.approx(80.0 - 80.5)  # best so far at 300: 80.0, 80.5
    assert share.dev_final == pytest.approx(80.0 - 82.0)
    assert share.later_gain == pytest.approx(-1.5)  # hinge-cle's gain after update 300
    assert share.test == pytest.approx(-1.0)
    assert share.predicted == pytest.approx(0.5 * (300 - 500) / 1000)
    rows = matched_rows([pair])
    assert [r[2] for r in rows] == [100, 200, 300, 400] and {r[3] for r in rows} == {1}


def test_test_las_against_the_best_update_and_the_command(make_run, tmp_path, capsys):
    tests = {"local-ce-cle": (90.0, 90.5, 91.0), "hinge-cle": (90.2, 90.6, 91.1),
             "hinge-bock": (90.1, 90.4, 91.2)}  # fmt: skip
    for condition, values in tests.items():
        for i, (seed, las) in enumerate(zip((1, 2, 3), values, strict=True)):
            top = 300 + 100 * i + (100 if condition == "hinge-bock" else 0)
            curve = {u: 80.0 + u / 100 for u in range(100, top + 100, 100)}
            curve[top + 100] = curve[top] - 0.1
            _run(make_run, condition, seed, curve, las)
    groups = aggregate(discover([tmp_path]))
    [fit], pooled = regressions(groups)
    assert fit.n == 9 and fit.slope > 0 and 0 < fit.r <= 1 and fit.slope_low < fit.slope
    assert pooled == pytest.approx(fit.slope)  # one treebank: the pooled slope is its own
    out = tmp_path / "out"
    assert main([str(tmp_path / "table1-ud-ewt"), "--out", str(out), "--no-plots"]) == 0
    text = (out / "stopping.md").read_text(encoding="utf-8")
    assert text == capsys.readouterr().out
    assert "of 9 paired comparisons the test-LAS difference has the sign" in text
    assert (out / "matched.csv").is_file() and (out / "seeds.csv").is_file()
    assert main([str(tmp_path / "nowhere")]) == 2
    # A console script like the others: --out inside a run read is refused before any work.
    run = next((tmp_path / "table1-ud-ewt").rglob("metrics.json")).parent
    capsys.readouterr()
    assert main([str(tmp_path / "table1-ud-ewt"), "--out", str(run / "stopping")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert (
        len(err) == 1 and err[0].startswith("bockparse-stopping: --out ") and "is inside" in err[0]
    )
    assert not (run / "stopping").exists()


@pytest.mark.filterwarnings("error")
def test_a_report_that_cannot_be_written_is_one_line(make_run, tmp_path, capsys):
    """``--out`` under a file (no folder can be made there): one line naming it, exit 1."""
    for condition in ("local-ce-cle", "hinge-cle", "hinge-bock"):
        for seed in (1, 2, 3):
            top = 200 + 100 * seed
            curve = {u: 80.0 + u / 100 for u in range(100, top + 100, 100)}
            curve[top + 100] = curve[top] - 0.1
            _run(make_run, condition, seed, curve, 90.0 + seed / 10)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main([str(tmp_path / "table1-ud-ewt"), "--out", str(blocker / "out")]) == 1
    out, err = capsys.readouterr()
    # Equal test LAS in every pair: Spearman's ρ is undefined, said so (no scipy warning).
    assert "Spearman's ρ between the two is undefined (one side is constant)" in out
    where = blocker / "out"
    assert err.splitlines() == [
        f"bockparse-stopping: cannot write {where}: a part of the path is not a folder"
    ]
