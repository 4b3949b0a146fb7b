"""The biaffine parser's scorer and its outputs."""

from .outputs import ParserScores

__all__ = ["ParserScores"]
