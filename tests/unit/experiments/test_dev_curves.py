"""Development curves from the CSV log, and their mean band over seeds."""

from __future__ import annotations

import pytest

from bockparse.experiments.plots import mean_band
from bockparse.experiments.runs import dev_curve

# As Lightning's CSVLogger writes it for a smoke run (eval every 3 updates, 6 updates), then
# the final re-evaluation of the selected checkpoint and the test row.
CSV = """epoch,step,test/las,val/las,train/loss
0,1,,,3.5
0,2,,1.25,
0,5,,1.75,
1,6,,1.75,
1,6,2.25,,
"""


def test_dev_curve_drops_the_final_reevaluation(tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "metrics.csv").write_text(CSV, encoding="utf-8")
    assert dev_curve(tmp_path) == {3: 1.25, 6: 1.75}
    assert dev_curve(tmp_path / "absent") == {}


def test_dev_curve_of_an_unfinished_run_keeps_every_point(tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "metrics.csv").write_text(CSV.rsplit("1,6", 2)[0], encoding="utf-8")
    assert dev_curve(tmp_path) == {3: 1.25, 6: 1.75}


def test_mean_band():
    x, mean, std = mean_band([{100: 80.0, 200: 82.0}, {100: 82.0}])
    assert x == [100, 200]
    assert mean == [81.0, 82.0]
    assert std == pytest.approx([2**0.5, 0.0])
