"""Transition-based baselines: arc-standard and arc-eager with static oracles.

Public API::

    get_system("arc-standard" | "arc-eager") -> TransitionSystem   (systems.py)
    Kind, Transition, Configuration, InvalidTransition
    static_oracle(system, heads, rels) -> [Transition]; oracle_walk   (oracle.py)
    NonProjectiveError, split_projective, ProjectivityCounts
    TransitionParser, TransitionScores   (parser.py; conf/model/transition.yaml)
    analysis: scores_by_projectivity, projective_ceiling
        (python -m bockparse.heads.transition.analysis)

Its loss is :class:`bockparse.losses.transition.TransitionLoss` (``conf/loss/transition.yaml``).
The parser imports torch and loads on first use.
"""

from importlib import import_module

from .oracle import (
    NonProjectiveError,
    ProjectivityCounts,
    oracle_walk,
    split_projective,
    static_oracle,
)
from .systems import (
    SYSTEMS,
    ArcEager,
    ArcStandard,
    Configuration,
    InvalidTransition,
    Kind,
    Transition,
    TransitionSystem,
    get_system,
)

_LAZY = {"TransitionParser": "parser", "TransitionScores": "parser"}

__all__ = [
    "SYSTEMS",
    "ArcEager",
    "ArcStandard",
    "Configuration",
    "InvalidTransition",
    "Kind",
    "NonProjectiveError",
    "ProjectivityCounts",
    "Transition",
    "TransitionParser",
    "TransitionScores",
    "TransitionSystem",
    "get_system",
    "oracle_walk",
    "split_projective",
    "static_oracle",
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
