"""UAS, LAS and LCM with the Bock paper's conventions (§5 and its appendix on evaluation), and
the tag accuracies UPOS, XPOS, UFeats and AllTags of the CoNLL 2018 evaluator.

Scored words are the integer-ID words (ROOT excluded), punctuation included unless an exclusion
is asked for; LAS compares base relations (the part before ``:``), as the CoNLL 2018 evaluator
does; LCM counts a sentence when every scored word has the right head and base relation.
Tag scores compare a word's UPOS, XPOS and universal features (:func:`universal_feats`), each
alone and all three together (AllTags), as the evaluator does for gold tokenisation (every word
aligned), over the same scored words.
Counts are integers, summed across batches and DDP ranks; rates are computed from them.

Metric keys are ``{stage}/{name}``: ``val/uas``, ``val/las``, ``val/lcm``, ``test/...``.

Only numpy and the CoNLL-U reader are needed (the light install, ``bockparse-eval``): counts take
numpy arrays or tensors alike; the torchmetrics ``AttachmentScores`` that training logs lives in
:mod:`bockparse.attachment`, which builds on these counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .data.conllu import DataError, Sentence, is_standard_stream, read_conllu, source_name
from .data.vocab import base_relation

if TYPE_CHECKING:
    import torch

    from .data.batch import Batch

NAMES = ("uas", "las", "lcm")

# Punctuation exclusions of the paper's comparison with Zhang et al. (2019): gold XPOS for the
# PTB, gold XPOS ``PU`` for the CTB, and gold UPOS ``PUNCT`` for UD treebanks. The one
# definition: files are masked by it (``bockparse-eval``), a data config's ``punct_field`` and
# ``punct_tags`` (which give ``Batch.punct``) must name one of them (:func:`punct_exclusion`).
PUNCT_EXCLUSIONS: dict[str, tuple[str, frozenset[str]]] = {
    "ptb": ("xpos", frozenset({"``", "''", ":", ",", "."})),
    "ctb": ("xpos", frozenset({"PU"})),
    "upos": ("upos", frozenset({"PUNCT"})),
}

COUNTS = ("words", "heads", "labels", "sentences", "complete")

# Tag accuracies (rate names) and their counts: the scored words whose tag is right.
TAG_NAMES = ("upos", "xpos", "ufeats", "alltags")
TAG_COUNTS = tuple(f"right_{name}" for name in TAG_NAMES)
# The accuracy of each tag field (a Sentence's upos, xpos, feats).
FIELD_SCORES = {"upos": "upos", "xpos": "xpos", "feats": "ufeats"}

# The features the CoNLL 2018 evaluator's UFeats compares (its UNIVERSAL_FEATURES): the
# universal ones of UD v2; language-specific and layered features (``Number[psor]``) are not.
UNIVERSAL_FEATURES = frozenset({
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number",
    "Case", "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident",
    "Polarity", "Person", "Polite",
})  # fmt: skip


def metric_key(stage: str, name: str) -> str:
    """``"val", "las"`` -> ``"val/las"``: the one spelling of logged metric names."""
    return f"{stage}/{name}"


def _exclusion(name: str) -> tuple[str, frozenset[str]]:
    try:
        return PUNCT_EXCLUSIONS[name]
    except KeyError:
        known = ", ".join(PUNCT_EXCLUSIONS)
        raise ValueError(f"unknown punctuation exclusion {name!r}; known: {known}") from None


def punct_exclusion(field: str, tags: Iterable[str]) -> str:
    """The :data:`PUNCT_EXCLUSIONS` name that marks punctuation by ``tags`` of column ``field``
    (a data config's ``punct_field`` and ``punct_tags``).

    Raises:
        ValueError: no exclusion has that column and tag set.
    """
    field, tags = str(field), frozenset(map(str, tags))
    for name, (column, known) in PUNCT_EXCLUSIONS.items():
        if column == field and known == tags:
            return name
    raise ValueError(
        f"no punctuation exclusion matches {field} {sorted(tags)}; known: "
        + "; ".join(f"{n} ({c} {sorted(t)})" for n, (c, t) in PUNCT_EXCLUSIONS.items())
    )


def check_punct_exclusion(exclude_punct: str | None, field: str, tags: Iterable[str]) -> None:
    """Check that a data config's punctuation mask (``Batch.punct``, from ``punct_field`` and
    ``punct_tags``) is the exclusion ``exclude_punct`` asks for; nothing to check for ``None``.

    Raises:
        ValueError: an unknown exclusion, or the data marks punctuation otherwise.
    """
    if exclude_punct is None:
        return
    _exclusion(exclude_punct)
    marked = punct_exclusion(field, tags)
    if marked != exclude_punct:
        raise ValueError(
            f"exclude_punct={exclude_punct} but the data marks punctuation as {marked} "
            f"({field} {sorted(map(str, tags))}): set the data's punct_field and punct_tags "
            f"to the {exclude_punct} exclusion"
        )


def is_punct(sentence: Sentence, exclude_punct: str) -> np.ndarray:
    """bool ``[n]``: the words of ``sentence`` that the exclusion ``exclude_punct`` leaves out.

    Raises:
        ValueError: an unknown exclusion.
    """
    column, tags = _exclusion(exclude_punct)
    return np.array([tag in tags for tag in getattr(sentence, column)], dtype=bool)


def attachment_counts(
    heads: torch.Tensor | np.ndarray,
    rels: torch.Tensor | np.ndarray,
    gold_heads: torch.Tensor | np.ndarray,
    gold_rels: torch.Tensor | np.ndarray,
    mask: torch.Tensor | np.ndarray,
    punct: torch.Tensor | np.ndarray | None = None,
) -> torch.Tensor | np.ndarray:
    """Integer counts ``(words, heads, labels, sentences, complete)`` of a padded batch
    (tensors, or numpy arrays for a numpy result).

    The one place the scores are counted: a word counts when it is a word (``mask``) and not
    left out as punctuation; its head is right when it equals the gold head, its label when the
    head is right and the base relation ids are equal; a sentence is complete when every word
    that counts has the right head and label (a sentence with none counts as complete, as in
    the CoNLL 2018 evaluator). O(B N), vectorised.

    Args:
        heads: int ``[B, N]`` predicted heads.
        rels: int ``[B, N]`` predicted base-relation ids.
        gold_heads: int ``[B, N]`` gold heads.
        gold_rels: int ``[B, N]`` gold base-relation ids in the same id space (-1 where the
            gold base relation has no id: never matched).
        mask: bool ``[B, N]``, True on words (False at ROOT and padding).
        punct: bool ``[B, N]`` gold punctuation to leave out, or ``None`` to score every word.

    Returns:
        int64 ``[5]`` on the inputs' device.
    """
    scored = mask if punct is None else mask & ~punct
    head_ok = (heads == gold_heads) & scored
    label_ok = head_ok & (rels == gold_rels)
    complete = (label_ok | ~scored).all(1)
    if isinstance(mask, np.ndarray):
        counts = [scored.sum(), head_ok.sum(), label_ok.sum(), mask.shape[0], complete.sum()]
        return np.array(counts, dtype=np.int64)
    import torch  # tensors came in, so torch is loaded already

    sentences = torch.tensor(mask.shape[0], device=mask.device)
    return torch.stack(
        [scored.sum(), head_ok.sum(), label_ok.sum(), sentences, complete.sum()]
    ).long()


def batch_counts(
    heads: torch.Tensor,
    rels: torch.Tensor,
    batch: Batch,
    base_of: torch.Tensor,
    exclude_punct: bool,
) -> torch.Tensor:
    """:func:`attachment_counts` of predicted trees against a batch's gold trees.

    Args:
        heads: int64 ``[B, N]`` predicted heads (any value at ROOT and padding).
        rels: int64 ``[B, N]`` predicted relation ids (``-1`` allowed at ROOT and padding).
        batch: the batch (``heads``, ``base_rels``, ``mask``, ``punct``).
        base_of: int64 ``[R]``, the base-relation id of each relation id
            (``data.vocab.base_relation_ids(relations)[1]``), on the batch's device.
        exclude_punct: leave out ``batch.punct``.

    Returns:
        int64 ``[5]``.
    """
    return attachment_counts(
        heads,
        base_of[rels.clamp(min=0)],
        batch.heads,
        batch.base_rels,
        batch.mask,
        batch.punct if exclude_punct else None,
    )


def sentence_counts(
    gold: Sequence[Sentence],
    heads: Sequence[Sequence[int]],
    rels: Sequence[Sequence[str]],
    exclude_punct: str | None,
) -> np.ndarray:
    """:func:`attachment_counts` of labelled trees given as lists against gold sentences.

    Args:
        gold: the gold sentences.
        heads: per sentence, the predicted heads of words ``1..n`` (values in ``0..n``).
        rels: per sentence, the predicted relation labels of words ``1..n``.
        exclude_punct: a :data:`PUNCT_EXCLUSIONS` name, or ``None`` (every word scored).

    Returns:
        int64 ``[5]``.

    Raises:
        ValueError: an unknown exclusion, or a sentence whose predictions have the wrong length.
    """
    if exclude_punct is not None:
        _exclusion(exclude_punct)  # an unknown name fails even with no sentences
    S, N = len(gold), 1 + max((len(g) for g in gold), default=0)
    pred_heads, pred_rels, gold_heads, gold_rels = np.full((4, S, N), -1, dtype=np.int64)
    mask, punct = np.zeros((2, S, N), dtype=bool)
    ids: dict[str, int] = {}  # base relation -> id, over gold and predicted labels

    def base_ids(labels: Sequence[str]) -> list[int]:
        return [ids.setdefault(base_relation(label), len(ids)) for label in labels]

    for i, (g, h, r) in enumerate(zip(gold, heads, rels, strict=True)):
        n = len(g)
        if len(h) != n or len(r) != n:
            raise ValueError(f"sentence {i}: {n} words but {len(h)} heads and {len(r)} labels")
        words = slice(1, n + 1)
        pred_heads[i, words], gold_heads[i, words] = h, g.heads
        pred_rels[i, words], gold_rels[i, words] = base_ids(r), base_ids(g.rels)
        mask[i, words] = True
        if exclude_punct is not None:
            punct[i, words] = is_punct(g, exclude_punct)
    excluded = punct if exclude_punct is not None else None
    return attachment_counts(pred_heads, pred_rels, gold_heads, gold_rels, mask, excluded)


def universal_feats(feats: str) -> str:
    """The FEATS that UFeats compares, as the CoNLL 2018 evaluator reduces them: the
    ``Name=Value`` pairs whose name is in :data:`UNIVERSAL_FEATURES`, sorted, joined by ``|``
    (``_`` and a FEATS of other features alone become ``""``)."""
    return "|".join(sorted(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES))


def tag_counts(
    gold: Sequence[Sentence], pred: Sequence[Sentence], exclude_punct: str | None
) -> np.ndarray:
    """The scored words whose UPOS, XPOS, universal FEATS (:func:`universal_feats`), and all
    three, equal the gold ones: the CoNLL 2018 evaluator's UPOS, XPOS, UFeats and AllTags for
    gold tokenisation, with the words :func:`sentence_counts` scores (punctuation left out by
    ``exclude_punct``, a :data:`PUNCT_EXCLUSIONS` name, or none).

    Args:
        gold: the gold sentences.
        pred: the same sentences with the tags to score.

    Returns:
        int64 ``[4]`` in :data:`TAG_COUNTS` order.

    Raises:
        ValueError: an unknown exclusion, or sentences of different lengths.
    """
    if exclude_punct is not None:
        _exclusion(exclude_punct)  # an unknown name fails even with no sentences
    total = np.zeros(len(TAG_COUNTS), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold words but {len(p)} predicted")
        scored = ~is_punct(g, exclude_punct) if exclude_punct is not None else [True] * len(g)
        for keep, gu, gx, gf, pu, px, pf in zip(
            scored, g.upos, g.xpos, g.feats, p.upos, p.xpos, p.feats, strict=True
        ):
            if keep:
                right = (gu == pu, gx == px, universal_feats(gf) == universal_feats(pf))
                total += (*right, all(right))
    return total


def tag_rates(counts: np.ndarray | Sequence[int], words: int) -> dict[str, float]:
    """Percentages ``{"upos", "xpos", "ufeats", "alltags"}`` from :func:`tag_counts` of
    ``words`` scored words (0 when nothing is scored)."""
    return {name: 100.0 * int(c) / words if words else 0.0
            for name, c in zip(TAG_NAMES, counts, strict=True)}  # fmt: skip


def tag_names(fields: Iterable[str]) -> tuple[str, ...]:
    """The accuracies (:data:`TAG_NAMES`) that score a tagger of ``fields`` (``upos``,
    ``xpos``, ``feats``): each field's, and AllTags when it predicts all three."""
    fields = set(fields)
    names = tuple(FIELD_SCORES[f] for f in FIELD_SCORES if f in fields)
    return (*names, "alltags") if fields >= set(FIELD_SCORES) else names


def rates(counts: np.ndarray | torch.Tensor) -> dict[str, float]:
    """Percentages ``{"uas", "las", "lcm"}`` from summed counts (0 when nothing is scored)."""
    words, heads, labels, sentences, complete = (int(c) for c in counts)
    return {
        "uas": 100.0 * heads / words if words else 0.0,
        "las": 100.0 * labels / words if words else 0.0,
        "lcm": 100.0 * complete / sentences if sentences else 0.0,
    }


def first_difference(gold_path: str, gold: Sentence, pred_path: str, pred: Sentence) -> str:
    """Where two tokenisations of a sentence part: the first differing word, with both files'
    lines (or the word one of them lacks)."""
    for i, (g, p) in enumerate(zip(gold.forms, pred.forms, strict=False)):
        if g != p:
            where, there = pred.line + pred.word_lines[i], gold.line + gold.word_lines[i]
            return (f"{pred_path}:{where}: word {i + 1} is {p!r} but {gold_path}:{there} has "
                    f"{g!r}: the words differ")  # fmt: skip
    i = min(len(gold), len(pred))
    if len(gold) > i:
        longer, path, other = gold, gold_path, pred_path
    else:
        longer, path, other = pred, pred_path, gold_path
    return (f"{path}:{longer.line + longer.word_lines[i]}: word {i + 1} {longer.forms[i]!r} has "
            f"no counterpart in {other} (sentence of {len(pred)} words in {pred_path}, "
            f"{len(gold)} in {gold_path})")  # fmt: skip


def aligned_files(gold_path: str, pred_path: str) -> tuple[list[Sentence], list[Sentence]]:
    """The sentences of a gold file and of its prediction file, checked to hold the same
    sentences with the same words (the prediction file is the gold one with HEAD and DEPREL
    replaced, as bockparse writes them).

    Either path may be ``-`` (standard input), not both.

    Raises:
        DataError: a file is malformed or the two do not align (naming the file and line).
    """
    if is_standard_stream(gold_path) and is_standard_stream(pred_path):
        raise DataError("the gold and the predicted file cannot both be standard input (-)")
    gold = read_conllu(gold_path, single_root=False, on_malformed="error", skip_option=None)
    pred = read_conllu(pred_path, single_root=False, on_malformed="error", skip_option=None)
    gold_path, pred_path = source_name(gold_path), source_name(pred_path)
    if len(gold) != len(pred):
        raise DataError(f"{pred_path}: {len(pred)} sentences, but {gold_path} has {len(gold)}")
    for g, p in zip(gold, pred, strict=True):
        if g.forms != p.forms:
            raise DataError(first_difference(gold_path, g, pred_path, p))
    return gold, pred


def scores(attachment: np.ndarray | torch.Tensor, tags: np.ndarray | torch.Tensor) -> dict:
    """The evaluation commands' result: :func:`rates`, :func:`tag_rates` and the integer counts
    (:data:`COUNTS`, :data:`TAG_COUNTS`) of attachment and tag counts."""
    attachment, tags = [int(c) for c in attachment], [int(c) for c in tags]
    return {**rates(attachment), **tag_rates(tags, attachment[0]),
            **dict(zip(COUNTS, attachment, strict=True)),
            **dict(zip(TAG_COUNTS, tags, strict=True))}  # fmt: skip


def evaluate_files(gold_path: str, pred_path: str, exclude_punct: str | None = None) -> dict:
    """UAS/LAS/LCM and UPOS/XPOS/UFeats/AllTags of a prediction file against its gold file.

    The files must hold the same sentences with the same words (the prediction file is the gold
    one with HEAD and DEPREL replaced, as bockparse writes them, and with its tags as the
    parser read or predicted them).

    Returns:
        ``{"uas", "las", "lcm", "upos", "xpos", "ufeats", "alltags"}`` in percent plus the
        integer counts (:data:`COUNTS`, :data:`TAG_COUNTS`).

    Raises:
        DataError: a file is malformed or the two do not align (naming the file and line).
    """
    gold, pred = aligned_files(gold_path, pred_path)
    total = sentence_counts(gold, [p.heads for p in pred], [p.rels for p in pred], exclude_punct)
    return scores(total, tag_counts(gold, pred, exclude_punct))


def format_scores(result: dict[str, float]) -> str:
    """The evaluation commands' report: attachment rates, the counts behind them, then the tag
    accuracies."""
    return (
        f"UAS {result['uas']:.2f}  LAS {result['las']:.2f}  LCM {result['lcm']:.2f}\n"
        f"({result['heads']} / {result['labels']} of {result['words']} words, "
        f"{result['complete']} of {result['sentences']} sentences)\n"
        f"UPOS {result['upos']:.2f}  XPOS {result['xpos']:.2f}  UFeats {result['ufeats']:.2f}  "
        f"AllTags {result['alltags']:.2f}"
    )
