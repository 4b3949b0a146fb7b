"""Wall time of the published Table 1 stand-in runs, from their ``timing.json``
(:mod:`bockparse.training.clock`): per experiment, the runs, the mean seconds per update and per
development evaluation, the mean and summed wall time.

    python experiments/table1-ud/timing.py experiments/table1-ud/runs
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def table(root: Path) -> str:
    lines = [
        "| experiment | runs | s per update | s per evaluation | min per run (mean) | "
        "min per run (range) | hours, all runs |",
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for experiment in sorted(p for p in root.iterdir() if p.is_dir()):
        runs = [json.loads(p.read_text(encoding="utf-8")) for p in experiment.rglob("timing.json")]
        if not runs:
            continue
        per_update = statistics.mean(r["updates"] / r["n_updates"] for r in runs)
        per_eval = statistics.mean(r["evaluations"] / r["n_evaluations"] for r in runs)
        totals = [r["total"] / 60 for r in runs]
        lines.append(
            f"| {experiment.name} | {len(runs)} | {per_update:.2f} | {per_eval:.1f} | "
            f"{statistics.mean(totals):.1f} | {min(totals):.1f}–{max(totals):.1f} | "
            f"{sum(totals) / 60:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, help="the published runs: <experiment>/<condition>/seed*/")
    print(table(p.parse_args().runs), end="")


if __name__ == "__main__":
    main()
