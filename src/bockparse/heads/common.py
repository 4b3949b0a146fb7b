"""What every parser head shares: :class:`ContextHead`, the constructor part that builds the
:class:`~bockparse.model.context.Contextualizer` a head scores from, the biaffines on its
states, and the :class:`~bockparse.heads.ParserHead` members that follow from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from ..data.batch import Batch
from ..data.vocab import Vocabs
from ..model.biaffine import DeepBiaffine
from ..model.context import Contextualizer
from ..model.encoder import TransformerEncoder
from . import kind_of


class ContextHead(nn.Module):
    """A parser head on a :class:`~bockparse.model.context.Contextualizer` (``self.context``).

    A head class takes these arguments by name in its own signature (the model schema checks a
    file's parameters against it: :func:`bockparse.modelfile.validate_spec`), passes them here,
    then builds its own layers, biaffines by :meth:`biaffine`, in a fixed order (the order of the
    random draws of a seeded run).

    Args:
        vocabs: the training vocabularies (embedding sizes, and ``R``).
        encoder: the transformer input, or ``None`` for none.
        context: the :class:`~bockparse.model.context.Contextualizer`'s other arguments
            (``conf/model/context/``); its ``dropout`` is also the head's (in its MLPs and
            classifier).
        biaffine_init_std: initial standard deviation of every biaffine's ``W``; 0 (Stanza's):
            all zero (:class:`~bockparse.model.biaffine.DeepBiaffine`).

    Raises:
        ValueError: no input is enabled.
    """

    # The ParserHead contract: a head that decodes itself defines predict(batch).
    predict: Callable[[Batch], tuple[torch.Tensor, torch.Tensor]] | None = None

    def __init__(
        self,
        *,
        vocabs: Vocabs,
        encoder: TransformerEncoder | None,
        context: Mapping[str, Any],
        biaffine_init_std: float,
    ):
        super().__init__()
        self.context = Contextualizer(vocabs=vocabs, encoder=encoder, **dict(context))
        self.num_rels = len(vocabs.rels)
        self.biaffine_init_std = biaffine_init_std

    @property
    def kind(self) -> str:
        """The model-file kind (:data:`bockparse.heads.HEADS`)."""
        return kind_of(type(self))

    @property
    def encoder(self) -> TransformerEncoder | None:
        """The contextualiser's transformer (its own learning rate in ``ParserModule``)."""
        return self.context.encoder

    @property
    def width(self) -> int:
        """The width of the contextualiser's states."""
        return self.context.width

    @property
    def dropout(self) -> float:
        """The contextualiser's dropout probability, the head's too."""
        return self.context.dropout.p

    def biaffine(self, hidden: int, outputs: int) -> DeepBiaffine:
        """A deep biaffine scorer on the states: MLP width ``hidden``, ``outputs`` scores per
        pair, the head's dropout and ``biaffine_init_std``."""
        return DeepBiaffine(self.width, hidden, outputs, self.dropout, self.biaffine_init_std)
