"""From a batch's scores to trees: the one prediction path, padded end to end.

Every prediction of bockparse goes through here: the module's development and test steps, the
decoder substitution of :mod:`bockparse.experiments.substitute`, and (for the relations) the
transition parser. Heads come from a registry decoder under the single-root constraint
(:func:`decode_heads`); each word's relation is the best one at its predicted head
(:func:`best_relations`, scored at the heads alone). Both stay ``[B, N]`` tensors from the
decoder pool to the metrics; nothing goes through per-sentence lists. No Lightning here, so
that a parser loaded outside training predicts with exactly the code that evaluated it.
Only at the very end does :func:`sentence_rows` cut the padded rows back into per-sentence
trees (the prediction writer, :meth:`bockparse.parser.Parser.predict`, the analyses).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from .data.batch import Batch
from .decoders import decode_batch
from .model.outputs import ParserScores


def decode_heads(
    arc: torch.Tensor,
    lengths: torch.Tensor,
    decoder: str,
    *,
    single_root: bool = True,
    workers: int | None = None,
) -> torch.Tensor:
    """Best trees of a padded batch by a registry decoder.

    Args:
        arc: float ``[B, N, N]``, ``arc[b, h, d]``; sentence ``b`` is
            ``[:lengths[b] + 1, :lengths[b] + 1]`` (padding ignored). Decoded as float32, moved
            to the CPU once.
        lengths: int64 ``[B]`` words per sentence (ROOT excluded).
        decoder: registry name (``bock``, ``cle``, ``tarjan``, ...).
        single_root: exactly one word on ROOT.
        workers: decoder threads; ``None`` uses every CPU.

    Returns:
        int64 ``[B, N]`` on ``arc``'s device: heads in ``0..lengths[b]`` at words, ``-1`` at ROOT
        and padding (as ``Batch.heads``).

    Raises:
        ValueError, NoTreeError: as :func:`bockparse.decoders.decode_batch`.
    """
    heads = decode_batch(
        arc.detach().float(),
        lengths,
        decoder,
        single_root=single_root,
        workers=workers,
        padded=True,
    )
    return torch.from_numpy(heads).to(arc.device)


# The canonical tie rule: among a matrix's optimal trees, the one reformulated Bock returns (its
# single-root enumeration of root children under the single-root constraint; without it, the
# tree that Theorem-1 Tarjan returns as well).
CANONICAL = "bock"


def tree_scores(arc: torch.Tensor, heads: torch.Tensor) -> np.ndarray:
    """Tree score of every sentence of a padded batch, accumulated in float64.

    Args:
        arc: float ``[B, N, N]``, ``arc[b, h, d]``.
        heads: int64 ``[B, N]``, ``-1`` at ROOT and padding (ignored).

    Returns:
        float64 ``[B]``: ``sum_d arc[b, heads[b, d], d]`` over the words.
    """
    S = arc.detach().cpu().double()
    h = heads.cpu()
    words = h >= 0
    picked = S.gather(1, h.clamp(min=0)[:, None, :]).squeeze(1)  # [B, N]
    return picked.masked_fill(~words, 0.0).sum(dim=1).numpy()


def decode_canonical(
    arc: torch.Tensor,
    lengths: torch.Tensor,
    decoder: str,
    *,
    single_root: bool = True,
    workers: int | None = None,
    tol: float,
) -> torch.Tensor:
    """The canonical maximiser of each sentence, whichever exact decoder drives the search.

    ``decoder`` finds the optimal value; the tree returned is :data:`CANONICAL`'s (Bock's)
    maximiser, after checking that its score equals ``decoder``'s optimum. So every exact
    decoder (``bock``, ``bock-original``, ``cle``, ``tarjan``, ``stanza-cle``, ``brute``) gives
    the same arrays on every input, ties included: two runs that differ only in their oracle
    select the same subgradients.

    Args:
        arc, lengths, decoder, single_root, workers: as :func:`decode_heads`.
        tol: relative tolerance on the two optimal values (``|a - b| <= tol * max(1, |a|)``):
            float rounding, as two exact decoders sum the same arc scores in different orders.

    Returns:
        int64 ``[B, N]`` as :func:`decode_heads`.

    Raises:
        ValueError, NoTreeError: as :func:`decode_heads`.
        RuntimeError: ``decoder``'s optimum and the canonical tree's score differ by more than
            ``tol`` (``decoder`` is not exact over the same set of trees, e.g. ``eisner``).
    """
    heads = decode_heads(arc, lengths, decoder, single_root=single_root, workers=workers)
    if decoder == CANONICAL:
        return heads
    canonical = decode_heads(arc, lengths, CANONICAL, single_root=single_root, workers=workers)
    found, canon = tree_scores(arc, heads), tree_scores(arc, canonical)
    bad = np.abs(found - canon) > tol * np.maximum(1.0, np.abs(found))
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        raise RuntimeError(
            f"{decoder} and {CANONICAL} optima differ on {int(bad.sum())} sentence(s), e.g. "
            f"sentence {b}: {found[b]!r} vs {canon[b]!r} (tol {tol:g})"
        )
    return canonical


def best_relations(at_head: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
    """Each word's best relation on the arc from its predicted head.

    Args:
        at_head: float ``[B, N, R]``, the relation scores of the arcs ``heads[b, d] -> d``
            (:meth:`bockparse.model.outputs.ParserScores.rel_at_heads`).
        heads: int64 ``[B, N]``, ``-1`` at ROOT and padding.

    Returns:
        int64 ``[B, N]`` relation ids ``argmax_r at_head[b, d, r]``; ``-1`` where ``heads`` is
        ``-1``.
    """
    return at_head.detach().argmax(dim=-1).masked_fill(heads < 0, -1)


def predict_trees(
    scores: ParserScores, lengths: torch.Tensor, decoder: str, *, workers: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Labelled single-root trees of a batch: :func:`decode_heads`, then :func:`best_relations`
    of the relation scores at the predicted heads alone.

    Args:
        scores: the scorer's output for the batch (``arc [B, N, N]``, its relation scores at
            the predicted heads read: ``rel_at_heads``).
        lengths: int64 ``[B]`` words per sentence.
        decoder: registry name of the decoder.
        workers: decoder threads; ``None`` uses every CPU.

    Returns:
        ``(heads, rels)``, int64 ``[B, N]`` each on the scores' device, ``-1`` at ROOT and
        padding.
    """
    heads = decode_heads(scores.arc, lengths, decoder, single_root=True, workers=workers)
    return heads, best_relations(scores.rel_at_heads(heads), heads)


def sentence_rows(batch: Batch, *padded: torch.Tensor | np.ndarray) -> Iterator[tuple]:
    """Each sentence of a batch with its rows of the padded ``[B, N, ...]`` tensors or arrays
    ``padded`` (heads and relations ``[B, N]``, arc scores ``[B, N, N]``): ``(sentence id,
    row, ...)``, every row cut to the sentence's ``n + 1`` positions (ROOT first) in each
    dimension after the batch's, so padding never reaches a tree. Rows are views (slices) of
    ``padded``, in batch order; the sentence id is the input position (``Batch.sentence_ids``).
    """
    for b, (sid, n) in enumerate(
        zip(batch.sentence_ids.tolist(), batch.lengths.tolist(), strict=True)
    ):
        yield (sid, *(t[(b, *(slice(None, n + 1),) * (t.ndim - 1))] for t in padded))
