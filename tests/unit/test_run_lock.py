"""The training lock (bockparse.rundir.RunLock) under contention: many processes released at
once by a barrier, 40 trials each over a fresh folder, an abandoned lock of a dead process, an
empty lock file and a lock of another host without a heartbeat; never two inside, and one
inside whenever the lock was free or abandoned (issue 49, item 4). Then the lock's record
(host, pid), its heartbeat, and the folders that cannot hold one."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time

import pytest

from bockparse import rundir

RACERS = 4
TRIALS = 40
OLD = rundir.STALE_AFTER + 60  # seconds: a heartbeat this old is abandoned


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _plant(path, scenario: str) -> None:
    """Leave the lock of ``scenario`` at ``path`` (nothing for ``fresh``)."""
    if scenario == "fresh":
        return
    content = {
        "stale": json.dumps({"host": socket.gethostname(), "pid": _dead_pid()}),
        "empty": "",
        "other-host": json.dumps({"host": "node-elsewhere", "pid": 1}),
    }[scenario]
    path.write_text(content)
    past = time.time() - OLD
    os.utime(path, (past, past))


def _racer(run_dir, start, done, inside, most, entered, lock) -> None:
    for _ in range(TRIALS):
        start.wait()
        try:
            with rundir.RunLock(run_dir):
                with lock:
                    inside.value += 1
                    most.value = max(most.value, inside.value)
                    entered.value += 1
                time.sleep(0.01)  # hold it while the others try
                with lock:
                    inside.value -= 1
        except rundir.RunLocked:
            pass
        done.wait()


@pytest.mark.parametrize("scenario", ["fresh", "stale", "empty", "other-host"])
def test_never_two_inside(scenario, tmp_path):
    ctx = mp.get_context("fork")
    start, done = ctx.Barrier(RACERS + 1), ctx.Barrier(RACERS + 1)
    inside, most, entered, lock = (
        ctx.Value("i", 0),
        ctx.Value("i", 0),
        ctx.Value("i", 0),
        ctx.Lock(),
    )
    racers = [ctx.Process(target=_racer, args=(tmp_path, start, done, inside, most, entered, lock))
              for _ in range(RACERS)]  # fmt: skip
    for racer in racers:
        racer.start()
    try:
        for trial in range(TRIALS):
            _plant(tmp_path / rundir.LOCK, scenario)
            entered.value = 0
            start.wait(timeout=60)
            done.wait(timeout=60)
            assert most.value == 1, f"trial {trial}: {most.value} processes inside at once"
            assert entered.value >= 1, f"trial {trial}: nobody took the {scenario} lock"
            assert not (tmp_path / rundir.LOCK).exists()  # released
            assert [p.name for p in tmp_path.iterdir()] == []  # no temporary left
    finally:
        for racer in racers:
            racer.join(timeout=60)
            if racer.is_alive():
                racer.kill()
    assert all(r.exitcode == 0 for r in racers)


def test_the_lock_names_its_holder_and_is_complete_when_it_appears(tmp_path):
    with rundir.RunLock(tmp_path) as held:
        record = json.loads(held.path.read_text())
        assert record["host"] == socket.gethostname() and record["pid"] == os.getpid()
        assert record["token"] == held.token and record["started"].endswith("Z")
        with pytest.raises(rundir.RunLocked, match=f"being trained by process {os.getpid()} "):
            rundir.RunLock(tmp_path).__enter__()
    assert not (tmp_path / rundir.LOCK).exists()


def test_a_lock_of_another_host_holds_while_its_heartbeat_is_fresh(tmp_path):
    lock = tmp_path / rundir.LOCK
    lock.write_text(json.dumps({"host": "node\n7", "pid": 4242}))  # a name read from a file
    with pytest.raises(rundir.RunLocked) as refused:
        rundir.RunLock(tmp_path).__enter__()
    message = str(refused.value)
    assert "process 4242 on host 'node\\n7'" in message and "\n" not in message
    assert f"heartbeat for {rundir.STALE_AFTER:.0f} s" in message
    past = time.time() - OLD
    os.utime(lock, (past, past))  # no heartbeat for longer than STALE_AFTER: abandoned
    with rundir.RunLock(tmp_path) as taken:
        assert json.loads(lock.read_text())["token"] == taken.token


def test_a_live_lock_of_this_host_is_never_taken_over(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = tmp_path / rundir.LOCK
        lock.write_text(json.dumps({"host": socket.gethostname(), "pid": sleeper.pid}))
        past = time.time() - OLD
        os.utime(lock, (past, past))  # an old heartbeat does not matter: the process lives
        with pytest.raises(rundir.RunLocked, match=f"being trained by process {sleeper.pid} "):
            rundir.RunLock(tmp_path).__enter__()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_heartbeat_refreshes_the_lock(tmp_path):
    with rundir.RunLock(tmp_path, heartbeat=0.05) as held:
        past = time.time() - OLD
        os.utime(held.path, (past, past))
        deadline = time.monotonic() + 30
        while time.time() - held.path.stat().st_mtime > 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert time.time() - held.path.stat().st_mtime < 60


def test_set_aside_keeps_the_old_folder_and_locks_a_fresh_one(tmp_path):
    run = tmp_path / "seed1"
    with rundir.RunLock(run) as held:
        (run / rundir.METRICS).write_text("{}")
        kept = held.set_aside()
        assert kept.name.startswith("seed1.replaced-") and (kept / rundir.METRICS).is_file()
        assert not (kept / rundir.LOCK).exists()
        assert sorted(p.name for p in run.iterdir()) == [rundir.LOCK]
        assert json.loads((run / rundir.LOCK).read_text())["token"] == held.token
    assert list(run.iterdir()) == []


@pytest.mark.parametrize("kind", ["directory", "link"])
def test_a_lock_that_is_no_file_is_refused_in_one_line(kind, tmp_path):
    lock = tmp_path / rundir.LOCK
    if kind == "directory":
        lock.mkdir()
    else:
        outside = tmp_path.parent / f"{tmp_path.name}-outside"
        outside.write_text("kept\n")
        lock.symlink_to(outside)
    with pytest.raises(rundir.RunFolderError) as refused:
        rundir.RunLock(tmp_path).__enter__()
    assert str(refused.value) == (f"{lock} is a {kind}, not a lock file; remove it if no "
                                  "training uses this folder")  # fmt: skip
    if kind == "link":
        assert outside.read_text() == "kept\n"


def test_a_run_folder_that_is_a_file_is_refused_in_one_line(tmp_path):
    run = tmp_path / "seed1"
    run.write_text("")
    with pytest.raises(rundir.RunFolderError, match=r"seed1 is a file, not a run folder; give "):
        rundir.RunLock(run).__enter__()
    assert rundir.unusable_folder(run / "below").startswith(f"{run} is a file, not a folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_run_folder_is_refused_in_one_line(tmp_path):
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(rundir.RunFolderError, match="cannot write there"):
            rundir.RunLock(tmp_path).__enter__()
        assert "permission denied" in rundir.unusable_folder(tmp_path / "new")
    finally:
        tmp_path.chmod(0o755)
