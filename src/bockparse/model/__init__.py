"""The building blocks every parser head shares (:mod:`bockparse.heads`): the transformer
encoder, the BiLSTM, the contextualiser, the joint tagger, the deep biaffine; and the graph
scores."""

from .outputs import ParserScores

__all__ = ["ParserScores"]
