"""``benchmarks/lstm_weights.py`` on the CPU: both ways equal, and the report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "lstm_weights.py"
spec = importlib.util.spec_from_file_location("lstm_weights", PATH)
lstm_weights = importlib.util.module_from_spec(spec)
sys.modules["lstm_weights"] = lstm_weights
spec.loader.exec_module(lstm_weights)


def test_both_variants_give_equal_outputs_and_gradients_and_a_report(tmp_path, capsys):
    out = tmp_path / "report.md"
    argv = ["--sentences", "3", "--words", "5", "--distinct", "4", "--chars", "3",
            "--rounds", "1", "--calls", "1", "--device", "cpu", "--output", str(out)]  # fmt: skip
    assert lstm_weights.main(argv) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 2  # the word and the character BiLSTM, fp32 only on a CPU
    assert all(row.endswith("| no, no | yes |") for row in rows)  # cuDNN's warning, equality
    assert "python benchmarks/lstm_weights.py --sentences 3" in capsys.readouterr().out
