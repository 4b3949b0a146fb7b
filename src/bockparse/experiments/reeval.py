"""``bockparse-reeval``: punctuation-excluded scores of saved predictions, without retraining.

The Bock paper's comparison with Zhang et al. (2019) (Appendix B) re-evaluates the saved test
predictions with the earlier POS-based exclusions: gold XPOS ``` `` '' : , . ``` on the PTB,
gold XPOS ``PU`` on the CTB; for UD treebanks, gold UPOS ``PUNCT``. All sentences are kept.
Each run's ``predictions/<stage>.conllu`` (or its ``.gz`` copy) is checked for token alignment
with its gold file (:func:`bockparse.metrics.evaluate_files`); the punctuation-included
re-evaluation is compared with the run's ``metrics.json`` as a check of the saved files. The
table is Table 1's layout (:mod:`.table`), beside the paper's published punctuation-excluded
means for PTB and CTB.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..data.conllu import DataError
from ..metrics import NAMES, evaluate_files, punct_exclusion
from ..rundir import RunDir, write_atomic
from .loading import gold_file
from .runs import Discovery, Run
from .table import Group, aggregate, render, write_csv

# Appendix B: test LAS and LCM under the POS-based punctuation exclusions (no UAS given).
PAPER_PUNCT_EXCLUDED: dict[str, dict[str, tuple[float | None, float | None, float | None]]] = {
    "table1-ptb": {"local-ce-cle": (None, 95.10, 57.71), "hinge-cle": (None, 95.02, 56.91)},
    "table1-ctb": {"local-ce-cle": (None, 90.56, 44.24), "hinge-cle": (None, 90.61, 43.73)},
}
TOLERANCE = 1e-6  # percentage points between metrics.json and the re-evaluation


def reevaluate(run: Run, stage: str, exclude: str) -> tuple[Run, float | None]:
    """The run with ``<stage>/{uas,las,lcm}`` replaced by punctuation-excluded scores, and the
    largest difference between its ``metrics.json`` and the punctuation-included re-evaluation
    (``None`` when ``metrics.json`` lacks the scores).

    Raises:
        DataError: a prediction or gold file is missing, malformed or misaligned.
        ValueError: ``exclude="auto"`` and the data config's ``punct_field`` and
            ``punct_tags`` match no exclusion (:func:`bockparse.metrics.punct_exclusion`).
    """
    gold, data = gold_file(run.path, stage)
    pred = RunDir(run.path).predictions(stage)
    if not pred.is_file():
        raise DataError(f"{pred}: no saved predictions")
    if exclude == "auto":
        try:
            name = punct_exclusion(data.punct_field, data.punct_tags)
        except ValueError as err:
            raise ValueError(f"{err}; give --exclude-punct") from None
    else:
        name = exclude
    included = evaluate_files(str(gold), str(pred), None)
    excluded = evaluate_files(str(gold), str(pred), name)
    gaps = [
        abs(included[n] - run.metrics[f"{stage}/{n}"])
        for n in NAMES
        if isinstance(run.metrics.get(f"{stage}/{n}"), (int, float))
    ]
    metrics = {**run.metrics, **{f"{stage}/{n}": excluded[n] for n in NAMES}, "exclude_punct": name}
    return replace(run, metrics=metrics), max(gaps) if gaps else None


def punct_report(found: Discovery, stage: str, exclude: str) -> tuple[str, list[Group], list[str]]:
    """Every run of ``found`` re-evaluated (:func:`reevaluate`; a failed or unreadable run is
    listed as failed) and aggregated in Table 1's layout beside the paper's
    punctuation-excluded means.

    Returns:
        The printed report (the table, then the check of the saved files), its groups, and the
        runs whose punctuation-included re-evaluation differs from ``metrics.json`` by more than
        :data:`TOLERANCE` (the check's failures; none when the saved files are consistent).
    """
    runs, notes, worst = [], [], 0.0
    used: set[str] = set()
    for run in found.runs:
        if not run.ok:
            runs.append(run)
            continue
        try:
            new, gap = reevaluate(run, stage, exclude)
        except (DataError, ValueError, OSError) as err:
            runs.append(replace(run, metrics=None, error=f"re-evaluation failed: {err}"))
            continue
        used.add(new.metrics["exclude_punct"])
        if gap is not None:
            worst = max(worst, gap)
            if gap > TOLERANCE:
                notes.append(
                    f"{run.path}: the punctuation-included re-evaluation differs from "
                    f"metrics.json by {gap:.6f} points"
                )
        runs.append(new)
    groups = aggregate(
        Discovery(runs, found.sweep_seeds),
        stage=stage,
        paper=PAPER_PUNCT_EXCLUDED,
        paper_paired={},
    )
    note = (
        f"Punctuation excluded ({', '.join(sorted(used)) or 'none'}); saved predictions "
        "re-evaluated without retraining; all sentences kept."
    )
    check = (
        "Check: the punctuation-included re-evaluation of every saved prediction file matches "
        f"metrics.json (largest difference {worst:.2g} points)."
        if not notes
        else "Check FAILED:\n" + "\n".join(f"- {n}" for n in notes)
    )
    return render(groups, stage, "table1", note) + "\n" + check + "\n", groups, notes


def write_punct_report(groups: list[Group], text: str, out: str | Path, stage: str) -> None:
    """Write the report ``text`` as ``table1-punct.md`` and its CSV as ``table1-punct.csv``
    into the folder ``out`` (made if missing)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "table1-punct.md", text)
    write_csv(groups, out / "table1-punct.csv", stage)
