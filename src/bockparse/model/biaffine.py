"""Deep biaffine scoring of all head/dependent pairs (Dozat & Manning 2017), head-major."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# DeepBiaffine.pairs_at pads its products' last axis to a multiple of this many floats.
ALIGN = 8


def aligned(width: int) -> int:
    """``width`` rounded up to a multiple of :data:`ALIGN` (:meth:`DeepBiaffine.pairs_at`)."""
    return width + -width % ALIGN


class DeepBiaffine(nn.Module):
    """``s[b, h, d, o] = [u_h; 1]^T W_o [v_d; 1]`` with ``u = MLP_head(x)``, ``v = MLP_dep(x)``.

    Each MLP is one ReLU layer followed by dropout. Appending 1 to both sides gives the bilinear,
    the two linear terms and the bias in one tensor ``W [O, K + 1, K + 1]``, initialised to zero
    as in Dozat & Manning's parser and Stanza, so every pair starts with score 0; ``init_std > 0``
    draws it from ``N(0, init_std²)`` instead (the trajectory-identity study's switch: a zero
    ``W`` makes the first arc scores depend on head-dependent distance only, so they tie).

    :meth:`project` runs the MLPs (and draws their dropout) once; :meth:`pairs` scores every
    pair from its outputs and :meth:`pairs_at` only given ones (a head's relation scores, made
    lazily from one projection: :class:`~bockparse.model.outputs.ParserScores`).

    Args:
        input_size: width ``D`` of the position vectors.
        hidden_size: width ``K`` of each MLP.
        output_size: scores per pair ``O`` (1 for arcs, ``R`` for relations).
        dropout: dropout on the MLP outputs.
        init_std: standard deviation of ``W``'s initial values; 0: all zero.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        output_size: int,
        dropout: float,
        init_std: float = 0.0,
    ):
        super().__init__()
        self.head_mlp = nn.Linear(input_size, hidden_size)
        self.dep_mlp = nn.Linear(input_size, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.weight = nn.Parameter(torch.zeros(output_size, hidden_size + 1, hidden_size + 1))
        if init_std > 0:
            nn.init.normal_(self.weight, std=init_std)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both sides' MLP outputs with 1 appended, their dropout drawn here (the head MLP's
        first): what :meth:`pairs` and :meth:`pairs_at` take.

        Args:
            x: float ``[B, N, D]``.

        Returns:
            ``([u; 1], [v; 1])``, float ``[B, N, K + 1]`` each.
        """
        return self._side(self.head_mlp, x), self._side(self.dep_mlp, x)

    def _side(self, mlp: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        u = self.dropout(F.relu(mlp(x)))
        return torch.cat([u, u.new_ones(*u.shape[:-1], 1)], dim=-1)  # [B, N, K + 1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Score every ordered pair of positions: :meth:`pairs` of :meth:`project`.

        Args:
            x: float ``[B, N, D]``.

        Returns:
            float ``[B, N, N, O]``, ``[b, h, d, o]`` the score of ``h -> d``.
        """
        return self.pairs(*self.project(x))

    def at(self, x: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """The scores of the pairs ``heads[b, d] -> d`` alone: :meth:`pairs_at` of
        :meth:`project`.

        Args:
            x: float ``[B, N, D]``.
            heads: int64 ``[B, N]``; ``-1`` at ROOT and padding, which get no scores.

        Returns:
            float ``[B, N, O]``, 0 where ``heads`` is ``-1``.
        """
        return self.pairs_at(*self.project(x), heads)

    def pairs(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Every ordered pair's scores from :meth:`project`'s outputs.

        Args:
            u, v: float ``[B, N, K + 1]``, the head and dependent sides.

        Returns:
            float ``[B, N, N, O]``, ``[b, h, d, o]`` the score of ``h -> d``. Time
            O(B N K (K O + N O)).
        """
        left = torch.einsum("bhi,oij->bhoj", u, self.weight)  # [B, N, O, K + 1]
        return torch.einsum("bhoj,bdj->bhdo", left, v)  # [B, N, N, O]

    def pairs_at(self, u: torch.Tensor, v: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """The scores of the pairs ``heads[b, d] -> d`` alone from :meth:`project`'s outputs:
        :meth:`pairs`' ``[b, heads[b, d], d, :]`` up to float rounding at every word.

        ``[u_h; 1] W`` is computed once for each distinct head of the batch's words (UD
        Chinese-GSD's development trees have 5,248 distinct heads, ROOT included, for 12,663
        words), the heads ordered by their number of dependents. The heads with ``c``
        dependents then score them in one batched product (``[h_c, c, K + 1]`` with
        ``[h_c, K + 1, O]``), one product per distinct ``c``: O(H K (K O) + W K O) time, O(B N O)
        output memory and no padding, instead of :meth:`pairs`' O(B N K (K O) + B N^2 K O) and
        O(B N^2 O), and without copying ``[u_h; 1] W`` once per word (``[W, O, K + 1]``, 60 MB
        for a 1,000-word batch of UD Chinese-GSD's 38 relations). Both products run on the last
        axis zero-padded to a multiple of :data:`ALIGN` (``K + 1`` = 401 becomes 408): the
        zeros add nothing, and the first product's ``O (K + 1)`` output columns (15,238 for
        GSD) become a multiple of 8 (15,504), which this project's CPU multiplies at 174
        GFLOP/s in fp32 against 117 unpadded (``benchmarks/results/utilisation.md``).

        Args:
            u, v: float ``[B, N, K + 1]``, the head and dependent sides.
            heads: int64 ``[B, N]``; ``-1`` at ROOT and padding, which get no scores.

        Returns:
            float ``[B, N, O]``, 0 where ``heads`` is ``-1``.
        """
        B, N, _ = u.shape
        words = heads >= 0  # [B, N]
        sentence = torch.arange(B, device=heads.device)[:, None]
        rows, inverse, counts = torch.unique(
            (heads + N * sentence)[words], return_inverse=True, return_counts=True
        )  # [H], [W], [H]
        by_fanout = torch.argsort(counts, stable=True)  # [H]: heads, fewest dependents first
        place = torch.empty_like(by_fanout)
        place[by_fanout] = torch.arange(by_fanout.shape[0], device=heads.device)
        order = torch.argsort(place[inverse], stable=True)  # [W]: words by their head's place
        pad = aligned(u.shape[-1]) - u.shape[-1]
        weight = F.pad(self.weight, (0, pad))  # [O, K + 1, P]: P = K + 1 + pad, zeros added
        left = torch.einsum(
            "hi,oij->hoj", u.reshape(B * N, -1)[rows[by_fanout]], weight
        )  # [H, O, P]
        deps = F.pad(v[words][order], (0, pad))  # [W, P]
        fanouts, sizes = torch.unique_consecutive(counts[by_fanout], return_counts=True)
        blocks, h, w = [], 0, 0
        for c, n in zip(fanouts.tolist(), sizes.tolist(), strict=True):  # n heads of c words
            block = deps[w : w + n * c].view(n, c, -1)  # [n, c, P]
            blocks.append(torch.bmm(block, left[h : h + n].transpose(1, 2)).flatten(0, 1))
            h, w = h + n, w + n * c
        scores = left.new_zeros(order.shape[0], left.shape[1])  # [W, O]
        if blocks:
            scores[order] = torch.cat(blocks)  # [W, O], back in the words' order
        out = scores.new_zeros(B, N, scores.shape[-1])
        out[words] = scores
        return out
