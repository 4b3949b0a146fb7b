"""PNG figures (matplotlib, Agg): development LAS against update per condition, Table 1 bars,
the root-constraint bars, and the stop-time figures of :mod:`.stopping` (paired development
differences at matched updates, test LAS against the best update). Development curves are each
run's CSV log (:func:`.runs.dev_curve`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from .rows import METRICS, row_key, row_label
from .runs import dev_curve


def mean_band(curves: Sequence[Mapping[int, float]]) -> tuple[list[int], list[float], list[float]]:
    """Per update: the mean over the curves that reach it and its sample std (0 for one)."""
    updates = sorted({u for c in curves for u in c})
    means, stds = [], []
    for u in updates:
        values = [c[u] for c in curves if u in c]
        means.append(statistics.fmean(values))
        stds.append(statistics.stdev(values) if len(values) >= 2 else 0.0)
    return updates, means, stds


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_dev_curves(groups: Sequence, path: str | Path) -> Path:
    """Development LAS against update, one panel per treebank, one line per condition: the
    mean over seeds with a ± one sample standard deviation band."""
    plt = _pyplot()
    groups = [g for g in groups if g.used] or list(groups)[:1]  # those with finished runs
    fig, axes = plt.subplots(
        1, max(1, len(groups)), figsize=(5.5 * max(1, len(groups)), 4), squeeze=False
    )
    for ax, g in zip(axes[0], groups, strict=False):
        by_row: dict[object, list[dict[int, float]]] = {}
        for run in g.used:
            curve = dev_curve(run.path)
            if curve:
                by_row.setdefault(row_key(run, g.layout), []).append(curve)
        for key in g.cells:
            curves = by_row.get(key)
            if not curves:
                continue
            x, mean, std = mean_band(curves)
            line = ax.plot(
                x,
                mean,
                marker="." if len(x) < 30 else None,
                label=f"{row_label(key)} (n={len(curves)})",
            )[0]
            lo = [m - s for m, s in zip(mean, std, strict=True)]
            hi = [m + s for m, s in zip(mean, std, strict=True)]
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_title(g.label)
        ax.set_xlabel("update")
        ax.set_ylabel("dev LAS (%)")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    fig.suptitle("Development LAS during training: mean over seeds ± sample std", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def plot_table1(groups: Sequence, path: str | Path, stage: str = "test") -> Path:
    """Table 1 as bars: per treebank and metric, each condition's mean with its sample std,
    the seeds as dots, and the paper's published mean as a black bar where there is one."""
    plt = _pyplot()
    groups = [g for g in groups if g.used] or list(groups)[:1]  # those with finished runs
    fig, axes = plt.subplots(
        max(1, len(groups)),
        len(METRICS),
        figsize=(4 * len(METRICS), 3.2 * max(1, len(groups))),
        squeeze=False,
    )
    for r, g in enumerate(groups):
        keys = [k for k, cell in g.cells.items() if cell["las"].n > 0]
        for c, name in enumerate(METRICS):
            ax = axes[r][c]
            for i, key in enumerate(keys):
                s = g.cells[key][name]
                if s.n == 0:
                    continue
                ax.bar(i, s.mean, yerr=s.std or 0.0, capsize=4, color=f"C{i}", alpha=0.7)
                ax.scatter([i] * s.n, list(s.values.values()), color="k", s=10, zorder=3)
                paper = (g.paper or {}).get(key) if isinstance(key, str) else None
                if paper is not None and paper[c] is not None:
                    ax.hlines(
                        paper[c],
                        i - 0.4,
                        i + 0.4,
                        color="k",
                        linewidth=2,
                        label="paper" if i == 0 else None,
                    )
            values = [v for k in keys for v in g.cells[k][name].values.values()]
            if values:
                lo, hi = min(values), max(values)
                pad = max(0.5, 0.25 * (hi - lo))
                ax.set_ylim(max(0.0, lo - 2 * pad), min(100.0, hi + 2 * pad))
            ax.set_xticks(range(len(keys)), [row_label(k) for k in keys], rotation=20, fontsize=8)
            ax.set_title(f"{g.label}: {stage} {name.upper()}", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
            if g.paper and c == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


def plot_root_violations(rows: Sequence[Mapping], path: str | Path, title: str) -> Path:
    """Bars: the percentage of trees violating the single-root constraint, per decoding
    (1-best, K-best), unconstrained against root-constrained."""
    plt = _pyplot()
    labels = [row["decoding"] for row in rows]
    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 2, 3.5))
    x = range(len(labels))
    free = [row["unconstrained_pct"] for row in rows]
    fixed = [row["constrained_pct"] for row in rows]
    ax.bar([i - 0.2 for i in x], free, width=0.4, label="unconstrained")
    ax.bar([i + 0.2 for i in x], fixed, width=0.4, label="root-constrained")
    for i, v in enumerate(fixed):
        ax.annotate(f"{v:.1f}", (i + 0.2, v), ha="center", va="bottom", fontsize=7)
    for i, v in enumerate(free):
        ax.annotate(f"{v:.1f}", (i - 0.2, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("trees violating single root (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def plot_matched_differences(pairs: Sequence, path: str | Path, start: int = 500) -> Path:
    """Development LAS differences at matched updates (:class:`.stopping.Pair`): one panel per
    treebank and comparison, a thin line per seed (its dot: the matched update of
    :mod:`.stopping`, the earlier of the two best updates),
    the mean over seeds with its 90 % Student-t band where every seed has the update; from
    update ``start`` (the first evaluations differ by several points and would flatten the
    rest; every update is in ``matched.csv``)."""
    from .stats import paired_test

    plt = _pyplot()
    families: dict[tuple[str, str], list] = {}
    for p in pairs:
        families.setdefault((p.group.label, " − ".join(map(row_label, p.rows))), []).append(p)
    labels = list(dict.fromkeys(k[0] for k in families))
    comparisons = list(dict.fromkeys(k[1] for k in families))
    fig, axes = plt.subplots(len(labels), len(comparisons), squeeze=False,
                             figsize=(4.6 * len(comparisons), 3.2 * len(labels)))  # fmt: skip
    for (label, comparison), family in families.items():
        ax = axes[labels.index(label)][comparisons.index(comparison)]
        per_seed = {p.seed: p.matched() for p in family}
        for i, p in enumerate(family):
            m = {u: v for u, v in per_seed[p.seed].items() if u >= start}
            ax.plot(list(m), list(m.values()), color=f"C{i}", linewidth=0.8, alpha=0.7,
                    label=f"seed {p.seed}")  # fmt: skip
            matched = min(p.best_updates)
            if matched in m:
                ax.plot([matched], [m[matched]], "o", color=f"C{i}", markersize=4)
        common = sorted(set.intersection(*(set(m) for m in per_seed.values())))
        common = [u for u in common if u >= start]
        if len(per_seed) >= 2 and common:
            tests = [paired_test({s: m[u] for s, m in per_seed.items()}, 0.5, 0.90) for u in common]
            ax.plot(common, [t.mean for t in tests], color="k", linewidth=1.5, label="mean")
            spread = [(u, t) for u, t in zip(common, tests, strict=True) if t.ci_low is not None]
            ax.fill_between([u for u, _ in spread], [t.ci_low for _, t in spread],
                            [t.ci_high for _, t in spread], color="k", alpha=0.12,
                            linewidth=0, label="90 % CI")  # fmt: skip
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_title(f"{label}: {comparison}", fontsize=9)
        ax.set_xlabel("update")
        ax.set_ylabel("dev LAS difference")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Paired development LAS differences at matched updates (dot: the earlier best)",
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
    return _save(fig, path)


def plot_test_vs_best(groups: Sequence, fits: Sequence, path: str | Path) -> Path:
    """Test LAS against the update of the best development LAS, one panel per treebank with a
    fit (:class:`.stopping.Regression`): each run a point coloured by its condition, the
    least-squares line."""
    plt = _pyplot()
    fitted = {f.label: f for f in fits}
    groups = [g for g in groups if g.label in fitted]
    fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(5 * max(1, len(groups)), 3.8),
                             squeeze=False)  # fmt: skip
    for ax, g in zip(axes[0], groups, strict=False):
        xs, ys = [], []
        for i, key in enumerate(g.cells):
            runs = [r for r in g.used if row_key(r, g.layout) == key]
            x = [r.metrics["best_step"] for r in runs]
            y = [r.metrics["test/las"] for r in runs]
            ax.scatter(x, y, color=f"C{i}", label=row_label(key), zorder=3)
            xs += x
            ys += y
        f = fitted[g.label]
        x_mean, y_mean = statistics.fmean(xs), statistics.fmean(ys)
        line_x = [min(xs), max(xs)]
        ax.plot(line_x, [y_mean + f.slope * (u - x_mean) / 1000 for u in line_x], color="k",
                linewidth=1, label=f"{f.slope:+.2f} per 1,000, r = {f.r:.2f}")  # fmt: skip
        ax.set_title(g.label, fontsize=9)
        ax.set_xlabel("update of the best dev LAS")
        ax.set_ylabel("test LAS (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
