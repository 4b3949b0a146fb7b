"""``bockparse-table``: Table 1 of Wang & Park (2026) from run folders, and the ablation grid.

Every run's ``metrics.json`` is read (:mod:`.runs`); runs are grouped into treebank columns by
``(experiment_name, data config)``; the rows are the conditions run. For each condition and
metric the cell is the mean ± sample standard deviation (``n - 1`` in the denominator; no
deviation for ``n = 1``) over seeds, from full-precision rates, rounded only for presentation
(the paper's Appendix B). Below the table come the per-seed paired LAS differences hinge-Bock −
hinge-CL/E, the paired comparisons with the power of their tests, and every missing, failed or
duplicated run: a run without ``metrics.json`` is listed, never averaged over. For
``table1-ptb`` and ``table1-ctb`` the paper's published test means sit beside ours.

What counts as missing: every (row, seed) cell of the grid that was run (the rows and seeds of
the runs found, plus the seeds their sweeps' ``multirun.yaml`` asked for), or with ``--expect
table1`` the Table 1 preset (its three conditions and the paper's seeds 1111, 2222, 3333).

``--layout grid`` prints the loss × decoder grid of ``sweep=ablation`` instead.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import rundir
from ..rundir import write_atomic
from .rows import (
    LOSS_LABELS,
    METRICS,
    TABLE1_CONDITIONS,
    row_key,
    row_label,
    row_order,
)
from .runs import Discovery, Run, metric, plateau, resumes
from .stats import (
    PairedTest,
    bootstrap_interval,
    detectable_difference,
    holm,
    paired_test,
    power,
    verdict,
)

PAIRED = ("hinge-bock", "hinge-cle")  # the paired difference is first minus second
# The table's comparisons (first minus second, paired on seeds) and the equivalence margin of
# their TOST, in LAS points (issue 29: ±0.5, about the seed spread of one cell).
COMPARISONS = (("hinge-bock", "hinge-cle"), ("hinge-cle", "local-ce-cle"),
               ("hinge-bock", "local-ce-cle"))  # fmt: skip
MARGIN = 0.5
# A run has reached its development plateau when its best dev LAS came at least this many
# evaluations before its last (issue 29's acceptance); fewer: it stopped while still rising.
PLATEAU_EVALUATIONS = 2
PAPER_SEEDS = (1111, 2222, 3333)
# The power table: the chance the paired t-test detects a true difference (two-sided, α = 0.05).
POWER = 0.80
ALPHA = 0.05
# ``--expect`` presets: what a complete table holds beyond the grid that was run.
EXPECT = {"table1": (tuple(TABLE1_CONDITIONS), PAPER_SEEDS)}

# Wang & Park (2026), Table 1: test UAS / LAS / LCM means over seeds 1111, 2222, 3333.
PAPER_MEANS: dict[str, dict[str, tuple[float, float, float]]] = {
    "table1-ptb": {
        "local-ce-cle": (95.71, 94.79, 55.39),
        "hinge-cle": (95.64, 94.71, 54.42),
        "hinge-bock": (95.72, 94.79, 54.55),
    },
    "table1-ctb": {
        "local-ce-cle": (90.07, 88.94, 39.72),
        "hinge-cle": (90.12, 89.02, 39.23),
        "hinge-bock": (90.88, 89.80, 41.24),
    },
}
# Appendix B: the CTB hinge-Bock − hinge-CL/E test LAS differences per seed.
PAPER_PAIRED: dict[str, dict[int, float]] = {
    "table1-ctb": {1111: 1.32, 2222: -0.22, 3333: 1.25},
}

TREEBANK_LABELS = {
    "table1-ptb": "PTB",
    "table1-ctb": "CTB",
    "table1-ud-ewt": "UD English-EWT",
    "table1-ud-gsd": "UD Chinese-GSD v1.3",
}


@dataclass(frozen=True)
class Summary:
    """Per-seed values of one cell and their mean and sample standard deviation.

    Attributes:
        values: seed -> value, full precision.
    """

    values: Mapping[int, float]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values.values()) if self.values else None

    @property
    def std(self) -> float | None:
        """Sample standard deviation (``n - 1``); ``None`` below two seeds."""
        return statistics.stdev(self.values.values()) if self.n >= 2 else None


def summarize(values: Mapping[int, float]) -> Summary:
    """The :class:`Summary` of seed -> value (seeds sorted)."""
    return Summary(dict(sorted(values.items())))


def paired_differences(a: Mapping[int, float], b: Mapping[int, float]) -> dict[int, float]:
    """``a[seed] - b[seed]`` for the seeds present in both, in seed order."""
    return {seed: a[seed] - b[seed] for seed in sorted(a.keys() & b.keys())}


@dataclass
class Group:
    """The runs of one treebank column, summarised.

    Attributes:
        experiment, data: the grouping key.
        label: the column label (``PTB``, ``UD English-EWT``, ``smoke (ewt-sample)``).
        layout: ``"table1"`` (rows are conditions) or ``"grid"`` (rows are (loss, decoder)).
        cells: row key -> metric -> :class:`Summary`; the row key is the condition name
            (Table 1) or ``(loss, decoder)`` (grid).
        used: the finished runs the cells are made of.
        failed: runs without a readable ``metrics.json``.
        duplicates: finished runs of a row and seed already covered by a newer run (ignored).
        missing: ``(row key, seed)`` pairs expected and absent.
        expected_seeds: the seeds every row should have.
        paper: condition -> the paper's published (UAS, LAS, LCM) means (``None`` where it
            gives none), or ``None`` for a treebank the paper does not have.
        paper_paired: the paper's per-seed paired LAS differences, or ``None``.
    """

    experiment: str
    data: str | None
    label: str
    layout: str = "table1"
    cells: dict[object, dict[str, Summary]] = field(default_factory=dict)
    used: list[Run] = field(default_factory=list)
    failed: list[Run] = field(default_factory=list)
    duplicates: list[Run] = field(default_factory=list)
    missing: list[tuple[object, int]] = field(default_factory=list)
    expected_seeds: tuple[int, ...] = ()
    paper: Mapping[str, tuple[float | None, ...]] | None = None
    paper_paired: Mapping[int, float] | None = None

    def paired(self, stage_metric: str = "las", rows: tuple[str, str] = PAIRED) -> Summary | None:
        """``rows[0] − rows[1]`` per seed (Table 1 layout; default hinge-Bock − hinge-CL/E), or
        ``None`` without both rows."""
        a, b = (self.cells.get(c, {}).get(stage_metric) for c in rows)
        if a is None or b is None:
            return None
        return summarize(paired_differences(a.values, b.values))

    def compare(self, rows: tuple[str, str], margin: float = MARGIN) -> PairedTest | None:
        """The paired test of ``rows[0] − rows[1]`` LAS over seeds (:func:`.stats.paired_test`),
        or ``None`` without both rows."""
        diff = self.paired("las", rows)
        return None if diff is None else paired_test(diff.values, margin)

    @property
    def train_hours(self) -> float:
        return sum(float((r.metrics or {}).get("train_seconds", 0.0)) for r in self.used) / 3600


def group_label(experiment: str, data: str | None) -> str:
    """``table1-ptb`` -> ``PTB``; other experiments as ``name (data)``."""
    if experiment in TREEBANK_LABELS:
        return TREEBANK_LABELS[experiment]
    return f"{experiment} ({data})" if data else experiment


def _newest_first(run: Run) -> float:
    try:
        return -(run.path / rundir.METRICS).stat().st_mtime
    except OSError:
        return 0.0


def aggregate(
    found: Discovery,
    *,
    stage: str = "test",
    layout: str = "table1",
    seeds: Sequence[int] | None = None,
    expect: str | None = None,
    paper: Mapping[str, Mapping[str, tuple[float | None, ...]]] = PAPER_MEANS,
    paper_paired: Mapping[str, Mapping[int, float]] = PAPER_PAIRED,
) -> list[Group]:
    """Group runs into treebank columns and summarise every row and metric.

    Args:
        found: the runs (see :func:`bockparse.experiments.runs.discover`).
        stage: ``"test"`` or ``"val"``: which scores of ``metrics.json``.
        layout: ``"table1"`` (rows are conditions) or ``"grid"`` (rows are ``(loss, decoder)``
            pairs).
        seeds: the seeds every row should have; ``None``: the seeds seen in the group and
            those of the sweeps found (and the preset's, with ``expect``).
        expect: ``None`` (the rows and seeds that were run are expected) or a key of
            :data:`EXPECT` (``"table1"``: its conditions and the paper's seeds too; layout
            ``"table1"`` only).
        paper, paper_paired: published numbers per experiment name, shown beside ours.

    Returns:
        One :class:`Group` per ``(experiment, data)``: the paper's treebanks and their UD
        stand-ins first, in :data:`TREEBANK_LABELS` order, then the others by name.
    """
    if layout not in ("table1", "grid"):
        raise ValueError(f"layout must be 'table1' or 'grid', got {layout!r}")
    if expect is not None and (expect not in EXPECT or layout != "table1"):
        raise ValueError(f"expect must be one of {sorted(EXPECT)} with layout 'table1'")
    preset_rows, preset_seeds = EXPECT[expect] if expect else ((), ())
    by_group: dict[tuple[str, str | None], list[Run]] = {}
    for run in found.runs:
        by_group.setdefault(run.group, []).append(run)
    groups: list[Group] = []
    for (experiment, data), runs in by_group.items():
        group = Group(
            experiment,
            data,
            group_label(experiment, data),
            layout,
            paper=paper.get(experiment),
            paper_paired=paper_paired.get(experiment),
        )
        chosen: dict[tuple[object, int], Run] = {}
        tried: set[tuple[object, int]] = set()
        for run in sorted(runs, key=_newest_first):
            key = row_key(run, layout)
            if not run.ok or run.seed is None or key in (None, (None, None)):
                if run.ok:  # finished but unidentifiable: report it rather than guess
                    run = replace(run, metrics=None, error="metrics.json without condition or seed")
                group.failed.append(run)
                if run.seed is not None and key not in (None, (None, None)):
                    tried.add((key, run.seed))
                continue
            if (key, run.seed) in chosen:
                group.duplicates.append(run)
            else:
                chosen[(key, run.seed)] = run
        group.used = sorted(chosen.values(), key=lambda r: (str(r.condition), r.seed or 0))
        if seeds is not None:
            expected = set(seeds)
        else:
            expected = {s for _, s in chosen} | {s for _, s in tried} | found.sweep_seeds
            expected |= set(preset_seeds)
        group.expected_seeds = tuple(sorted(expected))
        rows = [k for k, _ in chosen] + [k for k, _ in tried] + list(preset_rows)
        for row in row_order(rows, layout):
            cell: dict[str, Summary] = {}
            for name in METRICS:
                values = {}
                for (key, seed), run in chosen.items():
                    value = metric(run, f"{stage}/{name}")
                    if key == row and value is not None:
                        values[seed] = value
                cell[name] = summarize(values)
            group.cells[row] = cell
            for seed in group.expected_seeds:
                if (row, seed) not in chosen and (row, seed) not in tried:
                    group.missing.append((row, seed))
        groups.append(group)
    known = list(TREEBANK_LABELS)
    return sorted(
        groups,
        key=lambda g: (
            known.index(g.experiment) if g.experiment in known else len(known),
            g.experiment,
            str(g.data),
        ),
    )


# -- presentation ----------------------------------------------------------------------------


def fmt_cell(summary: Summary | None, digits: int = 2) -> str:
    """``95.71 ± 0.12``; ``95.71`` for one seed; ``—`` for none."""
    if summary is None or summary.n == 0:
        return "—"
    if summary.std is None:
        return f"{summary.mean:.{digits}f}"
    return f"{summary.mean:.{digits}f} ± {summary.std:.{digits}f}"


def fmt_signed(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    text = f"{value:+.{digits}f}"
    return text.replace("-", "−")


def fmt_difference(summary: Summary, digits: int = 2) -> str:
    """A summarised difference: ``+0.51 ± 0.15``; ``+0.51`` for one seed; ``—`` for none."""
    if summary.n == 0:
        return "—"
    text = fmt_signed(summary.mean, digits)
    return text if summary.std is None else f"{text} ± {summary.std:.{digits}f}"


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "r") -> str:
    lines = ["| " + " | ".join(header) + " |"]
    marks = [":---"] + [("---:" if align == "r" else ":---")] * (len(header) - 1)
    lines.append("| " + " | ".join(marks) + " |")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def table1_markdown(groups: Sequence[Group], stage: str = "test", note: str = "") -> str:
    """Table 1: rows conditions; per treebank ``n``, UAS, LAS, LCM (and the paper's means);
    ``note`` is added to the caption."""
    header = ["Training"]
    for g in groups:
        header.append(f"{g.label} n")
        for name in METRICS:
            header.append(f"{g.label} {name.upper()}")
            if g.paper:
                header.append(f"{g.label} {name.upper()} (paper)")
    keys = row_order((k for g in groups for k in g.cells), "table1")
    rows = []
    for key in keys:
        row = [row_label(key)]
        for g in groups:
            cell = g.cells.get(key)
            row.append(str(cell["las"].n) if cell else "0")
            for i, name in enumerate(METRICS):
                summary = cell[name] if cell else None
                text = fmt_cell(summary)
                if summary is not None and cell and 0 < summary.n != cell["las"].n:
                    text += f" (n={summary.n})"
                row.append(text)
                if g.paper:
                    paper = g.paper.get(key)
                    row.append("—" if paper is None or paper[i] is None else f"{paper[i]:.2f}")
        rows.append(row)
    title = (
        f"{stage.capitalize()} scores (%), mean ± sample standard deviation (n − 1) over the "
        "n seeds; no deviation for n = 1." + (f" {note}" if note else "")
    )
    return title + "\n\n" + _markdown(header, rows)


def paired_markdown(groups: Sequence[Group]) -> str:
    """Per-seed LAS differences hinge-Bock − hinge-CL/E, their mean ± sample std."""
    seeds = sorted(
        {s for g in groups for s in (g.paired().values if g.paired() else {})}
        | {s for g in groups for s in (g.paper_paired or {})}
    )
    header = ["Treebank", "n", *[f"seed {s}" for s in seeds], "mean ± std"]
    rows = []
    for g in groups:
        diff = g.paired()
        if diff is None:
            continue
        values = [fmt_signed(diff.values.get(s)) for s in seeds]
        rows.append([g.label, str(diff.n), *values, fmt_difference(diff)])
        paper = g.paper_paired
        if paper:
            ref = summarize(paper)
            rows.append(
                [
                    f"{g.label} (paper)",
                    str(ref.n),
                    *[fmt_signed(paper.get(s)) for s in seeds],
                    fmt_difference(ref),
                ]
            )
    if not rows:
        return "Paired LAS differences: no treebank has both hinge-bock and hinge-cle runs."
    return (
        "Paired LAS difference hinge-Bock − hinge-CL/E (percentage points), per seed present in "
        "both conditions.\n\n" + _markdown(header, rows)
    )


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def comparisons_markdown(groups: Sequence[Group], margin: float = MARGIN) -> str:
    """Every :data:`COMPARISONS` pair per treebank: the mean LAS difference over seeds, its
    90 % Student-t interval, the paired t-test and the TOST against ``±margin``, both
    Holm-corrected across the testable comparisons shown (those with two seeds and spread:
    :func:`.stats.holm` leaves the others out of the family), and what they support
    (:func:`.stats.verdict`)."""
    tests = [(g, rows, g.compare(rows, margin)) for g in groups for rows in COMPARISONS]
    tests = [(g, rows, t) for g, rows, t in tests if t is not None and t.n > 0]
    if not tests:
        return "Comparisons: no treebank has two conditions to compare."
    p_diff = holm([t.p_difference for _, _, t in tests])
    p_equiv = holm([t.p_equivalence for _, _, t in tests])
    family = sum(p is not None for p in p_diff)
    header = ["Treebank", "comparison", "n", "mean ± std", "90 % CI", "p (t)", "p (t, Holm)",
              f"p (TOST ±{margin:g})", "p (TOST, Holm)", "reading"]  # fmt: skip
    rows = []
    for (g, (a, b), t), pd, pe in zip(tests, p_diff, p_equiv, strict=True):
        ci = "—" if t.ci_low is None else f"[{fmt_signed(t.ci_low)}, {fmt_signed(t.ci_high)}]"
        spread = summarize(t.differences)
        rows.append([g.label, f"{row_label(a)} − {row_label(b)}", str(t.n),
                     fmt_difference(spread), ci, _p(t.p_difference), _p(pd),
                     _p(t.p_equivalence), _p(pe), verdict(pd, pe, margin, seeds=t.n)])  # fmt: skip
    return (
        f"Paired test LAS differences over seeds (percentage points): mean, 90 % Student-t "
        f"interval, two-sided paired t-test of no difference, and two one-sided tests (TOST) of "
        f"equivalence within ±{margin:g} LAS; p-values Holm-corrected across the {family} "
        f'comparisons of this table that can be tested. "Equivalent" only where TOST rejects after '
        'correction; "no difference detected" is not evidence of equivalence.\n\n'
        + _markdown(header, rows)
    )


def power_markdown(groups: Sequence[Group], margin: float = MARGIN) -> str:
    """Beside the comparisons: how large a true mean LAS difference each paired t-test would
    detect with probability :data:`POWER` (two-sided, α = :data:`ALPHA`, the noncentral t with
    the comparison's observed standard deviation of the differences and its ``n`` seeds;
    :func:`.stats.detectable_difference`), uncorrected and at Holm's smallest per-test level
    α/k over the k testable comparisons, and the power against a true difference of ``margin``
    at both levels (:func:`.stats.power`)."""
    tests = [(g, rows, g.compare(rows, margin)) for g in groups for rows in COMPARISONS]
    tests = [(g, rows, t) for g, rows, t in tests if t is not None and t.p_difference is not None]
    if not tests:
        return "Power: no comparison has two seeds with spread."
    k = len(tests)
    holm_alpha = ALPHA / k
    header = ["Treebank", "comparison", "n", "sd of differences",
              f"detectable at {100 * POWER:g} % (α = {ALPHA:g})",
              f"detectable at {100 * POWER:g} % (Holm, α = {ALPHA:g}/{k})",
              f"power at ±{margin:g} (α = {ALPHA:g})", f"power at ±{margin:g} (Holm)"]  # fmt: skip
    rows = []
    for g, (a, b), t in tests:
        rows.append([g.label, f"{row_label(a)} − {row_label(b)}", str(t.n), f"{t.sd:.2f}",
                     f"{detectable_difference(t.sd, t.n, ALPHA, POWER):.2f}",
                     f"{detectable_difference(t.sd, t.n, holm_alpha, POWER):.2f}",
                     f"{100 * power(margin, t.sd, t.n, ALPHA):.0f} %",
                     f"{100 * power(margin, t.sd, t.n, holm_alpha):.0f} %"])  # fmt: skip
    return (
        f"Power of the paired t-tests above: the smallest true mean LAS difference (percentage "
        f"points) each detects with probability {100 * POWER:g} % (two-sided; the noncentral t, "
        f"scipy.stats.nct, with the observed standard deviation of the differences over n "
        f"seeds, itself an estimate on n − 1 degrees of freedom), at α = {ALPHA:g} and at Holm's "
        f"smallest per-test level α/{k}, and the chance of detecting a true difference of "
        f"{margin:g}. A difference smaller than these can hide behind "
        f'"no difference detected".\n\n' + _markdown(header, rows)
    )


def bootstrap_markdown(
    groups: Sequence[Group], stage: str = "test", samples: int = 1000, level: float = 0.95
) -> str:
    """Per cell, the sentence-level percentile bootstrap interval of its LAS (the mean over
    its seeds; the sentences resampled once for all its runs, :func:`.stats.bootstrap_interval`),
    from each run's saved ``stage`` predictions and its gold file.

    Raises:
        DataError: a prediction or gold file is missing, malformed or misaligned.
    """
    from .loading import sentence_las

    header = ["Treebank", "Training", "n", "LAS", f"{100 * level:g} % interval", "sentences"]
    rows = []
    for g in groups:
        for key, cell in g.cells.items():
            runs = [r for r in g.used if row_key(r, g.layout) == key]
            if not runs:
                continue
            per_sentence = [sentence_las(r.path, stage) for r in runs]
            low, high = bootstrap_interval(per_sentence, samples=samples, level=level)
            rows.append([g.label, row_label(key), str(len(runs)), fmt_cell(cell["las"]),
                         f"[{low:.2f}, {high:.2f}]", str(len(per_sentence[0]))])  # fmt: skip
    return (
        f"Sentence-level bootstrap {100 * level:g} % intervals of each cell's {stage} LAS (the "
        f"mean over its seeds): {samples} resamples of the {stage} sentences, drawn once for "
        "all the cell's runs (resampling seed 0). They measure the test set's sampling "
        "variation, not the seeds'.\n\n" + _markdown(header, rows)
    )


def grid_markdown(groups: Sequence[Group], stage: str = "test") -> str:
    """Loss × decoder: one table per treebank and metric, cells mean ± std (n)."""
    parts = []
    for g in groups:
        losses = list(dict.fromkeys(k[0] for k in g.cells))
        decoders = row_order(((None, d) for d in {k[1] for k in g.cells}), "grid")
        decoders = [d for _, d in decoders]
        for name in METRICS:
            rows = []
            for loss in losses:
                row = [LOSS_LABELS.get(loss, str(loss))]
                for decoder in decoders:
                    cell = g.cells.get((loss, decoder))
                    summary = cell[name] if cell else None
                    n = summary.n if summary else 0
                    row.append(f"{fmt_cell(summary)} (n={n})")
                rows.append(row)
            parts.append(
                f"{g.label}: {stage} {name.upper()} (%), mean ± sample std over seeds\n\n"
                + _markdown(["Loss", *decoders], rows)
            )
    return "\n\n".join(parts)


def _row_text(key: object) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


def plateau_text(run: Run) -> str:
    """Where the run's best dev LAS lies: ``best dev at update 1800, 5 of 23 evaluations after
    it (last 2300): plateau``, or ``...: still rising`` when fewer than
    :data:`PLATEAU_EVALUATIONS` evaluations followed it."""
    p = plateau(run)
    if p is None:
        return "no development curve or best update recorded"
    reading = "plateau" if p.after_best >= PLATEAU_EVALUATIONS else "still rising"
    return (f"best dev at update {p.best_step}, {p.after_best} of {p.evaluations} evaluations "
            f"after it (last {p.last_step}): {reading}")  # fmt: skip


def resumes_text(run: Run) -> str:
    """``; resumed at update 2700, bit for bit`` for each resume in the run's log (``;
    resumed, not bit for bit`` where the log does not give the update); empty for a run
    trained in one go."""
    return "".join(
        "; resumed"
        + ("" if r.update is None else f" at update {r.update}")
        + (", bit for bit" if r.bit_exact else ", not bit for bit")
        for r in resumes(run.path)
    )


def runs_markdown(groups: Sequence[Group]) -> str:
    """Finished, missing, failed and duplicate runs per treebank, and where each finished run's
    best development LAS lies on its curve (:func:`plateau_text`)."""
    lines = ["Runs"]
    for g in groups:
        expected = len(g.cells) * len(g.expected_seeds)
        seeds = ", ".join(map(str, g.expected_seeds)) or "none"
        lines.append("")
        lines.append(
            f"- {g.label}: {len(g.used)} finished of {expected} expected "
            f"({len(g.cells)} rows × seeds {seeds}); training time {_duration(g.train_hours)}"
        )
        for run in g.used:
            what = f"{_row_text(row_key(run, g.layout) or '?')} seed {run.seed}"
            precision = (run.metrics or {}).get("precision")
            what += f" ({precision})" if precision else ""
            lines.append(f"  - {what}: {plateau_text(run)}{resumes_text(run)}")
        for key, seed in g.missing:
            lines.append(f"  - missing: {_row_text(key)} seed {seed} (no run folder)")
        for run in g.failed:
            what = f"{_row_text(row_key(run, g.layout) or '?')} seed {run.seed}"
            lines.append(f"  - failed: {what} at {run.path}: {run.error}")
        for run in g.duplicates:
            lines.append(f"  - duplicate, ignored (a newer run is used): {run.path}")
    return "\n".join(lines)


def environment_markdown(groups: Sequence[Group]) -> str:
    """Where each finished run ran: precision (and why), CPU, its bf16 flags, torch version,
    from the run's ``environment.json`` (runs from before it existed: "not recorded")."""
    lines = ["Environment", "", "| run | precision | why | CPU | bf16 flags | torch |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for g in groups:
        for run in g.used:
            name = f"{g.label} {_row_text(row_key(run, g.layout) or '?')} seed {run.seed}"
            try:
                env = rundir.RunDir(run.path).environment()
            except rundir.RunFileError:
                env = None
            if env is None:
                precision = (run.metrics or {}).get("precision", "")
                lines.append(f"| {name} | {precision} | not recorded | | | |")
                continue
            flags = ", ".join(f for f, on in env.get("cpu_flags", {}).items()
                              if on and ("bf16" in f or f.startswith("amx"))) or "none"  # fmt: skip
            lines.append(f"| {name} | {env.get('precision', '')} | "
                         f"{env.get('precision_reason', '')} | {env.get('cpu', '')} | {flags} | "
                         f"{env.get('versions', {}).get('torch', '')} |")  # fmt: skip
    return "\n".join(lines)


def _duration(hours: float) -> str:
    return f"{hours:.2f} h" if hours >= 1 else f"{60 * hours:.1f} min"


def problems(groups: Sequence[Group]) -> int:
    """How many runs are missing or failed."""
    return sum(len(g.missing) + len(g.failed) for g in groups)


def write_csv(groups: Sequence[Group], path: str | Path, stage: str = "test") -> None:
    """Long-form summary: one row per treebank, row key and metric (and the paired LAS)."""
    columns = [
        "treebank",
        "experiment",
        "data",
        "row",
        "label",
        "stage",
        "metric",
        "n",
        "mean",
        "std",
        "seeds",
        "values",
        "paper_mean",
    ]
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(columns)
        for g in groups:
            for key, cell in g.cells.items():
                for i, name in enumerate(METRICS):
                    s = cell[name]
                    paper = (g.paper or {}).get(key) if isinstance(key, str) else None
                    writer.writerow(
                        [
                            g.label,
                            g.experiment,
                            g.data or "",
                            _row_text(key),
                            row_label(key),
                            stage,
                            name,
                            s.n,
                            _num(s.mean),
                            _num(s.std),
                            ";".join(map(str, s.values)),
                            ";".join(repr(v) for v in s.values.values()),
                            "" if paper is None or paper[i] is None else paper[i],
                        ]
                    )
            diff = g.paired()
            if diff is not None:
                writer.writerow(
                    [
                        g.label,
                        g.experiment,
                        g.data or "",
                        f"{PAIRED[0]} - {PAIRED[1]}",
                        "paired difference",
                        stage,
                        "las_diff",
                        diff.n,
                        _num(diff.mean),
                        _num(diff.std),
                        ";".join(map(str, diff.values)),
                        ";".join(repr(v) for v in diff.values.values()),
                        "",
                    ]
                )


def _num(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else repr(value)


# -- the report ------------------------------------------------------------------------------


def render(groups: Sequence[Group], stage: str, layout: str, note: str = "") -> str:
    """The printed report: the table (or grid), the paired differences, the run list."""
    if layout == "grid":
        body = grid_markdown(groups, stage)
    else:
        body = "\n\n".join(
            [
                table1_markdown(groups, stage, note),
                paired_markdown(groups),
                comparisons_markdown(groups),
                power_markdown(groups),
            ]
        )
    return body + "\n\n" + runs_markdown(groups) + "\n"


def write_report(
    groups: Sequence[Group],
    out: str | Path,
    stage: str,
    layout: str,
    text: str,
    bootstrap: str | None = None,
    plots: bool = True,
) -> list[Path]:
    """Write the printed report ``text`` into the folder ``out`` (made if missing) as
    ``table1.md`` (``ablation.md`` for the grid) beside the CSV (:func:`write_csv`), the
    ``bootstrap`` report as ``table1-bootstrap.md`` when given, and with ``plots`` the
    development curves and (Table 1 layout) the table's plot; the files written, in order."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = "ablation" if layout == "grid" else "table1"
    write_atomic(out / f"{name}.md", text)
    write_csv(groups, out / f"{name}.csv", stage)
    written = [out / f"{name}.md", out / f"{name}.csv"]
    if bootstrap is not None:
        write_atomic(out / f"{name}-bootstrap.md", bootstrap)
        written.append(out / f"{name}-bootstrap.md")
    if plots:
        from .plots import plot_dev_curves, plot_table1

        written.append(plot_dev_curves(groups, out / "dev_las.png"))
        if layout == "table1":
            written.append(plot_table1(groups, out / "table1.png", stage=stage))
    return written
