"""From a batch's scores to trees: the one prediction path, padded end to end.

Every prediction of bockparse goes through here: the module's development and test steps, the
decoder substitution of :mod:`bockparse.experiments.substitute`, and (for the relations) the
transition parser. Heads come from a registry decoder under the single-root constraint
(:func:`decode_heads`); each word's relation is the best one at its predicted head
(:func:`relations_at_heads`). Both stay ``[B, N]`` tensors from the decoder pool to the
metrics; nothing goes through per-sentence lists. No Lightning here, so that a parser loaded
outside training predicts with exactly the code that evaluated it.
"""

from __future__ import annotations

import torch

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


def relations_at_heads(rel: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
    """Each word's best relation on the arc from its predicted head.

    Args:
        rel: float ``[B, N, N, R]``, ``rel[b, h, d, r]``.
        heads: int64 ``[B, N]``, ``-1`` at ROOT and padding.

    Returns:
        int64 ``[B, N]`` relation ids ``argmax_r rel[b, heads[b, d], d, r]``; ``-1`` where
        ``heads`` is ``-1``.
    """
    R = rel.shape[-1]
    index = heads.clamp(min=0)[:, None, :, None].expand(-1, 1, -1, R)  # [B, 1, N, R]
    at_head = rel.detach().gather(1, index).squeeze(1)  # [B, N, R]
    return at_head.argmax(dim=-1).masked_fill(heads < 0, -1)


def predict_trees(
    scores: ParserScores, lengths: torch.Tensor, decoder: str, *, workers: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Labelled single-root trees of a batch: :func:`decode_heads` then
    :func:`relations_at_heads`.

    Args:
        scores: the scorer's output for the batch (``arc [B, N, N]``, ``rel [B, N, N, R]``).
        lengths: int64 ``[B]`` words per sentence.
        decoder: registry name of the decoder.
        workers: decoder threads; ``None`` uses every CPU.

    Returns:
        ``(heads, rels)``, int64 ``[B, N]`` each on the scores' device, ``-1`` at ROOT and
        padding.
    """
    heads = decode_heads(scores.arc, lengths, decoder, single_root=True, workers=workers)
    return heads, relations_at_heads(scores.rel, heads)
