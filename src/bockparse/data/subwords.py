"""Transformer input: words -> wordpieces, overlapping windows for long sentences, pooling back.

Each word is tokenized on its own (``is_split_into_words``), so its pieces do not depend on its
neighbours and are computed once per word type. A word the tokenizer maps to no piece at all
(e.g. a zero-width space) gets the unknown piece, so every word has at least one.

A sentence's piece sequence is ``[CLS] p_1 .. p_P``; its ``[CLS]`` stands for ROOT. When
``P + 2`` (``[CLS]``, ``[SEP]``) exceeds the encoder's ``max_length``, the pieces are encoded in
windows of ``C = max_length - 2`` pieces, each ``[CLS] .. [SEP]``, starting every ``C // 2``
pieces, the last one aligned to the end. Each piece takes its vector from the window where it
has the most context on its nearer side; ROOT takes the first window's ``[CLS]``. Nothing is
truncated.

The encoder does not run the ``[W, T]`` windows of a batch as one padded block (one long
window would pad every other one to its length): :func:`length_chunks` sorts them by length
and cuts them into length-homogeneous chunks, each padded only to its own longest window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from .conllu import DataError

Pooling = Literal["first", "mean"]

# transformers' model_max_length when the tokenizer does not know its encoder's limit
_UNKNOWN_MAX_LENGTH = 10**12


@dataclass
class Subwords:
    """Wordpiece input of a batch of ``B`` sentences encoded in ``W >= B`` windows.

    ``P`` is the longest piece sequence of the batch, ``[CLS]`` (ROOT) included; ``T`` the
    longest window. Encoder outputs ``hidden [W, T, H]`` are mapped back to positions by
    ``pool_pieces``.

    Attributes:
        input_ids: int64 ``[W, T]``, each row ``[CLS] pieces [SEP]`` then padding.
        attention_mask: int64 ``[W, T]``, 1 on real pieces and specials.
        piece_index: int64 ``[B, P]``, for each piece of a sentence the flat index
            ``w * T + t`` of the encoder output it takes; 0 at padding.
        piece_mask: bool ``[B, P]``, True on real pieces (``[CLS]`` included).
        piece_word: int64 ``[B, P]``, the position ``0..n`` each piece belongs to (0 for
            ``[CLS]`` and padding).
        first_piece: int64 ``[B, N]``, the piece (index into ``P``) of each position's first
            piece: 0 (``[CLS]``) for ROOT and padding.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    piece_index: torch.Tensor
    piece_mask: torch.Tensor
    piece_word: torch.Tensor
    first_piece: torch.Tensor

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Subwords:
        """A copy with every tensor on ``device``."""
        return Subwords(
            **{
                f.name: getattr(self, f.name).to(device, non_blocking=non_blocking)
                for f in fields(self)
            }
        )


def load_tokenizer(tokenizer: PreTrainedTokenizerBase | str) -> PreTrainedTokenizerBase:
    """A tokenizer object, or one loaded offline from a local folder, never running code from
    it (``bockparse.untrusted.pretrained``).

    Raises:
        DataError: the folder holds no usable tokenizer, or is refused.
    """
    from ..untrusted import pretrained

    if isinstance(tokenizer, PreTrainedTokenizerBase):
        return tokenizer
    try:
        return pretrained(AutoTokenizer, str(tokenizer))
    except OSError as e:
        raise DataError(f"cannot load a tokenizer from {tokenizer!r} (offline): {e}") from None


class WordPieces:
    """Words to pieces with a given tokenizer, and window collation.

    Args:
        tokenizer: a Hugging Face tokenizer with ``[CLS]``/``[SEP]``-like specials
            (``cls_token_id``, ``sep_token_id``, ``pad_token_id``, ``unk_token_id``).
        max_length: the encoder's longest input, specials included; ``None`` takes the
            tokenizer's ``model_max_length``.

    Raises:
        DataError: a special token is missing, or no usable ``max_length``.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, max_length: int | None):
        self.tokenizer = tokenizer
        ids = {
            name: getattr(tokenizer, f"{name}_token_id") for name in ("cls", "sep", "pad", "unk")
        }
        missing = [name for name, i in ids.items() if i is None]
        if missing:
            raise DataError(
                f"tokenizer {tokenizer.name_or_path!r} has no {'/'.join(missing)} token"
            )
        self.cls_id, self.sep_id, self.pad_id, self.unk_id = ids.values()
        if max_length is None:
            max_length = tokenizer.model_max_length
            if max_length >= _UNKNOWN_MAX_LENGTH:
                raise DataError(
                    f"tokenizer {tokenizer.name_or_path!r} does not know its encoder's maximum "
                    "length; set max_length"
                )
        if max_length < 3:
            raise DataError(f"max_length must be at least 3 ([CLS] piece [SEP]), got {max_length}")
        self.max_length = int(max_length)

    def pieces(self, forms: Sequence[str]) -> list[list[int]]:
        """Piece ids of each word form on its own; never empty (``[UNK]`` stands in)."""
        if not forms:
            return []
        encoded = self.tokenizer(
            [[form] for form in forms], is_split_into_words=True, add_special_tokens=False
        )["input_ids"]
        return [ids or [self.unk_id] for ids in encoded]

    def windows(self, num_pieces: int) -> list[int]:
        """Start offsets of the windows covering ``num_pieces`` pieces (see the module doc)."""
        capacity = self.max_length - 2
        if num_pieces <= capacity:
            return [0]
        stride = max(1, capacity // 2)
        return [*range(0, num_pieces - capacity, stride), num_pieces - capacity]

    def collate(
        self, sentence_pieces: Sequence[np.ndarray], word_starts: Sequence[np.ndarray], N: int
    ) -> Subwords:
        """Batch the piece sequences of ``B`` sentences.

        Args:
            sentence_pieces: per sentence, int ``[P_b]`` piece ids (no specials).
            word_starts: per sentence, int ``[n_b]`` index of each word's first piece in
                ``sentence_pieces[b]``, increasing, starting at 0.
            N: positions of the batch (``max n_b + 1``).

        Returns:
            The ``Subwords`` of the batch. Time O(total pieces).
        """
        capacity = self.max_length - 2
        starts = [self.windows(len(p)) for p in sentence_pieces]
        W = sum(map(len, starts))
        T = min(max(len(p) for p in sentence_pieces), capacity) + 2
        B = len(sentence_pieces)
        P = max(len(p) for p in sentence_pieces) + 1
        input_ids = np.full((W, T), self.pad_id, dtype=np.int64)
        attention_mask = np.zeros((W, T), dtype=np.int64)
        piece_index = np.zeros((B, P), dtype=np.int64)
        piece_mask = np.zeros((B, P), dtype=bool)
        piece_word = np.zeros((B, P), dtype=np.int64)
        first_piece = np.zeros((B, N), dtype=np.int64)
        w0 = 0
        for b, (pieces, ws, s) in enumerate(zip(sentence_pieces, word_starts, starts, strict=True)):
            num = len(pieces)
            for k, start in enumerate(s):
                chunk = pieces[start : start + capacity]
                input_ids[w0 + k, : len(chunk) + 2] = [self.cls_id, *chunk, self.sep_id]
                attention_mask[w0 + k, : len(chunk) + 2] = 1
            j = np.arange(num)[:, None]
            s_arr = np.asarray(s)[None, :]
            context = np.minimum(j - s_arr, s_arr + capacity - 1 - j)  # [P_b, windows]
            context[(j < s_arr) | (j >= s_arr + capacity)] = -1
            window = context.argmax(axis=1)  # [P_b]
            piece_index[b, 0] = w0 * T
            piece_index[b, 1 : num + 1] = (w0 + window) * T + 1 + np.arange(num) - s_arr[0, window]
            piece_mask[b, : num + 1] = True
            counts = np.diff(np.append(ws, num))
            piece_word[b, 1 : num + 1] = np.repeat(np.arange(1, len(ws) + 1), counts)
            first_piece[b, 1 : len(ws) + 1] = ws + 1
            w0 += len(s)
        return Subwords(
            input_ids=torch.from_numpy(input_ids),
            attention_mask=torch.from_numpy(attention_mask),
            piece_index=torch.from_numpy(piece_index),
            piece_mask=torch.from_numpy(piece_mask),
            piece_word=torch.from_numpy(piece_word),
            first_piece=torch.from_numpy(first_piece),
        )


def length_chunks(lengths: np.ndarray, max_pieces: int, max_padding: float) -> list[np.ndarray]:
    """Windows grouped into chunks of similar length, for the encoder to run one at a time.

    The windows are sorted by length and cut greedily: a chunk takes the next (longer) window
    unless its padded size (windows times the longest) would exceed ``max_pieces`` or
    ``max_padding`` times its real pieces. A chunk has at least one window, so every chunk's
    padded size is at most ``max(max_pieces, its window length)`` and at most ``max_padding``
    times its real pieces, whence the batch's padded / real pieces is at most ``max_padding``.

    Args:
        lengths: int ``[W]`` real pieces per window (``attention_mask.sum(-1)``), each >= 1.
        max_pieces: padded pieces per chunk (bounds the encoder's activation memory).
        max_padding: the largest padded / real pieces of a chunk, >= 1.

    Returns:
        Int64 window indices per chunk, shortest windows first; together a permutation of
        ``0..W-1``. Time O(W log W).
    """
    order = np.argsort(lengths, kind="stable")
    chunks, start, real = [], 0, 0
    for k, i in enumerate(order.tolist()):
        size = int(lengths[i])
        padded = (k - start + 1) * size  # the chunk with window i, which is its longest
        if k > start and (padded > max_pieces or padded > max_padding * (real + size)):
            chunks.append(order[start:k])
            start, real = k, 0
        real += size
    chunks.append(order[start:])
    return chunks


def pool_pieces(hidden: torch.Tensor, subwords: Subwords, pooling: Pooling) -> torch.Tensor:
    """Word vectors from encoder outputs: each word's first piece, or the mean of its pieces.

    Args:
        hidden: float ``[W, T, H]``, the encoder outputs of ``subwords.input_ids``; or any
            ``[..., H]`` whose rows, flattened, ``subwords.piece_index`` indexes.
        subwords: the batch's ``Subwords``.
        pooling: ``"first"`` or ``"mean"``. ROOT gets the ``[CLS]`` vector either way.

    Returns:
        float ``[B, N, H]``; values at padding positions are unspecified (use the mask).
    """
    if pooling not in ("first", "mean"):
        raise ValueError(f"pooling must be 'first' or 'mean', got {pooling!r}")
    H = hidden.shape[-1]
    pieces = hidden.reshape(-1, H)[subwords.piece_index]  # [B, P, H]
    if pooling == "first":
        index = subwords.first_piece.unsqueeze(-1).expand(-1, -1, H)  # [B, N, H]
        return pieces.gather(1, index)
    B, N = subwords.first_piece.shape
    weight = subwords.piece_mask.to(pieces.dtype)  # [B, P]
    sums = pieces.new_zeros(B, N, H).scatter_add_(
        1, subwords.piece_word.unsqueeze(-1).expand(-1, -1, H), pieces * weight.unsqueeze(-1)
    )
    counts = pieces.new_zeros(B, N).scatter_add_(1, subwords.piece_word, weight)  # [B, N]
    return sums / counts.clamp(min=1).unsqueeze(-1)
