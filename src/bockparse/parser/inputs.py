"""From a parser's input to batches: CoNLL-U files, ``Sentence`` objects or pre-tokenized
sentences (lists of words, or dicts with ``forms`` and optionally ``upos``, ``xpos``,
``feats``) become sentences (:func:`read_sentences`), checked against what the model reads
(:func:`check_tags`, :func:`warn_long`, :func:`report_unknown`; :func:`input_tags`: which tag
inputs come from the input and which from the model's tagger), then batches of at most a word
budget sorted by length, as in development evaluation (:func:`batches`); and predicted trees
(and tags) go back into copies of the sentences (:func:`parsed`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

from ..data.batch import Batch, Collator, TokenBudgetSampler
from ..data.conllu import (
    COLUMNS,
    DataError,
    Sentence,
    control_character,
    format_sentence,
    is_standard_stream,
    read_conllu,
    source_name,
)
from ..data.dataset import ParserDataset
from ..data.subwords import WordPieces
from ..data.vocab import SPECIALS, Vocabs
from ..metrics import PUNCT_EXCLUSIONS
from .settings import RunSettings

log = logging.getLogger("bockparse.parser")

# Sentences longer than this (words) are parsed with a warning: arc scores and exact decoding
# are quadratic in the length (memory) and worse (time); see docs/prediction.md.
LONG_SENTENCE_WORDS = 1000

# Tag inputs of the scorer: input field -> (model switch, CoNLL-U column name)
TAG_INPUTS = {
    "upos": ("use_upos", "UPOS"),
    "xpos": ("use_xpos", "XPOS"),
    "feats": ("use_feats", "FEATS"),
}
# The model settings that need words alone, named by every error about missing tags.
WORDS_ONLY = ("a model that tags its input or reads words only: trained with a joint tagger "
              "(bockparse-train model=biaffine-tagger ..., or +model/tagger=mlp with any model) "
              "or without tag inputs (model=biaffine-notags, or model/context=notags with any "
              "model)")  # fmt: skip
# Where a tagger model's tag inputs come from (Parser.predict's ``tags``): ``auto``, the
# input's columns where it has them and the tagger's where it lacks them; ``predicted``, the
# tagger's always.
TAG_SOURCES = ("auto", "predicted")
# Above this share of gold relations or input tags outside the model's vocabularies, the input
# is most likely from another treebank (other labels, other tag sets): a warning says so.
UNKNOWN_WARNING_SHARE = 0.05


def words_sentence(index: int, item: Any) -> Sentence:
    """A sentence from pre-tokenized input: a list of words, or a mapping with ``forms`` and
    optionally ``upos``, ``xpos``, ``feats`` (lists as long as ``forms``)."""
    where = f"sentence {index}"
    if isinstance(item, Mapping):
        unknown = set(item) - {"forms", *TAG_INPUTS}
        if unknown:
            raise DataError(f"{where}: unknown keys {sorted(unknown)} (forms, upos, xpos, feats)")
        if "forms" not in item:
            raise DataError(f"{where}: no 'forms' (the list of its words)")
        forms = list(item["forms"])
        tags = {f: list(item.get(f, ["_"] * len(forms))) for f in TAG_INPUTS}
    elif isinstance(item, Sequence) and not isinstance(item, str):
        forms = list(item)
        tags = {f: ["_"] * len(forms) for f in TAG_INPUTS}
    else:
        raise DataError(
            f"{where}: a {type(item).__name__}; give each sentence as a list of words or a dict "
            "with 'forms' (and optionally 'upos', 'xpos', 'feats')"
        )
    if not forms:
        raise DataError(f"{where}: no words")
    for field, values in tags.items():
        if len(values) != len(forms):
            raise DataError(f"{where}: {len(forms)} words but {len(values)} {field} values")
    lines = []
    for i, values in enumerate(
        zip(forms, tags["upos"], tags["xpos"], tags["feats"], strict=True), 1
    ):
        for value, column in zip(values, ("FORM", "UPOS", "XPOS", "FEATS"), strict=True):
            if not isinstance(value, str) or not value or control_character(value):
                raise DataError(
                    f"{where}, word {i}: {column} {value!r} must be a non-empty string without "
                    "tabs, line breaks or other control characters"
                )
        form, upos, xpos, feats = values
        lines.append("\t".join([str(i), form, "_", upos, xpos, feats, "_", "_", "_", "_"]))
    return Sentence(
        lines=lines,
        line=0,
        word_lines=list(range(len(forms))),
        forms=forms,
        lemmas=["_"] * len(forms),
        upos=tags["upos"],
        xpos=tags["xpos"],
        feats=tags["feats"],
        heads=[-1] * len(forms),
        rels=["_"] * len(forms),
    )


def parsed(
    sentence: Sentence,
    heads: list[int],
    rels: list[str],
    tags: Mapping[str, list[str]] | None = None,
) -> Sentence:
    """A copy of ``sentence`` with its predicted tree (and the tag columns ``tags`` gives), in
    its fields and in its lines."""
    tags = dict(tags or {})
    text = format_sentence(sentence, heads, rels, tags)
    return replace(sentence, lines=text[:-2].split("\n"), heads=heads, rels=rels, problems=[],
                   **tags)  # fmt: skip


def read_sentences(data: str | os.PathLike | Sequence[Any]) -> tuple[list[Sentence], str]:
    """The sentences of an input (module doc) and a name for it in messages (``the input``
    for pre-tokenized sentences and ``Sentence`` objects).

    Raises:
        DataError: a malformed file (``FILE:LINE: reason``) or sentence.
    """
    if isinstance(data, str) and not is_standard_stream(data) and not os.path.lexists(data):
        shown = repr(data if len(data) <= 60 else data[:57] + "...")
        raise DataError(
            f"{shown} is no file: give a CoNLL-U file, Sentence objects or pre-tokenized "
            "sentences (lists of words); to parse raw text, let spaCy split it into sentences "
            "and words: bockparse-predict MODEL --text TEXT, or the spaCy component "
            "nlp.add_pipe('bockparse', config={'model': MODEL}) (pip install "
            "'bockparse[spacy]'; docs/prediction.md)"
        )
    if isinstance(data, str | os.PathLike):
        sentences = read_conllu(
            data, single_root=True, on_malformed="error", trees=False, skip_option=None
        )
        return sentences, source_name(data)
    items = enumerate(data)
    return [s if isinstance(s, Sentence) else words_sentence(i, s) for i, s in items], "the input"


def warn_long(sentences: Sequence[Sentence], limit: int | None, source: str) -> None:
    """Warn once when sentences exceed ``limit`` words (``None``: never); they are parsed all
    the same."""
    long = [s for s in sentences if limit is not None and len(s) > limit]
    if long:
        longest = max(long, key=len)
        log.warning("%s: %d sentence(s) longer than %d words (the longest, %d words, at line %d): "
                    "each takes memory quadratic in its length (its N x N arc scores and the "
                    "decoder's matrices) and more time; they are parsed whole, never truncated",
                    source, len(long), limit, len(longest), longest.line)  # fmt: skip


def tag_inputs(settings: RunSettings) -> list[str]:
    """The tag fields (:data:`TAG_INPUTS`: ``upos``, ``xpos``, ``feats``) the model reads, as its
    spec's ``model.context.use_upos``, ``use_xpos`` and ``use_feats`` say; none for a model of
    ``model/context=notags``, which reads words alone."""
    context = settings.model["params"]["context"]
    return [field for field, (switch, _) in TAG_INPUTS.items() if context.get(switch)]


def tagger_fields(settings: RunSettings) -> list[str]:
    """The tag fields the model's joint tagger predicts (``model.tagger.upos``, ``xpos``,
    ``feats``); none for a model without a tagger."""
    tagger = settings.model["params"].get("tagger")
    return [] if tagger is None else [field for field in TAG_INPUTS if tagger.get(field)]


def missing_tags(
    sentences: Sequence[Sentence], fields: Collection[str], vocabs: Vocabs
) -> list[str]:
    """The tag fields of ``fields`` the input lacks: ``_`` on every word, unless ``_`` was all
    the training data had (then ``_`` is what the model reads)."""
    if not sentences:
        return []
    missing = []
    for field in fields:
        trained = set(getattr(vocabs, field).itos) - set(SPECIALS) - {"_"}
        given = {v for s in sentences for v in getattr(s, field)}
        if trained and given == {"_"}:
            missing.append(field)
    return missing


def input_tags(
    sentences: Sequence[Sentence], settings: RunSettings, vocabs: Vocabs, tags: str
) -> tuple[str, ...] | None:
    """The tag inputs the model reads from ``sentences`` rather than from its tagger
    (``gold`` of :meth:`bockparse.heads.common.ContextHead.contextualize`).

    Args:
        tags: :data:`TAG_SOURCES`: ``auto``, every tag input the input has (the tagger's for
            the others); ``predicted``, none (the tagger's all).

    Returns:
        The fields, or ``None`` for a model without a tagger (it reads the input's).

    Raises:
        ValueError: an unknown ``tags``, or ``predicted`` for a model without a tagger.
    """
    if tags not in TAG_SOURCES:
        raise ValueError(f"tags={tags!r}: give one of {', '.join(TAG_SOURCES)}")
    if not tagger_fields(settings):
        if tags == "predicted":
            raise ValueError(
                "tags='predicted': this model has no tagger (it reads the input's tags or "
                "none); a model trained with one predicts them (model=biaffine-tagger)"
            )
        return None
    if tags == "predicted":
        return ()
    read = tag_inputs(settings)
    missing = missing_tags(sentences, read, vocabs)
    return tuple(f for f in read if f not in missing)


def check_tags(
    sentences: Sequence[Sentence], settings: RunSettings, vocabs: Vocabs, source: str
) -> None:
    """A tag input the model uses must be in the input (not ``_`` on every word, unless ``_``
    was all the training data had), or predicted by the model's tagger.

    Raises:
        DataError: naming every tag column the model reads, the input lacks and no tagger
            predicts, and the model settings that need words only.
    """
    predicted = tagger_fields(settings)
    missing = [f for f in missing_tags(sentences, tag_inputs(settings), vocabs)
               if f not in predicted]  # fmt: skip
    if not missing:
        return
    uses = ", ".join(f"{TAG_INPUTS[f][1]} (model.context.{TAG_INPUTS[f][0]}: true)"
                     for f in tag_inputs(settings))  # fmt: skip
    columns = ", ".join(TAG_INPUTS[f][1] for f in missing)
    numbers = ", ".join(str(COLUMNS.index(TAG_INPUTS[f][1]) + 1) for f in missing)
    keys = ", ".join(f"'{f}'" for f in missing)
    raise DataError(
        f"{source}: the model uses {uses} but the input has no {columns} (_ on every word): "
        f"give {columns} (CoNLL-U column {numbers}, or {keys} in each pre-tokenized sentence), "
        f"or use {WORDS_ONLY}"
    )


def unknown_counts(
    sentences: Sequence[Sentence],
    settings: RunSettings,
    vocabs: Vocabs,
    *,
    gold: bool,
    read: Collection[str] | None = None,
) -> dict[str, tuple[int, int, int]]:
    """How much of an input the model has no vocabulary entry for.

    Args:
        sentences: the input.
        settings: the run's settings (which tag inputs the model reads).
        vocabs: the model's vocabularies.
        gold: also count the gold relations (evaluation).
        read: the tag inputs read from the input (:func:`input_tags`); ``None``: every one
            the model reads.

    Returns:
        For each tag field the model reads from the input (``upos``, ``xpos``, ``feats``) and,
        with ``gold``, ``rels``: ``(values not in the model's vocabulary, values, the
        vocabulary's size)``, specials left out of the size.
    """
    fields = [f for f in tag_inputs(settings) if read is None or f in read]
    counts = {}
    for field in [*fields, "rels"] if gold else fields:
        vocab = getattr(vocabs, field)
        known = set(vocab.itos) - (set() if field == "rels" else set(SPECIALS))
        values = [v for s in sentences for v in getattr(s, field)]
        counts[field] = (sum(v not in known for v in values), len(values), len(known))
    return counts


def report_unknown(
    sentences: Sequence[Sentence],
    settings: RunSettings,
    vocabs: Vocabs,
    source: str,
    *,
    gold: bool,
    read: Collection[str] | None = None,
) -> dict[str, tuple[int, int, int]]:
    """Log the shares of :func:`unknown_counts` (INFO), and warn in one line when one is above
    :data:`UNKNOWN_WARNING_SHARE`: a model evaluated on (or parsing) a treebank with other
    labels or tag sets scores low with no error otherwise.

    Returns:
        :func:`unknown_counts`.
    """
    counts = unknown_counts(sentences, settings, vocabs, gold=gold, read=read)
    names = {"rels": "gold relations", **{f: f"{c} tags" for f, (_, c) in TAG_INPUTS.items()}}
    shares = {f: unknown / total for f, (unknown, total, _) in counts.items() if total}
    if shares:
        listed = ", ".join(f"{100 * v:.1f} % of {names[f]}" for f, v in shares.items())
        log.info("%s: not in the model's vocabularies: %s", source, listed)
    high = [f"{100 * v:.1f} % of the {names[f]} are not in the model's {counts[f][2]:,} "
            f"{'relations' if f == 'rels' else names[f]}"
            for f, v in shares.items() if v > UNKNOWN_WARNING_SHARE]  # fmt: skip
    if high:
        log.warning("%s: %s (trained on another treebank? scores and trees will be poor)",
                    source, "; ".join(high))  # fmt: skip
    return counts


def batches(
    sentences: Sequence[Sentence],
    vocabs: Vocabs,
    settings: RunSettings,
    wordpieces: WordPieces | None,
    device: torch.device,
    batch_size: int | None = None,
    exclude_punct: str | None = None,
) -> Iterator[Batch]:
    """Batches of at most ``batch_size`` words (the run's when ``None``), sorted by length as in
    development evaluation, on ``device``; ``Batch.sentence_ids`` index ``sentences``.
    ``exclude_punct`` (a :data:`bockparse.metrics.PUNCT_EXCLUSIONS` name) sets ``Batch.punct``
    to that exclusion's marks, else the run's punctuation.

    Raises:
        ValueError: an unknown exclusion.
    """
    if not sentences:
        return
    field, tags = settings.punct_field, settings.punct_tags
    if exclude_punct is not None:
        if exclude_punct not in PUNCT_EXCLUSIONS:
            known = ", ".join(PUNCT_EXCLUSIONS)
            raise ValueError(f"unknown punctuation exclusion {exclude_punct!r}; known: {known}")
        field, tag_set = PUNCT_EXCLUSIONS[exclude_punct]
        tags = sorted(tag_set)
    dataset = ParserDataset(
        sentences,
        vocabs,
        max_word_chars=settings.max_word_chars,
        punct_field=field,
        punct_tags=tags,
        wordpieces=wordpieces,
    )
    size = settings.batch_size if batch_size is None else batch_size
    collate = Collator(dataset)
    for indices in TokenBudgetSampler(dataset.lengths, size, shuffle=False, seed=0):
        yield collate(indices).to(device)
