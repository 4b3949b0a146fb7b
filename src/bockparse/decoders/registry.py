"""The decoder registry: one name per exact decoder, each a compiled entry kernel.

A method module defines ``solve(W, single_root, heads)`` on the float64 work matrix and
registers the entry point ``kernel(S, root, heads) = run_kernel(solve, S, root, heads)``
(conventions in :mod:`.trees`). Python calls the kernel with arrays and integers only:
passing a compiled function as an argument from Python costs microseconds per call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Decoder:
    """A registered decoder.

    Attributes:
        name: registry name, e.g. ``"bock"``.
        kernel: compiled ``kernel(S, root, heads) -> status`` (conventions in ``trees``).
        max_words: largest sentence length accepted (``None``: any), e.g. 8 for brute force.
    """

    name: str
    kernel: Callable
    max_words: int | None = None

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
