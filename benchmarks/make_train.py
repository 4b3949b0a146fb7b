"""`make train` in fp32 and in bf16-mixed over seeds: accuracy parity and where the wall time goes.

Runs (``--train``, the ones whose folder has no ``metrics.json`` yet)::

    bockparse-train experiment=ewt-sample-cpu [trainer=cpu-bf16] seed=S \\
        hydra.run.dir=RUNS/{fp32,bf16}/seedS

one after the other, then reads every ``RUNS/<precision>/seed*/`` (``metrics.json``, and
``timing.json`` from :mod:`bockparse.training.clock` where the run has one) and prints two
tables: dev and test UAS/LAS per seed with mean ± sample standard deviation, and the wall-time
split (mean seconds per part, the runs with a ``timing.json``). ``--keep DIR`` copies each
run's small files (:func:`bockparse.experiments.publish.publish_run`: metrics, timing, logs,
composed config, compressed predictions; never checkpoints) to ``DIR``, from which the tables
regenerate (``--runs DIR``).

    python benchmarks/make_train.py --runs outputs/make-train --train --seeds 1111 2222 3333 \\
        --keep benchmarks/results/make-train --output benchmarks/results/make_train.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from bockparse.experiments.publish import publish_run
from bockparse.experiments.table import fmt_cell, summarize

PRECISIONS = {"fp32": [], "bf16": ["trainer=cpu-bf16"]}
PARTS = ("startup", "updates", "evaluations", "checkpoints", "final_evaluation", "other")


def train(runs: Path, precision: str, seed: int) -> None:
    folder = runs / precision / f"seed{seed}"
    if (folder / "metrics.json").exists():
        return
    command = [str(Path(sys.executable).parent / "bockparse-train"), "experiment=ewt-sample-cpu",
               *PRECISIONS[precision], f"seed={seed}", f"hydra.run.dir={folder}"]  # fmt: skip
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def mean_std(values: list[float]) -> str:
    """``mean ± sample std`` as ``bockparse-table`` writes it (``—`` for no values)."""
    return fmt_cell(summarize(dict(enumerate(values))))


def read(runs: Path) -> dict[str, dict[int, dict]]:
    found: dict[str, dict[int, dict]] = {}
    for precision in PRECISIONS:
        for folder in sorted((runs / precision).glob("seed*")):
            if not (folder / "metrics.json").exists():
                continue
            run = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
            timing = folder / "timing.json"
            run["timing"] = (
                json.loads(timing.read_text(encoding="utf-8")) if timing.exists() else None
            )
            found.setdefault(precision, {})[run["seed"]] = run
    return found


def tables(found: dict[str, dict[int, dict]]) -> str:
    seeds = sorted({s for runs in found.values() for s in runs})
    lines = [
        "| precision | metric | " + " | ".join(f"seed {s}" for s in seeds) + " | mean ± std |",
        "|---|---|" + "---:|" * (len(seeds) + 1),
    ]
    for precision, runs in found.items():
        for key in ("val/uas", "val/las", "test/uas", "test/las"):
            values = [runs[s][key] for s in seeds if s in runs]
            cells = [f"{runs[s][key]:.2f}" if s in runs else "-" for s in seeds]
            row = f"| {precision} | {key} | " + " | ".join(cells)
            lines.append(row + f" | {mean_std(values)} |")
    lines += ["", "| precision | runs | " + " | ".join(PARTS) + " | total | s per update |",
              "|---|---:|" + "---:|" * (len(PARTS) + 2)]  # fmt: skip
    for precision, runs in found.items():
        timed = [r["timing"] for r in runs.values() if r["timing"]]
        if not timed:
            continue
        mean = {k: statistics.mean(t[k] for t in timed) for k in (*PARTS, "total")}
        per_update = statistics.mean(t["updates"] / t["n_updates"] for t in timed)
        cells = [f"{mean[k]:.1f} ({100 * mean[k] / mean['total']:.0f} %)" for k in PARTS]
        lines.append(f"| {precision} | {len(timed)} | " + " | ".join(cells)
                     + f" | {mean['total']:.1f} | {per_update:.3f} |")  # fmt: skip
    if {"fp32", "bf16"} <= found.keys():
        ratio = [
            found["bf16"][s]["timing"]["total"] / found["fp32"][s]["timing"]["total"]
            for s in seeds
            if s in found["bf16"]
            and s in found["fp32"]
            and found["bf16"][s]["timing"]
            and found["fp32"][s]["timing"]
        ]
        if ratio:
            lines += ["", f"bf16 / fp32 wall time, same seed: {mean_std(ratio)} (n = {len(ratio)})"]
    return "\n".join(lines) + "\n"


def keep(runs: Path, target: Path) -> None:
    for precision in PRECISIONS:
        for folder in sorted((runs / precision).glob("seed*")):
            if (folder / "metrics.json").is_file():
                publish_run(folder, target / precision / folder.name)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=Path, required=True, help="RUNS/<precision>/seed<S>/ folders")
    p.add_argument("--train", action="store_true", help="train the runs that are missing")
    p.add_argument("--seeds", type=int, nargs="+", default=[1111, 2222, 3333])
    p.add_argument("--precision", nargs="+", choices=list(PRECISIONS), default=list(PRECISIONS))
    p.add_argument("--keep", type=Path, help="copy the runs' small files here")
    p.add_argument("--output", type=Path, help="also write the tables to this file")
    args = p.parse_args()
    if args.train:
        for seed in args.seeds:
            for precision in args.precision:
                train(args.runs, precision, seed)
    if args.keep:
        keep(args.runs, args.keep)
    text = tables(read(args.runs))
    print(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
