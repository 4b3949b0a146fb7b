"""Tables and plot of the trajectory-identity study from the committed traces
(runs/<setting>/<run>/seed<seed>/trace.csv): results.md and trajectory.png here, and the same
tables in README.md between its ``<!-- tables:start -->`` and ``<!-- tables:end -->`` lines.

    python experiments/trajectory-identity/analyse.py
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
# (question, first run, second run): the first run's shadow oracle is the second run's oracle.
PAIRS = [
    ("determinism: a rerun", "hinge-cle", "hinge-cle-rerun"),
    ("Q1: local CE, dev decoder cle vs bock", "local-ce", "local-ce-bock"),
    ("Q2: hinge, oracle cle vs bock", "hinge-cle", "hinge-bock"),
    ("Q3: hinge, canonical ties", "hinge-cle-canonical", "hinge-bock-canonical"),
    ("Q3: canonical ties = Bock's own trees", "hinge-bock", "hinge-bock-canonical"),
    ("Q4: hinge, random biaffine init", "hinge-cle-randinit", "hinge-bock-randinit"),
    ("item 6: local CE rerun, deterministic, 1 thread", "local-ce", "local-ce-rerun"),
    (
        "item 6: local CE rerun, non-deterministic, 2 threads",
        "local-ce-nondet",
        "local-ce-nondet-rerun",
    ),
    (
        "item 6: local CE rerun, deterministic, 2 threads",
        "local-ce-2threads",
        "local-ce-2threads-rerun",
    ),
    ("item 6: local CE, 1 thread vs 2 threads", "local-ce-rerun", "local-ce-2threads"),
    (
        "item 6: local CE rerun, non-deterministic, 1 thread",
        "local-ce-nondet-1thread",
        "local-ce-nondet-1thread-rerun",
    ),
    ("item 6: local CE, deterministic vs not, 1 thread", "local-ce", "local-ce-nondet-1thread"),
]
HINGE = ["hinge-cle", "hinge-bock", "hinge-cle-canonical", "hinge-bock-canonical",
         "hinge-cle-randinit", "hinge-bock-randinit"]  # fmt: skip


@dataclass
class Trace:
    rows: dict[int, dict[str, str]]  # update -> row (the last row of an update: resumes)

    @property
    def last(self) -> int:
        return max(self.rows)

    def value(self, update: int, name: str) -> str:
        return self.rows[update][name]

    def count(self, update: int, name: str) -> int:
        text = self.rows[update][name]
        return int(text) if text else 0

    def updates(self) -> list[int]:
        return sorted(u for u in self.rows if u > 0)


def load(path: Path) -> Trace:
    with path.open(encoding="utf-8") as f:
        return Trace({int(row["update"]): row for row in csv.DictReader(f)})


def traces() -> dict[tuple[str, str, int], Trace]:
    found = {}
    for path in sorted(RUNS.glob("*/*/seed*/trace.csv")):
        seed = int(path.parent.name.removeprefix("seed"))
        found[(path.parents[2].name, path.parents[1].name, seed)] = load(path)
    return found


def first_difference(a: Trace, b: Trace, name: str) -> int | None:
    """The first update (0: the initialisation) whose ``name`` differs; None if none does."""
    for u in sorted(set(a.rows) & set(b.rows)):
        if a.value(u, name) != b.value(u, name):
            return u
    return None


def pair_rows(found) -> list[list[str]]:
    rows = []
    for (setting, run, seed), a in sorted(found.items()):
        for question, first, second in PAIRS:
            if run != first or (setting, second, seed) not in found:
                continue
            b = found[(setting, second, seed)]
            budget = min(a.last, b.last)
            params = first_difference(a, b, "param_hash")
            loss = first_difference(a, b, "loss")
            cause = "—"
            if params is not None and params > 0 and a.value(params, "disagree"):
                n, tied = a.count(params, "disagree"), a.count(params, "disagree_tied")
                before = sum(a.count(u, "disagree") for u in a.updates() if u < params)
                same_loss = (
                    "equal" if a.value(params, "loss") == b.value(params, "loss") else "differs"
                )
                cause = (f"{n} disagreement(s), {tied} on tied optima; {before} before; "
                         f"loss at that update {same_loss}")  # fmt: skip
            rows.append([question, setting, str(seed), f"{first} / {second}", str(budget),
                         "identical" if params is None else str(params),
                         "identical" if loss is None else str(loss), cause])  # fmt: skip
    return rows


def dev_las(folder: Path) -> str:
    """The development LAS of every evaluation, from train.log: 'update: LAS, ...'."""
    text = (folder / "train.log").read_text(encoding="utf-8")
    found = re.findall(r"update (\d+): dev LAS ([\d.]+)", text)
    return ", ".join(f"{u}: {las}" for u, las in found)


def dev_rows(found) -> list[list[str]]:
    rows = []
    for (setting, run, seed), _ in sorted(found.items()):
        for question, first, second in PAIRS:
            if run != first or (setting, second, seed) not in found:
                continue
            a = dev_las(RUNS / setting / first / f"seed{seed}")
            b = dev_las(RUNS / setting / second / f"seed{seed}")
            rows.append([question, setting, str(seed), a, b, "yes" if a == b else "no"])
    return rows


def tie_rows(found) -> list[list[str]]:
    rows = []
    for (setting, run, seed), t in sorted(found.items()):
        if run not in HINGE:
            continue
        updates = t.updates()
        sentences = sum(t.count(u, "sentences") for u in updates)
        tied = [t.count(u, "tied") for u in updates]
        with_ties = [u for u, k in zip(updates, tied, strict=True) if k]
        disagree = sum(t.count(u, "disagree") for u in updates)
        on_tied = sum(t.count(u, "disagree_tied") for u in updates)
        rows.append([setting, run, str(seed), str(len(updates)), str(sentences),
                     ", ".join(map(str, with_ties[:8])) + (" …" if len(with_ties) > 8 else "")
                     or "none", str(sum(tied)), f"{1000 * sum(tied) / max(sentences, 1):.1f}",
                     str(disagree), str(on_tied)])  # fmt: skip
    return rows


def window_rows(found, width: int = 25) -> list[list[str]]:
    rows = []
    for (setting, run, seed), t in sorted(found.items()):
        if setting != "gsd-long":
            continue
        updates = t.updates()
        for lo in range(1, t.last + 1, width):
            span = [u for u in updates if lo <= u < lo + width]
            sentences = sum(t.count(u, "sentences") for u in span)
            tied = sum(t.count(u, "tied") for u in span)
            rows.append([f"{run} seed {seed}", f"{lo}–{span[-1]}", str(sentences), str(tied),
                         f"{1000 * tied / max(sentences, 1):.2f}",
                         str(sum(t.count(u, "disagree") for u in span))])  # fmt: skip
    return rows


def cost_rows(found) -> list[list[str]]:
    rows = []
    for (setting, run, seed), t in sorted(found.items()):
        updates = [u for u in t.updates() if u > 1]  # update 1 loads the compiled kernels
        step = sum(float(t.value(u, "step_seconds")) for u in updates)
        trace = sum(float(t.value(u, "trace_seconds")) for u in updates)
        rows.append([setting, run, str(seed), f"{step / len(updates):.3f}",
                     f"{trace / len(updates):.3f}", f"{100 * trace / step:.1f} %"])  # fmt: skip
    return rows


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def plot(found, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for (setting, run, seed), t in sorted(found.items()):
        if run not in ("hinge-cle", "hinge-cle-randinit") or setting == "gsd-long":
            continue
        u = t.updates()
        label = f"{setting} {run} s{seed}"
        axes[0].plot(u, [t.count(x, "tied") / max(t.count(x, "sentences"), 1) for x in u],
                     marker=".", label=label)  # fmt: skip
        axes[1].plot(u, [t.count(x, "disagree") for x in u], marker=".", label=label)
    for (setting, run, seed), t in sorted(found.items()):
        if setting == "gsd-long":
            u = t.updates()
            axes[2].plot(u, [t.count(x, "tied") / max(t.count(x, "sentences"), 1) for x in u],
                         marker=".", label=f"{run} s{seed}")  # fmt: skip
    axes[0].set(title="tied loss-augmented optima", xlabel="update",
                ylabel="fraction of the batch's sentences", xscale="log")  # fmt: skip
    axes[1].set(title="oracle disagreements (cle vs shadow bock)", xlabel="update",
                ylabel="sentences", xscale="log")  # fmt: skip
    axes[2].set(title="gsd-long: tied optima", xlabel="update", ylabel="fraction")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    found = traces()
    out = ["# Trajectory-identity study: tables (generated by analyse.py from runs/)", ""]
    out += ["## First divergent update per pair and seed", "",
            "Update 0 is the initialisation; *identical*: equal through the whole budget. "
            "*At divergence*: the first run's oracle vs its shadow (the second run's oracle) on "
            "the loss-augmented matrices of the divergent update, which both runs still share.",
            "", table(["question", "setting", "seed", "runs", "budget", "first different "
                       "parameters", "first different loss", "at divergence (first run)"],
                      pair_rows(found)), ""]  # fmt: skip
    out += ["## Development LAS at each evaluation (update: LAS), per pair", "",
            table(["question", "setting", "seed", "first run", "second run", "equal"],
                  dev_rows(found)), ""]  # fmt: skip
    out += ["## Tied loss-augmented optima and oracle disagreements (hinge runs)", "",
            table(["setting", "run", "seed", "updates", "sentences", "updates with a tie (first 8)",
                   "tied", "tied / 1,000 sentences", "disagreements", "on tied optima"],
                  tie_rows(found)), ""]  # fmt: skip
    windows = window_rows(found)
    if windows:
        out += ["## The longer run: tied optima per 1,000 sentences, 25-update windows", "",
                table(["run", "updates", "sentences", "tied", "per 1,000", "disagreements"],
                      windows), ""]  # fmt: skip
    out += ["## Cost of the trace when on (updates 2 onwards)", "",
            table(["setting", "run", "seed", "step s/update", "trace s/update", "trace / step"],
                  cost_rows(found)), ""]  # fmt: skip
    (HERE / "results.md").write_text("\n".join(out), encoding="utf-8")
    readme = HERE / "README.md"
    text = readme.read_text(encoding="utf-8")
    start, end = "<!-- tables:start -->\n", "<!-- tables:end -->"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        tables = "\n".join("#### " + x[3:] if x.startswith("## ") else x for x in out[2:])
        readme.write_text(head + start + tables + "\n" + end + rest.split(end, 1)[1],
                          encoding="utf-8")  # fmt: skip
    plot(found, HERE / "trajectory.png")
    print("\n".join(out))


if __name__ == "__main__":
    main()
