"""Metrics against hand-computed values and against the CoNLL 2018 evaluator (udtools)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from bockparse.data import read_conllu
from bockparse.data.conllu import DataError
from bockparse.metrics import (
    AttachmentScores,
    evaluate_files,
    main,
    rates,
    scored_words,
    sentence_counts,
)

SAMPLE = Path(__file__).resolve().parents[3] / "data/ud-english-ewt-sample/en_ewt-ud-dev.conllu"


def perturb(path: Path, out: Path, seed: int) -> None:
    """Copy a CoNLL-U file, moving some words to other heads (keeping valid single-root trees)
    and changing some relations (some only in their subtype, which LAS ignores)."""
    rng = random.Random(seed)
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    result = []
    for block in blocks:
        lines = block.split("\n")
        rows = [i for i, line in enumerate(lines) if line.split("\t")[0].isdigit()]
        cols = [lines[i].split("\t") for i in rows]
        heads = [0] + [int(c[6]) for c in cols]
        for d in range(1, len(heads)):
            if heads[d] != 0 and rng.random() < 0.15:
                options = []
                for h in range(1, len(heads)):
                    v = h
                    while v not in (0, d):
                        v = heads[v]
                    if v == 0:  # h is not d nor below it: no cycle
                        options.append(h)
                heads[d] = rng.choice(options)
        for d, c in enumerate(cols, 1):
            c[6] = str(heads[d])
            if rng.random() < 0.1:
                c[7] = rng.choice(["nsubj", "obj", "nmod:poss", "punct", "obl:tmod"])
            elif ":" in c[7] and rng.random() < 0.3:
                c[7] = c[7].split(":")[0]
        for i, c in zip(rows, cols, strict=True):
            lines[i] = "\t".join(c)
        result.append("\n".join(lines))
    out.write_text("\n\n".join(result), encoding="utf-8")


@pytest.mark.parametrize("seed", [0, 1])
def test_equals_the_conll_2018_evaluator(tmp_path, seed):
    udeval = pytest.importorskip("udtools.udeval")
    pred = tmp_path / "pred.conllu"
    perturb(SAMPLE, pred, seed)
    ours = evaluate_files(str(SAMPLE), str(pred))
    theirs = udeval.evaluate(
        udeval.load_conllu_file(str(SAMPLE)), udeval.load_conllu_file(str(pred))
    )
    assert ours["uas"] == pytest.approx(100 * theirs["UAS"].f1, abs=1e-9)
    assert ours["las"] == pytest.approx(100 * theirs["LAS"].f1, abs=1e-9)
    assert 50 < ours["las"] < ours["uas"] < 100


def test_hand_computed_counts():
    [sentence] = read_conllu(SAMPLE, single_root=True, on_malformed="error")[:1]
    n = len(sentence)
    heads = list(sentence.heads)
    rels = list(sentence.rels)
    everything = np.ones(n, dtype=bool)
    assert sentence_counts(sentence, heads, rels, everything).tolist() == [n, n, n, 1, 1]
    heads[0] = (heads[0] + 1) % (n + 1)
    rels[1] = "xcomp" if rels[1] != "xcomp" else "ccomp"
    assert sentence_counts(sentence, heads, rels, everything).tolist() == [n, n - 1, n - 2, 1, 0]
    only_first = np.zeros(n, dtype=bool)
    only_first[1] = True
    assert sentence_counts(sentence, heads, rels, only_first).tolist() == [1, 1, 0, 1, 0]


def test_base_relations_and_punctuation():
    sentences = read_conllu(SAMPLE, single_root=True, on_malformed="error")
    s = next(s for s in sentences if any(":" in r for r in s.rels) and "PUNCT" in s.upos)
    rels = [r.split(":")[0] for r in s.rels]  # subtypes dropped: LAS unchanged
    n = len(s)
    assert sentence_counts(s, s.heads, rels, scored_words(s, None)).tolist() == [n, n, n, 1, 1]
    scored = scored_words(s, "upos")
    assert scored.sum() == sum(u != "PUNCT" for u in s.upos)
    with pytest.raises(ValueError, match="unknown punctuation exclusion"):
        scored_words(s, "commas")


def test_metric_sums_counts_and_resets():
    metric = AttachmentScores()
    metric.update(np.array([10, 9, 8, 1, 0]))
    metric.update(torch.tensor([5, 5, 5, 1, 1]))
    assert metric.compute() == pytest.approx({"uas": 1400 / 15, "las": 1300 / 15, "lcm": 50.0})
    metric.reset()
    assert metric.counts.sum() == 0
    assert rates(np.array([4, 3, 2, 2, 1])) == {"uas": 75.0, "las": 50.0, "lcm": 50.0}


def test_eval_cli(tmp_path, capsys):
    pred = tmp_path / "pred.conllu"
    perturb(SAMPLE, pred, 3)
    assert main([str(SAMPLE), str(pred)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("UAS ") and " LAS " in out and " LCM " in out
    assert main([str(SAMPLE), str(pred), "--exclude-punct", "upos"]) == 0
    assert main([str(SAMPLE), str(SAMPLE)]) == 0
    assert "UAS 100.00  LAS 100.00  LCM 100.00" in capsys.readouterr().out
    short = tmp_path / "short.conllu"
    short.write_text(SAMPLE.read_text(encoding="utf-8").split("\n\n", 1)[1], encoding="utf-8")
    assert main([str(SAMPLE), str(short)]) == 1
    assert "sentences, but" in capsys.readouterr().err
    with pytest.raises(DataError):
        evaluate_files(str(SAMPLE), str(tmp_path / "missing.conllu"))
