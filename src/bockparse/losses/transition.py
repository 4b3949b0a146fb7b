"""Training loss of the transition head (:class:`bockparse.heads.transition.TransitionParser`):
static-oracle cross-entropy plus relations.

The transition term is the cross-entropy of the oracle's transition at each oracle
configuration, the softmax taken over the transitions allowed there (the same ones greedy
decoding chooses from); the relation term is Stanza's, at the gold heads
(:func:`bockparse.losses.common.relation_loss`), exactly as for the graph-based conditions.
Both are summed and divided by the number of words scored, Stanza's normalisation
(``bockparse.losses.common``). Sentences left out as non-projective count in neither term.
A tagger's loss (:func:`bockparse.losses.tagging.tag_loss`) is added, over every word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch.nn.functional as F

from ..data.batch import Batch
from .common import LossOutput, relation_loss
from .tagging import tag_loss

if TYPE_CHECKING:  # the head's output; the head's package need not load with the losses
    from ..heads.transition.parser import TransitionScores


class TransitionLoss:
    """``loss(scores, batch) -> LossOutput`` (module docstring); no settings.

    ``counts`` carries ``oracle_sentences`` (sentences of the batch) and
    ``nonprojective_skipped`` (those left out for a non-projective gold tree), logged by the
    module as ``train/<name>``.
    """

    def __call__(self, scores: TransitionScores, batch: Batch) -> LossOutput:
        logits = scores.logits.masked_fill(~scores.valid, float("-inf"))
        arc = F.cross_entropy(logits, scores.targets, reduction="sum")
        mask = batch.mask & scores.kept[:, None]
        rel = relation_loss(scores.rel_at_gold, batch.rels, mask)
        words = int(mask.sum())
        aux = arc.new_zeros(())
        kept = int(scores.kept.sum())
        loss = (arc + rel) / max(words, 1)
        tag = None
        if scores.tags is not None:
            tag = tag_loss(scores.tags, batch)
            loss = loss + tag
            tag = tag.detach()
        return LossOutput(
            loss=loss,
            arc=arc.detach(),
            rel=rel.detach(),
            aux=aux,
            words=words,
            counts={
                "oracle_sentences": len(scores.kept),
                "nonprojective_skipped": len(scores.kept) - kept,
            },
            tag=tag,
        )
