"""``bockparse-check``: messages, exit codes, the single-root switch, the console script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bockparse.cli.data import check as main


def test_valid_files_exit_0(fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in (fixtures / "valid").glob("*.conllu"))
    assert main(files) == 0
    assert capsys.readouterr().out.splitlines() == [f"{f}: OK" for f in files]


def test_any_problem_exits_1_with_file_line_reason(
    fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    valid = str(fixtures / "valid" / "basic.conllu")
    bad = str(fixtures / "malformed" / "cycle.conllu")
    assert main([valid, bad]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{valid}: OK",
        f"{bad}:10: cycle 1 -> 3 -> 1 (word -> head)",
        f"{bad}: 1 problem(s)",
    ]


def test_single_root_can_be_switched_off(fixtures: Path) -> None:
    path = str(fixtures / "malformed" / "several_roots.conllu")
    assert main([path]) == 1
    assert main(["--no-single-root", path]) == 0


def test_unreadable_file_exits_1_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope.conllu")
    assert main([missing]) == 1
    assert capsys.readouterr().out.startswith(f"{missing}: cannot read file (No such file")


def test_console_script(fixtures: Path) -> None:
    script = shutil.which("bockparse-check", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("bockparse-check is not installed (pip install -e .)")
    bad = fixtures / "malformed" / "bad_utf8.conllu"
    result = subprocess.run([script, str(bad)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stdout.startswith(f"{bad}:12: invalid UTF-8 (byte 0xff at column 4)\n")
    assert "Traceback" not in result.stderr
