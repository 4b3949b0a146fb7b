"""The decoder registry: one name per exact decoder, each a compiled ``solve`` (see ``trees``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Decoder:
    """A registered decoder.

    Attributes:
        name: registry name, e.g. ``"bock"``.
        solve: compiled ``solve(W, single_root, heads) -> status`` (conventions in ``trees``).
        max_words: largest sentence length accepted (``None``: any), e.g. 8 for brute force.
    """

    name: str
    solve: Callable
    max_words: int | None = None

    def check_length(self, n: int) -> None:
        """Raise ``ValueError`` if ``n`` words are more than this decoder accepts."""
        if self.max_words is not None and n > self.max_words:
            raise ValueError(
                f"decoder {self.name!r} accepts at most {self.max_words} words, got {n}"
            )


_REGISTRY: dict[str, Decoder] = {}


def register(name: str, *, max_words: int | None = None) -> Callable[[Callable], Callable]:
    """Decorator registering a compiled ``solve`` under ``name``."""

    def wrap(solve: Callable) -> Callable:
        if name in _REGISTRY:
            raise ValueError(f"decoder {name!r} is registered twice")
        _REGISTRY[name] = Decoder(name, solve, max_words)
        return solve

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
