"""Pieces every loss shares: masks, head normalisation, relation and auxiliary terms.

Every function here computes in at least float32 (``bf16-mixed`` training hands it bfloat16
scores): log-softmax, cross-entropy and sums over a batch's words need the mantissa.

Stanza's normalisation (kept unchanged across conditions, as in the Bock paper's appendix on
structured hinge training): every term is summed over the words of the batch and the total is
divided by the number of words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..model.outputs import ParserScores
from .tagging import tag_loss


def at_least_float(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float32 if it is a narrower float (bfloat16, float16), else ``x`` itself."""
    return x.float() if x.dtype in (torch.bfloat16, torch.float16) else x


def head_mask(mask: torch.Tensor) -> torch.Tensor:
    """Admissible arcs of a padded batch.

    Args:
        mask: bool ``[B, N]``, True at words (False at ROOT and padding).

    Returns:
        bool ``[B, N, N]``, True where ``h`` is ROOT or a word, ``d`` is a word and ``h != d``.
    """
    heads_ok = mask.clone()
    heads_ok[:, 0] = True
    N = mask.shape[1]
    eye = torch.eye(N, dtype=torch.bool, device=mask.device)
    return heads_ok[:, :, None] & mask[:, None, :] & ~eye


def normalized_arc_scores(arc: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Column-wise log-softmax over heads (``dim=-2``), ``-inf`` on inadmissible arcs.

    Args:
        arc: float ``[B, N, N]``, ``arc[b, h, d]``.
        mask: bool ``[B, N]``, True at words.

    Returns:
        float ``[B, N, N]`` (at least float32); columns of non-words are all ``-inf``.
    """
    arc = at_least_float(arc)
    allowed = head_mask(mask)
    # Mask only inside word columns: an all -inf column would give NaN, and NaN times the zero
    # gradient of a masked cell is still NaN.
    logp = torch.log_softmax(arc.masked_fill(~allowed & mask[:, None, :], float("-inf")), dim=-2)
    return logp.masked_fill(~allowed, float("-inf"))


def gold_arc_scores(scores: torch.Tensor, heads: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``scores[b, heads[b, d], d]`` at words, 0 elsewhere.

    Args:
        scores: float ``[B, N, N]``; heads: int64 ``[B, N]``; mask: bool ``[B, N]``.

    Returns:
        float ``[B, N]`` (at least float32).
    """
    scores = at_least_float(scores)
    h = heads.clamp(min=0).masked_fill(~mask, 0)
    picked = scores.gather(1, h[:, None, :]).squeeze(1)
    return picked.masked_fill(~mask, 0.0)


def relation_loss(at_gold: torch.Tensor, rels: torch.Tensor, mask: torch.Tensor):
    """Summed relation cross-entropy at the gold heads (Stanza's relation term).

    Args:
        at_gold: float ``[B, N, R]``, the relation scores on the gold arcs
            (``ParserScores.rel_at_heads(batch.heads)``; any value at ROOT and padding);
        rels: int64 ``[B, N]``, -1 where the relation is unknown (not in the training
            vocabulary), which is then skipped; mask: bool ``[B, N]``.

    Returns:
        Scalar tensor.
    """
    at_gold = at_least_float(at_gold)
    return F.cross_entropy(at_gold[mask], rels[mask], ignore_index=-1, reduction="sum")


def auxiliary_loss(scores: ParserScores, heads: torch.Tensor, mask: torch.Tensor):
    """Stanza's linearization and distance terms at the gold heads (0 when both are off).

    The linearization term is the logistic loss of the head's side of the dependent; the distance
    term is ``-log(1 + (|h - d| - (1 + softplus(distance)))^2 / 2)`` summed at gold arcs.

    Returns:
        Scalar tensor.
    """
    total = at_least_float(scores.arc).new_zeros(())
    if scores.linearization is None and scores.distance is None:
        return total
    h = heads.clamp(min=0).masked_fill(~mask, 0)
    d = torch.arange(mask.shape[1], device=mask.device)[None, :]
    offset = (h - d).to(total.dtype)  # [B, N]
    if scores.linearization is not None:
        lin = at_least_float(scores.linearization).gather(1, h[:, None, :]).squeeze(1)
        total = total - F.logsigmoid(lin * torch.sign(offset))[mask].sum()
    if scores.distance is not None:
        dist = at_least_float(scores.distance).gather(1, h[:, None, :]).squeeze(1)
        pred = 1.0 + F.softplus(dist)
        total = total + torch.log1p((offset.abs() - pred) ** 2 / 2)[mask].sum()
    return total


@dataclass
class OracleCall:
    """The loss-augmented problem a structured loss solved at one update, and its answer (for
    :class:`bockparse.training.trajectory.TrajectoryTrace`).

    Attributes:
        scores: float32 ``[B, N, N]`` on the CPU, ``S + Δ`` exactly as the oracle received it.
        lengths: int64 ``[B]`` on the CPU, words per sentence.
        heads: int64 ``[B, N]`` on the CPU, the oracle's maximisers (``-1`` at ROOT, padding).
        single_root: whether the oracle maximised over single-root trees.
    """

    scores: torch.Tensor
    lengths: torch.Tensor
    heads: torch.Tensor
    single_root: bool


@dataclass
class LossOutput:
    """A loss value and its parts, for the optimiser and the logs.

    Attributes:
        loss: scalar, ``(arc + rel + aux) / words``, plus ``tag`` with a tagger; the only
            tensor with a graph.
        arc, rel, aux: the summed terms, detached.
        words: number of words in the batch.
        decode_seconds: wall time of loss-augmented inference (0 for local losses).
        counts: integer tallies to log as per-epoch sums (e.g. sentences an oracle skipped).
        oracle: the loss-augmented problem and its maximisers (structured losses with an
            oracle; ``None`` otherwise).
        tag: the joint tagger's weighted loss (:func:`bockparse.losses.tagging.tag_loss`),
            detached; ``None`` without a tagger.
    """

    loss: torch.Tensor
    arc: torch.Tensor
    rel: torch.Tensor
    aux: torch.Tensor
    words: int
    decode_seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    oracle: OracleCall | None = None
    tag: torch.Tensor | None = None


def combine(arc: torch.Tensor, scores: ParserScores, batch, decode_seconds: float = 0.0):
    """Add the relation and auxiliary terms to ``arc`` and normalise by the word count; with a
    tagger (``scores.tags``), add its loss (:func:`bockparse.losses.tagging.tag_loss`)."""
    rel = relation_loss(scores.rel_at_heads(batch.heads), batch.rels, batch.mask)
    aux = auxiliary_loss(scores, batch.heads, batch.mask)
    words = int(batch.mask.sum())
    loss = (arc + rel + aux) / max(words, 1)
    tag = None
    if scores.tags is not None:
        tag = tag_loss(scores.tags, batch)
        loss = loss + tag
        tag = tag.detach()
    return LossOutput(loss, arc.detach(), rel.detach(), aux.detach(), words, decode_seconds,
                      tag=tag)  # fmt: skip
