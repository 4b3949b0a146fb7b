"""Exact dependency-tree decoders over a score matrix ``scores[h, d]`` (rows heads).

Public API::

    decode(scores, decoder="bock", *, single_root=True, root_strategy=None) -> heads
    decode_batch(scores, lengths=None, decoder="bock", *, single_root=True, workers=None)
    tree_score(scores, heads), DECODERS, NoTreeError, get_decoder

Conventions (the Bock paper §2): ``scores`` is float ``[N, N]`` with ``N = n + 1`` and node 0
the artificial root; ``-inf`` forbids an arc; column 0 and the diagonal are ignored; the input
is never modified. ``heads`` is int64 ``[N]`` with ``heads[0] == -1``.

Which methods return the same tree when the optimum is not unique:

* identical arrays on every input, ties and forbidden arcs included: ``bock`` and
  ``bock-original`` (rooted and single root, the same scan and first-minimum rule, §3.3), and,
  without the root constraint, ``tarjan`` (Theorem 1, §4.1: corrected Tarjan on Bock's
  component schedule with the common tie order, smallest original dependent then smallest
  original head). For ``tarjan`` this holds whenever the arithmetic is exact (integer or
  dyadic scores, as in the tests); in general floating point the two sum the same
  adjustments in different orders, so optima tied in exact arithmetic may be split apart;
* equal optimal values only: ``cle`` and ``stanza-cle`` (their own cycle orders and ties),
  ``eisner`` among projective trees, ``brute``, and every single-root procedure across methods
  (Bock's enumeration of root children, Gabow–Tarjan, the root penalty, Stanza's shift).

``stanza-cle`` (Stanza's CL/E, :mod:`.stanza_cle`) is registered for substitution studies but
not in :data:`DECODERS`: it needs the ``bench`` extra and, with the root constraint,
log-probabilities (scores ``<= 0``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import bock, bock_original, brute, cle, eisner, stanza_cle, tarjan  # noqa: F401
from .kbest import iter_kbest, kbest
from .pool import decode_padded, default_workers
from .registry import Decoder, get_decoder, registered_names
from .trees import (
    BAD_VALUE,
    INTERNAL_ERROR,
    OK,
    REWEIGHT,
    SINGLE_ROOT,
    UNCONSTRAINED,
    NoTreeError,
    as_float_array,
    check_square,
    check_tree,
    explain_no_tree,
    find_bad_cell,
    is_tree,
    tree_score,
)

# The package's own decoders, exact for scores of any sign. ``stanza-cle`` (Stanza's CL/E, for
# substitution studies) is registered too, but needs the bench extra and log-probabilities.
DECODERS: tuple[str, ...] = tuple(m for m in registered_names() if m != "stanza-cle")

ROOT_STRATEGIES = (None, "reweight")

__all__ = [
    "DECODERS",
    "Decoder",
    "NoTreeError",
    "check_tree",
    "decode",
    "decode_batch",
    "get_decoder",
    "is_tree",
    "iter_kbest",
    "kbest",
    "tree_score",
]


def _root_mode(single_root: bool, root_strategy: str | None) -> int:
    if root_strategy not in ROOT_STRATEGIES:
        raise ValueError(f"root_strategy must be one of {ROOT_STRATEGIES}, got {root_strategy!r}")
    if not single_root:
        return UNCONSTRAINED
    return REWEIGHT if root_strategy == "reweight" else SINGLE_ROOT


def _raise_for(status: int, S: np.ndarray, single_root: bool, where: str = "") -> None:
    if status == BAD_VALUE:
        raise ValueError(where + find_bad_cell(S))
    if status == INTERNAL_ERROR:
        raise RuntimeError(where + "decoder invariant broken; please report this matrix")
    raise NoTreeError(where + explain_no_tree(S, single_root=single_root))


def decode(
    scores, decoder: str = "bock", *, single_root: bool = True, root_strategy: str | None = None
) -> np.ndarray:
    """Best dependency tree under ``scores`` with the registered decoder ``decoder``.

    Args:
        scores: float32/float64 ``[N, N]`` array (or CPU/GPU tensor), ``scores[h, d]`` the score
            of arc ``h -> d``; ``-inf`` forbids an arc; column 0 and the diagonal are ignored.
        decoder: one of :data:`DECODERS`.
        single_root: exactly one word attaches to ROOT.
        root_strategy: ``None`` for the decoder's own single-root procedure (Bock: enumeration
            of root children, §4.2; CL/E: root reweighting; Tarjan: Gabow–Tarjan; Eisner: in the
            dynamic programme), or ``"reweight"`` for the root penalty (§4.3) with any decoder.

    Returns:
        int64 ``heads`` ``[N]``, ``heads[0] == -1``.

    Raises:
        ValueError: not a square non-empty matrix, a NaN cell, or a ``+inf`` admissible cell.
        NoTreeError: no spanning tree (or no single-root tree) avoids the forbidden arcs.
    """
    entry = get_decoder(decoder)
    root = _root_mode(single_root, root_strategy)
    S = as_float_array(scores)
    check_square(S)
    entry.check_length(S.shape[0] - 1)
    heads = np.empty(S.shape[0], dtype=np.int64)
    status = entry.kernel(S, root, heads)
    if status != OK:
        _raise_for(status, S, single_root)
    return heads


def decode_batch(
    scores,
    lengths: Sequence[int] | np.ndarray | None = None,
    decoder: str = "bock",
    *,
    single_root: bool = True,
    root_strategy: str | None = None,
    workers: int | None = None,
    padded: bool = False,
) -> list[np.ndarray] | np.ndarray:
    """Decode many sentences on a CPU thread pool; identical to :func:`decode` one by one.

    Args:
        scores: a list of ``[N_b, N_b]`` matrices, or a padded float ``[B, M, M]`` array or tensor
            (moved to CPU once) whose sentence ``b`` is ``[:lengths[b] + 1, :lengths[b] + 1]``.
        lengths: int ``[B]``, words per sentence (ROOT excluded); required for a padded batch,
            ``None`` meaning every sentence uses the full ``M - 1`` words.
        decoder, single_root, root_strategy: as in :func:`decode`.
        workers: threads; ``None`` uses every CPU available to the process.
        padded: return one int64 ``[B, M]`` array instead of a list.

    Returns:
        ``B`` int64 arrays ``heads`` of length ``lengths[b] + 1``, in input order; with
        ``padded=True`` one int64 array ``[B, M]`` whose row ``b`` holds that tree in
        ``[:lengths[b] + 1]`` (``heads[b, 0] == -1``) and ``-1`` at every padding position.

    Raises:
        ValueError, NoTreeError: as :func:`decode`, naming the batch index.
    """
    entry = get_decoder(decoder)
    root = _root_mode(single_root, root_strategy)
    if isinstance(scores, (list, tuple)):
        if lengths is not None:
            raise ValueError("decode_batch: give lengths only with a padded [B, M, M] batch")
        mats = [as_float_array(m) for m in scores]
        for b, m in enumerate(mats):
            check_square(m, f"scores[{b}]")
        if not mats:
            return np.zeros((0, 0), dtype=np.int64) if padded else []
        M = max(m.shape[0] for m in mats)
        S = np.zeros((len(mats), M, M), dtype=np.result_type(*mats))
        for b, m in enumerate(mats):
            S[b, : m.shape[0], : m.shape[0]] = m
        lens = np.array([m.shape[0] - 1 for m in mats], dtype=np.int64)
    else:
        S = as_float_array(scores)
        if S.ndim != 3 or S.shape[1] != S.shape[2]:
            raise ValueError(f"decode_batch: a padded batch must be [B, M, M], got {S.shape}")
        B, M = S.shape[0], S.shape[1]
        if lengths is None:
            lens = np.full(B, M - 1, dtype=np.int64)
        else:
            lens = _to_numpy_lengths(lengths)
            if lens.shape != (B,):
                raise ValueError(f"decode_batch: lengths must have shape ({B},), got {lens.shape}")
            if lens.size and (lens.min() < 1 or lens.max() > M - 1):
                raise ValueError(f"decode_batch: lengths must lie in 1..{M - 1} words")
        if B == 0:
            return np.zeros((0, M), dtype=np.int64) if padded else []
    if lens.size:
        entry.check_length(int(lens.max()))
    heads, status = decode_padded(
        entry, S, lens, root, default_workers() if workers is None else workers
    )
    bad = np.flatnonzero(status != OK)
    if bad.size:
        b = int(bad[0])
        N = int(lens[b]) + 1
        _raise_for(int(status[b]), S[b, :N, :N], single_root, f"sentence {b} of the batch: ")
    if padded:
        return heads
    return [heads[b, : lens[b] + 1].copy() for b in range(len(lens))]


def _to_numpy_lengths(lengths) -> np.ndarray:
    if hasattr(lengths, "detach"):
        lengths = lengths.detach().cpu().numpy()
    return np.asarray(lengths, dtype=np.int64).reshape(-1)
