"""``bockparse-substitute``: decoder substitution on identical scores (the Bock paper, §5).

From a trained model (the paper: the local-CE models, one per seed) the development and test
score matrices are computed once; every decoder then decodes the same float32 matrices under
the single-root constraint, and relation labels are read at the predicted heads (the best
relation of each arc, as in prediction). Reported per pair of decoders: the sentences with
identical heads, identical full relation labels and identical tree scores (the float64 sum of
the original scores, compared exactly), and per decoder UAS/LAS/LCM. The paper finds CL/E,
original Bock and reformulated Bock identical on every PTB development and test sentence.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..decoders import decode, get_decoder, tree_score
from ..metrics import COUNTS, rates, scored_words, sentence_counts
from .loading import LoadedRun, load_run, scored_sentences

DECODERS = ("cle", "bock-original", "bock", "tarjan")
STAGES = ("val", "test")


def compare(run: LoadedRun, stage: str, decoders: Sequence[str] = DECODERS) -> dict[str, Any]:
    """Decode one split's fixed scores with every decoder and compare the results.

    Returns:
        ``{"sentences", "scores": {decoder: {uas, las, lcm, counts}}, "pairs": [{a, b,
        heads, labels, tree_scores, max_score_difference}], "reproduced": {...}}``, counts
        of sentences (shares in ``pairs`` as fractions).
    """
    for name in decoders:
        get_decoder(name)
    itos = run.relations
    exclude = run.cfg.get("exclude_punct")
    heads: dict[str, list[np.ndarray]] = {d: [] for d in decoders}
    labels: dict[str, list[tuple[str, ...]]] = {d: [] for d in decoders}
    values: dict[str, list[float]] = {d: [] for d in decoders}
    counts = {d: np.zeros(len(COUNTS), dtype=np.int64) for d in decoders}
    order: list[int] = []
    for sentence in scored_sentences(run, stage):
        order.append(sentence.index)
        scored = scored_words(sentence.gold, exclude)
        cols = np.arange(1, sentence.arc.shape[0])
        for name in decoders:
            h = decode(sentence.arc, name, single_root=True)
            rel = tuple(itos[r] for r in sentence.best_rel[h[1:], cols])
            heads[name].append(h)
            labels[name].append(rel)
            values[name].append(tree_score(sentence.arc, h))
            counts[name] += sentence_counts(sentence.gold, h[1:], rel, scored)
    total = len(order)
    pairs = []
    for a, b in itertools.combinations(decoders, 2):
        same_heads = sum(np.array_equal(x, y) for x, y in zip(heads[a], heads[b], strict=True))
        same_labels = sum(x == y for x, y in zip(labels[a], labels[b], strict=True))
        same_scores = sum(x == y for x, y in zip(values[a], values[b], strict=True))
        gap = max((abs(x - y) for x, y in zip(values[a], values[b], strict=True)), default=0.0)
        pairs.append(
            {
                "a": a,
                "b": b,
                "heads": same_heads,
                "labels": same_labels,
                "tree_scores": same_scores,
                "heads_share": same_heads / total if total else 0.0,
                "labels_share": same_labels / total if total else 0.0,
                "tree_scores_share": same_scores / total if total else 0.0,
                "max_score_difference": gap,
            }
        )
    result: dict[str, Any] = {
        "sentences": total,
        "scores": {
            d: {**rates(counts[d]), **dict(zip(COUNTS, counts[d].tolist(), strict=True))}
            for d in decoders
        },
        "pairs": pairs,
    }
    result["reproduced"] = _reproduced(run, stage, order, heads, labels)
    return result


def _reproduced(run, stage, order, heads, labels) -> dict[str, Any] | None:
    """Whether the run's own decoder gives back its saved ``predictions/<stage>.conllu``."""
    from ..data.conllu import read_conllu

    decoder = run.cfg.decoder
    path = run.path / "predictions" / f"{stage}.conllu"
    if decoder not in heads or not path.is_file():
        return None
    saved = read_conllu(path, single_root=False, on_malformed="error")
    same = 0
    for i, index in enumerate(order):
        pred = saved[index]
        if list(heads[decoder][i][1:]) == list(pred.heads) and labels[decoder][i] == tuple(
            pred.rels
        ):
            same += 1
    return {"decoder": decoder, "file": str(path), "sentences": len(order), "identical": same}


def substitute(
    run_dir: str | Path, stages: Sequence[str] = STAGES, decoders: Sequence[str] = DECODERS
) -> dict[str, Any]:
    """:func:`compare` on each split of a run folder."""
    run = load_run(run_dir)
    return {
        "run": str(run_dir),
        "condition": run.cfg.name,
        "decoder": run.cfg.decoder,
        "seed": run.cfg.seed,
        "single_root": True,
        "stages": {stage: compare(run, stage, decoders) for stage in stages},
    }


def to_markdown(report: dict[str, Any]) -> str:
    """The pairwise identity table and the per-decoder scores of every split."""
    lines = [
        f"Decoder substitution on {report['run']} (condition {report['condition']}, "
        f"seed {report['seed']}): identical score matrices, single root."
    ]
    for stage, res in report["stages"].items():
        n = res["sentences"]
        lines += ["", f"{stage}: {n} sentences", ""]
        lines.append(
            "| decoders | identical heads | identical labels | identical tree scores | "
            "max abs score difference |"
        )
        lines.append("| :--- | ---: | ---: | ---: | ---: |")
        for p in res["pairs"]:
            cells = [
                f"{p[k]} ({100 * p[k + '_share']:.2f} %)"
                for k in ("heads", "labels", "tree_scores")
            ]
            lines.append(
                f"| {p['a']} vs {p['b']} | "
                + " | ".join(cells)
                + f" | {p['max_score_difference']:.3g} |"
            )
        lines += ["", "| decoder | UAS | LAS | LCM |", "| :--- | ---: | ---: | ---: |"]
        for d, s in res["scores"].items():
            lines.append(f"| {d} | {s['uas']:.2f} | {s['las']:.2f} | {s['lcm']:.2f} |")
        rep = res.get("reproduced")
        if rep:
            lines += [
                "",
                f"The run's decoder ({rep['decoder']}) reproduces {rep['identical']} "
                f"of {rep['sentences']} sentences of {rep['file']}.",
            ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``bockparse-substitute RUN_DIR... [--decoders ...] [--stages val test] [--out DIR]``."""
    parser = argparse.ArgumentParser(
        prog="bockparse-substitute",
        description="Decode a trained model's fixed dev/test scores with several decoders and "
        "count identical heads, labels and tree scores per pair.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--decoders", nargs="+", default=list(DECODERS))
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="write substitution.md and substitution.json here",
    )
    args = parser.parse_args(argv)
    reports, texts = [], []
    for run_dir in args.runs:
        try:
            report = substitute(run_dir, args.stages, args.decoders)
        except (FileNotFoundError, ValueError) as err:
            print(f"bockparse-substitute: {err}", file=sys.stderr)
            return 1
        if report["condition"] != "local-ce" and not report["condition"].startswith("local-ce"):
            print(
                f"bockparse-substitute: note: {run_dir} is a {report['condition']} run; the "
                "paper substitutes decoders in local-CE models",
                file=sys.stderr,
            )
        reports.append(report)
        texts.append(to_markdown(report))
    text = "\n".join(texts)
    print(text, end="")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "substitution.md").write_text(text, encoding="utf-8")
        (out / "substitution.json").write_text(
            json.dumps(reports, indent=2) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
