"""Stanza's own Chu–Liu/Edmonds (``stanza-cle``), the CL/E of the Bock paper's experiments.

A registry entry around ``stanza.models.common.chuliu_edmonds`` (Stanza 1.15), for studies that
compare the decoders with the one Stanza's parser uses (§4.2, Theorem 2). It needs the ``bench``
extra (``pip install 'bockparse[bench]'``), is imported only when first called, and runs in
Python (batches loop over their sentences; no threads).

Stanza's conventions differ from this package's, and the wrapper converts: its matrix is
``[dependent, head]`` (the transpose of ``scores[h, d]``), it overwrites its input (it gets a
copy), and its single-root procedure ``chuliu_edmonds_one_root`` shifts every root arc by
``N · m``, ``m`` the smallest finite score, which enforces one root child only when no score is
positive: Stanza feeds it log-probabilities (a log-softmax over heads), and so must callers here.
With ``single_root=True`` a positive admissible score raises ``ValueError``. Without the root
constraint it runs Stanza's ``chuliu_edmonds``; ``root_strategy="reweight"`` runs that on the
matrix with this package's root penalty (:func:`.trees.reweight_root`).

Stanza's tie choices are its own (``np.argmax``, cycle order): its trees equal the other exact
decoders' in score, not necessarily as arrays.
"""

from __future__ import annotations

import numpy as np

from .registry import register
from .trees import (
    NEG_INF,
    NO_TREE,
    OK,
    REWEIGHT,
    UNCONSTRAINED,
    count_root_children,
    is_tree,
    load_scores,
    reweight_root,
)


def _stanza():
    try:
        from stanza.models.common import chuliu_edmonds
    except ImportError as error:
        raise ImportError(
            "decoder 'stanza-cle' needs Stanza, from the bench extra: "
            "pip install 'bockparse[bench]'"
        ) from error
    return chuliu_edmonds


@register("stanza-cle")
def kernel(S: np.ndarray, root: int, heads: np.ndarray) -> int:
    """Stanza's CL/E on ``S`` with ``run_kernel``'s conventions (:mod:`.trees`), in Python.

    Raises:
        ImportError: Stanza (the ``bench`` extra) is not installed.
        ValueError: ``root`` is ``SINGLE_ROOT`` and an admissible score is positive (Stanza's
            root shift needs log-probabilities).
    """
    cle = _stanza()
    N = S.shape[0]
    W = np.empty((N, N))
    status = load_scores(S, W)
    if status != OK:
        return status
    if not np.isfinite(W).any():
        return NO_TREE  # no admissible arc (Stanza's root shift needs one)
    if root == REWEIGHT:
        reweight_root(W)
    T = W.T.copy()  # [dependent, head], Stanza's orientation; Stanza overwrites it
    with np.errstate(invalid="ignore"):  # -inf - -inf in Stanza's contraction (no tree)
        if root == UNCONSTRAINED or root == REWEIGHT:
            tree = cle.chuliu_edmonds(T)
        else:
            if (W[np.isfinite(W)] > 0).any():
                raise ValueError(
                    "decoder 'stanza-cle' needs log-probabilities (every admissible score <= 0) "
                    "for its single-root shift, as Stanza feeds it: apply a log-softmax over "
                    "heads first"
                )
            try:
                tree = cle.chuliu_edmonds_one_root(T)
            except AssertionError:  # several root children: no single-root tree
                return NO_TREE
    heads[:] = tree
    heads[0] = -1
    if not is_tree(heads) or (W[heads[1:], np.arange(1, N)] == NEG_INF).any():
        return NO_TREE
    if root != UNCONSTRAINED and count_root_children(heads) != 1:
        return NO_TREE
    return OK
