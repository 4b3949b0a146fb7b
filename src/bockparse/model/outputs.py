"""What the scorer hands to the losses and to decoding."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class ParserScores:
    """Scorer output for a batch, head-major as everywhere in bockparse.

    Attributes:
        arc: float ``[B, N, N]``, ``arc[b, h, d]`` the score of arc ``h -> d`` (the auxiliary
            linearization/distance terms already added, detached, as in Stanza).
        rel: float ``[B, N, N, R]``, ``rel[b, h, d, r]`` the score of relation ``r`` on ``h -> d``.
        linearization: float ``[B, N, N]`` or ``None``: the logit that the head of ``d`` lies to the
            right of ``d`` when it is ``h`` (Stanza/Dozat auxiliary term).
        distance: float ``[B, N, N]`` or ``None``: the raw distance score of ``h -> d``; the
            predicted distance is ``1 + softplus(distance)``.
    """

    arc: torch.Tensor
    rel: torch.Tensor
    linearization: torch.Tensor | None = None
    distance: torch.Tensor | None = None
