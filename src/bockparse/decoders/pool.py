"""Batch decoding on a CPU thread pool (the pool used for the hinge's loss-augmented inference).

The compiled kernels release the GIL (``nogil=True``), so threads decode sentences in parallel
without pickling matrices. Each thread runs one compiled loop (the method's cached ``batch``)
over a strided share of the batch, so the per-sentence cost is the kernel alone, with no Python
call in between.

numba compiles a method's loop the first time a machine runs it (3-11 s per method) and caches
the machine code (``cache=True``): beside the modules (``__pycache__``), or where they are
read-only in ``~/.cache/numba``, or in ``NUMBA_CACHE_DIR`` when set; later processes load it in
milliseconds. A compilation is logged once, with its time and the cache folder.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from .trees import OK


@nb.njit(nogil=True, cache=True)
def decode_rows(kernel, S, lengths, root, heads, status, start, step):
    """Decode sentences ``start, start + step, ...`` of a padded batch with ``kernel``.

    Each method's cached ``batch`` calls this with its own kernel (a module global there), so
    the loop is compiled once per method and dtype and then loaded from numba's cache.

    Args:
        kernel: a registered decoder kernel.
        S: float ``[B, M, M]``; sentence ``b`` uses ``S[b, :lengths[b] + 1, :lengths[b] + 1]``.
        lengths: int64 ``[B]``, words per sentence (ROOT excluded).
        root: root mode (see ``trees``).
        heads: int64 ``[B, M]``, written in ``heads[b, :lengths[b] + 1]``.
        status: int64 ``[B]``, one status per sentence.
    """
    for b in range(start, S.shape[0], step):
        N = lengths[b] + 1
        status[b] = kernel(S[b, :N, :N], root, heads[b, :N])


log = logging.getLogger("bockparse.decoders")

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_executor_size = 0


def default_workers() -> int:
    """Worker threads used when ``workers=None``: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _get_executor(workers: int) -> ThreadPoolExecutor:
    """A process-wide pool with at least ``workers`` threads, created once and reused."""
    global _executor, _executor_size
    with _lock:
        if _executor is None or _executor_size < workers:
            if _executor is not None:
                _executor.shutdown(wait=True)
            _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bockparse")
            _executor_size = workers
        return _executor


def decode_padded(decoder, S: np.ndarray, lengths: np.ndarray, root: int, workers: int):
    """Decode a padded batch on ``workers`` threads (in the calling thread, sentence by
    sentence, for a decoder without a compiled batch loop).

    Args:
        decoder: a registered :class:`.registry.Decoder`.
        S: float32/float64 ``[B, M, M]``.
        lengths: int64 ``[B]``, words per sentence, each ``<= M - 1``.
        root: root mode.
        workers: number of threads (1 decodes in the calling thread).

    Returns:
        ``(heads, status)``: int64 ``[B, M]`` and int64 ``[B]``.
    """
    B, M = S.shape[0], S.shape[1]
    heads = np.full((B, M), -1, dtype=np.int64)
    status = np.full(B, OK, dtype=np.int64)
    workers = max(1, min(workers, B))
    first = decoder.batch is not None and not decoder.batch.signatures  # none in this process
    start = time.perf_counter()
    _decode(decoder, S, lengths, root, heads, status, workers)
    if first and sum(decoder.batch.stats.cache_misses.values()):
        log.info("decoder %r compiled on first use in %.1f s (numba; cached in %s, so later runs "
                 "load it)", decoder.name, time.perf_counter() - start,
                 decoder.batch.stats.cache_path)  # fmt: skip
    return heads, status


def _decode(decoder, S, lengths, root, heads, status, workers: int) -> None:
    """:func:`decode_padded`'s work: ``heads`` and ``status`` filled in place."""
    B = S.shape[0]
    if decoder.batch is None:
        for b in range(B):
            N = int(lengths[b]) + 1
            status[b] = decoder.kernel(S[b, :N, :N], root, heads[b, :N])
    elif workers == 1:
        decoder.batch(S, lengths, root, heads, status, 0, 1)
    else:
        pool = _get_executor(workers)
        jobs = [
            pool.submit(decoder.batch, S, lengths, root, heads, status, t, workers)
            for t in range(workers)
        ]
        for job in jobs:
            job.result()
