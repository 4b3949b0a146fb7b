"""The equivalence tests of both scorings in one family (issue 53): the six TOSTs of the
punctuation-included table (``table1.csv``) and the six of the punctuation-excluded
re-evaluation (``../punct-reeval/table1-ud-plateau/table1-punct.csv``), Holm-corrected over all
twelve (``bockparse.experiments.stats``: statsmodels' ``ttost_paired`` and
``multipletests(method="holm")``). Each table corrects over its own six; a reading that picks
whichever scoring passes has tested twelve.

    python experiments/table1-ud/holm_both_scorings.py > experiments/table1-ud/holm-both-scorings.md
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from bockparse.experiments.rows import row_label
from bockparse.experiments.stats import holm, paired_test
from bockparse.experiments.table import COMPARISONS, MARGIN

HERE = Path(__file__).resolve().parent
SCORINGS = {
    "punctuation included": HERE / "table1.csv",
    "punctuation excluded": HERE.parent / "punct-reeval" / "table1-ud-plateau" / "table1-punct.csv",
}


def seed_las(path: Path) -> dict[tuple[str, str], dict[int, float]]:
    """(treebank, condition) -> seed -> test LAS, from a ``bockparse-table`` CSV."""
    found: dict[tuple[str, str], dict[int, float]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["metric"] == "las":
                seeds = [int(s) for s in row["seeds"].split(";")]
                values = [float(v) for v in row["values"].split(";")]
                found[(row["treebank"], row["row"])] = dict(zip(seeds, values, strict=True))
    return found


def report() -> str:
    tests = []
    for scoring, path in SCORINGS.items():
        las = seed_las(path)
        for treebank in dict.fromkeys(t for t, _ in las):
            for a, b in COMPARISONS:
                first, second = las[(treebank, a)], las[(treebank, b)]
                diffs = {s: first[s] - second[s] for s in sorted(first.keys() & second.keys())}
                tests.append((scoring, treebank, a, b, paired_test(diffs, MARGIN)))
    adjusted = holm([t.p_equivalence for *_, t in tests])
    lines = [
        f"TOST of equivalence within ±{MARGIN:g} test LAS, both scorings of the runs to the "
        f"plateau, Holm-corrected over all {len(tests)} (`python "
        "experiments/table1-ud/holm_both_scorings.py`, from `table1.csv` and "
        "`../punct-reeval/table1-ud-plateau/table1-punct.csv`).",
        "",
        f"| scoring | Treebank | comparison | n | p (TOST) | p (TOST, Holm over {len(tests)}) |",
        "| :--- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (scoring, treebank, a, b, t), p in zip(tests, adjusted, strict=True):
        lines.append(f"| {scoring} | {treebank} | {row_label(a)} − {row_label(b)} | {t.n} | "
                     f"{t.p_equivalence:.3f} | {p:.3f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print(report(), end="")


if __name__ == "__main__":
    main()
