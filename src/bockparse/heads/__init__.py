"""Parser heads: the part of a parser that turns the contextualiser's states into scores for the
loss and into trees. Each composes the shared building blocks of :mod:`bockparse.model` through
:class:`~bockparse.heads.common.ContextHead` and follows :class:`ParserHead`, the one contract
that the training module (:class:`bockparse.training.module.ParserModule`), the losses, the
parser and the model files rely on.

Heads (:data:`HEADS`, one line each; the key is the kind a model file names, the value the
class, also the ``_target_`` of its ``conf/model/<kind>.yaml``)::

    biaffine     BiaffineScorer    graph scores (ParserScores), decoded by the run's decoder
    transition   TransitionParser  oracle transition scores (TransitionScores), decodes itself

Importing this package imports no torch; :func:`head_classes` imports the heads.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch
    from torch import nn

    from ..data.batch import Batch
    from ..model.encoder import TransformerEncoder
    from ..model.tagger import Tagger, TagScores

# Model-file kind -> the head's class (the project's own paths, never read from a file).
HEADS = {
    "biaffine": "bockparse.heads.biaffine.BiaffineScorer",
    "transition": "bockparse.heads.transition.parser.TransitionParser",
}


class ParserHead(Protocol):
    """What the training module, the losses and the parser may call on a head (an
    ``nn.Module``: its parameters are the parser's, the encoder's among them).

    Attributes:
        kind: the head's model-file kind, its key in :data:`HEADS`.
        encoder: the contextualiser's transformer, or ``None``: its parameters form their own
            group (their own learning rate and freeze in ``ParserModule``).
        tagger: the joint tagger (:class:`~bockparse.model.tagger.Tagger`), or ``None``.
        predict: ``None`` for a head whose scores the run's decoder turns into trees
            (:func:`bockparse.predict.predict_trees`); a head that decodes itself has
            ``predict(batch, gold=None) -> (heads, rels, tags)``, int64 ``[B, N]`` each,
            ``-1`` at ROOT and padding, and the tagger's scores (``None`` without one), and
            takes no decoder (``decoder=null``).
    """

    @property
    def kind(self) -> str: ...

    @property
    def encoder(self) -> TransformerEncoder | None: ...

    tagger: Tagger | None

    predict: Callable[..., tuple[torch.Tensor, torch.Tensor, TagScores | None]] | None

    def __call__(self, batch: Batch, gold: Collection[str] | None = None) -> Any:
        """The batch's scores, as the run's loss takes them (``loss(scores, batch)``), their
        ``tags`` the tagger's (``None`` without one). ``gold``: the tag inputs read from the
        batch rather than the tagger's predictions
        (:meth:`bockparse.heads.common.ContextHead.contextualize`). Relation scores are made
        only at the pairs read: every loss reads them at the gold heads alone
        (``ParserScores.rel_at_heads(batch.heads)``, ``TransitionScores.rel_at_gold``), so no
        head builds the ``[B, N, N, R]`` tensor for its loss."""
        ...


def head_classes() -> dict[str, type[nn.Module]]:
    """Kind -> head class, for every head of :data:`HEADS` (imported here)."""
    classes = {}
    for kind, path in HEADS.items():
        module, name = path.rsplit(".", 1)
        classes[kind] = getattr(import_module(module), name)
    return classes


def kind_of(cls: type) -> str:
    """The model-file kind of a head class (its key in :data:`HEADS`).

    Raises:
        KeyError: the class is not one of :data:`HEADS`.
    """
    path = f"{cls.__module__}.{cls.__qualname__}"
    kinds = {p: k for k, p in HEADS.items()}
    if path not in kinds:
        raise KeyError(f"{path} is not a registered parser head (bockparse.heads.HEADS)")
    return kinds[path]


__all__ = ["HEADS", "ParserHead", "head_classes", "kind_of"]
