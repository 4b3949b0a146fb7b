"""A greedy transition parser on the graph parsers' encoder.

:class:`TransitionParser` is built from the graph parsers' parts: the same
:class:`~bockparse.model.context.Contextualizer` (the inputs and the BiLSTM,
:class:`~bockparse.heads.common.ContextHead`) and the same relation biaffine as
:class:`~bockparse.heads.biaffine.BiaffineScorer`, with a transition
classifier where the graph scorer has its arc biaffine. The comparison with the graph-based
conditions then differs only in how heads are chosen (a greedy walk through projective
configurations instead of an exact search over all trees), and relations are chosen the same
way in both, at the predicted head (:func:`bockparse.predict.best_relations`).

Transition classifier (the neural oracle of the section "Training the oracle" of the
textbook chapter *Dependency Parsing*): the BiLSTM states of the top ``stack_features``
stack items and the first ``buffer_features`` buffer items (a trained vector where there is no
such item), concatenated, then ``Linear -> ReLU -> dropout -> Linear`` to one score per
transition type of the system. Transitions whose precondition fails are never chosen (their
scores are masked in training and decoding alike), so every prediction is a projective tree
with one word on ROOT.

Training scores the configurations that the static oracle walks through on the gold tree
(``forward``); prediction walks greedily from the initial configuration (``predict``), all
sentences of a batch in lock step, ``2 n`` steps each. Relation labels do not enter the
features, so labelling each predicted arc at the end with the relation scorer's best label is
the same decision as taking the labelled transition while walking.

Configured by ``conf/model/transition.yaml`` (``model=transition``, trained with
``loss=transition``), which composes the same ``model.context`` (``conf/model/context/``) as
``conf/model/biaffine.yaml``: the contextualiser's settings are the graph scorer's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ...data.batch import Batch
from ...data.vocab import Vocabs
from ...model.encoder import TransformerEncoder
from ...model.tagger import TagScores
from ...predict import best_relations
from ..common import ContextHead
from .oracle import NonProjectiveError, oracle_walk
from .systems import Transition, get_system


@dataclass
class TransitionScores:
    """Scores of the static oracle's configurations of a batch's gold trees.

    Attributes:
        logits: float ``[T, K]``: at each oracle configuration (sentences in batch order, steps
            in order), the score of each transition type of ``system.kinds``; unmasked.
        targets: int64 ``[T]``: the oracle's transition type (an index into ``system.kinds``).
        valid: bool ``[T, K]``: the types whose precondition holds there.
        rel_at_gold: float ``[B, N, R]``, the relation scores on the gold arcs
            ``heads[b, d] -> d`` (0 at ROOT and padding), all that the loss reads of them.
        kept: bool ``[B]``: the sentences scored; False for a non-projective gold tree left out
            under ``projective_only``.
        tags: the joint tagger's scores, or ``None`` without a tagger.
    """

    logits: torch.Tensor
    targets: torch.Tensor
    valid: torch.Tensor
    rel_at_gold: torch.Tensor
    kept: torch.Tensor
    tags: TagScores | None = None


class TransitionParser(ContextHead):
    """Arc-standard or arc-eager greedy parser on the graph parsers' contextualiser (module doc).

    Args:
        vocabs, encoder, context, biaffine_init_std: as
            :class:`~bockparse.heads.common.ContextHead` (the contextualiser's ``dropout`` also
            after the classifier's hidden layer and in the relation biaffine).
        system: ``"arc-standard"`` or ``"arc-eager"``.
        projective_only: leave non-projective gold trees out of training (``kept`` says which);
            when False such a tree raises :class:`NonProjectiveError`.
        stack_features: stack items, from the top, whose states form the features.
        buffer_features: buffer items, from the front, whose states form the features.
        arc_hidden: hidden width of the transition classifier (which takes the arc scorer's
            place).
        rel_hidden: relation MLP width.
        aux_hidden: unused: the width of the biaffine head's auxiliary scorers, which an
            experiment's preset sets for whichever head its condition chose
            (``conf/model/transition.yaml``).
        tagger: as :class:`~bockparse.heads.common.ContextHead` (``None``: no tagger).

    Raises:
        ValueError: an unknown system, or no feature item; as
            :class:`~bockparse.heads.common.ContextHead`.
    """

    def __init__(
        self,
        *,
        vocabs: Vocabs,
        encoder: TransformerEncoder | None,
        system: str,
        projective_only: bool,
        stack_features: int,
        buffer_features: int,
        context: Mapping[str, Any],
        arc_hidden: int,
        rel_hidden: int,
        aux_hidden: int,
        biaffine_init_std: float,
        tagger: Mapping[str, Any] | None = None,
    ):
        if stack_features < 0 or buffer_features < 0 or stack_features + buffer_features == 0:
            raise ValueError(
                f"need at least one feature item, got stack_features={stack_features}, "
                f"buffer_features={buffer_features}"
            )
        super().__init__(vocabs=vocabs, encoder=encoder, context=context,
                         biaffine_init_std=biaffine_init_std, tagger=tagger)  # fmt: skip
        width = self.width
        self.rel = self.biaffine(rel_hidden, self.num_rels)
        self.system = get_system(system)
        self.projective_only = projective_only
        self.stack_features = stack_features
        self.buffer_features = buffer_features
        # The state of a missing item (below the stack bottom, past the buffer end).
        self.empty = nn.Parameter(torch.randn(width) / width**0.5)
        self.classifier = nn.Sequential(
            nn.Linear((stack_features + buffer_features) * width, arc_hidden),
            nn.ReLU(),
            nn.Dropout(self.dropout),
            nn.Linear(arc_hidden, len(self.system.kinds)),
        )

    def _features(self, x: torch.Tensor, items: list[list[int]], rows: list[int]) -> torch.Tensor:
        """Concatenated states of feature items.

        Args:
            x: float ``[B, N, W]`` BiLSTM states.
            items: per configuration, its item positions (-1: none).
            rows: per configuration, its sentence in the batch.

        Returns:
            float ``[len(items), F * W]``.
        """
        B, N, W = x.shape
        flat = torch.cat([x.reshape(B * N, W), self.empty[None, :]], dim=0)  # [B N + 1, W]
        index = np.asarray(items, dtype=np.int64).reshape(len(items), -1)  # [T, F]
        index = np.where(index >= 0, np.asarray(rows, dtype=np.int64)[:, None] * N + index, B * N)
        picked = flat[torch.from_numpy(index).to(x.device)]  # [T, F, W]
        return picked.reshape(len(items), -1)

    def forward(self, batch: Batch, gold: Collection[str] | None = None) -> TransitionScores:
        """Score the static oracle's configurations of the batch's gold trees (and the tags,
        with a tagger; ``gold`` as :meth:`~bockparse.heads.common.ContextHead.contextualize`).

        Time: the encoder, the relation biaffine at the gold heads alone, and O(n) Python per
        sentence for the oracle.

        Raises:
            NonProjectiveError: a gold tree is non-projective and ``projective_only`` is False.
        """
        x, tags = self.contextualize(batch, gold)  # [B, N, W]
        rel_at_gold = self.rel.at(x, batch.heads)  # [B, N, R]
        gold = batch.heads.cpu().numpy()
        lengths = batch.lengths.tolist()
        kinds = {k: i for i, k in enumerate(self.system.kinds)}
        items, rows, targets, valid = [], [], [], []
        kept = np.ones(len(lengths), dtype=bool)
        for b, n in enumerate(lengths):
            heads = gold[b, : n + 1].copy()
            heads[0] = -1
            try:
                steps = [
                    (c.features(self.stack_features, self.buffer_features), kinds[t.kind],
                     self.system.valid(c))
                    for c, t in oracle_walk(self.system, heads)
                ]  # fmt: skip
            except NonProjectiveError as err:
                if not self.projective_only:
                    raise NonProjectiveError(
                        f"sentence {int(batch.sentence_ids[b])} of the batch: {err}"
                    ) from None
                kept[b] = False
                continue
            for features, target, ok in steps:
                items.append(features)
                rows.append(b)
                targets.append(target)
                valid.append(ok)
        device = x.device
        K = len(self.system.kinds)
        if items:
            features = self._features(x, items, rows)
        else:  # every sentence left out
            features = x.new_zeros(0, (self.stack_features + self.buffer_features) * x.shape[-1])
        logits = self.classifier(features)  # [T, K]
        return TransitionScores(
            logits=logits,
            targets=torch.tensor(targets, dtype=torch.int64, device=device),
            valid=torch.tensor(valid, dtype=torch.bool, device=device).reshape(-1, K),
            rel_at_gold=rel_at_gold,
            kept=torch.from_numpy(kept).to(device),
            tags=tags,
        )

    @torch.no_grad()
    def predict(
        self, batch: Batch, gold: Collection[str] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, TagScores | None]:
        """Greedy trees: at each step the best allowed transition, then relations at the heads.

        Time: ``2 max n`` classifier calls on the unfinished sentences, O(n) Python per
        sentence, and the relation biaffine.

        Args:
            batch: the batch.
            gold: as :meth:`~bockparse.heads.common.ContextHead.contextualize`.

        Returns:
            ``(heads, rels, tags)``: int64 ``[B, N]`` heads and relation ids on the batch's
            device, ``-1`` at ROOT and padding, as :func:`bockparse.predict.predict_trees`
            (every row a projective single-root tree), and the tagger's scores (``None``
            without a tagger).
        """
        x, tags = self.contextualize(batch, gold)  # [B, N, W]
        B, N, _ = x.shape
        system, kinds = self.system, self.system.kinds
        configs = [system.initial(n) for n in batch.lengths.tolist()]
        active = [b for b in range(B) if not system.terminal(configs[b])]
        while active:
            items = [configs[b].features(self.stack_features, self.buffer_features) for b in active]
            valid = torch.tensor([system.valid(configs[b]) for b in active], device=x.device)
            logits = self.classifier(self._features(x, items, active))  # [A, K]
            choice = logits.masked_fill(~valid, float("-inf")).argmax(dim=-1).tolist()
            for b, k in zip(active, choice, strict=True):
                system.apply(configs[b], Transition(kinds[k]))
            active = [b for b in active if not system.terminal(configs[b])]
        heads = np.full((B, N), -1, dtype=np.int64)
        for b, c in enumerate(configs):
            heads[b, 1 : c.n + 1] = c.heads[1:]
        heads = torch.from_numpy(heads).to(x.device)
        return heads, best_relations(self.rel.at(x, heads), heads), tags
