"""``bockparse-substitute``: decoder substitution on identical scores (the Bock paper, §5).

From a trained model (the paper: the local-CE models, one per seed) the development and test
score matrices are computed once; every decoder then decodes the same float32 matrices under
the single-root constraint, and relation labels are read at the predicted heads (the best
relation of each arc, as in prediction). Reported per pair of decoders: the sentences with
identical heads, identical full relation labels and identical tree scores (the float64 sum of
the decoded matrix's arc scores, compared exactly), and per decoder UAS/LAS/LCM. The paper
finds CL/E, original Bock and reformulated Bock identical on every PTB development and test
sentence.

Which matrices: the scorer's arc scores (``raw``), or their log-softmax over heads per dependent
(``log-softmax``), which is what Stanza's parser hands its CL/E at prediction time; the two have
the same optimal trees (a column shift adds one constant to every tree's score), and
``stanza-cle``'s single-root shift needs the second. ``auto``: log-softmax when ``stanza-cle``
is compared, raw otherwise. Tree scores are sums over the matrices the decoders saw.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.vocab import base_relation_ids
from ..decoders import get_decoder, tree_score
from ..losses.common import normalized_arc_scores
from ..metrics import COUNTS, batch_counts, check_punct_exclusion, rates
from ..predict import predict_trees, sentence_rows
from ..rundir import RunDir, write_atomic
from .loading import LoadedRun, load_run, scored_batches

SUBSTITUTED = ("cle", "bock-original", "bock", "tarjan")
OPTIONAL_DECODERS = ("stanza-cle",)  # compared when registered (Stanza's own CL/E)
STAGES = ("val", "test")
SCORES = ("auto", "raw", "log-softmax")

log = logging.getLogger("bockparse.substitute")


def default_decoders() -> list[str]:
    """:data:`SUBSTITUTED`, then each of :data:`OPTIONAL_DECODERS` that is registered (a missing
    one is skipped with the reason logged)."""
    names = list(SUBSTITUTED)
    for name in OPTIONAL_DECODERS:
        try:
            get_decoder(name)
        except ValueError as err:
            log.warning("decoder %s left out of the comparison: %s", name, err)
            continue
        names.append(name)
    return names


def scores_for(decoders: Sequence[str], scores: str = "auto") -> str:
    """The matrices decoded: ``raw`` or ``log-softmax`` (``auto``: the second when
    ``stanza-cle`` is among ``decoders``, as Stanza decodes log-probabilities)."""
    if scores not in SCORES:
        raise ValueError(f"scores must be one of {', '.join(SCORES)}, got {scores!r}")
    if scores == "auto":
        return "log-softmax" if "stanza-cle" in decoders else "raw"
    return scores


def compare(
    run: LoadedRun, stage: str, decoders: Sequence[str], scores: str = "raw"
) -> dict[str, Any]:
    """Decode one split's fixed scores with every decoder and compare the results.

    Each batch is scored once; every decoder then predicts it through
    :func:`bockparse.predict.predict_trees` (single root, relations at the predicted heads),
    and the counts come from the batch (:func:`bockparse.metrics.batch_counts`).

    Args:
        run: a loaded run.
        stage: ``"val"`` or ``"test"``.
        decoders: registry names, compared pairwise in this order.
        scores: ``"raw"`` (the scorer's arc scores) or ``"log-softmax"`` (over heads, per
            dependent: :func:`bockparse.losses.common.normalized_arc_scores`).

    Returns:
        ``{"sentences", "scores": {decoder: {uas, las, lcm, counts}}, "pairs": [{a, b,
        heads, labels, tree_scores, max_score_difference}], "reproduced": {...}}``, counts
        of sentences (shares in ``pairs`` as fractions).

    Raises:
        ValueError: an unknown decoder, or the run's punctuation exclusion is not the data's.
    """
    for name in decoders:
        get_decoder(name)
    exclude = run.cfg.get("exclude_punct")
    if exclude is not None:
        data = run.cfg.data
        check_punct_exclusion(exclude, data.punct_field, data.punct_tags)
    base_of = torch.tensor(base_relation_ids(run.relations)[1], dtype=torch.long)
    # per decoder, sentence id -> int64 [n + 1] heads and relation ids (-1 at ROOT)
    heads: dict[str, dict[int, np.ndarray]] = {d: {} for d in decoders}
    labels: dict[str, dict[int, np.ndarray]] = {d: {} for d in decoders}
    values: dict[str, dict[int, float]] = {d: {} for d in decoders}
    counts = {d: np.zeros(len(COUNTS), dtype=np.int64) for d in decoders}
    order: list[int] = []
    if scores not in ("raw", "log-softmax"):
        raise ValueError(f"scores must be 'raw' or 'log-softmax', got {scores!r}")
    for batch, scored in scored_batches(run, stage):
        if scores == "log-softmax":
            scored = scored.with_arc(normalized_arc_scores(scored.arc, batch.mask))
        order += batch.sentence_ids.tolist()
        arc = scored.arc.detach().float().cpu().numpy()  # [B, M, M], what the decoders see
        for name in decoders:
            h, r = predict_trees(scored, batch.lengths, name)
            found = batch_counts(h, r, batch, base_of.to(r.device), exclude is not None)
            counts[name] += found.cpu().numpy()
            h, r = h.cpu().numpy(), r.cpu().numpy()
            for sid, head_row, rel_row, arc_rows in sentence_rows(batch, h, r, arc):
                heads[name][sid], labels[name][sid] = head_row, rel_row
                values[name][sid] = tree_score(arc_rows, head_row)
    total = len(order)
    pairs = []
    for a, b in itertools.combinations(decoders, 2):
        same_heads = sum(np.array_equal(heads[a][i], heads[b][i]) for i in order)
        same_labels = sum(np.array_equal(labels[a][i], labels[b][i]) for i in order)
        same_scores = sum(values[a][i] == values[b][i] for i in order)
        gap = max((abs(values[a][i] - values[b][i]) for i in order), default=0.0)
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
    path = RunDir(run.path).predictions(stage)
    if decoder not in heads or not path.is_file():
        return None
    saved = read_conllu(path, single_root=False, on_malformed="error", skip_option=None)
    itos = run.relations
    same = 0
    for index in order:
        pred = saved[index]
        rels = [itos[r] for r in labels[decoder][index][1:]]
        same += list(heads[decoder][index][1:]) == list(pred.heads) and rels == list(pred.rels)
    return {"decoder": decoder, "file": str(path), "sentences": len(order), "identical": same}


def substitute(
    run_dir: str | Path,
    stages: Sequence[str] = STAGES,
    decoders: Sequence[str] | None = None,
    scores: str = "auto",
) -> dict[str, Any]:
    """:func:`compare` on each split of a run folder (``decoders``: :func:`default_decoders`
    when ``None``; ``scores``: as :func:`scores_for`)."""
    decoders = default_decoders() if decoders is None else list(decoders)
    scores = scores_for(decoders, scores)
    run = load_run(run_dir)
    return {
        "run": str(run_dir),
        "condition": run.cfg.name,
        "decoder": run.cfg.decoder,
        "seed": run.cfg.seed,
        "single_root": True,
        "scores": scores,
        "stages": {stage: compare(run, stage, decoders, scores) for stage in stages},
    }


def to_markdown(report: dict[str, Any]) -> str:
    """The pairwise identity table and the per-decoder scores of every split."""
    lines = [
        f"Decoder substitution on {report['run']} (condition {report['condition']}, "
        f"seed {report['seed']}): identical score matrices "
        f"({report.get('scores', 'raw')} arc scores), single root."
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


def write_reports(reports: Sequence[dict[str, Any]], text: str, out: str | Path) -> None:
    """Write the printed report ``text`` as ``substitution.md`` and the ``reports`` of
    :func:`substitute` as ``substitution.json`` into the folder ``out`` (made if missing),
    atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "substitution.md", text)
    write_atomic(out / "substitution.json", json.dumps(reports, indent=2) + "\n")
