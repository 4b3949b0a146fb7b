"""A tensorised treebank: word-level id arrays built once, batched by ``batch.collate``.

All words of the file are stored end to end (``T`` words in all); sentence ``i`` owns
``offsets[i]:offsets[i + 1]``. Characters and wordpieces are computed once per word type.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import torch

from .conllu import DataError, Sentence, write_conllu
from .subwords import WordPieces
from .vocab import PAD_INDEX, Vocabs, base_relation, base_relation_ids

PunctField = Literal["upos", "xpos"]


class ParserDataset(torch.utils.data.Dataset):
    """Sentences of one file as id arrays; item ``i`` is just ``i`` (``Collator`` gathers).

    Args:
        sentences: valid sentences from ``read_conllu``, in file order.
        vocabs: the training vocabularies.
        max_word_chars: characters kept per word for the character model (the first ones).
        punct_field: ``"upos"`` or ``"xpos"``, the column that marks punctuation.
        punct_tags: tags of that column that mark punctuation (for punctuation-excluded
            scores), e.g. ``["PUNCT"]`` for UD UPOS.
        wordpieces: the transformer tokenizer wrapper, or ``None`` for no transformer input.

    Attributes:
        lengths: int64 ``[S]`` words per sentence.
        offsets: int64 ``[S + 1]`` start of each sentence in the word arrays.
        words, upos, xpos, feats, heads, rels: int64 ``[T]``; ``heads`` 1-based, 0 for ROOT;
            ``rels`` -1 for relations unseen in training.
        base_rels: int64 ``[T]`` gold base-relation ids (:func:`~.vocab.base_relation_ids` of
            the training relations); -1 for a base relation unseen in training.
        punct: bool ``[T]``.
        chars: int64 ``[types, max_word_chars]`` char ids per word type (``PAD_INDEX`` after
            the word's end); ``char_lengths`` ``[types]``; ``types`` int64 ``[T]``.
        pieces, piece_offsets, word_starts: wordpieces of sentence ``i`` are
            ``pieces[piece_offsets[i]:piece_offsets[i + 1]]``, its words start at
            ``word_starts[offsets[i]:offsets[i + 1]]`` within them (``None`` without
            ``wordpieces``).
    """

    def __init__(
        self,
        sentences: Sequence[Sentence],
        vocabs: Vocabs,
        *,
        max_word_chars: int,
        punct_field: PunctField,
        punct_tags: Sequence[str],
        wordpieces: WordPieces | None = None,
    ):
        if punct_field not in ("upos", "xpos"):
            raise DataError(f"punct_field must be 'upos' or 'xpos', got {punct_field!r}")
        if max_word_chars < 1:
            raise DataError(f"max_word_chars must be >= 1, got {max_word_chars}")
        self.sentences = list(sentences)
        self.vocabs = vocabs
        self.wordpieces = wordpieces
        self.lengths = np.array([len(s) for s in self.sentences], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)])

        def flat(column: str) -> list[str]:
            return [v for s in self.sentences for v in getattr(s, column)]

        forms = flat("forms")
        type_of: dict[str, int] = {}
        self.types = np.array([type_of.setdefault(f, len(type_of)) for f in forms], dtype=np.int64)
        type_forms = list(type_of)
        self.words = np.array(vocabs.words.lookup(type_forms), dtype=np.int64)[self.types]
        self.upos = np.array(vocabs.upos.lookup(flat("upos")), dtype=np.int64)
        self.xpos = np.array(vocabs.xpos.lookup(flat("xpos")), dtype=np.int64)
        self.feats = np.array(vocabs.feats.lookup(flat("feats")), dtype=np.int64)
        self.rels = np.array(vocabs.rels.lookup(flat("rels")), dtype=np.int64)
        base_ids, _ = base_relation_ids(vocabs.rels.itos)
        self.base_rels = np.array(
            [base_ids.get(base_relation(r), -1) for r in flat("rels")], dtype=np.int64
        )
        self.heads = np.array(flat("heads"), dtype=np.int64)
        punct_set = set(punct_tags)
        self.punct = np.array([t in punct_set for t in flat(punct_field)], dtype=bool)

        self.chars = np.full((len(type_forms), max_word_chars), PAD_INDEX, dtype=np.int64)
        self.char_lengths = np.zeros(len(type_forms), dtype=np.int64)
        for t, form in enumerate(type_forms):
            ids = vocabs.chars.lookup(form[:max_word_chars])
            self.chars[t, : len(ids)] = ids
            self.char_lengths[t] = len(ids)

        self.pieces = self.piece_offsets = self.word_starts = None
        if wordpieces is not None:
            type_pieces = wordpieces.pieces(type_forms)
            type_counts = np.array([len(p) for p in type_pieces], dtype=np.int64)
            type_starts = np.concatenate([[0], np.cumsum(type_counts)])
            flat_type_pieces = np.array([i for p in type_pieces for i in p], dtype=np.int64)
            counts = type_counts[self.types]  # [T]
            word_offsets = np.concatenate([[0], np.cumsum(counts)])  # piece start of each word
            # piece k of word w is flat_type_pieces[type_starts[types[w]] + k]
            index = np.repeat(type_starts[self.types] - word_offsets[:-1], counts) + np.arange(
                word_offsets[-1]
            )
            self.pieces = flat_type_pieces[index]
            self.piece_offsets = word_offsets[self.offsets]
            self.word_starts = word_offsets[:-1] - np.repeat(self.piece_offsets[:-1], self.lengths)

    def final_punct_droppable(self) -> np.ndarray:
        """bool ``[S]``: sentences whose final word ``data.augment_nopunct`` may drop.

        Stanza 1.15's ``record_can_augment_nopunct`` (``stanza/models/depparse/data.py``): the
        last word is punctuation (Stanza: UPOS ``PUNCT``; here the data's ``punct_field`` and
        ``punct_tags``, the same for UD), the sentence has another word, and no other word's
        head is that last word, so the shortened tree is still a tree.
        """
        last = self.offsets[1:] - 1
        sentence = np.repeat(np.arange(len(self.lengths)), self.lengths)
        on_last = self.heads == self.lengths[sentence]  # a word headed by its sentence's last
        headed = np.bincount(sentence[on_last], minlength=len(self.lengths)) > 0
        return (self.lengths > 1) & self.punct[np.maximum(last, 0)] & ~headed

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, index: int | list[int]) -> int | list[int]:
        # ``collate`` gathers from the arrays; a batch sampler's list of indices passes through
        return index


def write_predictions(
    path: str | os.PathLike,
    dataset: ParserDataset,
    heads_by_sentence: Sequence | Mapping[int, object],
    rels_by_sentence: Sequence | Mapping[int, object],
    tags_by_sentence: Sequence | Mapping[int, Mapping[str, object]] | None = None,
) -> None:
    """Write predicted trees (and tags) as CoNLL-U in file order, atomically.

    The output is the dataset's input file with only HEAD and DEPREL of word lines replaced
    (and the tag columns ``tags_by_sentence`` gives: a tagger's), comments, MWT lines, empty
    nodes, DEPS and MISC kept, so the CoNLL 2018 evaluator aligns it with the gold file.
    Sentences dropped at reading (``on_malformed: skip``) are absent.

    Args:
        path: the output file.
        dataset: the dataset the predictions are for.
        heads_by_sentence: indexed by dataset position (``Batch.sentence_ids``): int
            ``[N']`` heads with ``N' >= n + 1`` (a padded row is fine; position 0 and padding
            are ignored), in ``0..n``.
        rels_by_sentence: the same, relation ids of ``dataset.vocabs.rels`` (or label
            strings).
        tags_by_sentence: the same, each a mapping of tag fields (``upos``, ``xpos``,
            ``feats``) to rows of tag ids of the field's vocabulary (ROOT's ignored); ``None``:
            the input's tags kept.

    Raises:
        ValueError: a sentence is missing, too short, or has a head, relation or tag out of
            range.
    """
    itos = dataset.vocabs.rels.itos
    all_heads, all_rels, all_tags = [], [], []
    for i, sentence in enumerate(dataset.sentences):
        n = len(sentence)
        try:
            heads, rels = heads_by_sentence[i], rels_by_sentence[i]
        except (KeyError, IndexError):
            raise ValueError(f"no prediction for sentence {i} (line {sentence.line})") from None
        heads = [int(h) for h in heads[1 : n + 1]]
        rels = list(rels[1 : n + 1])
        if len(heads) != n or len(rels) != n:
            raise ValueError(f"sentence {i} (line {sentence.line}): need {n + 1} positions")
        if not all(0 <= h <= n for h in heads):
            raise ValueError(f"sentence {i} (line {sentence.line}): head out of range 0..{n}")
        labels = []
        for r in rels:
            if isinstance(r, str):
                labels.append(r)
            elif 0 <= int(r) < len(itos):
                labels.append(itos[int(r)])
            else:
                raise ValueError(f"sentence {i} (line {sentence.line}): relation id {r} unknown")
        all_heads.append(heads)
        all_rels.append(labels)
        if tags_by_sentence is not None:
            columns = {}
            for field, ids in tags_by_sentence[i].items():
                row = [int(t) for t in ids[1 : n + 1]]
                if len(row) != n:
                    raise ValueError(f"sentence {i} (line {sentence.line}): {field}: need "
                                     f"{n + 1} positions")  # fmt: skip
                try:
                    columns[field] = getattr(dataset.vocabs, field).tokens(row)
                except IndexError as e:
                    raise ValueError(f"sentence {i} (line {sentence.line}): {field}: {e}") from None
            all_tags.append(columns)
    write_conllu(path, dataset.sentences, all_heads, all_rels,
                 all_tags if tags_by_sentence is not None else None)  # fmt: skip
