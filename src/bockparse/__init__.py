"""bockparse: exact-inference dependency parsing (Bock, CL/E, Tarjan, Eisner, K-best)."""

__version__ = "0.1.0"
