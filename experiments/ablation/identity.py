"""Where the ablation grid's decoder columns differ, and why: training or inference.

From the committed files only. First, per loss, each decoder's test LAS minus ``cle``'s, paired
by seed (mean ± sample std over the seeds, with n), beside the seed-to-seed spread of the ``cle``
runs themselves, and per decoder the hinge's and the CRF's test LAS minus local CE's. Then, for
each loss and seed, every decoder's run is compared with the ``cle`` run of the same loss and
seed:

* **training**: the first logged update (``csv/metrics.csv``, every ``trainer.log_every_n_steps``
  updates) whose training loss differs from ``cle``'s, or "identical" when every logged loss is
  equal (float equality of the logged values); for local CE and the tree CRF the decoder does
  not enter the loss, for the hinge it is the loss-augmented oracle;
* **selection**: the update of the checkpoint chosen on development LAS (``metrics.json``);
* **test trees**: the number of test sentences whose predicted heads differ from ``cle``'s, and
  the number of predicted non-projective trees (:func:`bockparse.decoders.eisner.is_projective`).

Last, the pair of Theorem 1: each ``tarjan`` run against the ``bock`` run of the same loss and
seed (training and test trees, as above).

    python experiments/ablation/identity.py experiments/ablation/runs \\
        --gold $BOCKPARSE_DATA/ud-chinese-gsd/zh_gsd-ud1.3-test.conllu \\
        --output experiments/ablation/identity.md

``--gold`` (optional) adds the count of non-projective gold test trees, for comparison.

``runs`` holds ``<loss>-<decoder>/seed<seed>/`` as ``bockparse-publish
multirun/ablation-ud-gsd-ablation --out experiments/ablation/runs`` writes them.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
from pathlib import Path

import numpy as np

from bockparse.data.conllu import read_conllu
from bockparse.decoders.eisner import is_projective
from bockparse.experiments.table import (
    fmt_cell,
    fmt_difference,
    fmt_signed,
    paired_differences,
    summarize,
)

LOSSES = ("local-ce", "hinge", "crf")
DECODERS = ("cle", "bock", "tarjan", "eisner")
REFERENCE = "cle"


@functools.cache
def train_losses(run: Path) -> dict[int, str]:
    """Logged training loss per update (as written, so equality is exact), from the CSV log.

    The CSV's ``step`` is Lightning's 0-based global step of the logging batch, so update
    ``step + 1`` (its development rows at step 49 are the evaluation after update 50).
    """
    with open(run / "csv" / "metrics.csv", newline="", encoding="utf-8") as f:
        return {int(r["step"]) + 1: r["train/loss"] for r in csv.DictReader(f) if r["train/loss"]}


@functools.cache
def test_heads(run: Path) -> list[list[int]]:
    """Predicted heads of every test sentence (1-based, 0 for ROOT, as in the file)."""
    path = run / "predictions" / "test.conllu.gz"
    return [s.heads for s in read_conllu(path, single_root=False, on_malformed="error")]


def first_divergence(a: dict[int, str], b: dict[int, str]) -> str:
    """``"identical (N logged)"`` or ``"update S"``, the first logged update that differs."""
    if a.keys() != b.keys():
        raise SystemExit("the two runs logged different updates: not comparable")
    diff = [s for s in sorted(a) if a[s] != b[s]]
    return f"update {diff[0]}" if diff else f"identical ({len(a)} logged)"


def non_projective(heads: list[list[int]]) -> int:
    return sum(not is_projective(np.array([-1, *h])) for h in heads)


def test_las(runs: Path, row: str) -> dict[int, float]:
    """seed -> test LAS of the finished runs of grid row ``row`` (``<loss>-<decoder>``)."""
    out = {}
    for m in runs.glob(f"{row}/seed*/metrics.json"):
        out[int(m.parent.name.removeprefix("seed"))] = json.loads(m.read_text("utf-8"))["test/las"]
    return out


def paired_cell(runs: Path, run: str, ref: str) -> str:
    """Test LAS of ``run`` minus ``ref`` (grid rows ``<loss>-<decoder>``), paired by seed:
    ``mean ± std (n=N: each seed's difference, in seed order)``."""
    diff = summarize(paired_differences(test_las(runs, run), test_las(runs, ref)))
    per_seed = ", ".join(fmt_signed(v) for v in diff.values.values())
    return f"{fmt_difference(diff)} (n={diff.n}: {per_seed})"


def paired_tables(runs: Path) -> list[str]:
    """Per loss: test LAS − cle's, beside the cle runs' own mean ± std; per decoder: each
    structured loss's test LAS − local CE's."""
    others = [d for d in DECODERS if d != REFERENCE]
    lines = [
        f"Test LAS minus `{REFERENCE}`'s, paired by seed: mean ± sample std (n seeds: each "
        "seed's difference, in seed order).",
        "",
        f"| loss | {REFERENCE}: test LAS | "
        + " | ".join(f"{d} − {REFERENCE}" for d in others)
        + " |",
        "| :--- | ---: |" + " ---: |" * len(others),
    ]
    for loss in LOSSES:
        ref = test_las(runs, f"{loss}-{REFERENCE}")
        cells = [paired_cell(runs, f"{loss}-{d}", f"{loss}-{REFERENCE}") for d in others]
        lines.append(f"| {loss} | {fmt_cell(summarize(ref))} ({len(ref)}) | "
                     + " | ".join(cells) + " |")  # fmt: skip
    base, structured = LOSSES[0], LOSSES[1:]
    lines += [
        "",
        f"Test LAS minus `{base}`'s with the same decoder, paired by seed (as above).",
        "",
        "| decoder | " + " | ".join(f"{loss} − {base}" for loss in structured) + " |",
        "| :--- |" + " ---: |" * len(structured),
    ]
    for d in DECODERS:
        cells = [paired_cell(runs, f"{loss}-{d}", f"{base}-{d}") for loss in structured]
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def compare(run: Path, ref: Path) -> tuple[str, int, list[list[int]]]:
    """``run`` against ``ref``: the first divergent logged loss (:func:`first_divergence`), the
    number of test sentences whose predicted heads differ, and ``run``'s test heads."""
    heads, ref_heads = test_heads(run), test_heads(ref)
    if len(heads) != len(ref_heads):
        raise SystemExit(f"{run}: {len(heads)} test sentences, {ref} has {len(ref_heads)}")
    differ = sum(h != r for h, r in zip(heads, ref_heads, strict=True))
    return first_divergence(train_losses(ref), train_losses(run)), differ, heads


def report(runs: Path, gold: Path | None = None) -> str:
    lines = paired_tables(runs)
    if gold is not None:
        heads = [s.heads for s in read_conllu(gold, single_root=False, on_malformed="error")]
        lines += [f"Gold test trees: {non_projective(heads)} of {len(heads)} non-projective.", ""]
    lines += [
        f"Each run against `{REFERENCE}` with the same loss and seed. Training: the first logged "
        "update whose training loss differs. Test trees: sentences whose predicted heads differ "
        "from the reference's, and predicted non-projective trees.",
        "",
        "| loss | seed | decoder | training vs cle | best update | test trees ≠ cle | "
        "non-projective test trees |",
        "| :--- | ---: | :--- | :--- | ---: | ---: | ---: |",
    ]
    seeds = sorted({int(p.name.removeprefix("seed")) for p in runs.glob("*/seed*")})
    for loss in LOSSES:
        for seed in seeds:
            folder = {d: runs / f"{loss}-{d}" / f"seed{seed}" for d in DECODERS}
            if not all((f / "metrics.json").exists() for f in folder.values()):
                continue  # an incomplete row of the grid: nothing to compare
            for d, run in folder.items():
                training, differ, heads = compare(run, folder[REFERENCE])
                best = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["best_step"]
                training = "—" if d == REFERENCE else training
                lines.append(f"| {loss} | {seed} | {d} | {training} | {best} | {differ} of "
                             f"{len(heads)} | {non_projective(heads)} |")  # fmt: skip
    lines += [
        "",
        "The pair of Theorem 1, `tarjan` against `bock` with the same loss and seed (the "
        "theorem's identical trees hold for the unconstrained problem; these runs decode under "
        "the single-root constraint).",
        "",
        "| loss | seed | training vs bock | test trees ≠ bock |",
        "| :--- | ---: | :--- | ---: |",
    ]
    for loss in LOSSES:
        for seed in seeds:
            pair = [runs / f"{loss}-{d}" / f"seed{seed}" for d in ("tarjan", "bock")]
            if all((f / "metrics.json").exists() for f in pair):
                training, differ, heads = compare(*pair)
                lines.append(f"| {loss} | {seed} | {training} | {differ} of {len(heads)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, help="the published runs: <loss>-<decoder>/seed<seed>/")
    p.add_argument("--gold", type=Path, help="the gold test file (adds its non-projective count)")
    p.add_argument("--output", type=Path, help="write the report here (default: print it)")
    args = p.parse_args()
    text = report(args.runs, args.gold)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
