"""Vocabularies built from training data only, saved with the model.

Word-level vocabularies (words, characters, UPOS, XPOS, FEATS) start with three specials:
``PAD_INDEX = 0`` (padding), ``UNK_INDEX = 1`` (unseen or below the cutoff) and
``ROOT_INDEX = 2`` (the artificial ROOT at position 0). The word vocabulary may be lower-cased
(``data.lowercase_words``, :class:`Vocab`'s ``lower``). The relation vocabulary has no specials:
ids ``0..R-1`` index ``rel_scores[..., R]`` directly, and a relation unseen in training maps to
``-1``, like padding, so it never counts as predicted correctly.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..rundir import write_atomic
from .conllu import DataError, Sentence

PAD, UNK, ROOT = "<pad>", "<unk>", "<root>"
PAD_INDEX, UNK_INDEX, ROOT_INDEX = 0, 1, 2
SPECIALS = (PAD, UNK, ROOT)
UNKNOWN_REL = -1


def base_relation(label: str) -> str:
    """The universal relation of a label: the part before the first ``:`` (``nmod:poss`` ->
    ``nmod``)."""
    return label.split(":", 1)[0]


def base_relation_ids(labels: Sequence[str]) -> tuple[dict[str, int], list[int]]:
    """Ids of the base relations of a relation vocabulary (LAS compares base relations).

    Args:
        labels: relation labels in id order (``Vocabs.rels.itos``).

    Returns:
        ``(ids, of_label)``: ``ids`` maps each base relation to its id, in order of first
        appearance; ``of_label[r]`` is the base id of label ``r``.
    """
    ids: dict[str, int] = {}
    of_label = [ids.setdefault(base_relation(label), len(ids)) for label in labels]
    return ids, of_label


class Vocab:
    """A token <-> id map.

    Args:
        itos: the tokens, id order; unique.
        unk_index: the id returned for a token not in the vocabulary.
        lower: look tokens up lower-cased (``str.lower``); ``itos`` then holds lower-cased
            tokens. Stanza 1.15's word vocabulary does this (``BaseVocab.normalize_unit`` in
            ``stanza/models/common/vocab.py``, ``lower=True`` in ``depparse/data.py:280``).
    """

    def __init__(self, itos: Sequence[str], unk_index: int, *, lower: bool = False):
        self.itos = list(itos)
        self.stoi = {token: i for i, token in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("vocabulary tokens must be unique")
        self.unk_index = unk_index
        self.lower = lower

    @classmethod
    def build(
        cls,
        tokens: Iterable[str],
        *,
        min_freq: int,
        specials: Sequence[str],
        unk_index: int,
        lower: bool = False,
    ) -> Vocab:
        """Specials first, then tokens seen at least ``min_freq`` times, most frequent first
        (ties in code-point order, so the ids do not depend on dict or file order); with
        ``lower``, tokens are counted and kept lower-cased (Stanza 1.15's ``WordVocab``,
        ``stanza/models/pos/vocab.py``: ``Counter(w.lower() ...)``, then every unit with a
        count below ``cutoff`` deleted, the same rule as ``min_freq``)."""
        counts = Counter(t.lower() for t in tokens) if lower else Counter(tokens)
        kept = sorted(
            (t for t, c in counts.items() if c >= min_freq and t not in specials),
            key=lambda t: (-counts[t], t),
        )
        return cls([*specials, *kept], unk_index, lower=lower)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return (token.lower() if self.lower else token) in self.stoi

    def __getitem__(self, token: str) -> int:
        return self.stoi.get(token.lower() if self.lower else token, self.unk_index)

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        """Ids of ``tokens`` (``unk_index`` for unknown ones; lower-cased first with
        ``lower``)."""
        get, unk = self.stoi.get, self.unk_index
        if self.lower:
            return [get(t.lower(), unk) for t in tokens]
        return [get(t, unk) for t in tokens]

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """The tokens of ``ids`` (inverse of :meth:`lookup` for tokens in the vocabulary).

        Raises:
            IndexError: an id outside ``0..len - 1``.
        """
        itos = self.itos
        out = []
        for i in ids:
            if not 0 <= i < len(itos):
                raise IndexError(f"id {i} outside the vocabulary's 0..{len(itos) - 1}")
            out.append(itos[i])
        return out

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Vocab)
            and self.itos == other.itos
            and self.unk_index == other.unk_index
            and self.lower == other.lower
        )

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens)"


def _saved_vocab(name: str, state: Any) -> Vocab:
    """One vocabulary of :meth:`Vocabs.from_dict` (its checks)."""
    where = f"saved vocabulary {name!r}"
    if not isinstance(state, dict) or set(state) - {"lower"} != {"itos", "unk_index"}:
        raise DataError(f"{where}: must be a mapping of itos and unk_index (and lower)")
    itos, unk_index, lower = state["itos"], state["unk_index"], state.get("lower", False)
    if "lower" in state and (name != "words" or lower is not True):
        raise DataError(f"{where}: only the word vocabulary may be saved lower-cased "
                        "(lower: true)")  # fmt: skip
    if not isinstance(itos, list) or not all(isinstance(t, str) for t in itos):
        raise DataError(f"{where}: itos must be a list of strings")
    if name == "rels":
        if type(unk_index) is not int or unk_index != UNKNOWN_REL:
            raise DataError(f"{where}: unk_index must be {UNKNOWN_REL}")
        bad = next(
            (t for t in itos if not t or not t.isprintable() or any(c.isspace() for c in t)), None
        )
        if bad is not None:
            raise DataError(f"{where}: relation label {bad[:40]!r} is not one CoNLL-U field "
                            "(empty, or holding whitespace or control characters)")  # fmt: skip
    elif (
        itos[: len(SPECIALS)] != list(SPECIALS)
        or type(unk_index) is not int
        or unk_index != UNK_INDEX
    ):
        raise DataError(f"{where}: must start with {list(SPECIALS)} and have unk_index "
                        f"{UNK_INDEX}")  # fmt: skip
    try:
        return Vocab(itos, unk_index, lower=lower)
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None


@dataclass(frozen=True)
class Vocabs:
    """All vocabularies of a parser, built from its training sentences."""

    words: Vocab
    chars: Vocab
    upos: Vocab
    xpos: Vocab
    feats: Vocab
    rels: Vocab

    @classmethod
    def build(
        cls, sentences: Sequence[Sentence], *, min_word_freq: int, lowercase_words: bool = False
    ) -> Vocabs:
        """Build from training sentences.

        Args:
            sentences: the training sentences (never dev or test).
            min_word_freq: a word form seen fewer times becomes ``<unk>`` (Stanza's
                ``word_cutoff``); characters and tags are all kept.
            lowercase_words: count and look up word forms lower-cased (Stanza 1.15's word
                vocabulary, ``depparse/data.py:280``); characters keep their case.
        """
        if min_word_freq < 1:
            raise DataError(f"min_word_freq must be >= 1, got {min_word_freq}")

        def tags(column: str, min_freq: int = 1, lower: bool = False) -> Vocab:
            values = (v for s in sentences for v in getattr(s, column))
            return Vocab.build(
                values, min_freq=min_freq, specials=SPECIALS, unk_index=UNK_INDEX, lower=lower
            )

        chars = (c for s in sentences for form in s.forms for c in form)
        rels = (r for s in sentences for r in s.rels)
        return cls(
            words=tags("forms", min_word_freq, lowercase_words),
            chars=Vocab.build(chars, min_freq=1, specials=SPECIALS, unk_index=UNK_INDEX),
            upos=tags("upos"),
            xpos=tags("xpos"),
            feats=tags("feats"),
            rels=Vocab.build(rels, min_freq=1, specials=(), unk_index=UNKNOWN_REL),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``{"words": {"itos": [...], "unk_index": 1}, ...}``); a
        lower-cased vocabulary adds ``"lower": true`` (absent otherwise, so a model without it
        is written as before and earlier files load as cased)."""
        out = {}
        for f in fields(self):
            vocab = getattr(self, f.name)
            out[f.name] = {"itos": vocab.itos, "unk_index": vocab.unk_index}
            if vocab.lower:
                out[f.name]["lower"] = True
        return out

    @classmethod
    def from_dict(cls, state: Any) -> Vocabs:
        """Inverse of ``to_dict``, for a saved state that may have been tampered with: each
        vocabulary ``{"itos": [str, ...], "unk_index": int}`` (the words' may add
        ``"lower": true``) with unique tokens, the
        word-level ones starting with the specials (``unk_index`` ``UNK_INDEX``), the relations
        without specials (``unk_index`` ``UNKNOWN_REL``) and labels that are one CoNLL-U field
        (printable, no whitespace), since predictions write them.

        Raises:
            DataError: a vocabulary is missing or malformed (naming it and the problem).
        """
        if not isinstance(state, dict):
            raise DataError(f"saved vocabularies must be a mapping, got {type(state).__name__}")
        missing = [f.name for f in fields(cls) if f.name not in state]
        if missing:
            raise DataError(f"saved vocabularies lack {', '.join(missing)}")
        return cls(**{f.name: _saved_vocab(f.name, state[f.name]) for f in fields(cls)})

    def save(self, path: str | os.PathLike) -> None:
        """Write as JSON, atomically."""
        write_atomic(path, json.dumps(self.to_dict(), ensure_ascii=False))

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocabs:
        """Read a file written by ``save``.

        Raises:
            DataError: the file cannot be read or is not a saved vocabulary.
        """
        try:
            state = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: cannot read vocabularies ({e})") from None
        if not isinstance(state, dict):
            raise DataError(f"{path}: not a saved vocabulary file")
        return cls.from_dict(state)
