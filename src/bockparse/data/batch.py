"""Batches: the ``Batch`` dataclass, its collation, and token-budget batch sampling."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from .conllu import DataError
from .dataset import ParserDataset
from .subwords import Subwords
from .vocab import PAD_INDEX, ROOT_INDEX


@dataclass
class Batch:
    """``B`` padded sentences; ``N = max n + 1`` positions, ROOT at 0 (ARCHITECTURE.md).

    Id tensors hold ``PAD_INDEX`` (0) at padding and ``ROOT_INDEX`` (2) at position 0.

    Attributes:
        words: int64 ``[B, N]`` word ids.
        chars: int64 ``[B, N, C]`` character ids, ``C`` the longest word of the batch (at most
            ``max_word_chars``); ROOT is the single character ``ROOT_INDEX``.
        upos, xpos, feats: int64 ``[B, N]`` tag ids (FEATS is one tag: the whole column).
        heads: int64 ``[B, N]`` gold heads in ``0..n``; -1 at ROOT and padding.
        rels: int64 ``[B, N]`` gold relation ids; -1 at ROOT, padding and for relations unseen
            in training.
        base_rels: int64 ``[B, N]`` gold base-relation ids (``nmod:poss`` -> ``nmod``; ids of
            ``data.vocab.base_relation_ids`` over the training relations), what LAS compares;
            -1 at ROOT, padding and for base relations unseen in training (never matched).
        mask: bool ``[B, N]``, True on words: False at ROOT and padding.
        punct: bool ``[B, N]``, True on gold punctuation words (the data's ``punct_field`` and
            ``punct_tags``): the one mask of punctuation-excluded scores
            (``bockparse.metrics.batch_counts``).
        lengths: int64 ``[B]`` words per sentence (ROOT excluded).
        sentence_ids: int64 ``[B]`` index of each sentence in its dataset (file order).
        subwords: transformer input, or ``None`` when the data module has no tokenizer.
    """

    words: torch.Tensor
    chars: torch.Tensor
    upos: torch.Tensor
    xpos: torch.Tensor
    feats: torch.Tensor
    heads: torch.Tensor
    rels: torch.Tensor
    base_rels: torch.Tensor
    mask: torch.Tensor
    punct: torch.Tensor
    lengths: torch.Tensor
    sentence_ids: torch.Tensor
    subwords: Subwords | None

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        """A copy with every tensor on ``device`` (Lightning calls this to move batches)."""
        moved = {
            f.name: getattr(self, f.name).to(device, non_blocking=non_blocking)
            for f in fields(self)
            if getattr(self, f.name) is not None
        }
        return replace(self, **moved)

    def __len__(self) -> int:
        return len(self.lengths)


class Collator:
    """``collate_fn`` turning a list of dataset indices into a ``Batch``.

    A pair ``(indices, kept)`` instead gives each sentence's number of words kept from its
    start (``TokenBudgetSampler``'s ``augment_nopunct``, which drops final punctuation).

    Args:
        dataset: the ``ParserDataset`` the indices refer to.
    """

    def __init__(self, dataset: ParserDataset):
        self.dataset = dataset

    def __call__(self, indices: Sequence[int] | tuple[Sequence[int], Sequence[int]]) -> Batch:
        ds = self.dataset
        if isinstance(indices, tuple):
            indices, kept = indices
            lengths = np.asarray(kept, dtype=np.int64)
        else:
            lengths = ds.lengths[np.asarray(indices, dtype=np.int64)]
        ids = np.asarray(indices, dtype=np.int64)
        N = int(lengths.max()) + 1
        offset = np.arange(N - 1)
        valid = offset[None, :] < lengths[:, None]  # [B, N - 1]
        pos = np.where(valid, ds.offsets[ids][:, None] + offset[None, :], 0)  # [B, N - 1]

        def positions(values: np.ndarray, root: int, pad: int) -> torch.Tensor:
            out = np.empty((len(ids), N), dtype=values.dtype)
            out[:, 0] = root
            out[:, 1:] = np.where(valid, values[pos], pad)
            return torch.from_numpy(out)

        types = ds.types[pos]  # [B, N - 1]
        C = max(1, int(ds.char_lengths[types[valid]].max()))
        chars = np.full((len(ids), N, C), PAD_INDEX, dtype=np.int64)
        chars[:, 0, 0] = ROOT_INDEX
        chars[:, 1:] = np.where(valid[..., None], ds.chars[types, :C], PAD_INDEX)

        subwords = None
        if ds.wordpieces is not None:
            # a sentence's pieces end where its first word not kept starts
            ends = [
                ds.piece_offsets[i + 1] if n == ds.lengths[i]
                else ds.piece_offsets[i] + ds.word_starts[ds.offsets[i] + n]
                for i, n in zip(ids.tolist(), lengths.tolist(), strict=True)
            ]  # fmt: skip
            subwords = ds.wordpieces.collate(
                [ds.pieces[ds.piece_offsets[i] : e] for i, e in zip(ids, ends, strict=True)],
                [ds.word_starts[ds.offsets[i] : ds.offsets[i] + n]
                 for i, n in zip(ids, lengths, strict=True)],
                N,
            )  # fmt: skip
        return Batch(
            words=positions(ds.words, ROOT_INDEX, PAD_INDEX),
            chars=torch.from_numpy(chars),
            upos=positions(ds.upos, ROOT_INDEX, PAD_INDEX),
            xpos=positions(ds.xpos, ROOT_INDEX, PAD_INDEX),
            feats=positions(ds.feats, ROOT_INDEX, PAD_INDEX),
            heads=positions(ds.heads, -1, -1),
            rels=positions(ds.rels, -1, -1),
            base_rels=positions(ds.base_rels, -1, -1),
            mask=torch.from_numpy(np.pad(valid, ((0, 0), (1, 0)))),
            punct=positions(ds.punct, False, False),
            lengths=torch.from_numpy(lengths),
            sentence_ids=torch.from_numpy(ids),
            subwords=subwords,
        )


class TokenBudgetSampler(torch.utils.data.Sampler[list[int]]):
    """Batches of sentences whose words add up to at most ``batch_size``.

    Sentences are sorted by length and packed greedily, so each batch holds sentences of about
    the same length; a sentence longer than the budget is a batch on its own. With ``shuffle``,
    equal lengths are ordered at random and the batches are shuffled, from ``(seed, epoch)``:
    the same seed and epoch give the same batches in the same order (Lightning calls
    ``set_epoch`` each epoch). Without it, batches come shortest first, always the same.

    It yields lists of indices: use it as ``DataLoader(dataset, sampler=..., batch_size=None,
    collate_fn=Collator(dataset))`` (as ``ParserDataModule`` does).

    With ``augment_nopunct`` p > 0 (training only), each epoch drops the final word of every
    ``droppable`` sentence with probability p, drawn from ``(seed, epoch, 1)`` for all
    sentences at once (deterministic, independent of the shuffle, which stays as without it),
    and yields ``(indices, words kept)`` pairs for ``Collator``. This is Stanza 1.15's
    ``augment_nopunct`` (``stanza/models/depparse/data.py``, ``DataLoader.__getitem__``: each
    access, ``random.random() < augment_nopunct_ratio`` drops the last word of a sentence
    ``record_can_augment_nopunct`` allows); as there, the batches are packed by the full
    lengths (Stanza's ``self.lengths``), so their number does not change.

    Args:
        lengths: int ``[S]`` words per sentence.
        batch_size: the word budget per batch (the Bock paper uses 5,000).
        shuffle: shuffle per epoch (training) or not (evaluation).
        seed: the run seed.
        augment_nopunct: the probability p above; 0 for none.
        droppable: bool ``[S]``, the sentences whose final word may be dropped
            (``ParserDataset.final_punct_droppable``); needed when p > 0.
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        *,
        shuffle: bool,
        seed: int,
        augment_nopunct: float = 0.0,
        droppable: np.ndarray | None = None,
    ):
        if batch_size < 1:
            raise DataError(f"batch_size must be a positive number of words, got {batch_size}")
        if not 0.0 <= augment_nopunct <= 1.0:
            raise DataError(f"augment_nopunct must be a probability in [0, 1], got "
                            f"{augment_nopunct}")  # fmt: skip
        if augment_nopunct > 0 and (droppable is None or len(droppable) != len(lengths)):
            raise DataError("augment_nopunct needs one droppable flag per sentence")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.augment_nopunct = augment_nopunct
        self.droppable = droppable
        self.epoch = 0
        self._num_batches = len(self._pack(np.argsort(self.lengths, kind="stable")))

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose shuffle ``__iter__`` gives."""
        self.epoch = epoch

    def _pack(self, order: np.ndarray) -> list[list[int]]:
        batches, current, total = [], [], 0
        for i, n in zip(order.tolist(), self.lengths[order].tolist(), strict=True):
            if current and total + n > self.batch_size:
                batches.append(current)
                current, total = [], 0
            current.append(i)
            total += n
        if current:
            batches.append(current)
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        if not self.shuffle:
            yield from self._pack(np.argsort(self.lengths, kind="stable"))
            return
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(len(self.lengths))
        order = order[np.argsort(self.lengths[order], kind="stable")]
        batches = self._pack(order)
        shuffled = rng.permutation(len(batches)).tolist()
        if not self.augment_nopunct:
            for k in shuffled:
                yield batches[k]
            return
        draw = np.random.default_rng([self.seed, self.epoch, 1]).random(len(self.lengths))
        kept = self.lengths - (self.droppable & (draw < self.augment_nopunct))
        for k in shuffled:
            yield batches[k], kept[batches[k]].tolist()

    def __len__(self) -> int:
        return self._num_batches
