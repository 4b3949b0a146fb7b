"""Where the LAS lost to predicted tags goes (issue 52): each published joint-tagger run (row
(b) of ``table.md``) scored on the test set three ways, from committed prediction files and the
gold treebank.

- **own tags**: its ``predictions/test.conllu`` (the tags its tagger predicted, which the
  parser read; the run's ``metrics.json`` scores);
- **gold tags in**: the same model reading the test file's gold UPOS/XPOS/FEATS instead,
  ``gold-inputs/<treebank>-seed<N>.conllu.gz``, written from the run's ``best.ckpt`` before it
  was published by

      bockparse-predict RUN_FOLDER TEST.conllu --tags auto \\
          --out experiments/predicted-tags/gold-inputs/<treebank>-seed<N>.conllu
      gzip -n experiments/predicted-tags/gold-inputs/<treebank>-seed<N>.conllu

  (``<treebank>-train-gold-seed<N>`` for a run whose parser read gold tags in training,
  ``model.tagger.train_tags=gold``);
- the own-tag LAS of the words whose predicted UPOS (and all three tags) were right, and of
  those whose were wrong.

With the gold-tag runs (row (a)) of the same treebank, English-EWT's gap to UDPipe 2 splits
into three parts that sum to it: the tag errors at test time (own tags − gold tags in, same
model), training on predicted tags (gold tags in − row (a)), and what row (a) itself lacks
against UDPipe 2 (encoder and set-up, with gold tags against UDPipe 2's predicted ones). Each
joint-tagger run's development LAS where the gold-tag runs found their best shows what its
longer (or shorter) training did. Runs with gold tags in training split the training part
into the tagger's shared loss and the predicted tags in training. Each treebank's runs without
tag inputs (row (c)) are set against row (a) and the joint-tagger runs. The parts within our
runs come with paired sentence-bootstrap intervals
(:func:`bockparse.experiments.stats.bootstrap_interval` with ``minus``): the test set's
sampling variation, not the seeds'.

    BOCKPARSE_DATA=/path/to/treebanks python experiments/predicted-tags/attribution.py \\
        > experiments/predicted-tags/attribution.md

Every word is scored (punctuation included, ROOT excluded, LAS on base relations: the CoNLL
2018 evaluator's definitions, :func:`bockparse.metrics.evaluate_files`).
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from table import HERE, SOURCES, TREEBANKS, UDPIPE2, tag_inputs

from bockparse.data.vocab import base_relation
from bockparse.experiments.loading import file_sentence_las, gold_file, sentence_las
from bockparse.experiments.runs import Run, dev_curve, discover, metric
from bockparse.experiments.stats import bootstrap_interval
from bockparse.metrics import aligned_files, evaluate_files, universal_feats
from bockparse.rundir import RunDir

GOLD_INPUTS = HERE / "gold-inputs"
SAMPLES, LEVEL = 1000, 0.95
# The treebanks whose UDPipe 2 anchor scores (nearly) our test set: English-EWT, UD 2.15 against
# v2.16. Its Chinese anchor scores UD 2.15's GSD, revised over many releases since v1.3, so no
# part of the Chinese gap is taken against it.
UDPIPE2_PARTS = ("ud-english-ewt",)


def gold_trained(run: Run) -> bool:
    """Whether a joint-tagger run's parser read gold tags in training
    (``model.tagger.train_tags=gold``), not its tagger's."""
    return tag_inputs(run)[1].startswith("gold")


def gold_inputs_file(run: Run) -> Path:
    """The committed prediction file of ``run``'s model reading the gold tags."""
    train = "-train-gold" if gold_trained(run) else ""
    return GOLD_INPUTS / f"{run.data}{train}-seed{run.seed}.conllu.gz"


def split_las(gold_path: Path, pred_path: Path) -> dict[str, tuple[int, int]]:
    """``(words with the right head and base relation, words)`` of the words whose predicted
    UPOS / all three tags equal the gold ones (``upos right``, ``upos wrong``, ``alltags
    right``, ``alltags wrong``); every word scored, as ``metrics.json``."""
    gold, pred = aligned_files(str(gold_path), str(pred_path))
    counts = {k: [0, 0] for k in ("upos right", "upos wrong", "alltags right", "alltags wrong")}
    for g, p in zip(gold, pred, strict=True):
        for i in range(len(g)):
            label = base_relation(g.rels[i]) == base_relation(p.rels[i])
            right = g.heads[i] == p.heads[i] and label
            upos = g.upos[i] == p.upos[i]
            feats = universal_feats(g.feats[i]) == universal_feats(p.feats[i])
            alltags = upos and g.xpos[i] == p.xpos[i] and feats
            for key in (f"upos {'right' if upos else 'wrong'}",
                        f"alltags {'right' if alltags else 'wrong'}"):  # fmt: skip
                counts[key][0] += int(right)
                counts[key][1] += 1
    return {k: (c[0], c[1]) for k, c in counts.items()}


def run_rows(run: Run) -> tuple[list[str], float]:
    """The table lines of one run and its LAS with the gold tags in."""
    gold_path, _ = gold_file(run.path, "test")
    own = evaluate_files(str(gold_path), str(RunDir(run.path).predictions("test")))
    gold_in = evaluate_files(str(gold_path), str(gold_inputs_file(run)))
    recorded = metric(run, "test/las")
    if recorded is None or abs(own["las"] - recorded) > 5e-3:
        raise SystemExit(f"{run.path}: its predictions score LAS {own['las']:.2f}, its "
                         f"metrics.json {recorded}: not the files of one run")  # fmt: skip
    split = split_las(gold_path, RunDir(run.path).predictions("test"))
    counted = (
        split["upos right"][0] + split["upos wrong"][0],
        split["upos right"][1],
        split["alltags right"][1],
    )
    if counted != (own["labels"], own["right_upos"], own["right_alltags"]):
        raise SystemExit(
            f"{run.path}: the split counts {counted} (labels, UPOS, AllTags right), "
            f"the evaluator {own['labels'], own['right_upos'], own['right_alltags']}"
        )
    name = f"{TREEBANKS.get(run.data or '', run.data)}, seed {run.seed}"
    if gold_trained(run):
        name += ", gold tags in training"
    lines = [
        f"| {name} | own tags (UPOS {own['upos']:.2f}, AllTags {own['alltags']:.2f}) | "
        f"{own['uas']:.2f} | {own['las']:.2f} | {own['words']:,} |",
        f"| {name} | gold tags in, same model | {gold_in['uas']:.2f} | {gold_in['las']:.2f} | "
        f"{gold_in['words']:,} |",
    ]
    for key, (right, words) in split.items():
        las = 100.0 * right / words if words else 0.0
        lines.append(f"| {name} | own tags, words with {key} | — | {las:.2f} | {words:,} |")
    return lines, gold_in["las"]


def gold_tag_runs(data: str) -> list[Run]:
    """The finished gold-tag runs (row (a)) of a treebank."""
    runs = discover([p for p in SOURCES if p.is_dir()]).runs
    return [r for r in runs if r.ok and r.data == data and tag_inputs(r)[0] == "gold"
            and metric(r, "test/las") is not None]  # fmt: skip


def matched_updates(runs: list[Run], gold_runs: list[Run]) -> list[str]:
    """Training length: each joint-tagger or no-tag-input run's development LAS (its own tag
    inputs) at the updates where the gold-tag runs found their best, against its own best. Only
    the development curve has a score at every evaluation (no checkpoint but the best is kept);
    a run whose curve lacks one of those updates says which."""
    stops = sorted({b for r in gold_runs
                    if isinstance(b := (r.metrics or {}).get("best_step"), int)})  # fmt: skip
    lines = []
    for run in runs if stops else []:
        curve = dev_curve(run.path)
        best = (run.metrics or {}).get("best_step")
        reads = "no tag inputs" if tag_inputs(run)[0] == "none" else "own tags"
        if reads == "own tags" and gold_trained(run):
            reads += ", gold tags in training"
        missing = [u for u in (*stops, best) if u not in curve]
        if missing:
            lines.append(f"- seed {run.seed} ({reads}): no dev LAS at update(s) {missing} in "
                         "its curve")  # fmt: skip
            continue
        at_stops = [curve[u] for u in stops]
        gain = curve[best] - statistics.fmean(at_stops)
        lines.append(
            f"- seed {run.seed}: dev LAS ({reads}) at the gold-tag runs' best updates "
            f"({', '.join(f'{u:,}' for u in stops)}): "
            f"{', '.join(f'{v:.2f}' for v in at_stops)}; at its own best (update {best:,}): "
            f"{curve[best]:.2f}, {gain:+.2f} over their mean"
        )
    return lines


def interval(first: list[list[tuple[int, int]]], second: list[list[tuple[int, int]]]) -> str:
    """The paired sentence-bootstrap interval of ``mean(first) - mean(second)``, as text."""
    low, high = bootstrap_interval(first, minus=second, samples=SAMPLES, level=LEVEL)
    return f"{100 * LEVEL:g} % interval [{low:+.2f}, {high:+.2f}]"


def report(paths: Sequence[Path] = (HERE / "runs",)) -> str:
    runs = [r for r in discover([p for p in paths if p.is_dir()]).runs if r.ok]
    runs.sort(key=lambda r: (list(TREEBANKS).index(r.data) if r.data in TREEBANKS else 99,
                             r.seed or 0))  # fmt: skip
    tagger_runs = [r for r in runs if tag_inputs(r)[0] == "predicted"]
    out = ["Test set, every word scored (CoNLL 2018 evaluator's definitions, gold "
           "tokenisation). Own tags: the run's predictions, read by its parser; gold tags in: "
           "the same checkpoint reading the test file's gold tags; the split rows score the "
           "own-tag predictions on the words whose predicted tags were right or wrong.", "",
           "| run | parser's tag inputs | UAS | LAS | words |",
           "|---|---|---|---|---|"]  # fmt: skip
    scored = {}
    for run in tagger_runs:
        lines, scored[id(run)] = run_rows(run)
        out += lines
    for data in dict.fromkeys(r.data or "?" for r in runs):
        out += treebank_parts(data, [r for r in runs if r.data == data], scored)
    if runs:
        out += ["", f"The intervals are {100 * LEVEL:g} % percentile bootstrap intervals over "
                f"the test sentences ({SAMPLES} resamples, resampling seed 0), paired: both "
                "sides are scored on the same resampled sentences. They measure the test "
                "set's sampling variation only, not the seeds' (each side's seeds are averaged "
                "on every resample). The parts against UDPipe 2 have none: its per-sentence "
                "predictions are not published."]  # fmt: skip
    return "\n".join(out) + "\n"


Side = tuple[float, list[list[tuple[int, int]]]]  # mean test LAS, the runs' per-sentence LAS


def part(text: str, first: Side, second: Side) -> str:
    """One line: ``first`` minus ``second`` in mean LAS, with its paired interval."""
    return f"- {text}: {first[0] - second[0]:+.2f}, {interval(first[1], second[1])}"


def treebank_parts(data: str, runs: list[Run],
                   scored: dict[int, float]) -> list[str]:  # fmt: skip
    """One treebank's parts, from its published ``runs`` (``scored``: each joint-tagger run's LAS
    with the gold tags in, from :func:`run_rows`). Row (b)'s gap split: own tags against gold
    tags in, gold tags in against row (a), row (a) against UDPipe 2. The runs whose parser read
    gold tags in training (``train_tags=gold``) split row (b)'s training part into the tagger's
    shared loss and the predicted tags in training. The no-tag-input runs (row (c)) against row
    (a) and row (b). Then each run's training length."""
    tagger = [r for r in runs if tag_inputs(r)[0] == "predicted" and not gold_trained(r)]
    trained_gold = [r for r in runs if tag_inputs(r)[0] == "predicted" and gold_trained(r)]
    notag = [r for r in runs if tag_inputs(r)[0] == "none"]
    gold_runs = gold_tag_runs(data)

    def gold_in(group: list[Run]) -> Side:
        return (statistics.fmean(scored[id(r)] for r in group),
                [file_sentence_las(gold_file(r.path, "test")[0], gold_inputs_file(r))
                 for r in group])  # fmt: skip

    def own(group: list[Run]) -> Side:
        """The runs' own predictions: their ``metrics.json`` test LAS, as ``table.md``."""
        return (statistics.fmean(metric(r, "test/las") or 0.0 for r in group),
                [sentence_las(r.path, "test") for r in group])  # fmt: skip

    gold = own(gold_runs) if gold_runs else None
    counts = [f"{len(tagger)} joint-tagger run(s)", f"{len(notag)} run(s) without tag inputs",
              f"{len(gold_runs)} gold-tag runs"]  # fmt: skip
    if trained_gold:
        counts.insert(2, f"{len(trained_gold)} joint-tagger run(s) with gold tags in training")
    out = ["", f"{TREEBANKS.get(data, data)} ({', '.join(counts)}), mean test LAS:", ""]
    if tagger:
        own_b, gold_in_b = own(tagger), gold_in(tagger)
        out.append(part("tag errors at test time (own tags − gold tags in, same model)",
                        own_b, gold_in_b))  # fmt: skip
        if gold:
            out.append(part(f"training with predicted tags (gold tags in − the gold-tag runs' "
                            f"{gold[0]:.2f})", gold_in_b, gold))  # fmt: skip
        if data in UDPIPE2_PARTS and gold:
            anchor = UDPIPE2[data][1]["las"]
            out.append(
                f"- the gold-tag runs − UDPipe 2's {anchor:.2f} (encoder and set-up, our gold "
                f"tags against its predicted ones): {gold[0] - anchor:+.2f}"
            )
            out.append(f"- sum: own tags − UDPipe 2 = {own_b[0] - anchor:+.2f}")
    if trained_gold:
        own_g, gold_in_g = own(trained_gold), gold_in(trained_gold)
        out.append(part("gold tags in training: tag errors at test time (own tags − gold tags "
                        "in, same model)", own_g, gold_in_g))  # fmt: skip
        if gold:
            out.append(part(f"gold tags in training: the tagger's shared loss (gold tags in − "
                            f"the gold-tag runs' {gold[0]:.2f})", gold_in_g, gold))  # fmt: skip
        if tagger:
            out.append(part("predicted rather than gold tags in training (gold tags in, both)",
                            gold_in_b, gold_in_g))  # fmt: skip
            out.append(part("own tags, predicted − gold tags in training", own_b, own_g))
    if notag:
        none = own(notag)
        if gold:
            out.append(part(f"no tag inputs − the gold-tag runs' {gold[0]:.2f}", none, gold))
        if tagger:
            out.append(part("no tag inputs − own tags (joint tagger)", none, own_b))
    matched = matched_updates(tagger + trained_gold + notag, gold_runs)
    if matched:
        out += ["", "Training length, on the development set (only the best checkpoint is "
                "kept, so no other update has a test score):", "", *matched]  # fmt: skip
    return out


if __name__ == "__main__":
    sys.stdout.write(report())
