"""ARCHITECTURE.md stays true to the code: every module it names exists, and every module of
the package is named there."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "bockparse"


def _tree() -> str:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index("```\nconf/")
    return text[start : text.index("```\n", start + 4)]


def _named(tree: str | None = None) -> set[str]:
    """``folder/module.py`` paths the tree names (a folder line's files belong to it)."""
    named, folder = set(), ""
    for line in (_tree() if tree is None else tree).splitlines():
        head = re.match(r"^  (\w+)/\s", line)
        if head:
            folder = head.group(1) + "/"
        elif re.match(r"^  \w+\.py\s", line):
            folder = ""
        for name in re.findall(r"\b((?:\w+/)*\w+\.py)\b", line):  # a subfolder's: sub/name.py
            named.add(name if re.match(rf"^  {re.escape(name)}\s", line) else folder + name)
    return named


def test_every_module_named_exists_and_every_module_is_named():
    named = _named()
    modules = {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" and "conf" not in p.parts
    }
    named = {n for n in named if not n.endswith("__init__.py")}
    assert sorted(named - modules) == [], "named in ARCHITECTURE.md but missing"
    assert sorted(modules - named) == [], "modules not named in ARCHITECTURE.md"


def test_the_check_sees_a_missing_module():
    tree = _tree()
    assert "decoders/bock.py" in _named(tree) and "rundir.py" in _named(tree)
    without = "\n".join(x for x in tree.splitlines() if not x.startswith("  rundir.py"))
    assert "rundir.py" not in _named(without)
    assert "data/conllu.py" in _named(tree) and "conllu.py" not in _named(tree)
    assert "heads/transition/parser.py" in _named(tree)  # a subfolder's module
