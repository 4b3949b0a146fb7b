"""How much of Table 1's differences the stop time accounts for (issue 53), from the committed
run folders alone: each run's development curve (``csv/metrics.csv``, every evaluation), its
``best_step`` and its test LAS (``metrics.json``).

Every run of ``table1-ud`` stops a fixed patience after its best development LAS, so runs of
one seed stop at different updates, and a run that found its best later has trained longer.
Three readings:

1. **Matched updates**: the paired development-LAS difference of two conditions at every update
   both evaluated (per seed; the mean over seeds and its 90 % Student-t interval where every
   seed has the update, :func:`.stats.paired_test`).
2. **Test LAS against the best update**: per treebank, the least-squares slope of test LAS on
   the update of the best development LAS (per 1,000 updates) and Pearson's r
   (``scipy.stats.linregress``); the slope within treebanks pooled (each treebank centred);
   how often the sign of a paired test-LAS difference equals the sign of its best-update
   difference, and Spearman's ρ between the two (``scipy.stats.spearmanr``; the comparisons
   share runs, so ρ's p-value is not given).
3. **The stop-time share of each difference**: per comparison and seed, the final development
   difference (each run at its own best) against the difference at the matched update, the
   earlier of the two best updates, where each run is scored by its best development LAS up to
   that update (what selection would have kept had both stopped there). The earlier-best run's
   score is the same at both, so the final difference is the matched one plus the later-best
   run's gain after the matched update. Beside it, the test-LAS difference and the part the
   pooled slope predicts from the best-update difference.

``bockparse-stopping experiments/table1-ud/runs --out experiments/table1-ud/stopping``
(:func:`bockparse.cli.experiments.stopping`) writes ``stopping.md``, ``matched.csv``, ``seeds.csv``,
``matched_dev.png`` and ``test_vs_best.png``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as sps

from ..rundir import write_atomic
from .rows import row_label
from .runs import Run, dev_curve, metric
from .stats import paired_test
from .table import COMPARISONS, MARGIN, Group, fmt_signed

LEVEL = 0.90  # the interval of the mean difference over seeds
TABLE_EVERY = 500  # stopping.md lists the matched differences every this many updates
PER_THOUSAND = 1000.0


@dataclass(frozen=True)
class Pair:
    """One paired comparison ``a − b`` on one seed of one treebank.

    Attributes:
        group: the treebank column.
        rows: ``(a, b)``, condition names.
        seed: the seed.
        runs: the two runs.
        curves: their development curves, update -> dev LAS.
    """

    group: Group
    rows: tuple[str, str]
    seed: int
    runs: tuple[Run, Run]
    curves: tuple[dict[int, float], dict[int, float]]

    @property
    def best_updates(self) -> tuple[int, int]:
        return tuple(int(r.metrics["best_step"]) for r in self.runs)  # type: ignore[return-value]

    @property
    def test_difference(self) -> float:
        a, b = (metric(r, "test/las") for r in self.runs)
        return a - b

    def matched(self) -> dict[int, float]:
        """Update -> dev LAS a − b at every update both runs evaluated."""
        a, b = self.curves
        return {u: a[u] - b[u] for u in sorted(a.keys() & b.keys())}

    def best_so_far(self, update: int) -> tuple[float, float]:
        """Each run's best dev LAS at or before ``update``."""
        return tuple(max(v for u, v in c.items() if u <= update) for c in self.curves)  # type: ignore[return-value]


def pairs(groups: Sequence[Group]) -> list[Pair]:
    """Every comparison of :data:`.table.COMPARISONS` on every seed both conditions finished
    with a development curve and a ``best_step``, in table order."""
    found = []
    for g in groups:
        by_key = {(r.condition, r.seed): r for r in g.used}
        for rows in COMPARISONS:
            for seed in g.expected_seeds:
                runs = tuple(by_key.get((c, seed)) for c in rows)
                if None in runs:
                    continue
                curves = tuple(dev_curve(r.path) for r in runs)
                if not all(curves) or not all(
                    isinstance((r.metrics or {}).get("best_step"), int) for r in runs
                ):
                    continue
                found.append(Pair(g, rows, seed, runs, curves))  # type: ignore[arg-type]
    return found


def _label(pair: Pair) -> str:
    a, b = pair.rows
    return f"{row_label(a)} − {row_label(b)}"


def _families(found: Sequence[Pair]) -> dict[tuple[str, tuple[str, str]], list[Pair]]:
    families: dict[tuple[str, tuple[str, str]], list[Pair]] = {}
    for p in found:
        families.setdefault((p.group.label, p.rows), []).append(p)
    return families


def matched_rows(found: Sequence[Pair]) -> list[list[object]]:
    """Long form of reading 1: per treebank, comparison and update, each seed's dev-LAS
    difference, then the mean and its interval where every seed of the comparison has the
    update (``seed`` = ``mean``)."""
    out: list[list[object]] = []
    for (label, _), family in _families(found).items():
        per_seed = {p.seed: p.matched() for p in family}
        updates = sorted({u for m in per_seed.values() for u in m})
        for u in updates:
            for seed, m in per_seed.items():
                if u in m:
                    out.append([label, _label(family[0]), u, seed, repr(m[u]), "", ""])
            values = {s: m[u] for s, m in per_seed.items() if u in m}
            if len(values) == len(per_seed) >= 2:
                t = paired_test(values, MARGIN, LEVEL)
                low, high = ("", "") if t.ci_low is None else (repr(t.ci_low), repr(t.ci_high))
                out.append([label, _label(family[0]), u, "mean", repr(t.mean), low, high])
    return out


@dataclass(frozen=True)
class Regression:
    """Test LAS on the best update (per 1,000 updates) over one treebank's runs."""

    label: str
    n: int
    slope: float
    slope_low: float
    slope_high: float
    r: float


def regressions(groups: Sequence[Group]) -> tuple[list[Regression], float]:
    """Per treebank the :class:`Regression` (95 % interval of the slope from its standard
    error, ``n − 2`` degrees of freedom), and the slope pooled within treebanks (each treebank's
    best updates and test LAS centred on their means)."""
    found, xs, ys = [], [], []
    for g in groups:
        runs = [r for r in g.used if isinstance((r.metrics or {}).get("best_step"), int)]
        runs = [r for r in runs if metric(r, "test/las") is not None]
        if len(runs) < 3:
            continue
        x = np.array([r.metrics["best_step"] for r in runs], dtype=float) / PER_THOUSAND
        y = np.array([metric(r, "test/las") for r in runs], dtype=float)
        fit = sps.linregress(x, y)
        half = sps.t.ppf(0.975, len(runs) - 2) * fit.stderr
        found.append(Regression(g.label, len(runs), float(fit.slope), float(fit.slope - half),
                                float(fit.slope + half), float(fit.rvalue)))  # fmt: skip
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    if not found:
        return [], float("nan")
    x, y = np.concatenate(xs), np.concatenate(ys)
    return found, float(np.dot(x, y) / np.dot(x, x))


@dataclass(frozen=True)
class Share:
    """Reading 3 for one pair (differences a − b; updates in updates, LAS in points)."""

    pair: Pair
    best_difference: int  # best update a − b
    matched_update: int  # the earlier of the two best updates
    dev_final: float  # dev LAS at each run's best
    dev_matched: float  # best dev LAS up to the matched update
    test: float
    predicted: float  # pooled slope × best-update difference

    @property
    def later_gain(self) -> float:
        """The final minus the matched difference: the later-best run's gain after the matched
        update (signed as a − b)."""
        return self.dev_final - self.dev_matched


def shares(found: Sequence[Pair], slope: float) -> list[Share]:
    """:class:`Share` of every pair, with the pooled ``slope`` (per 1,000 updates)."""
    out = []
    for p in found:
        best_a, best_b = p.best_updates
        m = min(best_a, best_b)
        final = tuple(max(c.values()) for c in p.curves)
        at_m = p.best_so_far(m)
        out.append(Share(p, best_a - best_b, m, final[0] - final[1], at_m[0] - at_m[1],
                         p.test_difference, slope * (best_a - best_b) / PER_THOUSAND))  # fmt: skip
    return out


def _md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "| :--- | " + " | ".join(["---:"] * (len(header) - 1)) + " |",
    ]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _interval(values: Sequence[float]) -> str:
    t = paired_test(dict(enumerate(values)), MARGIN, LEVEL)
    if t.ci_low is None:
        return fmt_signed(t.mean)
    return f"{fmt_signed(t.mean)} [{fmt_signed(t.ci_low)}, {fmt_signed(t.ci_high)}]"


def report(groups: Sequence[Group], found: Sequence[Pair], source: str) -> str:
    """``stopping.md``: the three readings (module doc) as tables."""
    fits, slope = regressions(groups)
    share = shares(found, slope)
    fit_rows = [[f.label, str(f.n), fmt_signed(f.slope, 3),
                 f"[{fmt_signed(f.slope_low, 3)}, {fmt_signed(f.slope_high, 3)}]", f"{f.r:.2f}"]
                for f in fits]  # fmt: skip
    parts = [
        f"Stop time and Table 1's differences, from the committed run folders under `{source}` "
        "(each run's `csv/metrics.csv` and `metrics.json`; "
        "`bockparse-stopping`). Differences are first − second condition, "
        "in LAS points, paired on seeds.",
        "Test LAS against the update of the best development LAS (`scipy.stats.linregress`; "
        "95 % interval of the slope from its standard error).",
        _md(
            ["Treebank", "runs", "slope per 1,000 updates", "95 % interval", "Pearson r"], fit_rows
        ),
        f"Pooled within treebanks (each centred): {fmt_signed(slope, 3)} test LAS per 1,000 "
        "updates. The slope is fitted on the same runs whose differences it is used to "
        "predict below, so what remains after it is an in-sample remainder.",
    ]
    if share:
        test = np.array([s.test for s in share])
        best = np.array([s.best_difference for s in share], dtype=float)
        same = int(np.sum(np.sign(test) == np.sign(best)))
        # ρ is undefined when either side is constant (scipy warns and gives nan).
        rho = "undefined (one side is constant)"
        if np.ptp(test) > 0 and np.ptp(best) > 0:
            rho = f"{sps.spearmanr(test, best).statistic:.2f}"
        parts.append(
            f"Signs: in {same} of {len(share)} paired comparisons the test-LAS difference has the "
            f"sign of the best-update difference; Spearman's ρ between the two is {rho} "
            "(`scipy.stats.spearmanr`; the comparisons share runs, and the third of each "
            "treebank and seed is the sum of the other two, so no p-value is given)."
        )
        rows = []
        for s in share:
            rows.append([s.pair.group.label, _label(s.pair), str(s.pair.seed),
                         " / ".join(map(str, s.pair.best_updates)), str(s.matched_update),
                         fmt_signed(s.dev_final), fmt_signed(s.dev_matched),
                         fmt_signed(s.later_gain), fmt_signed(s.test),
                         fmt_signed(s.predicted)])  # fmt: skip
        parts.append(
            "Per seed: the best updates of the two runs; the matched update (the earlier "
            "best); the development difference at each run's best (final) and with each run "
            "scored by its best development LAS up to the matched update (matched); their "
            "difference, the later-best run's gain after the matched update; the test "
            "difference of the selected checkpoints and the part the pooled slope predicts from "
            "the best-update difference."
        )
        parts.append(_md(["Treebank", "comparison", "seed", "best updates", "matched update",
                          "dev final", "dev matched", "later-best gain", "test",
                          "test from slope"], rows))  # fmt: skip
        rows = []
        for (label, _), family in _families(found).items():
            fam = [s for s in share if (s.pair.group.label, s.pair.rows) == (label, family[0].rows)]
            rows.append([label, _label(family[0]), str(len(fam)),
                         _interval([s.dev_final for s in fam]),
                         _interval([s.dev_matched for s in fam]),
                         _interval([s.test for s in fam]),
                         _interval([s.predicted for s in fam]),
                         _interval([s.test - s.predicted for s in fam])])  # fmt: skip
        parts.append(
            f"Per comparison: the mean over seeds with its {100 * LEVEL:g} % Student-t interval "
            "of the development difference, final and matched, of the test difference, of the "
            "part the slope predicts and of what remains."
        )
        parts.append(_md(["Treebank", "comparison", "n", "dev final", "dev matched", "test",
                          "test from slope", "test − from slope"], rows))  # fmt: skip
        rows = []
        for (label, _), family in _families(found).items():
            per_seed = {p.seed: p.matched() for p in family}
            updates = sorted({u for m in per_seed.values() for u in m})
            for u in [u for u in updates if u % TABLE_EVERY == 0]:
                values = {s: m[u] for s, m in per_seed.items() if u in m}
                cells = [fmt_signed(per_seed[s].get(u)) for s in sorted(per_seed)]
                if len(values) == len(per_seed) >= 2:
                    mean = _interval(list(values.values()))
                else:
                    mean = "—"
                rows.append([label, _label(family[0]), str(u), *cells, mean])
        seeds = sorted({p.seed for p in found})
        parts.append(
            f"Development LAS differences at matched updates, every {TABLE_EVERY} (every "
            f"evaluation: `matched.csv`; figure: `matched_dev.png`); the mean with its "
            f"{100 * LEVEL:g} % interval where every seed has the update."
        )
        parts.append(_md(["Treebank", "comparison", "update", *[f"seed {s}" for s in seeds],
                          "mean [90 % CI]"], rows))  # fmt: skip
    return "\n\n".join(parts) + "\n"


def _csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def seeds_csv(share: Sequence[Share]) -> str:
    """Reading 3 per pair, full precision."""
    rows = [[s.pair.group.label, _label(s.pair), s.pair.seed, *s.pair.best_updates,
             s.matched_update, repr(s.dev_final), repr(s.dev_matched), repr(s.test),
             repr(s.predicted)] for s in share]  # fmt: skip
    return _csv(["treebank", "comparison", "seed", "best_update_a", "best_update_b",
                 "matched_update", "dev_final", "dev_matched", "test", "test_from_slope"],
                rows)  # fmt: skip


def write_stopping(
    groups: Sequence[Group], found: Sequence[Pair], text: str, out: str | Path, plots: bool = True
) -> list[Path]:
    """Write the printed report ``text`` as ``stopping.md``, ``matched.csv``, ``seeds.csv``
    and, with ``plots``, the two figures into the folder ``out`` (made if missing); the paths
    written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "stopping.md", out / "matched.csv", out / "seeds.csv"]
    write_atomic(written[0], text)
    header = ["treebank", "comparison", "update", "seed", "dev_difference", "ci_low",
              "ci_high"]  # fmt: skip
    write_atomic(written[1], _csv(header, matched_rows(found)))
    fits, slope = regressions(groups)
    write_atomic(written[2], seeds_csv(shares(found, slope)))
    if plots:
        from .plots import plot_matched_differences, plot_test_vs_best

        written += [out / "matched_dev.png", out / "test_vs_best.png"]
        plot_matched_differences(found, written[3])
        plot_test_vs_best(groups, fits, written[4])
    return written
