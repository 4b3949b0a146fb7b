"""What the scorer hands to the losses and to decoding."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

from .tagger import TagScores


class ParserScores:
    """Scorer output for a batch, head-major as everywhere in bockparse.

    The relation scores are given (``rel``, all pairs) or computed on demand, from what the
    scorer fixed when it made the scores (its relation MLPs' outputs, their dropout drawn once):
    all ``N x N`` pairs when :attr:`rel` is first read, or only the pairs at given heads
    (:meth:`rel_at_heads`). The losses read the gold heads' (``batch.heads``), prediction the
    predicted heads': ``O(B N R)`` relation scores instead of ``O(B N^2 R)``, which dominates
    the biaffines' time and, on long sentences, memory. Either is computed under the grad,
    inference and autocast modes in force when the scores were made, wherever it is read, so
    it equals what an eager computation gave.

    Args:
        arc: float ``[B, N, N]``, ``arc[b, h, d]`` the score of arc ``h -> d`` (the auxiliary
            linearization/distance terms already added, detached, as in Stanza).
        rel: float ``[B, N, N, R]``, ``rel[b, h, d, r]`` the score of relation ``r`` on
            ``h -> d``; or ``None`` with ``rel_fn`` computing it.
        linearization: float ``[B, N, N]`` or ``None``: the logit that the head of ``d`` lies to
            the right of ``d`` when it is ``h`` (Stanza/Dozat auxiliary term).
        distance: float ``[B, N, N]`` or ``None``: the raw distance score of ``h -> d``; the
            predicted distance is ``1 + softplus(distance)``.
        rel_fn: ``() -> rel``, called once when :attr:`rel` is first read.
        rel_at_fn: ``heads [B, N] -> float [B, N, R]``, the relation scores on the arcs
            ``heads[b, d] -> d`` alone (``rel_fn``'s up to float rounding); ``None``: taken
            from :attr:`rel`.
        tags: the joint tagger's scores (:class:`~bockparse.model.tagger.TagScores`), or
            ``None`` for a scorer without a tagger.
    """

    def __init__(
        self,
        arc: torch.Tensor,
        rel: torch.Tensor | None = None,
        linearization: torch.Tensor | None = None,
        distance: torch.Tensor | None = None,
        *,
        rel_fn: Callable[[], torch.Tensor] | None = None,
        rel_at_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
        tags: TagScores | None = None,
    ) -> None:
        if rel is None and rel_fn is None:
            raise ValueError("ParserScores needs rel or rel_fn")
        self.arc = arc
        self.linearization = linearization
        self.distance = distance
        self.tags = tags
        self._rel = rel
        self._rel_fn = rel_fn
        self._rel_at_fn = rel_at_fn
        device = arc.device.type
        self._modes = (
            device,
            torch.is_inference_mode_enabled(),
            torch.is_grad_enabled(),
            torch.is_autocast_enabled(device),
            torch.get_autocast_dtype(device),
        )

    def _as_made(self, fn: Callable[..., torch.Tensor], *args: Any) -> torch.Tensor:
        """``fn(*args)`` under the modes in force when these scores were made."""
        device, inference, grad, autocast, dtype = self._modes
        with (
            torch.inference_mode(inference),
            torch.set_grad_enabled(grad),
            torch.autocast(device, dtype=dtype, enabled=autocast),
        ):
            return fn(*args)

    @property
    def rel(self) -> torch.Tensor:
        """float ``[B, N, N, R]``, computed on first use."""
        if self._rel is None:
            self._rel = self._as_made(self._rel_fn)
        return self._rel

    def rel_at_heads(self, heads: torch.Tensor) -> torch.Tensor:
        """float ``[B, N, R]``: ``rel[b, heads[b, d], d, :]`` (any value where ``heads`` is
        ``-1``), without the other pairs' scores when the scorer can give them alone (then
        whether or not :attr:`rel` was read: the same values either way)."""
        if self._rel_at_fn is not None:
            return self._as_made(self._rel_at_fn, heads)
        R = self.rel.shape[-1]
        index = heads.clamp(min=0)[:, None, :, None].expand(-1, 1, -1, R)  # [B, 1, N, R]
        return self.rel.gather(1, index).squeeze(1)

    def with_arc(self, arc: torch.Tensor) -> ParserScores:
        """These scores with other arc scores (``[B, N, N]``); the rest shared."""
        other = copy.copy(self)
        other.arc = arc
        return other
