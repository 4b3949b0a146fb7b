"""bockparse: exact-inference dependency parsing (Bock, CL/E, Tarjan, Eisner, K-best).

``bockparse.Parser`` (a trained parser: load, predict, evaluate, export) loads on first use, so
that importing the decoders never imports torch.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "Parser":
        from .parser import Parser

        return Parser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
