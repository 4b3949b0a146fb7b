"""The joint tagger: one MLP classifier per tag column on the contextualiser's states.

Architecture (UDPipe 2, Straka 2018; Stanza's tagger, Qi et al. 2018, for the MLP): for each
enabled column of UPOS, XPOS and FEATS, ``Linear(W, hidden) -> ReLU -> dropout ->
Linear(hidden, K)`` on each word's BiLSTM state and its own inputs beside it
(:meth:`bockparse.heads.common.ContextHead.contextualize`), ``K`` the column's training tags. FEATS
is one label per word, the whole column (``Case=Nom|Number=Sing``), as UDPipe 2 predicts it
(Stanza factors it by feature); the CoNLL 2018 evaluator's UFeats then compares its universal
features (:func:`bockparse.metrics.universal_feats`).

A tagger predicts training tags only: class ``k`` is the tag id ``k + FIRST_TAG`` of the
column's vocabulary (:mod:`bockparse.data.vocab`), never a special (padding, ``<unk>``,
``<root>``). The loss is :func:`bockparse.losses.tagging.tag_loss`. Where the parser reads tag
inputs, their ids come from these predictions
(:meth:`bockparse.heads.common.ContextHead.contextualize`: two passes of the BiLSTM).

Configured by ``model.tagger`` (``conf/model/tagger/``); absent: no tagger.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..data.conllu import TAG_FIELDS
from ..data.vocab import SPECIALS, Vocabs

TAG_COLUMNS = tuple(TAG_FIELDS)  # upos, xpos, feats: Batch, Sentence and Vocabs fields
FIRST_TAG = len(SPECIALS)  # the id of a column's first training tag (class 0)
TRAIN_TAGS = ("predicted", "gold")  # model.tagger.train_tags: the parser's tag inputs in training


@dataclass
class TagScores:
    """The tagger's output for a batch.

    Attributes:
        logits: column (of :data:`TAG_COLUMNS`) -> float ``[B, N, K]``, ``K`` the column's
            training tags; class ``k`` is tag id ``k + FIRST_TAG``; any value at ROOT and
            padding.
        loss_weight: the tag loss's weight beside the parser's
            (:func:`bockparse.losses.tagging.tag_loss`).
    """

    logits: dict[str, torch.Tensor]
    loss_weight: float

    def predicted(self) -> dict[str, torch.Tensor]:
        """Column -> int64 ``[B, N]``: the best tag's id in the column's vocabulary (any value
        at ROOT and padding); no gradient."""
        return {c: s.detach().argmax(dim=-1) + FIRST_TAG for c, s in self.logits.items()}


class Tagger(nn.Module):
    """MLP classifiers of the enabled tag columns (module doc).

    Args:
        vocabs: the training vocabularies (each column's tags).
        width: the width of the vectors it reads (states and inputs).
        dropout: after each hidden layer (the head's dropout).
        upos, xpos, feats: predict that column.
        hidden: each MLP's hidden width.
        loss_weight: the weight of the tag loss beside the parser's.
        train_tags: the parser's tag inputs in training (:data:`TRAIN_TAGS`): ``"predicted"``,
            this tagger's (the recipe: the parser trains on the tags it will read), or
            ``"gold"``, the training file's.

    Attributes:
        columns: the columns predicted, in :data:`TAG_COLUMNS` order.

    Raises:
        ValueError: no column enabled, a column without training tags, or an unknown
            ``train_tags``.
    """

    def __init__(
        self,
        *,
        vocabs: Vocabs,
        width: int,
        dropout: float,
        upos: bool,
        xpos: bool,
        feats: bool,
        hidden: int,
        loss_weight: float,
        train_tags: str,
    ):
        super().__init__()
        self.columns = tuple(
            c for c, on in zip(TAG_COLUMNS, (upos, xpos, feats), strict=True) if on
        )
        if not self.columns:
            raise ValueError("the tagger predicts no column: enable upos, xpos or feats")
        if train_tags not in TRAIN_TAGS:
            raise ValueError(f"train_tags must be one of {', '.join(TRAIN_TAGS)}, got "
                             f"{train_tags!r}")  # fmt: skip
        empty = [c for c in self.columns if len(getattr(vocabs, c)) <= FIRST_TAG]
        if empty:
            raise ValueError(f"the tagger would predict {', '.join(empty)}, but the training "
                             "vocabularies hold no such tag")  # fmt: skip
        self.loss_weight = loss_weight
        self.train_tags = train_tags
        self.mlps = nn.ModuleDict({
            c: nn.Sequential(
                nn.Linear(width, hidden),
                nn.ReLU(),
                nn.Dropout(dropout),
                nn.Linear(hidden, len(getattr(vocabs, c)) - FIRST_TAG),
            )
            for c in self.columns
        })  # fmt: skip

    def forward(self, x: torch.Tensor) -> TagScores:
        """Tag scores of every position.

        Args:
            x: float ``[B, N, W]``, what it reads of each position (the contextualiser's
                states and the position's non-tag inputs).

        Returns:
            :class:`TagScores`, ``logits[c]`` ``[B, N, K_c]``.
        """
        return TagScores({c: self.mlps[c](x) for c in self.columns}, self.loss_weight)
