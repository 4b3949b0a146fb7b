"""The Stanza-style biaffine head: a ``Batch`` in, head-major ``ParserScores`` out.

Architecture (Qi et al. 2018, Stanza's ``GraphParser``; Dozat & Manning 2017): the inputs and
the BiLSTM of its :class:`~bockparse.model.context.Contextualizer`, then deep biaffine scorers
for arcs (1 output), relations (``R``), and Stanza's linearization and distance terms (1 each).
As in Stanza the two auxiliary terms are added to the arc scores, detached, for every pair:
``logsigmoid(lin * sign(h - d))`` and ``-log1p((|h - d| - (1 + softplus(dist)))^2 / 2)``; their
own losses use the raw scores returned in ``ParserScores``
(``bockparse.losses.common.auxiliary_loss``).

No masking and no loss here: scores are finite everywhere (the losses and decoders ignore
column 0, the diagonal and padding), and the output is the same in train and eval mode apart
from dropout. The run's decoder turns the scores into trees (``predict`` is ``None``).

Configured by ``conf/model/biaffine.yaml`` (``_partial_``; the contextualiser's settings are its
``context`` node, ``conf/model/context/``, composed by the transition head too; a joint tagger's
its ``tagger`` node, ``conf/model/tagger/``, in ``biaffine-tagger.yaml``), completed with the
vocabularies and the encoder::

    encoder = hydra.utils.instantiate(cfg.encoder.model)  # None for encoder=none
    scorer = hydra.utils.instantiate(cfg.model)(vocabs=datamodule.vocabs, encoder=encoder)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import torch
import torch.nn.functional as F

from ..data.batch import Batch
from ..data.vocab import Vocabs
from ..model.encoder import TransformerEncoder
from ..model.outputs import ParserScores
from .common import ContextHead


class BiaffineScorer(ContextHead):
    """Stanza's biaffine parser as a head: ``forward(batch) -> ParserScores`` (module doc), the
    arc, relation and auxiliary biaffines on its contextualiser's states.

    Args:
        vocabs, encoder, context, biaffine_init_std: as
            :class:`~bockparse.heads.common.ContextHead`.
        arc_hidden: arc MLP width.
        rel_hidden: relation MLP width.
        linearization, distance: Stanza's auxiliary scorers (and their terms in the arc
            scores).
        aux_hidden: MLP width of the linearization and distance scorers.
        tagger: as :class:`~bockparse.heads.common.ContextHead` (``None``: no tagger).

    Raises:
        ValueError: as :class:`~bockparse.heads.common.ContextHead`.
    """

    def __init__(
        self,
        *,
        vocabs: Vocabs,
        encoder: TransformerEncoder | None,
        context: Mapping[str, Any],
        arc_hidden: int,
        rel_hidden: int,
        linearization: bool,
        distance: bool,
        aux_hidden: int,
        biaffine_init_std: float,
        tagger: Mapping[str, Any] | None = None,
    ):
        super().__init__(vocabs=vocabs, encoder=encoder, context=context,
                         biaffine_init_std=biaffine_init_std, tagger=tagger)  # fmt: skip
        self.arc = self.biaffine(arc_hidden, 1)
        self.rel = self.biaffine(rel_hidden, self.num_rels)
        self.linearization = self.biaffine(aux_hidden, 1) if linearization else None
        self.distance = self.biaffine(aux_hidden, 1) if distance else None

    def forward(self, batch: Batch, gold: Collection[str] | None = None) -> ParserScores:
        """Score every arc and relation of a batch (and its tags, with a tagger).

        Args:
            batch: a ``Batch`` (``subwords`` needed when there is an encoder).
            gold: the tag inputs read from the batch rather than the tagger's predictions
                (:meth:`~bockparse.heads.common.ContextHead.contextualize`).

        Returns:
            ``ParserScores`` with ``arc [B, N, N]`` (auxiliary terms added, detached),
            the relation scores on demand (``rel_at_heads(heads) [B, N, R]``, all pairs
            ``rel [B, N, N, R]``), and ``linearization`` / ``distance`` ``[B, N, N]`` or
            ``None`` when off; all head-major ``[b, h, d]`` and finite; ``tags`` the tagger's
            scores (``None`` without one).
        """
        x, tags = self.contextualize(batch, gold)
        arc = self.arc(x).squeeze(-1)  # [B, N, N]
        # The relation MLPs here, where the dropout draws keep their order; the pairs on demand
        # from these projections (ParserScores): the losses read the gold heads' alone, the
        # prediction the predicted heads'.
        rel = self.rel.project(x)  # ([u; 1], [v; 1]): [B, N, K + 1] each
        lin = dist = None
        if self.linearization is not None or self.distance is not None:
            positions = torch.arange(x.shape[1], device=x.device)
            offset = (positions[:, None] - positions[None, :]).to(arc.dtype)  # [N, N]: h - d
        if self.linearization is not None:
            lin = self.linearization(x).squeeze(-1)  # [B, N, N]
            arc = arc + F.logsigmoid(lin * torch.sign(offset)).detach()
        if self.distance is not None:
            dist = self.distance(x).squeeze(-1)  # [B, N, N]
            predicted = 1.0 + F.softplus(dist)
            arc = arc - torch.log1p((offset.abs() - predicted) ** 2 / 2).detach()
        return ParserScores(
            arc=arc,
            linearization=lin,
            distance=dist,
            rel_fn=lambda: self.rel.pairs(*rel),  # [B, N, N, R]
            rel_at_fn=lambda heads: self.rel.pairs_at(*rel, heads),  # [B, N, R]
            tags=tags,
        )
