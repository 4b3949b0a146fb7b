"""The decoder registry: one name per exact decoder, each a compiled entry kernel.

A method module defines ``solve(W, single_root, heads)`` on the float64 work matrix and
registers the entry point ``kernel(S, root, heads) = run_kernel(solve, S, root, heads)``
(conventions in :mod:`.trees`) and its batch loop ``batch(...) = decode_rows(kernel, ...)``
(:mod:`.pool`). Python calls both with arrays and integers only: passing a compiled function as
an argument from Python costs microseconds per call, and numba's cache cannot hold a function
compiled for such an argument, whereas ``batch`` names its kernel as a module global and is
cached like the kernel, so the first batch of a process loads instead of compiling.

A decoder written in Python (``stanza-cle``) registers a Python ``kernel`` with the same
conventions and no ``batch``; batches then loop over its sentences in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Decoder:
    """A registered decoder.

    Attributes:
        name: registry name, e.g. ``"bock"``.
        kernel: compiled ``kernel(S, root, heads) -> status`` (conventions in ``trees``).
        max_words: largest sentence length accepted (``None``: any), e.g. 8 for brute force.
        batch: compiled ``batch(S, lengths, root, heads, status, start, step)`` (conventions
            of :func:`.pool.decode_rows`), or ``None`` for a Python kernel.
    """

    name: str
    kernel: Callable
    max_words: int | None = None
    batch: Callable | None = None

    def check_length(self, n: int) -> None:
        """Raise ``ValueError`` if ``n`` words are more than this decoder accepts."""
        if self.max_words is not None and n > self.max_words:
            raise ValueError(
                f"decoder {self.name!r} accepts at most {self.max_words} words, got {n}"
            )


_REGISTRY: dict[str, Decoder] = {}


def register(name: str, *, max_words: int | None = None) -> Callable[[Callable], Callable]:
    """Decorator registering a compiled entry kernel under ``name``."""

    def wrap(kernel: Callable) -> Callable:
        if name in _REGISTRY:
            raise ValueError(f"decoder {name!r} is registered twice")
        _REGISTRY[name] = Decoder(name, kernel, max_words)
        return kernel

    return wrap


def register_batch(name: str) -> Callable[[Callable], Callable]:
    """Decorator adding the compiled batch loop of the decoder registered as ``name``."""

    def wrap(batch: Callable) -> Callable:
        _REGISTRY[name] = replace(_REGISTRY[name], batch=batch)
        return batch

    return wrap


def get_decoder(name: str) -> Decoder:
    """The registered decoder called ``name``; ``ValueError`` lists the known names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown decoder {name!r}; known decoders: {known}") from None


def registered_names() -> tuple[str, ...]:
    """Names of all registered decoders, in registration order."""
    return tuple(_REGISTRY)
