"""Decoder benchmark: µs per sentence for every bockparse method beside public anchors.

Run with ``make bench`` (or ``python benchmarks/decoders.py --help``). All timings of one table
come from the same run, so the ratios are meaningful on a noisy machine; absolute numbers are
not. Anchors, installed by the ``bench`` extra:

* Stanza's ``chuliu_edmonds_one_root`` (single root; ``[dependent, head]`` orientation, so it
  gets the transpose; it copies its input);
* ``ufal.chu_liu_edmonds`` (C++, unconstrained; single root by the same root penalty as
  bockparse's ``root_strategy="reweight"``, applied in numpy before the call);
* networkx ``maximum_spanning_arborescence`` (unconstrained, small n only).

Matrices: (a) parser-like — a random gold tree, N(0, 1) logits plus 4.0 on gold arcs, column-wise
log-softmax over heads; (b) uniform(0, 1). Writes ``benchmarks/results/decoders.md`` (the tables)
and ``benchmarks/results/decoders.png`` (log-log µs against n).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bockparse import decoders
from bockparse.decoders.synthetic import parser_like

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
EWT_TRAIN = ROOT.parent.parent / "shared/data/ud-english-ewt/en_ewt-ud-train.conllu"
SAMPLE_TRAIN = ROOT.parent / "data/ud-english-ewt-sample/en_ewt-ud-train.conllu"
DECODERS = tuple(m for m in decoders.DECODERS if decoders.get_decoder(m).max_words is None)


def uniform(n: int, rng: np.random.Generator) -> np.ndarray:
    S = rng.random((n + 1, n + 1))
    S[:, 0] = -np.inf
    np.fill_diagonal(S, -np.inf)
    return S


FAMILIES = {"parser-like": parser_like, "uniform": uniform}


def median_us(fn: Callable[[np.ndarray], object], mats: list[np.ndarray], repeats: int) -> float:
    """Median over ``repeats`` passes of the mean µs per matrix of ``fn``."""
    fn(mats[0])  # compile / warm up
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for S in mats:
            fn(S)
        per.append((time.perf_counter() - t0) / len(mats) * 1e6)
    return statistics.median(per)


def anchors(n: int, single_root: bool) -> dict[str, Callable[[np.ndarray], object]]:
    """The public implementations available for this size and root setting."""
    out: dict[str, Callable[[np.ndarray], object]] = {}
    try:
        import ufal.chu_liu_edmonds as ufal

        if single_root:

            def ufal_reweighted(S):
                W = np.where(np.isfinite(S), S, np.nan)
                spread = np.nansum(np.nanmax(W[:, 1:], 0) - np.nanmin(W[:, 1:], 0))
                T = S.T.copy()  # ufal: [dependent, head]
                T[1:, 0] -= 1.0 + 2.0 * spread
                return ufal.chu_liu_edmonds(np.nan_to_num(T, neginf=-1e30))

            out["ufal + reweighting"] = ufal_reweighted
        else:
            out["ufal"] = lambda S: ufal.chu_liu_edmonds(np.nan_to_num(S.T, neginf=-1e30))
    except ImportError:
        pass
    if single_root:
        try:
            from stanza.models.common.chuliu_edmonds import chuliu_edmonds_one_root

            out["stanza one-root"] = lambda S: chuliu_edmonds_one_root(S.T)
        except ImportError:
            pass
    elif n <= 40:
        try:
            import networkx as nx

            def networkx_msa(S):
                G = nx.DiGraph()
                h, d = np.nonzero(np.isfinite(S))
                G.add_weighted_edges_from(
                    zip(h.tolist(), d.tolist(), S[h, d].tolist(), strict=True)
                )
                return nx.maximum_spanning_arborescence(G)

            out["networkx"] = networkx_msa
        except ImportError:
            pass
    return out


def per_sentence_table(sizes, count, repeats, rng) -> tuple[list[dict], list[str]]:
    rows, lines = [], []
    for family, make in FAMILIES.items():
        for single_root in (True, False):
            mode = "single root" if single_root else "unconstrained"
            lines += [f"\n### {family}, {mode}: µs per sentence (ratio to the fastest anchor)\n"]
            lines += ["| method | " + " | ".join(f"n = {n}" for n in sizes) + " |"]
            lines += ["|---|" + "---:|" * len(sizes)]
            timings: dict[str, dict[int, float]] = {}
            best_anchor: dict[int, float] = {}
            for n in sizes:
                mats = [make(n, rng) for _ in range(count)]
                for m in DECODERS:
                    fn = lambda S, m=m, r=single_root: decoders.decode(S, m, single_root=r)  # noqa: E731
                    timings.setdefault(m, {})[n] = median_us(fn, mats, repeats)
                timings.setdefault("greedy argmax (numpy floor)", {})[n] = median_us(
                    lambda S: S.argmax(axis=0), mats, repeats
                )
                for name, fn in anchors(n, single_root).items():
                    slow = name in ("stanza one-root", "networkx")
                    sub = mats[: max(3, count // 10)] if slow else mats
                    try:
                        t = median_us(fn, sub, 3 if slow else repeats)
                    except AssertionError:  # Stanza's one-root asserts on positive scores
                        timings.setdefault(name, {})[n] = float("nan")
                        continue
                    timings.setdefault(name, {})[n] = t
                    best_anchor[n] = min(best_anchor.get(n, np.inf), t)
            for name, by_n in timings.items():
                cells = []
                for n in sizes:
                    t = by_n.get(n)
                    if t is None:
                        cells.append("–")
                    elif np.isnan(t):
                        cells.append("fails (assert)")
                    elif n in best_anchor:
                        cells.append(f"{t:,.1f} ({t / best_anchor[n]:.3g}×)")
                    else:
                        cells.append(f"{t:,.1f}")
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
                rows += [
                    {"family": family, "mode": mode, "method": name, "n": n, "us": t}
                    for n, t in by_n.items()
                    if not np.isnan(t)
                ]
    return rows, lines


def ewt_lengths() -> tuple[np.ndarray, str]:
    """Sentence lengths (words) of the EWT training file, or of the shipped sample."""
    path = EWT_TRAIN if EWT_TRAIN.exists() else SAMPLE_TRAIN
    lengths, n = [], 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                if n:
                    lengths.append(n)
                n = 0
            elif not line.startswith("#") and line.split("\t", 1)[0].isdigit():
                n += 1
    return np.array(lengths), path.name


def batch_table(rng, repeats) -> list[str]:
    pool, source = ewt_lengths()
    lengths = []
    while sum(lengths) < 5000:
        lengths.append(int(rng.choice(pool)))
    mats = [parser_like(n, rng) for n in lengths]
    M = max(lengths) + 1
    padded = np.full((len(mats), M, M), -np.inf, dtype=np.float32)
    for b, S in enumerate(mats):
        padded[b, : S.shape[0], : S.shape[0]] = S
    lens = np.array(lengths)
    lines = [
        f"\n### A {sum(lengths):,}-token batch ({len(lengths)} sentences, lengths drawn from "
        f"{source}), parser-like, single root: ms per batch\n",
        "| method | 1 worker | 2 workers |",
        "|---|---:|---:|",
    ]
    for m in DECODERS:
        cells = []
        for workers in (1, 2):
            decoders.decode_batch(padded, lens, m, workers=workers)
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                decoders.decode_batch(padded, lens, m, workers=workers)
                ts.append((time.perf_counter() - t0) * 1e3)
            cells.append(f"{statistics.median(ts):.2f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return lines


def kbest_table(sizes, count, repeats, rng) -> list[str]:
    if not hasattr(decoders, "kbest"):
        return []
    lines = [
        "\n### 10-best, single root, parser-like: µs per sentence "
        "(ratio to the fastest single-root 1-best method)\n",
        "| n | 10-best | fastest 1-best | ratio |",
        "|---:|---:|---:|---:|",
    ]
    for n in sizes:
        mats = [parser_like(n, rng) for _ in range(count)]
        t_k = median_us(lambda S: decoders.kbest(S, 10), mats, repeats)
        t_1 = min(median_us(lambda S, m=m: decoders.decode(S, m), mats, repeats) for m in DECODERS)
        lines.append(f"| {n} | {t_k:,.1f} | {t_1:,.1f} | {t_k / t_1:.1f}× |")
    return lines


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    for ax, family in zip(axes, FAMILIES, strict=True):
        for name in dict.fromkeys(r["method"] for r in rows):
            pts = sorted(
                (r["n"], r["us"])
                for r in rows
                if r["family"] == family and r["mode"] == "single root" and r["method"] == name
            )
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=name)
        ax.set(xscale="log", yscale="log", xlabel="n (words)", title=f"{family}, single root")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs per sentence")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 40, 80, 150])
    parser.add_argument("--count", type=int, default=60, help="matrices per size")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1971)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    RESULTS.mkdir(exist_ok=True)
    rows, lines = per_sentence_table(args.sizes, args.count, args.repeats, rng)
    lines += batch_table(rng, args.repeats)
    lines += kbest_table([n for n in (10, 20, 40, 80) if n <= max(args.sizes)], args.count,
                         args.repeats, rng)  # fmt: skip
    header = [
        "## Decoder benchmark",
        "",
        f"`python benchmarks/decoders.py --count {args.count} --repeats {args.repeats} "
        f"--seed {args.seed}`; medians of {args.repeats} passes.",
    ]
    text = "\n".join(header + lines) + "\n"
    tmp = RESULTS / "decoders.md.tmp"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(RESULTS / "decoders.md")
    plot(rows, RESULTS / "decoders.png")
    print(text)
    print(f"wrote {RESULTS / 'decoders.md'} and {RESULTS / 'decoders.png'}")


if __name__ == "__main__":
    main()
