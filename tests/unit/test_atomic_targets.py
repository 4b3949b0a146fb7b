"""The atomic writer (bockparse.rundir.atomic_path) replaces only a regular file, or a symlink
to one, or nothing: a FIFO, a device, a folder or a link to one is refused in one line naming
it, and is left as it was; a failed write names the target, never the temporary file.

Every special target here lives in the test's own folder (a FIFO, a link to /dev/null): a
writer that replaced them would replace only these, never the system's."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from bockparse import rundir


def _specials(folder: Path) -> dict[str, str]:
    """name -> what the refusal says it is."""
    os.mkfifo(folder / "fifo")
    (folder / "null").symlink_to("/dev/null")
    (folder / "to-fifo").symlink_to(folder / "fifo")
    (folder / "folder").mkdir()
    return {
        "fifo": "it is a FIFO",
        "null": "it is a symlink to a character device",
        "to-fifo": "it is a symlink to a FIFO",
        "folder": "it is a folder",
    }


def test_only_a_regular_file_is_replaced(tmp_path):
    for name, what in _specials(tmp_path).items():
        target = tmp_path / name
        before = target.lstat()
        with pytest.raises(OSError) as caught:
            rundir.write_atomic(target, "data")
        line = rundir.describe_os_error(caught.value, target)
        assert line.startswith(f"cannot write {target}: {what}"), line
        assert "not a regular file" in line and "\n" not in line
        after = target.lstat()
        assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino), name
    names = ["fifo", "folder", "null", "to-fifo"]
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # no temporary left


def test_a_symlink_to_a_regular_file_or_to_nothing_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    for name, points_to in (("to-file", victim), ("dangling", tmp_path / "nowhere")):
        link = tmp_path / name
        link.symlink_to(points_to)
        rundir.write_atomic(link, "new")
        assert not link.is_symlink() and link.read_text() == "new"
    assert victim.read_text() == "keep" and not (tmp_path / "nowhere").exists()


def test_a_failed_write_names_the_target_never_the_temporary(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", src)

    monkeypatch.setattr(rundir.os, "replace", full)
    with pytest.raises(OSError) as caught:
        rundir.write_json(target, {"a": 1})
    assert caught.value.filename == str(target) and ".tmp" not in str(caught.value)
    assert rundir.describe_os_error(caught.value, target) == (
        f"cannot write {target}: no space left on the device"
    )
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()

    with pytest.raises(OSError) as caught, rundir.atomic_path(target) as tmp, open(tmp, "wb") as f:
        f.write(b"x")
        raise OSError(errno.EDQUOT, "Disk quota exceeded")  # as a write() gives it: no name
    assert caught.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []

    def denied(**kwargs):
        name = Path(kwargs["dir"]) / f"{kwargs['prefix']}abc{kwargs['suffix']}"
        raise PermissionError(errno.EACCES, "Permission denied", str(name))

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    with pytest.raises(OSError) as caught:
        rundir.write_atomic(target, "x")
    assert caught.value.filename == str(target)
    assert rundir.describe_os_error(caught.value, target) == (
        f"cannot write {target}: permission denied"
    )


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc (not Linux)")
def test_a_link_to_a_process_open_file_is_refused_even_when_that_file_is_regular(tmp_path):
    """``--out /dev/stdout`` with standard output redirected to a file: /dev/stdout is a link
    to /proc/self/fd/1, a link to that regular file; renaming over it would replace the
    system's /dev/stdout. A link of the same shape in the test's folder stands in for it."""
    with open(tmp_path / "redirected.txt", "wb") as f:
        stdout = tmp_path / "stdout"
        stdout.symlink_to(f"/proc/self/fd/{f.fileno()}")
        with pytest.raises(OSError, match="a symlink to a process's open file"):
            rundir.write_atomic(stdout, "data")
    assert stdout.is_symlink() and (tmp_path / "redirected.txt").read_bytes() == b""
