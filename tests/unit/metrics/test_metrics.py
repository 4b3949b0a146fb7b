"""Metrics against hand-computed values and against the CoNLL 2018 evaluator (udtools)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from bockparse.attachment import AttachmentScores
from bockparse.cli.metrics import eval_files as main
from bockparse.data import Collator, ParserDataset, Vocabs, read_conllu
from bockparse.data.conllu import DataError
from bockparse.data.vocab import base_relation, base_relation_ids
from bockparse.metrics import (
    TAG_NAMES,
    attachment_counts,
    batch_counts,
    check_punct_exclusion,
    evaluate_files,
    is_punct,
    rates,
    sentence_counts,
    universal_feats,
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


@pytest.mark.parametrize("exclude", [None, "upos", "ptb"])
def test_tag_scores_equal_the_conll_2018_evaluator(tmp_path, conll2018, perturb_tags, exclude):
    """UPOS, XPOS, UFeats and AllTags count the words the evaluator counts, with and without
    punctuation, on trees and tags that are both partly wrong."""
    trees, pred = tmp_path / "trees.conllu", tmp_path / "pred.conllu"
    perturb(SAMPLE, trees, 4)
    perturb_tags(trees, pred, 7)
    ours = evaluate_files(str(SAMPLE), str(pred), exclude)
    theirs = conll2018(SAMPLE, pred, exclude)
    assert {name: ours[name] for name in theirs} == theirs
    for name in TAG_NAMES:
        assert ours[name] == 100 * theirs[f"right_{name}"] / theirs["words"]
    assert 50 < ours["alltags"] < min(ours["upos"], ours["xpos"], ours["ufeats"]) < 100
    if exclude is not None:
        assert ours["words"] < evaluate_files(str(SAMPLE), str(pred))["words"]


def test_ufeats_compares_the_universal_features_as_the_evaluator_does():
    assert universal_feats("_") == ""
    assert universal_feats("Typo=Yes|Number[psor]=Plur") == ""  # neither is universal
    assert universal_feats("Tense=Past|Typo=Yes|Case=Nom") == "Case=Nom|Tense=Past"
    assert universal_feats("Number=Sing|Case=Nom") == universal_feats("Case=Nom|Number=Sing")


def test_hand_computed_counts():
    [sentence] = read_conllu(SAMPLE, single_root=True, on_malformed="error")[:1]
    n = len(sentence)
    heads = list(sentence.heads)
    rels = list(sentence.rels)
    assert sentence_counts([sentence], [heads], [rels], None).tolist() == [n, n, n, 1, 1]
    heads[0] = (heads[0] + 1) % (n + 1)
    rels[1] = "xcomp" if rels[1] != "xcomp" else "ccomp"
    assert sentence_counts([sentence], [heads], [rels], None).tolist() == [n, n - 1, n - 2, 1, 0]


def test_attachment_counts_by_hand():
    # Two sentences, padded to N = 4: 3 words, then 2 words; ROOT at 0 and padding never count.
    gold_heads = torch.tensor([[-1, 2, 0, 2], [-1, 0, 1, -1]])
    gold_rels = torch.tensor([[-1, 0, 1, 2], [-1, 1, 3, -1]])
    mask = torch.tensor([[False, True, True, True], [False, True, True, False]])
    heads = torch.tensor([[5, 2, 0, 1], [7, 0, 1, 9]])  # one wrong head (word 3 of sentence 0)
    rels = torch.tensor([[5, 0, 2, 2], [5, 1, 3, 5]])  # one wrong label (word 2 of sentence 0)
    counts = attachment_counts(heads, rels, gold_heads, gold_rels, mask)
    assert counts.tolist() == [5, 4, 3, 2, 1]
    punct = torch.tensor([[False, False, True, True], [False, False, False, False]])
    # words 2 and 3 of sentence 0 left out: both sentences are complete
    assert attachment_counts(heads, rels, gold_heads, gold_rels, mask, punct).tolist() == [
        3, 3, 3, 2, 2
    ]  # fmt: skip
    everything = mask.clone()
    assert attachment_counts(heads, rels, gold_heads, gold_rels, mask, everything).tolist() == [
        0, 0, 0, 2, 2
    ]  # fmt: skip


def test_base_relations_and_punctuation():
    sentences = read_conllu(SAMPLE, single_root=True, on_malformed="error")
    s = next(s for s in sentences if any(":" in r for r in s.rels) and "PUNCT" in s.upos)
    rels = [r.split(":")[0] for r in s.rels]  # subtypes dropped: LAS unchanged
    n = len(s)
    assert sentence_counts([s], [s.heads], [rels], None).tolist() == [n, n, n, 1, 1]
    punct = is_punct(s, "upos")
    assert punct.sum() == sum(u == "PUNCT" for u in s.upos) > 0
    heads = [h if not p else (h % n) + 1 for h, p in zip(s.heads, punct, strict=True)]
    heads = [h if h != d else 0 for d, h in enumerate(heads, 1)]
    k = int(punct.sum())
    assert sentence_counts([s], [heads], [rels], None)[:3].tolist() == [n, n - k, n - k]
    assert sentence_counts([s], [heads], [rels], "upos").tolist() == [n - k, n - k, n - k, 1, 1]
    with pytest.raises(ValueError, match="unknown punctuation exclusion"):
        is_punct(s, "commas")
    with pytest.raises(ValueError, match="unknown punctuation exclusion"):
        sentence_counts([], [], [], "commas")


def test_punctuation_exclusion_must_be_the_datas():
    check_punct_exclusion(None, "xpos", ["X"])
    check_punct_exclusion("upos", "upos", ["PUNCT"])
    check_punct_exclusion("ptb", "xpos", [".", ",", ":", "''", "``"])
    with pytest.raises(
        ValueError, match="exclude_punct=ctb but the data marks punctuation as upos"
    ):
        check_punct_exclusion("ctb", "upos", ["PUNCT"])
    with pytest.raises(ValueError, match="no punctuation exclusion matches"):
        check_punct_exclusion("upos", "upos", ["PUNCT", "SYM"])


@pytest.mark.parametrize("exclude", [None, "upos"])
def test_batch_counts_equal_the_file_counts(tmp_path, exclude):
    """Counting from batch tensors gives the CoNLL 2018 counts of the same trees, also for
    relations whose subtype (``compound:prt``) or whole label never occurs in training."""
    gold = read_conllu(SAMPLE, single_root=True, on_malformed="error")
    train = [s for s in gold[:150] if not any(r in ("compound:prt", "iobj") for r in s.rels)]
    vocabs = Vocabs.build(train, min_word_freq=1)
    dataset = ParserDataset(gold, vocabs, max_word_chars=4, punct_field="upos",
                            punct_tags=["PUNCT"])  # fmt: skip
    unseen = [r for s in gold for r in s.rels if r not in vocabs.rels.stoi]
    assert "compound:prt" in unseen and "iobj" in unseen
    pred_path = tmp_path / "pred.conllu"
    perturb(SAMPLE, pred_path, 5)
    pred = read_conllu(pred_path, single_root=False, on_malformed="error")
    itos = vocabs.rels.itos
    # predicted labels are training relations: an unseen one becomes a label of the same base
    # (``compound:prt`` -> ``compound``, right by LAS) or, with none, the first label (wrong)
    same_base = {base_relation(r): r for r in reversed(itos)}
    labels = [
        [r if r in vocabs.rels.stoi else same_base.get(base_relation(r), itos[0]) for r in p.rels]
        for p in pred
    ]
    base_of = torch.tensor(base_relation_ids(itos)[1])
    collate = Collator(dataset)
    total = torch.zeros(5, dtype=torch.long)
    for start in range(0, len(gold), 64):
        ids = list(range(start, min(start + 64, len(gold))))
        batch = collate(ids)
        heads = torch.full(batch.heads.shape, -1)
        rels = torch.full(batch.heads.shape, -1)
        for b, i in enumerate(ids):
            n = len(gold[i])
            heads[b, 1 : n + 1] = torch.tensor(pred[i].heads)
            rels[b, 1 : n + 1] = torch.tensor(vocabs.rels.lookup(labels[i]))
        total += batch_counts(heads, rels, batch, base_of, exclude is not None)
    expected = sentence_counts(gold, [p.heads for p in pred], labels, exclude)
    assert total.tolist() == expected.tolist()
    assert total[1] > total[2] > 0  # some labels wrong, some right
    assert dataset.base_rels[dataset.rels == -1].max() >= 0  # an unseen label of a seen base


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
    out = capsys.readouterr().out
    assert "UAS 100.00  LAS 100.00  LCM 100.00" in out
    assert out.splitlines()[2] == "UPOS 100.00  XPOS 100.00  UFeats 100.00  AllTags 100.00"
    short = tmp_path / "short.conllu"
    short.write_text(SAMPLE.read_text(encoding="utf-8").split("\n\n", 1)[1], encoding="utf-8")
    assert main([str(SAMPLE), str(short)]) == 1
    assert "sentences, but" in capsys.readouterr().err
    with pytest.raises(DataError):
        evaluate_files(str(SAMPLE), str(tmp_path / "missing.conllu"))


def test_eval_gives_no_advice_the_command_cannot_follow(tmp_path, capsys):
    """A malformed file: fix it; ``data.on_malformed=skip`` is a training setting that
    bockparse-eval does not take."""
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tword\n\n", encoding="utf-8")  # two columns
    for args in ([str(bad), str(SAMPLE)], [str(SAMPLE), str(bad)]):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"bockparse-eval: {bad}: 1 problem(s) (fix the file):")
        assert "on_malformed" not in err


def test_eval_names_the_first_differing_word(tmp_path, capsys):
    gold = tmp_path / "gold.conllu"
    gold.write_text(
        "# text = a b c\n1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n2\tb\t_\tX\t_\t_\t1\tdep\t_\t_\n"
        "3\tc\t_\tX\t_\t_\t1\tdep\t_\t_\n\n",
        encoding="utf-8",
    )
    other = tmp_path / "pred.conllu"
    other.write_text(gold.read_text(encoding="utf-8").replace("\tb\t", "\tB\t"), encoding="utf-8")
    assert main([str(gold), str(other)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"bockparse-eval: {other}:3: word 2 is 'B' but {gold}:3 has 'b': the words differ"
    )
    shorter = tmp_path / "short.conllu"
    lines = gold.read_text(encoding="utf-8").splitlines()
    shorter.write_text("\n".join(lines[:3]) + "\n\n", encoding="utf-8")
    assert main([str(gold), str(shorter)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"bockparse-eval: {gold}:4: word 3 'c' has no counterpart in {shorter} (sentence of 2 "
        f"words in {shorter}, 3 in {gold})"
    )
