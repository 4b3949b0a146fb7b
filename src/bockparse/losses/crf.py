"""Tree CRF: negative log-likelihood of the gold tree under a Gibbs distribution over trees.

The partition function over non-projective trees comes from the matrix-tree theorem
(Koo et al. 2007): with weights ``w[h, d] = exp(arc[h, d])`` it is ``det(L̂)`` for the
Laplacian ``L̂`` over the words, ``L̂[d, d] = sum_h w[h, d]`` and ``L̂[h, d] = -w[h, d]``. For
single-root trees the root weights leave the diagonal and replace the first row instead.
Marginals, if wanted, are the gradient of ``log Z`` (autograd). Goes beyond the Bock paper and
enables the loss ablation.
"""

from __future__ import annotations

import torch

from ..model.outputs import ParserScores
from .common import LossOutput, at_least_float, combine, gold_arc_scores, head_mask


def log_partition(arc: torch.Tensor, mask: torch.Tensor, single_root: bool) -> torch.Tensor:
    """``log Z`` per sentence over all (single-root) dependency trees.

    Args:
        arc: float ``[B, N, N]``, ``arc[b, h, d]``; inadmissible arcs are ignored.
        mask: bool ``[B, N]``, True at words (at least one per sentence).
        single_root: sum over single-root trees only.

    Returns:
        float ``[B]`` in ``arc``'s dtype, at least float32 (computed in float64).
    """
    allowed = head_mask(mask)
    x = arc.double().masked_fill(~allowed, float("-inf"))
    # Shift each column by its maximum so that exp stays in range; log Z shifts by the sum.
    shift = x.amax(dim=1, keepdim=True).masked_fill(~mask[:, None, :], 0.0)  # [B, 1, N]
    w = torch.exp(x - shift).masked_fill(~allowed, 0.0)  # [B, N, N]
    root, inner = w[:, 0, 1:], w[:, 1:, 1:]  # [B, n], [B, n, n]
    words = mask[:, 1:]
    eye = torch.eye(inner.shape[-1], dtype=w.dtype, device=w.device)
    diagonal = inner.sum(dim=1) + (0.0 if single_root else root)
    lap = torch.diag_embed(diagonal) - inner
    if single_root:
        lap = torch.cat([root[:, None, :], lap[:, 1:, :]], dim=1)
    # Padding positions become identity rows and columns (determinant unchanged).
    pad = ~words
    lap = lap.masked_fill(pad[:, :, None] | pad[:, None, :], 0.0) + eye * pad[:, None, :]
    logdet = torch.linalg.slogdet(lap).logabsdet
    return (logdet + shift.squeeze(1).sum(dim=1)).to(at_least_float(arc).dtype)


class TreeCRF:
    """Negative log-likelihood of the gold tree, plus relation and auxiliary terms.

    Args:
        single_root: normalise over single-root trees (the treebanks' tree family).
    """

    def __init__(self, single_root: bool) -> None:
        self.single_root = single_root

    def __call__(self, scores: ParserScores, batch) -> LossOutput:
        log_z = log_partition(scores.arc, batch.mask, self.single_root)
        gold = gold_arc_scores(scores.arc, batch.heads, batch.mask).sum(dim=1)
        return combine((log_z - gold).sum(), scores, batch)
