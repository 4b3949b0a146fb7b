"""A parser with a joint tagger (issue 52) needs words alone: it tags and parses word lists and
tagless files, reads the input's tags only where asked (``tags``), writes its tags only where
asked (``write_tags``, ``--write-tags``), keeps its tagger in model files, and its training run's
tag scores are the CoNLL 2018 evaluator's."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from bockparse.cli.parser import evaluate as evaluate_cli
from bockparse.cli.parser import predict as predict_cli
from bockparse.data import DataError, read_conllu, write_conllu
from bockparse.metrics import evaluate_files
from bockparse.model.biaffine import DeepBiaffine
from bockparse.modelfile import ModelError
from bockparse.parser import Parser

REPO = Path(__file__).resolve().parents[3]
TEST = REPO / "data" / "ud-english-ewt-sample" / "en_ewt-ud-test.conllu"
TAGGER = "model=biaffine-tagger"
FIELDS = ("upos", "xpos", "feats")


@pytest.fixture(scope="module")
def tagger(untrained) -> Parser:
    """An untrained parser with a tagger whose tags it reads, every weight random (the
    biaffines' too: all-zero ones would hide how the trees depend on the inputs)."""
    torch.manual_seed(0)
    parser = untrained(TAGGER)
    for module in parser.scorer.modules():
        if isinstance(module, DeepBiaffine):
            torch.nn.init.normal_(module.weight, std=0.5)
    return parser


@pytest.fixture(scope="module")
def model_file(tagger, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tagger") / "model.pt"
    tagger.save(path)
    return path


@pytest.fixture(scope="module")
def sample() -> list:
    return read_conllu(TEST, single_root=True, on_malformed="error")[:40]


def assert_tree(sentence) -> None:
    """One word on ROOT, and every word reaches it."""
    n, heads = len(sentence), sentence.heads
    assert len(heads) == n and sum(h == 0 for h in heads) == 1
    for d in range(1, n + 1):
        h, steps = d, 0
        while h != 0:
            h, steps = heads[h - 1], steps + 1
            assert 0 <= h <= n and steps <= n


def _plain(tagger: Parser, untrained) -> Parser:
    """The same parser without its tagger (the same weights otherwise)."""
    plain = untrained("model=biaffine")
    state = {k: v for k, v in tagger.scorer.state_dict().items() if not k.startswith("tagger.")}
    plain.scorer.load_state_dict(state)
    return plain


def _without_tags(source: Path, target: Path) -> None:
    """``source`` with UPOS, XPOS and FEATS ``_`` on every word line."""
    lines = []
    for line in source.read_text(encoding="utf-8").split("\n"):
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            cols[3] = cols[4] = cols[5] = "_"
        lines.append("\t".join(cols))
    target.write_text("\n".join(lines), encoding="utf-8")


def test_a_loaded_tagger_model_parses_and_tags_a_word_list(model_file, tagger):
    loaded = Parser.load(model_file)
    assert loaded.tag_fields == list(FIELDS) and loaded.scorer.tagger is not None
    (parsed,) = loaded.predict([["I", "saw", "it", "."]])
    assert_tree(parsed)
    for field in FIELDS:
        values = getattr(parsed, field)
        known = set(getattr(loaded.vocabs, field).itos[3:])
        assert len(values) == 4 and set(values) <= known
    columns = [line.split("\t")[3:6] for line in parsed.lines]
    assert columns == [list(t) for t in zip(parsed.upos, parsed.xpos, parsed.feats, strict=True)]
    # the model file holds the tagger: the same trees and tags as the parser it was saved from
    (before,) = tagger.predict([["I", "saw", "it", "."]])
    assert parsed == before
    # without asking, a word list's placeholders stay; asked, they are written
    (kept,) = loaded.predict([["I", "saw", "it", "."]], write_tags=False)
    assert kept.upos == ["_"] * 4 and kept.heads == parsed.heads


def test_tags_come_from_the_tagger_where_the_input_lacks_them(tagger, untrained, sample, tmp_path):
    words = [s.forms for s in sample]
    from_words = tagger.predict(words)  # every tag predicted and written
    # a file without tags: the same trees; its columns kept unless asked
    gold = tmp_path / "gold.conllu"
    write_conllu(gold, sample)
    bare = tmp_path / "bare.conllu"
    _without_tags(gold, bare)
    kept = tagger.predict(bare)
    assert [s.heads for s in kept] == [s.heads for s in from_words]
    assert all(set(s.upos) == {"_"} for s in kept)
    written = tagger.predict(bare, write_tags=True)
    for got, want in zip(written, from_words, strict=True):
        assert [getattr(got, f) for f in FIELDS] == [getattr(want, f) for f in FIELDS]
    # tags="predicted": the input's tags are not read (other tags, the same trees and tags)
    predicted = tagger.predict(gold, tags="predicted", write_tags=True)
    assert [(s.heads, s.rels, s.upos) for s in predicted] == [
        (s.heads, s.rels, s.upos) for s in from_words]  # fmt: skip
    assert [s.upos for s in predicted] != [s.upos for s in sample]  # an untrained tagger errs
    # tags="auto" with the input's tags: read as a model without a tagger reads them
    auto = tagger.predict(gold)
    plain = _plain(tagger, untrained).predict(gold)
    assert [(s.heads, s.rels) for s in auto] == [(s.heads, s.rels) for s in plain]
    assert [(s.heads, s.rels) for s in auto] != [(s.heads, s.rels) for s in predicted]
    assert [s.lines for s in auto] == [s.lines for s in plain]  # the input's tags kept


def test_write_tags_on_the_command_line_and_every_other_byte_kept(model_file, sample, tmp_path):
    gold = tmp_path / "gold.conllu"
    write_conllu(gold, sample)
    plain, tagged = tmp_path / "plain.conllu", tmp_path / "tagged.conllu"
    assert predict_cli([str(model_file), str(gold), "--out", str(plain)]) == 0
    assert predict_cli([str(model_file), str(gold), "--out", str(tagged), "--write-tags",
                        "--tags", "predicted"]) == 0  # fmt: skip
    given = gold.read_text(encoding="utf-8").split("\n")
    changed = 0
    for g, p, t in zip(given, plain.read_text().split("\n"), tagged.read_text().split("\n"),
                       strict=True):  # fmt: skip
        g, p, t = g.split("\t"), p.split("\t"), t.split("\t")
        if len(g) == 10 and g[0].isdigit():
            assert p[:6] + p[8:] == g[:6] + g[8:]  # only HEAD and DEPREL replaced
            assert t[:3] + t[8:] == g[:3] + g[8:]  # and the tags, with --write-tags
            changed += t[3:6] != g[3:6]
        else:
            assert p == g == t
    assert changed > 0
    loaded = Parser.load(model_file)
    expected = loaded.predict(gold, tags="predicted", write_tags=True)
    assert read_conllu(tagged, single_root=True, on_malformed="error") == [
        replace(s, problems=[]) for s in expected
    ]


def test_the_tag_options_and_their_errors(untrained, tagger, capsys):
    no_tagger = untrained()
    words = [["Dogs", "bark", "."]]
    with pytest.raises(ValueError, match="tags='predicted': this model has no tagger"):
        no_tagger.predict([{"forms": ["a"], "upos": ["X"], "xpos": ["X"], "feats": ["A=B"]}],
                          tags="predicted")  # fmt: skip
    with pytest.raises(ValueError, match="tags='gold': give one of auto, predicted"):
        tagger.predict(words, tags="gold")
    with pytest.raises(DataError, match=r"or use a model that tags its input or reads words "
                                        r"only: trained with a joint tagger \(bockparse-train "
                                        r"model=biaffine-tagger"):  # fmt: skip
        no_tagger.predict(words)
    with pytest.raises(SystemExit) as usage:
        predict_cli(["m.pt", "--text", "x", "--write-tags"])
    assert usage.value.code == 2
    assert "--tags and --write-tags are for a CoNLL-U INPUT" in capsys.readouterr().err
    # a model without tag inputs and a tagger tags too
    (parsed,) = untrained("model=biaffine-notags-tagger").predict(words)
    assert_tree(parsed) and "_" not in parsed.upos


def test_a_model_file_whose_tagger_does_not_fit_is_refused(tagger, tmp_path):
    path = tmp_path / "model.pt"
    tagger.save(path)
    content = torch.load(path, weights_only=True)
    meta = json.loads(content["config"])
    meta["settings"]["model"]["params"].pop("tagger")
    torch.save({**content, "config": json.dumps(meta)}, tmp_path / "untagged.pt")
    with pytest.raises(ModelError, match=r"holds an unexpected tensor 'tagger\."):
        Parser.load(tmp_path / "untagged.pt")
    meta["settings"]["model"]["params"]["tagger"] = {"upos": True, "xpos": True, "feats": True,
                                                     "hidden": 400, "loss_weight": 1.0,
                                                     "train_tags": "sometimes"}  # fmt: skip
    torch.save({**content, "config": json.dumps(meta)}, tmp_path / "bad.pt")
    with pytest.raises(ModelError, match=r"tagger: parameter 'train_tags' = 'sometimes'"):
        Parser.load(tmp_path / "bad.pt")


def test_a_trained_tagger_runs_tag_scores_are_the_evaluators(tagger_run, conll2018, tmp_path):
    metrics = json.loads((tagger_run / "metrics.json").read_text(encoding="utf-8"))
    rows = (tagger_run / "csv" / "metrics.csv").read_text(encoding="utf-8").splitlines()
    header, last = rows[0].split(","), rows[-1].split(",")
    logged = {k: float(v) for k, v in zip(header, last, strict=True) if v and "/" in k}
    predictions = tagger_run / "predictions" / "test.conllu"
    # the run's prediction file carries its tagger's tags: the evaluator's counts ...
    official = conll2018(TEST, predictions)
    from_file = evaluate_files(str(TEST), str(predictions))
    assert {k: from_file[k] for k in official} == official
    assert any(s.upos != g.upos for s, g in zip(read_conllu(predictions, single_root=True,
               on_malformed="error"), read_conllu(TEST, single_root=True, on_malformed="error"),
               strict=True))  # fmt: skip
    # ... which training logged, and which the loaded parser gives (with its trees)
    for name in ("upos", "xpos", "ufeats", "alltags", "las"):
        assert logged[f"test/{name}"] == pytest.approx(from_file[name], abs=1e-4), name
    result = Parser.load(tagger_run).evaluate(TEST)
    assert {k: result[k] for k in official} == official
    assert {k: result[k] for k in ("uas", "las", "lcm")} == {
        k: metrics[f"test/{k}"] for k in ("uas", "las", "lcm")}  # fmt: skip
    assert evaluate_cli([str(tagger_run), str(TEST)]) == 0
    # with the gold file's tags read instead: the same parser, other trees, tags 100 %
    gold_tags = Parser.load(tagger_run).evaluate(TEST, tags="auto")
    assert gold_tags["upos"] == gold_tags["alltags"] == 100.0
    assert gold_tags["words"] == result["words"]
    # punctuation left out: the evaluator's tag counts still
    excluded = Parser.load(tagger_run).evaluate(TEST, exclude_punct="upos")
    official = conll2018(TEST, predictions, "upos")
    assert {k: excluded[k] for k in official} == official


def test_the_predicted_tag_table_rows_a_run_by_the_tag_inputs_it_read(tagger_run, smoke_run):
    """``experiments/predicted-tags/table.py`` reads each run's tag inputs from its saved config:
    the tagger run (reads its own predicted tags) and the tag-free smoke run land in their rows,
    with the run's own test scores."""
    import importlib.util

    path = REPO / "experiments" / "predicted-tags" / "table.py"
    spec = importlib.util.spec_from_file_location("predicted_tags_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    metrics = json.loads((tagger_run / "metrics.json").read_text(encoding="utf-8"))
    lines = module.table([tagger_run, smoke_run]).splitlines()
    [tagged] = [line for line in lines if "predicted tags (joint tagger)" in line]
    assert "predicted tags in training" in tagged
    for key in ("test/upos", "test/las"):
        assert f"| {metrics[key]:.2f} |" in tagged, key
    [plain] = [line for line in lines if "no tag inputs" in line]
    assert "no tagger" in plain and "| — | — | — | — |" in plain
