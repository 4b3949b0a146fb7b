"""The joint tagger's loss (:class:`bockparse.model.tagger.Tagger`), added to every parser loss
(:func:`bockparse.losses.common.combine`, :class:`bockparse.losses.transition.TransitionLoss`).

``loss_weight * sum over the tagger's columns of the mean cross-entropy over the batch's words``
(ROOT and padding excluded; a word whose gold tag is not a training tag, ``<unk>``, too, which
training data never has): each column's mean, as UDPipe 2 and Stanza's tagger sum their
per-column losses, beside the parser's loss (its own sums divided by the words).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..data.batch import Batch
from ..model.tagger import FIRST_TAG, TagScores


def tag_loss(tags: TagScores, batch: Batch) -> torch.Tensor:
    """The weighted tag loss of a batch (module doc).

    Args:
        tags: the tagger's scores, ``logits[c]`` float ``[B, N, K_c]``.
        batch: the batch (its ``mask`` and gold ``upos``, ``xpos``, ``feats``).

    Returns:
        Scalar tensor (at least float32); 0 for a column without a scored word.
    """
    total = None
    for column, logits in tags.logits.items():
        gold = getattr(batch, column)  # [B, N] tag ids
        scored = batch.mask & (gold >= FIRST_TAG)  # [B, N]
        picked = logits[scored]  # [words, K_c], in at least float32 (bf16-mixed hands bf16)
        picked = picked.to(torch.promote_types(picked.dtype, torch.float32))
        summed = F.cross_entropy(picked, gold[scored] - FIRST_TAG, reduction="sum")
        mean = summed / max(int(scored.sum()), 1)
        total = mean if total is None else total + mean
    return tags.loss_weight * total
