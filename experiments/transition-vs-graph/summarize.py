"""The transition baselines against hinge-Bock over seeds, from the committed predictions:
per condition, mean ± sample std over the seeds of UAS / LAS / LCM overall and on the sentences
whose gold tree is non-projective
(:func:`bockparse.heads.transition.analysis.scores_by_projectivity`), the LAS difference to
hinge-Bock paired by seed, then every run's row.

    python experiments/transition-vs-graph/summarize.py experiments/transition-vs-graph/runs \\
        --gold $BOCKPARSE_DATA/ud-english-ewt \\
        --output experiments/transition-vs-graph/summary.md

``runs`` holds ``<condition>/seed<seed>/predictions/{val,test}.conllu.gz`` (``bockparse-publish
multirun/transition-vs-graph --out experiments/transition-vs-graph/runs``); ``--gold`` the
treebank folder with ``en_ewt-ud-dev.conllu`` and ``en_ewt-ud-test.conllu``. Punctuation is
scored, as in the runs' ``metrics.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bockparse.experiments.table import fmt_cell, fmt_difference, summarize
from bockparse.heads.transition.analysis import scores_by_projectivity

CONDITIONS = ("arc-standard", "arc-eager", "hinge-bock")
GRAPH = "hinge-bock"
SPLITS = {"test": "en_ewt-ud-test.conllu", "val": "en_ewt-ud-dev.conllu"}
# (subset, metric) per column: overall UAS / LAS / LCM, then UAS / LAS on non-projective trees
COLUMNS = (("all", "uas"), ("all", "las"), ("all", "lcm"), ("non-projective", "uas"),
           ("non-projective", "las"))  # fmt: skip


def split_summary(runs: Path, gold: Path, stage: str) -> str:
    """The Markdown tables of one split (``"test"`` or ``"val"``)."""
    scores: dict[str, dict[int, dict]] = {}  # condition -> seed -> scores_by_projectivity
    for pred in sorted(runs.glob(f"*/seed*/predictions/{stage}.conllu.gz")):
        condition, seed = pred.parts[-4], int(pred.parts[-3].removeprefix("seed"))
        scores.setdefault(condition, {})[seed] = scores_by_projectivity(str(gold), str(pred))
    if not scores:
        raise SystemExit(f"{runs}: no <condition>/seed<seed>/predictions/{stage}.conllu.gz")
    order = [c for c in CONDITIONS if c in scores] + sorted(set(scores) - set(CONDITIONS))
    first = min(scores[order[0]].items())[1]  # the split's sizes: the same in every run
    lines = [
        f"{stage}: {first['all']['sentences']} sentences, {first['non-projective']['sentences']} "
        "with a non-projective gold tree; mean ± sample std over the seeds; punctuation scored.",
        "",
        "| condition | n | UAS | LAS | LCM | non-proj. UAS | non-proj. LAS | LAS − hinge-Bock "
        "(paired) |",
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    graph = scores.get(GRAPH, {})
    for c in order:
        per_seed = scores[c].items()
        cells = [fmt_cell(summarize({s: r[k][m] for s, r in per_seed})) for k, m in COLUMNS]
        paired = {s: r["all"]["las"] - graph[s]["all"]["las"]
                  for s, r in per_seed if s in graph}  # fmt: skip
        diff = fmt_difference(summarize(paired if c != GRAPH else {}))
        lines.append(f"| {c} | {len(scores[c])} | " + " | ".join(cells) + f" | {diff} |")
    lines += ["", "| run | UAS | LAS | LCM | non-proj. UAS | non-proj. LAS |",
              "| :--- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for c in order:
        for seed, r in sorted(scores[c].items()):
            cells = [f"{r[k][m]:.2f}" for k, m in COLUMNS]
            lines.append(f"| {c} seed {seed} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, help="<condition>/seed<seed>/predictions/*.conllu.gz")
    p.add_argument("--gold", type=Path, required=True, help="the UD English-EWT folder")
    p.add_argument("--output", type=Path, help="also write the summary here")
    args = p.parse_args()
    text = "\n".join(split_summary(args.runs, args.gold / f, s) for s, f in SPLITS.items())
    print(text, end="")
    if args.output:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
