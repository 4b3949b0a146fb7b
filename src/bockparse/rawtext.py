"""Raw text through spaCy (``pip install 'bockparse[spacy]'``): spaCy's tokenizer and rule-based
sentence splitter give the words, a trained parser gives the trees.

The ``bockparse`` pipeline component (registered by importing this module, or through the
``spacy_factories`` entry point of an installed bockparse)::

    nlp = spacy.blank("en")            # or "zh": jieba words where installed, else characters
    nlp.add_pipe("sentencizer")        # rule-based sentence splitting, no model download
    nlp.add_pipe("bockparse", config={"model": "model.pt"})
    doc = nlp("I saw it. It was late.")

sets ``token.head`` and ``token.dep_`` sentence by sentence (a sentence's root is its own head,
as spaCy marks roots), and with a model that has a joint tagger (``model=biaffine-tagger``,
``biaffine-notags-tagger``) ``token.pos_``, ``token.tag_`` and ``token.morph`` from its UPOS,
XPOS and FEATS (a UPOS outside spaCy's universal tags, or ``_``, leaves ``pos_`` unset; ``_``
leaves ``tag_`` and ``morph`` unset). Only a model that needs words alone can parse spaCy's
tokens: one with a tagger, or one trained with ``model/context=notags``
(``model=biaffine-notags``); a model that reads UPOS, XPOS or FEATS without a tagger is refused
when the component is built.

spaCy's whitespace tokens (line breaks, runs of spaces) are not words: the parser never sees
them; each is attached to the nearest word before it in its sentence (after it at a sentence's
start) with the relation :data:`WHITESPACE_RELATION`, so that spaCy's sentences stay as the
splitter made them; a sentence of whitespace alone (after a text's last sentence) hangs from
its first token, its root. :func:`conllu` writes the parsed words as CoNLL-U and :func:`svg`
draws the trees with displaCy (``bockparse-predict MODEL --text ...``).
"""

import html
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from spacy import displacy
from spacy.attrs import DEP, HEAD
from spacy.language import Language
from spacy.parts_of_speech import IDS as UNIVERSAL_POS
from spacy.tokens import Doc, MorphAnalysis, Token
from spacy.util import minibatch

from .data.conllu import Sentence
from .parser import Parser
from .parser.inputs import TAG_INPUTS, WORDS_ONLY, tag_inputs

log = logging.getLogger("bockparse.rawtext")

WHITESPACE_RELATION = "dep"  # the relation of a whitespace token to its word (not a parse)
PIPE_BATCH_DOCS = 64  # documents parsed together by ``nlp.pipe`` (one Parser.predict call)


class NeedsTags(ValueError):
    """A model that reads tag columns without a tagger cannot parse spaCy's untagged tokens."""


def language(lang: str) -> Language:
    """``spacy.blank(lang)`` with the rule-based ``sentencizer``: tokenisation and sentence
    splitting without any model download (``zh`` segments words with jieba where it is
    installed, else characters, which the ``bockparse`` component warns of).

    Raises:
        ValueError: ``lang`` is no language spaCy knows.
    """
    import spacy

    try:
        nlp = spacy.blank(lang)
    except ImportError as err:  # spaCy's E048: no such language module
        raise ValueError(f"--lang {lang!r}: spaCy has no language {lang!r} ({err})") from None
    if lang == "zh":
        try:
            import jieba  # noqa: F401  (only whether it is there)
        except ImportError:
            pass  # characters: the component warns (make_bockparse)
        else:
            nlp = spacy.blank(lang, config={"nlp": {"tokenizer": {"segmenter": "jieba"}}})
    nlp.add_pipe("sentencizer")
    return nlp


class BockparseComponent:
    """The ``bockparse`` pipeline component: a :class:`~bockparse.parser.Parser` that needs
    words only, applied to each sentence of a ``Doc`` (module doc).

    Args:
        parser: the parser.
        decoder: a registry decoder name, ``None`` for the run's.
        batch_size: words per batch, ``None`` for the run's.

    Raises:
        NeedsTags: the parser's model reads UPOS, XPOS or FEATS and has no tagger.
    """

    def __init__(
        self, parser: Parser, decoder: str | None = None, batch_size: int | None = None
    ) -> None:
        needed = [TAG_INPUTS[f][1] for f in tag_inputs(parser.settings)]
        if needed and not parser.tag_fields:
            switches = ", ".join(f"model.context.{TAG_INPUTS[f][0]}: true"
                                 for f in tag_inputs(parser.settings))  # fmt: skip
            raise NeedsTags(
                f"the model reads {', '.join(needed)} ({switches}), which spaCy's tokens do not "
                f"have: parse raw text with {WORDS_ONLY}"
            )
        self.parser = parser
        self.decoder = decoder
        self.batch_size = batch_size

    def __call__(self, doc: Doc) -> Doc:
        self.parse([doc])
        return doc

    def pipe(self, docs: Iterable[Doc], batch_size: int = PIPE_BATCH_DOCS) -> Iterator[Doc]:
        """``nlp.pipe``'s path: ``batch_size`` documents parsed in one prediction."""
        for group in minibatch(docs, size=batch_size):
            self.parse(group)
            yield from group

    def parse(self, docs: list[Doc]) -> None:
        """Set every token's head and relation in ``docs``, sentence by sentence.

        Raises:
            ValueError: a document without sentence boundaries (no sentence splitter before
                the component).
        """
        spans = []
        for doc in docs:
            if not doc.has_annotation("SENT_START"):
                raise ValueError(
                    "the bockparse component needs sentence boundaries: add a sentence splitter "
                    "before it (nlp.add_pipe('sentencizer', before='bockparse'))"
                )
            spans.extend(list(doc.sents))
        wordful = [s for s in spans if any(not t.is_space for t in s)]
        words = [[t.text for t in s if not t.is_space] for s in wordful]
        trees = self.parser.predict(words, self.decoder, self.batch_size, write_tags=True)
        heads: dict[int, dict[int, int]] = {id(d): {} for d in docs}  # token -> head token
        rels: dict[int, dict[int, str]] = {id(d): {} for d in docs}
        for span, tree in zip(wordful, trees, strict=True):
            index = [t.i for t in span if not t.is_space]
            for i, head, rel in zip(index, tree.heads, tree.rels, strict=True):
                heads[id(span.doc)][i] = index[head - 1] if head else i
                rels[id(span.doc)][i] = rel
            if self.parser.tag_fields:
                tokens = [span.doc[i] for i in index]
                self._tag(tokens, tree, self.parser.tag_fields)
        for doc in docs:
            self._set(doc, heads[id(doc)], rels[id(doc)])

    @staticmethod
    def _tag(tokens: list[Token], tree: Sentence, fields: list[str]) -> None:
        """Set ``pos_``, ``tag_`` and ``morph`` of a sentence's word tokens from the tagger's
        UPOS, XPOS and FEATS (those of ``fields``; module doc)."""
        for k, token in enumerate(tokens):
            if "upos" in fields and tree.upos[k] in UNIVERSAL_POS and tree.upos[k]:
                token.pos_ = tree.upos[k]
            if "xpos" in fields and tree.xpos[k] != "_":
                token.tag_ = tree.xpos[k]
            if "feats" in fields and tree.feats[k] != "_":
                token.set_morph(tree.feats[k])

    @staticmethod
    def _set(doc: Doc, heads: dict[int, int], rels: dict[int, str]) -> None:
        """Write the trees into ``doc`` in one ``Doc.from_array`` (heads relative to the
        token), whitespace tokens attached as the module doc says."""
        values = np.zeros((len(doc), 2), dtype=np.int64)
        for sent in doc.sents:
            words = [t.i for t in sent if not t.is_space]
            for token in sent:
                i = token.i
                if i in heads:
                    head, rel = heads[i], rels[i]
                else:
                    before = [w for w in words if w < i]
                    head = before[-1] if before else (words[0] if words else sent.start)
                    rel = WHITESPACE_RELATION
                values[i] = head - i, doc.vocab.strings.add(rel)
        doc.from_array([HEAD, DEP], values.astype(np.uint64))


@Language.factory(
    "bockparse",
    default_config={"device": "cpu", "precision": None, "decoder": None, "batch_size": None},
    assigns=["token.head", "token.dep", "token.pos", "token.tag", "token.morph"],
)
def make_bockparse(
    nlp: Language,
    name: str,
    model: str,
    device: str,
    precision: str | None,
    decoder: str | None,
    batch_size: int | None,
) -> BockparseComponent:
    """The ``bockparse`` factory: ``config={"model": PATH}`` (a model file, a run folder or a
    checkpoint of a run), and optionally ``device``, ``precision`` (as
    :meth:`Parser.load <bockparse.parser.Parser.load>` takes them), ``decoder`` and
    ``batch_size`` (as :meth:`Parser.predict <bockparse.parser.Parser.predict>`). A pipeline
    whose tokenizer splits Chinese into single characters (spaCy's ``zh`` without jieba) gets
    a warning: a parser trained on words parses characters poorly."""
    if str(getattr(nlp.tokenizer, "segmenter", "")) == "char":
        log.warning(
            "%s: the tokenizer splits the text into single characters (spaCy's %s segmenter "
            "without jieba); a parser trained on words (such as UD Chinese-GSD's) parses "
            "characters poorly: pip install jieba, which bockparse-predict --lang zh then uses "
            "(in Python: spacy.blank(%r, config={'nlp': {'tokenizer': {'segmenter': "
            "'jieba'}}}))", nlp.lang, nlp.lang, nlp.lang,
        )  # fmt: skip
    return BockparseComponent(Parser.load(model, device=device, precision=precision), decoder,
                              batch_size)  # fmt: skip


@dataclass
class ParsedSentence:
    """A parsed sentence's words: forms, UPOS, XPOS and FEATS (``_`` where not set), heads
    (1-based, 0 for ROOT), relations, and whether a space follows each word in the text."""

    forms: list[str]
    upos: list[str]
    xpos: list[str]
    feats: list[str]
    heads: list[int]
    rels: list[str]
    space_after: list[bool]

    @property
    def text(self) -> str:
        """The sentence's text, each run of whitespace one space."""
        return "".join(f + (" " if s else "") for f, s in zip(self.forms, self.space_after,
                                                               strict=True)).rstrip()  # fmt: skip


def ud_feats(morph: MorphAnalysis) -> str:
    """A token's ``morph`` as a CoNLL-U FEATS column: features in UD's order (by name, case
    insensitive; spaCy's string sorts them case-sensitively, ``NumForm`` before ``Number``),
    ``_`` for none."""
    features = morph.to_dict()
    return "|".join(f"{k}={features[k]}" for k in sorted(features, key=str.lower)) or "_"


def parsed_sentences(doc: Doc) -> list[ParsedSentence]:
    """The parsed sentences of ``doc`` (after the component), whitespace tokens left out and
    sentences of whitespace alone skipped."""
    out = []
    for sent in doc.sents:
        words = [t for t in sent if not t.is_space]
        if not words:
            continue
        number = {t.i: k for k, t in enumerate(words, 1)}
        out.append(ParsedSentence(
            forms=[t.text for t in words],
            upos=[t.pos_ or "_" for t in words],
            xpos=[t.tag_ or "_" for t in words],
            feats=[ud_feats(t.morph) for t in words],
            heads=[0 if t.head.i == t.i else number[t.head.i] for t in words],
            rels=[t.dep_ for t in words],
            space_after=[bool(t.whitespace_) or (t.i + 1 < len(doc) and doc[t.i + 1].is_space)
                         for t in words],
        ))  # fmt: skip
    return out


def conllu(sentences: Iterable[ParsedSentence]) -> str:
    """CoNLL-U of parsed sentences: ``# sent_id`` (from 1) and ``# text`` comments, FORM,
    UPOS, XPOS, FEATS (a tagger's, else ``_``), HEAD, DEPREL, and ``SpaceAfter=No`` in MISC
    where no space follows a word; LEMMA is ``_``."""
    blocks = []
    for k, s in enumerate(sentences, 1):
        lines = [f"# sent_id = {k}", f"# text = {s.text}"]
        for i, (form, upos, xpos, feats, head, rel, space) in enumerate(
            zip(s.forms, s.upos, s.xpos, s.feats, s.heads, s.rels, s.space_after, strict=True), 1
        ):
            misc = "_" if space or i == len(s.forms) else "SpaceAfter=No"
            lines.append("\t".join([str(i), form, "_", upos, xpos, feats, str(head), rel, "_",
                                    misc]))  # fmt: skip
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


_SVG_SIZE = re.compile(r'<svg ([^>]*?)width="(\d+(?:\.\d+)?)" height="(\d+(?:\.\d+)?)"')


def svg(sentences: Iterable[ParsedSentence]) -> str:
    """One SVG drawing the trees with displaCy (UPOS under each word, where tagged), each
    sentence below the one before. Words are escaped by displaCy, UPOS and relation labels
    (from a model file) here."""
    parts, width, height = [], 0.0, 0.0
    for s in sentences:
        words = [{"text": f, "tag": "" if u == "_" else html.escape(u)}
                 for f, u in zip(s.forms, s.upos, strict=True)]  # fmt: skip
        arcs = [
            {"start": min(d, h - 1), "end": max(d, h - 1), "label": html.escape(rel),
             "dir": "left" if h - 1 > d else "right"}
            for d, (h, rel) in enumerate(zip(s.heads, s.rels, strict=True)) if h
        ]  # fmt: skip
        drawing = displacy.render({"words": words, "arcs": arcs}, style="dep", manual=True,
                                  jupyter=False)  # fmt: skip
        match = _SVG_SIZE.search(drawing)
        if match is None:  # displaCy's markup changed: fail loudly rather than draw nothing
            raise RuntimeError("displaCy returned an SVG without width and height")
        w, h = float(match.group(2)), float(match.group(3))
        drawing = drawing.replace("<svg ", f'<svg x="0" y="{height:g}" ', 1)
        parts.append(drawing)
        width, height = max(width, w), height + h
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{height:g}">\n'
        + "\n".join(parts)
        + "\n</svg>\n"
    )
