"""The experiments package has no import cycle, counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import bockparse.experiments as package

PACKAGE = Path(package.__file__).parent
NAME = package.__name__


def imports_of(path: Path) -> set[str]:
    """Modules of the package that ``path`` imports anywhere in its body."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .x import y / from . import x
                found |= {node.module} if node.module else {a.name for a in node.names}
            elif node.level == 0 and (node.module or "").startswith(NAME + "."):
                found.add(node.module[len(NAME) + 1 :])
        elif isinstance(node, ast.Import):
            found |= {a.name[len(NAME) + 1 :] for a in node.names if a.name.startswith(NAME + ".")}
    return {m.split(".")[0] for m in found}


def graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {m: imports_of(p) & set(modules) for m, p in modules.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (``[a, b, a]``), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return [*path[path.index(n) :], n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_experiments_package_has_no_import_cycle():
    edges = graph()
    assert {"table", "plots", "rows", "runs"} <= set(edges)
    assert "rows" in edges["plots"] and "table" not in edges["plots"]
    assert cycle(edges) is None, cycle(edges)


def test_a_cycle_is_found():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
    # imports inside a function count
    src = PACKAGE / "plots.py"
    assert imports_of(src) >= {"rows"}
