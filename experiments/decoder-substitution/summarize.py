"""Decoder substitution over several models: one row per model and split from the committed
``substitution.json`` files (``bockparse-substitute RUN_DIR --out DIR``): how many sentences
every pair of decoders agrees on (the smallest count over the pairs) in heads, relation labels
and tree scores, the largest tree-score difference, the spread of LAS across the decoders, and
whether the reloaded model reproduces the run's saved predictions.

    python experiments/decoder-substitution/summarize.py \\
        experiments/decoder-substitution/table1-ud/*/ \\
        --output experiments/decoder-substitution/table1-ud/summary.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def summary(folders: list[Path]) -> str:
    reports = [
        (f.name, report)
        for f in folders
        for report in json.loads((f / "substitution.json").read_text(encoding="utf-8"))
    ]
    decoders = sorted({d for _, r in reports for s in r["stages"].values() for d in s["scores"]})
    lines = [
        f"Decoder substitution over {len(reports)} models; decoders {', '.join(decoders)}; "
        "per split, the smallest count of identical sentences over all pairs of decoders.",
        "",
        "| model | scores | split | sentences | identical heads | identical labels | "
        "identical tree scores | max score difference | lowest LAS | "
        "LAS max − min | saved predictions reproduced |",
        "| :--- | :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, report in reports:
        for stage, res in report["stages"].items():
            pairs = res["pairs"]
            las = [s["las"] for s in res["scores"].values()]
            rep = res.get("reproduced")
            lines.append(
                f"| {name} | {report.get('scores', 'raw')} | {stage} | {res['sentences']} | "
                + " | ".join(
                    str(min(p[k] for p in pairs)) for k in ("heads", "labels", "tree_scores")
                )
                + f" | {max(p['max_score_difference'] for p in pairs):.3g}"
                + f" | {min(las):.2f} | {max(las) - min(las):.2f} | "
                + (f"{rep['identical']} / {rep['sentences']} ({rep['decoder']})" if rep else "—")
                + " |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="+", type=Path, help="folders holding substitution.json")
    p.add_argument("--output", type=Path, help="also write the summary here")
    args = p.parse_args()
    text = summary(sorted(f for f in args.folders if (f / "substitution.json").is_file()))
    print(text, end="")
    if args.output:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
