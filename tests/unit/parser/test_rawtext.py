"""Raw text through spaCy (issue 52): the ``bockparse`` pipeline component on English and Chinese
paragraphs, offline (``spacy.blank`` and the rule-based sentencizer), and
``bockparse-predict MODEL --text ... --svg FILE``. spaCy is the ``spacy`` extra, which
``make install`` installs: these tests skip only where it is absent."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

spacy = pytest.importorskip(
    "spacy", reason="spaCy is not installed: pip install 'bockparse[spacy]' (make install does)"
)

from bockparse import rawtext  # noqa: E402  (needs spaCy)
from bockparse.cli.parser import predict as predict_cli  # noqa: E402
from bockparse.data import read_conllu  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
NOTAGS = "model=biaffine-notags"
ENGLISH = (
    "The committee met on Tuesday.  It approved the budget, which had been\n"
    "delayed for weeks!\n\nMembers left early. Was it worth it?"
)
CHINESE = "今天天气很好。我们去公园散步，看见了很多人！你想一起去吗？"


@pytest.fixture(scope="module")
def model_file(untrained, tmp_path_factory) -> Path:
    """A tiny model that reads words only (random weights), exported to a model file."""
    path = tmp_path_factory.mktemp("notags") / "model.pt"
    untrained(NOTAGS).save(path)
    return path


@pytest.fixture(scope="module")
def tagged_file(untrained, tmp_path_factory) -> Path:
    """The same with UPOS, XPOS and FEATS inputs."""
    path = tmp_path_factory.mktemp("tagged") / "model.pt"
    untrained().save(path)
    return path


def _nlp(lang: str, model: Path):
    nlp = rawtext.language(lang)
    nlp.add_pipe("bockparse", config={"model": str(model)})
    return nlp


@pytest.mark.parametrize(("lang", "text"), [("en", ENGLISH), ("zh", CHINESE)], ids=["en", "zh"])
def test_the_component_parses_a_raw_paragraph_sentence_by_sentence(lang, text, model_file):
    split = rawtext.language(lang)(text)  # the sentencizer alone
    doc = _nlp(lang, model_file)(text)
    assert [s.text for s in doc.sents] == [s.text for s in split.sents]
    assert len(list(doc.sents)) >= 3
    words = [[t.text for t in s if not t.is_space] for s in doc.sents]
    parser = rawtext.Parser.load(model_file)
    expected = parser.predict([w for w in words if w])
    relations = set(parser.relations)
    for sent, tree in zip([s for s in doc.sents if any(not t.is_space for t in s)], expected,
                          strict=True):  # fmt: skip
        tokens = [t for t in sent if not t.is_space]
        roots = [t for t in tokens if t.head.i == t.i]
        assert len(roots) == 1 and roots[0].dep_ in relations  # ROOT's head is itself
        for token, head, rel in zip(tokens, tree.heads, tree.rels, strict=True):
            assert sent.start <= token.head.i < sent.end
            assert (token.head.i, token.dep_) == (
                (tokens[head - 1].i, rel) if head else (token.i, rel)
            )
        for token in sent:
            if token.is_space:  # attached to a word of its sentence, never parsed
                assert token.dep_ == rawtext.WHITESPACE_RELATION and not token.head.is_space
    if lang == "en":
        assert any(t.is_space for t in doc)  # the paragraph break and the double space
    else:
        assert [t.text for t in doc][:2] == ["今", "天"] or "jieba" in sys.modules
    assert list(_nlp(lang, model_file).pipe([text, text]))[1].to_json() == doc.to_json()


def test_chinese_in_characters_gets_a_warning(monkeypatch, caplog, model_file):
    monkeypatch.setitem(sys.modules, "jieba", None)  # import jieba raises ImportError
    with caplog.at_level("WARNING", logger="bockparse.rawtext"):
        nlp = _nlp("zh", model_file)
    assert [t.text for t in nlp("今天下雨")] == ["今", "天", "下", "雨"]
    assert "single characters" in caplog.text and "pip install jieba" in caplog.text
    caplog.clear()
    import spacy

    with caplog.at_level("WARNING", logger="bockparse.rawtext"):
        spacy.blank("zh").add_pipe("bockparse", config={"model": str(model_file)})  # Python path
        assert len(caplog.records) == 1
        _nlp("en", model_file)
    assert len(caplog.records) == 1


def test_a_model_that_reads_tags_is_refused_and_so_is_a_doc_without_sentences(
    model_file, tagged_file
):
    nlp = rawtext.language("en")
    with pytest.raises(rawtext.NeedsTags) as refused:
        nlp.add_pipe("bockparse", config={"model": str(tagged_file)})
    assert str(refused.value) == (
        "the model reads UPOS, XPOS, FEATS (model.context.use_upos: true, "
        "model.context.use_xpos: true, model.context.use_feats: true), which spaCy's tokens do "
        "not have: parse raw text with a model that tags its input or reads words only: trained "
        "with a joint tagger (bockparse-train model=biaffine-tagger ..., or +model/tagger=mlp "
        "with any model) or without tag inputs (model=biaffine-notags, or model/context=notags "
        "with any model)"
    )
    bare = spacy.blank("en")  # no sentence splitter
    bare.add_pipe("bockparse", config={"model": str(model_file)})
    with pytest.raises(ValueError, match=r"add a sentence splitter before it"):
        bare("No sentences here.")


def _entry_point() -> importlib.metadata.EntryPoint:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [(name, value)] = declared["project"]["entry-points"]["spacy_factories"].items()
    return importlib.metadata.EntryPoint(name, value, "spacy_factories")


def test_the_spacy_factories_entry_point_names_the_factory():
    point = _entry_point()
    assert point.name == "bockparse" and point.load() is rawtext.make_bockparse
    assert spacy.util.registry._entry_point_factories.entry_point_namespace == point.group


@pytest.mark.slow  # a fresh interpreter importing spaCy and torch: about 20 s on a busy CPU
def test_spacy_finds_the_component_through_the_entry_point_alone(model_file, tmp_path):
    """spaCy finds the factory through an installed distribution's metadata alone, without
    bockparse.rawtext imported first (the metadata pip writes from pyproject)."""
    point = _entry_point()
    name, value = point.name, point.value
    dist = tmp_path / "site" / "bockparse_entry_point_probe-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: bockparse-entry-point-probe\nVersion: 0\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(f"[{point.group}]\n{name} = {value}\n", "utf-8")
    probe = (
        "import sys, spacy\n"
        "nlp = spacy.blank('en'); nlp.add_pipe('sentencizer')\n"
        f"nlp.add_pipe('bockparse', config={{'model': {str(model_file)!r}}})\n"
        "doc = nlp('Dogs bark. Cats sleep.')\n"
        "print(sum(t.head.i == t.i for t in doc), 'bockparse.rawtext' in sys.modules)\n"
    )
    path = os.pathsep.join([str(dist.parent), str(REPO / "src"), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": path}, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["2", "True"]


def test_cli_text_writes_conllu_and_svg(model_file, tmp_path, monkeypatch, capsys):
    out, drawing = tmp_path / "out.conllu", tmp_path / "out.svg"
    args = [str(model_file), "--text", ENGLISH, "--out", str(out), "--svg", str(drawing)]
    assert predict_cli(args) == 0
    assert "4 sentences, 27 words -> " in capsys.readouterr().out
    sentences = read_conllu(out, single_root=True, on_malformed="error")
    doc = _nlp("en", model_file)(ENGLISH)
    assert [s.forms for s in sentences] == [
        [t.text for t in s if not t.is_space] for s in doc.sents
    ]
    assert [(s.heads, s.rels) for s in sentences] == [
        (p.heads, p.rels) for p in rawtext.parsed_sentences(doc)
    ]
    text = out.read_text(encoding="utf-8")
    assert "# sent_id = 1\n# text = The committee met on Tuesday.\n" in text
    assert "# text = It approved the budget, which had been delayed for weeks!\n" in text
    assert "\tTuesday\t_\t_\t_\t_\t" in text and "SpaceAfter=No" in text
    root = ET.fromstring(drawing.read_text(encoding="utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall("{http://www.w3.org/2000/svg}svg")) == len(sentences)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.conllu", "out.svg"]

    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(ENGLISH))
    assert predict_cli([str(model_file), "--text", "-"]) == 0  # standard input to output
    captured = capsys.readouterr()
    assert captured.out == text and "-> -" in captured.err

    for bad, message in (
        ([str(model_file), "--text", "x", "--svg", str(out), "--out", str(out)], "also --out"),
        ([str(model_file), "--text", "x", "--lang", "xx-no"], "--lang 'xx-no': spaCy has no"),
    ):
        assert predict_cli(bad) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    with pytest.raises(SystemExit):
        predict_cli([str(model_file), str(out), "--text", "x"])  # both inputs
    capsys.readouterr()


def test_cli_text_with_a_tagger_model_writes_its_tags(tagger_file, tmp_path, capsys):
    out = tmp_path / "out.conllu"
    assert predict_cli([str(tagger_file), "--text", ENGLISH, "--out", str(out)]) == 0
    capsys.readouterr()
    sentences = read_conllu(out, single_root=True, on_malformed="error")
    doc = _nlp("en", tagger_file)(ENGLISH)
    assert [(s.upos, s.xpos, s.heads) for s in sentences] == [
        (p.upos, p.xpos, p.heads) for p in rawtext.parsed_sentences(doc)]  # fmt: skip
    assert any(u != "_" for s in sentences for u in s.upos)


def test_cli_text_with_a_model_that_reads_tags_is_one_line(tagged_file, tmp_path, capsys):
    out = tmp_path / "out.conllu"
    assert predict_cli([str(tagged_file), "--text", "Dogs bark.", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bockparse-predict: the model reads UPOS")
    assert not out.exists()


def test_relation_labels_and_tags_are_escaped_in_the_drawing():
    sentence = rawtext.ParsedSentence(["a", "<b>"], ["X<i>", "_"], ["_", "_"], ["_", "_"],
                                      [0, 1], ["root", "x<script>"], [True, False])  # fmt: skip
    drawing = rawtext.svg([sentence])
    assert "<script>" not in drawing and "x&lt;script&gt;" in drawing and "&lt;b&gt;" in drawing
    assert "<i>" not in drawing and "X&lt;i&gt;" in drawing
    ET.fromstring(drawing)


@pytest.fixture(scope="module")
def tagger_file(untrained, tmp_path_factory) -> Path:
    """A tiny model with a joint tagger whose UPOS, XPOS and FEATS it reads (random weights)."""
    path = tmp_path_factory.mktemp("tagger") / "model.pt"
    untrained("model=biaffine-tagger").save(path)
    return path


@pytest.mark.parametrize(("lang", "text"), [("en", ENGLISH), ("zh", CHINESE)], ids=["en", "zh"])
def test_the_component_sets_the_taggers_tags(lang, text, tagger_file):
    from spacy.parts_of_speech import IDS

    doc = _nlp(lang, tagger_file)(text)
    sentences = [s for s in doc.sents if any(not t.is_space for t in s)]
    parser = rawtext.Parser.load(tagger_file)
    expected = parser.predict([[t.text for t in s if not t.is_space] for s in sentences])
    tagged = 0
    for sent, tree in zip(sentences, expected, strict=True):
        tokens = [t for t in sent if not t.is_space]
        for token, upos, xpos, feats in zip(tokens, tree.upos, tree.xpos, tree.feats,
                                            strict=True):  # fmt: skip
            assert token.pos_ == (upos if upos in IDS else "")
            assert token.tag_ == ("" if xpos == "_" else xpos)
            # spaCy keeps the features, in its own order
            assert token.morph.to_dict() == dict(f.split("=", 1) for f in feats.split("|")
                                                 if f != "_")  # fmt: skip
            tagged += token.pos_ != ""
        heads = [0 if t.head.i == t.i else tokens.index(t.head) + 1 for t in tokens]
        assert heads == tree.heads
    assert tagged > 0 and doc.has_annotation("TAG")
    for token in doc:
        if token.is_space:
            assert token.tag_ == "" and str(token.morph) == ""
    parsed = rawtext.parsed_sentences(doc)
    assert [p.upos for p in parsed] == [[t.pos_ or "_" for t in s if not t.is_space]
                                        for s in sentences]  # fmt: skip
    assert [p.feats for p in parsed] == [tree.feats for tree in expected]  # UD's order again
    conllu = rawtext.conllu(parsed)
    first = parsed[0]
    line = ["1", first.forms[0], "_", first.upos[0], first.xpos[0], first.feats[0]]
    assert "\t".join(line) in conllu
