"""The run clock's process age and split (bockparse.training.clock)."""

import time

import pytest

from bockparse.training.clock import RunClock, process_seconds


def test_process_seconds_grows_and_counts_the_time_before_import():
    first = process_seconds()
    time.sleep(0.05)
    assert process_seconds() - first >= 0.04
    assert first > 0.0  # the interpreter had started before this test ran


def test_split_parts_add_up_to_the_total():
    clock = RunClock()
    clock.fit_start, clock.updates, clock.evaluations = 1.0, 2.0, 0.5
    split = clock.split(checkpoints=0.25, final_evaluation=0.125)
    parts = ("startup", "updates", "evaluations", "checkpoints", "final_evaluation", "other")
    assert sum(split[k] for k in parts) == pytest.approx(split["total"], abs=0.005)
    assert split["checkpoints"] == 0.25 and split["final_evaluation"] == 0.125
