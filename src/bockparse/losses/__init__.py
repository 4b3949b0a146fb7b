"""Training losses over :class:`~bockparse.model.outputs.ParserScores` and a batch.

Each loss is a callable ``loss(scores, batch) -> LossOutput``; ``batch`` provides ``heads``,
``rels`` (int64 ``[B, N]``), ``mask`` (bool ``[B, N]``, True at words) and ``lengths``
(int64 ``[B]``, words). Configs pick one by name, ``loss=local-ce | hinge | crf`` (``conf/loss/``,
whose ``loss._target_`` is the class); ``loss=transition`` (:class:`TransitionLoss`) takes the
transition head's ``TransitionScores`` instead. A scorer with a joint tagger adds its loss to
each (:func:`tag_loss`, ``bockparse.losses.tagging``).
"""

from .common import LossOutput
from .crf import TreeCRF, log_partition
from .hinge import StructuredHinge
from .local import LocalCrossEntropy
from .tagging import tag_loss
from .transition import TransitionLoss

__all__ = [
    "LocalCrossEntropy",
    "LossOutput",
    "StructuredHinge",
    "TransitionLoss",
    "TreeCRF",
    "log_partition",
    "tag_loss",
]
