"""The benchmark scripts (``benchmarks/``, scripts rather than a package) as modules for these
tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as the module ``name`` (registered in ``sys.modules``, where its
    dataclasses look their module up), loaded once."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def benchmark() -> Callable[[str], ModuleType]:
    """``benchmark(name)``: the script ``benchmarks/<name>.py`` as a module (:func:`load`)."""
    return load
