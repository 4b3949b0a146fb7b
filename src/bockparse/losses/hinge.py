"""Structured hinge with an exact loss-augmented oracle (the Bock paper's appendix, eq. 8).

``L(S, T*) = max_{T in T_1} [S(T) + Δ(T, T*)] - S(T*)`` per sentence, where ``S`` is the
column-wise log-softmax of the arc scores over heads, ``T_1`` the single-root trees and
``Δ`` costs ``margin`` per word whose head differs from the gold one. The maximiser ``T̂`` comes
from a registered exact decoder on the loss-augmented matrix ``S + Δ`` through
:func:`bockparse.predict.decode_heads` (the decoders' CPU thread pool, padded ``[B, N]`` heads);
autograd through the selected scores then gives the subgradient ``1[T̂] - 1[T*]`` on ``S``
(eq. 10). With ``canonical_ties`` the oracle returns the canonical maximiser under ties
(:func:`bockparse.predict.decode_canonical`: Bock's tree, at the value ``decoder`` finds), so
that runs with different exact oracles select identical subgradients.

Decoding overlaps the other loss terms: one background thread (``_background``) runs the
loss-augmented decoding while the caller computes them; the decoders' own pool spreads the
sentences over the CPUs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

from ..decoders import get_decoder
from ..model.outputs import ParserScores
from ..predict import decode_canonical, decode_heads
from .common import LossOutput, OracleCall, combine, gold_arc_scores, normalized_arc_scores

# One thread that runs decode_batch while the caller computes the other loss terms; the decoder
# pool itself spreads the sentences over the CPUs.
_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bockparse-hinge")


def loss_augmented(logp: torch.Tensor, heads: torch.Tensor, mask: torch.Tensor, margin: float):
    """``S + Δ``: ``margin`` added to every admissible arc that is not the gold one.

    Args:
        logp: float ``[B, N, N]`` normalised scores (``-inf`` on inadmissible arcs).
        heads: int64 ``[B, N]`` gold heads; mask: bool ``[B, N]``, True at words.

    Returns:
        float ``[B, N, N]``, detached.
    """
    N = logp.shape[1]
    is_gold = heads.clamp(min=0)[:, None, :] == torch.arange(N, device=logp.device)[None, :, None]
    return logp.detach() + margin * (~is_gold & mask[:, None, :]).to(logp.dtype)


def hinge_per_sentence(logp, predicted, heads, mask, margin: float) -> torch.Tensor:
    """``max(0, S(T̂) + Δ(T̂, T*) - S(T*))`` per sentence.

    Args:
        logp: float ``[B, N, N]``; predicted, heads: int64 ``[B, N]``; mask: bool ``[B, N]``.

    Returns:
        float ``[B]`` (with a graph through ``logp``).
    """
    wrong = ((predicted != heads) & mask).to(logp.dtype)
    augmented = gold_arc_scores(logp, predicted, mask) + margin * wrong
    return (augmented - gold_arc_scores(logp, heads, mask)).sum(dim=1).clamp(min=0.0)


class StructuredHinge:
    """The structured hinge loss, its oracle any registered decoder.

    Args:
        decoder: registry name of the loss-augmented oracle (``bock``, ``cle``, ...).
        margin: cost per incorrect head (1 in the paper).
        single_root: restrict the oracle to single-root trees (as the paper does).
        workers: decoder threads; ``None`` uses every CPU.
        canonical_ties: return the canonical maximiser (Bock's) among the optimal trees, its
            value checked against ``decoder``'s optimum within ``value_tol``.
        value_tol: relative tolerance of that check (used with ``canonical_ties`` only).
    """

    def __init__(
        self,
        decoder: str,
        margin: float,
        single_root: bool,
        workers: int | None = None,
        canonical_ties: bool = False,
        value_tol: float = 1e-6,
    ) -> None:
        get_decoder(decoder)  # fail at construction on an unknown name
        self.decoder = decoder
        self.margin = margin
        self.single_root = single_root
        self.workers = workers
        self.canonical_ties = canonical_ties
        self.value_tol = value_tol

    def _decode(self, augmented: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        options = dict(single_root=self.single_root, workers=self.workers)
        if self.canonical_ties:
            return decode_canonical(augmented, lengths, self.decoder, tol=self.value_tol, **options)
        return decode_heads(augmented, lengths, self.decoder, **options)

    def oracle(
        self, logp: torch.Tensor, batch
    ) -> Callable[[], tuple[torch.Tensor, float, OracleCall]]:
        """Start loss-augmented inference in the background.

        Returns:
            A function that waits for it and gives ``(T̂, seconds, call)``: int64 ``[B, N]``
            heads (-1 at ROOT and padding, :func:`bockparse.predict.decode_heads`) on
            ``logp``'s device, the decoding wall time, and the problem with its answer on the
            CPU (:class:`~bockparse.losses.common.OracleCall`).
        """
        augmented = loss_augmented(logp, batch.heads, batch.mask, self.margin)
        cpu = augmented.float().cpu()  # one transfer per batch, in the caller's thread
        lengths = batch.lengths.cpu()
        start = time.perf_counter()
        job = _background.submit(self._decode, cpu, lengths)

        def result():
            predicted = job.result()
            seconds = time.perf_counter() - start
            call = OracleCall(cpu, lengths, predicted, self.single_root)
            return predicted.to(logp.device), seconds, call

        return result

    def __call__(self, scores: ParserScores, batch) -> LossOutput:
        logp = normalized_arc_scores(scores.arc, batch.mask)
        pending = self.oracle(logp, batch)
        rest = combine(scores.arc.new_zeros(()), scores, batch)  # overlaps with decoding
        predicted, seconds, call = pending()
        arc = hinge_per_sentence(logp, predicted, batch.heads, batch.mask, self.margin).sum()
        loss = rest.loss + arc / max(rest.words, 1)
        return LossOutput(loss, arc.detach(), rest.rel, rest.aux, rest.words, seconds, oracle=call,
                          tag=rest.tag)  # fmt: skip
