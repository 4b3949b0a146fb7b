"""The calibration runs' development LAS per evaluation: a Markdown table and a figure.

Reads every ``<experiment>/<condition>/seed<seed>/`` run folder under this folder (its
``csv/metrics.csv``, ``metrics.json`` and ``timing.json``), prints one table with a column per
run (dev LAS at each evaluation, the wall time per 100 updates, the test scores of the best
checkpoint) and writes ``calibration.png``::

    python experiments/table1-ud/calibration/curves.py
"""

from __future__ import annotations

import json
from pathlib import Path

from bockparse.experiments.plots import dev_curve

HERE = Path(__file__).resolve().parent


def runs() -> list[Path]:
    return sorted(p.parent for p in HERE.glob("*/*/seed*/metrics.json"))


def table(folders: list[Path]) -> str:
    curves = {f: dev_curve(f) for f in folders}
    names = [f"{f.parts[-3]} ({f.parts[-2]}, {f.name})" for f in folders]
    lines = ["| update | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(folders)]
    for update in sorted({u for c in curves.values() for u in c}):
        cells = [f"{curves[f][update]:.2f}" if update in curves[f] else "" for f in folders]
        lines.append(f"| {update} | " + " | ".join(cells) + " |")
    rows = {"test UAS / LAS / LCM (best dev checkpoint)": [], "best update": [],
            "s per update (training)": [], "s per evaluation": [],
            "wall time, min": []}  # fmt: skip
    for f in folders:
        m = json.loads((f / "metrics.json").read_text(encoding="utf-8"))
        t = json.loads((f / "timing.json").read_text(encoding="utf-8"))
        rows["test UAS / LAS / LCM (best dev checkpoint)"].append(
            f"{m['test/uas']:.2f} / {m['test/las']:.2f} / {m['test/lcm']:.2f}"
        )
        rows["best update"].append(str(m["best_step"]))
        rows["s per update (training)"].append(f"{t['updates'] / t['n_updates']:.2f}")
        rows["s per evaluation"].append(f"{t['evaluations'] / max(t['n_evaluations'], 1):.1f}")
        rows["wall time, min"].append(f"{t['total'] / 60:.1f}")
    for label, cells in rows.items():
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def figure(folders: list[Path], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for f in folders:
        curve = dev_curve(f)
        ax.plot(list(curve), list(curve.values()), marker=".", label=f.parts[-3])
    ax.set_xlabel("update (1,000-word batches)")
    ax.set_ylabel("dev LAS (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Calibration: local-ce, seed 1111, the paper's parser", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    folders = runs()
    print(table(folders))
    figure(folders, HERE / "calibration.png")


if __name__ == "__main__":
    main()
