"""The root-constraint study over several models: mean ± sample std over the models of each
K's violation rates, from their committed ``rootstudy.json`` files (``bockparse-rootstudy
RUN_DIR --out DIR``), and each model's 1-best and 50-best rates.

    python experiments/root-constraint/summarize.py \\
        experiments/root-constraint/table1-ud/table1-ud-ewt-seed*/ \\
        --output experiments/root-constraint/table1-ud/table1-ud-ewt-summary.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bockparse.experiments.table import fmt_cell, summarize


def summary(folders: list[Path]) -> str:
    studies = {
        f.name: json.loads((f / "rootstudy.json").read_text(encoding="utf-8")) for f in folders
    }
    names = sorted(studies)
    ks = [row["k"] for row in studies[names[0]]]
    lines = [
        f"Root-constraint violations over {len(names)} models ({', '.join(names)}), development "
        "scores; mean ± sample std over the models.",
        "",
        "| decoding | violating trees % | sentences with a violating tree % | "
        "root-constrained violating % (max) |",
        "| :--- | ---: | ---: | ---: |",
    ]
    for i, k in enumerate(ks):
        rows = {j: studies[n][i] for j, n in enumerate(names)}
        assert all(r["k"] == k for r in rows.values()), "the studies differ in their K"
        trees = summarize({j: r["unconstrained_pct"] for j, r in rows.items()})
        sents = summarize({j: r["sentences_violating_pct"] for j, r in rows.items()})
        worst = max(r["constrained_pct"] for r in rows.values())
        lines.append(
            f"| {rows[0]['decoding']} | {fmt_cell(trees)} | {fmt_cell(sents)} | {worst:.2f} |"
        )
    lines += ["", "| model | sentences | 1-best violating % | 50-best violating % |",
              "| :--- | ---: | ---: | ---: |"]  # fmt: skip
    for n in names:
        first, last = studies[n][0], studies[n][-1]
        lines.append(
            f"| {n} | {first['sentences']} | {first['unconstrained_pct']:.2f} | "
            f"{last['unconstrained_pct']:.2f} ({last['decoding']}) |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="+", type=Path, help="folders holding rootstudy.json")
    p.add_argument("--output", type=Path, help="also write the summary here")
    args = p.parse_args()
    text = summary(sorted(f for f in args.folders if (f / "rootstudy.json").is_file()))
    print(text, end="")
    if args.output:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
