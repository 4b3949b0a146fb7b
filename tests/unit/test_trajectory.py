"""The per-update trace: tied optima, shadow disagreements, parameter hashes, the CSV rows."""

from __future__ import annotations

import csv

import numpy as np
import torch
from torch import nn

from bockparse.losses.common import LossOutput, OracleCall
from bockparse.predict import decode_heads
from bockparse.training.trajectory import FIELDS, TrajectoryTrace, parameter_hash, tied_optima


def symmetric_call(single_root: bool = True) -> OracleCall:
    """Sentence 0: word 2 has heads 1 and 3 at equal score (a tie); sentence 1: a unique
    optimum (a chain with a margin of 1 on each arc)."""
    S = np.full((2, 4, 4), -5.0, dtype=np.float32)
    S[0, 0, 1] = S[0, 1, 3] = 0.0  # 0 -> 1 -> 3, and 2 hangs on 1 or on 3 (tied)
    S[0, 1, 2] = S[0, 3, 2] = -1.0
    S[1, 0, 1] = S[1, 1, 2] = S[1, 2, 3] = -4.0
    scores = torch.from_numpy(S)
    lengths = torch.tensor([3, 3])
    heads = decode_heads(scores, lengths, "bock", single_root=single_root)
    return OracleCall(scores, lengths, heads, single_root)


def test_tied_optima():
    call = symmetric_call()
    assert tied_optima(call, tol=1e-9).tolist() == [True, False]
    call.scores[0, 3, 2] = -1.0 - 1e-3  # break the tie by more than the tolerance
    assert tied_optima(call, tol=1e-6).tolist() == [False, False]
    assert tied_optima(call, tol=1e-2).tolist() == [True, False]


def test_parameter_hash_sees_every_bit():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    before = parameter_hash(model)
    assert parameter_hash(model) == before
    with torch.no_grad():
        model.bias[1] = torch.nextafter(model.bias[1], torch.tensor(1.0))  # one ulp
    assert parameter_hash(model) != before


def test_rows_and_counts(tmp_path):
    call = symmetric_call()
    other = call.heads.clone()
    other[0, 2] = 3 if int(call.heads[0, 2]) == 1 else 1  # the other tied maximiser
    run = OracleCall(call.scores, call.lengths, other, True)
    model = nn.Linear(2, 1)
    trace = TrajectoryTrace(tmp_path / "trace.csv", shadow="bock", tol=1e-9, ties=True,
                            append=False)  # fmt: skip
    trace.start(model, 0)
    loss = torch.tensor(1.5)
    logged = trace.record(1, LossOutput(loss, loss, loss, loss, 6, oracle=run), 2, model, 0.25)
    assert logged["tied"] == 1 and logged["disagree"] == 1 and logged["disagree_tied"] == 1
    logged = trace.record(2, LossOutput(loss, loss, loss, loss, 6), 2, model, 0.25)  # no oracle
    assert "tied" not in logged and logged["loss"] == 1.5
    trace.close()
    with (tmp_path / "trace.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == FIELDS
    assert [r["update"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["param_hash"] == rows[1]["param_hash"] == parameter_hash(model)
    assert (rows[1]["tied"], rows[1]["disagree"], rows[1]["sentences"]) == ("1", "1", "2")
    assert rows[2]["tied"] == "" and float(rows[2]["loss"]) == 1.5
    again = TrajectoryTrace(tmp_path / "trace.csv", shadow=None, tol=1e-9, ties=False,
                            append=True)  # fmt: skip
    again.close()
    assert len((tmp_path / "trace.csv").read_text().splitlines()) == 4  # kept on resume
