"""Local cross-entropy: each word picks its head independently (Stanza's training loss)."""

from __future__ import annotations

from ..model.outputs import ParserScores
from .common import LossOutput, combine, gold_arc_scores, normalized_arc_scores


class LocalCrossEntropy:
    """Per-dependent cross-entropy over heads, plus relation and auxiliary terms.

    The arc term is ``-sum_d log softmax_h(arc[:, h, d])[gold_d]`` over the words of the batch
    (the Bock paper §5, "local CE").
    """

    def __call__(self, scores: ParserScores, batch) -> LossOutput:
        logp = normalized_arc_scores(scores.arc, batch.mask)
        arc = -gold_arc_scores(logp, batch.heads, batch.mask).sum()
        return combine(arc, scores, batch)
