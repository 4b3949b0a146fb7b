"""``benchmarks/gpu_check.py`` without a GPU: its refusal, its comparison and its report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", PATH)
gpu_check = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gpu_check  # its dataclass looks its module up
spec.loader.exec_module(gpu_check)

SCORES = {"val/uas": 80.0, "val/las": 75.0, "val/lcm": 10.0,
          "test/uas": 81.0, "test/las": 76.5, "test/lcm": 12.0}  # fmt: skip


def measurement(precision: str, **gpu: float) -> gpu_check.Measurement:
    return gpu_check.Measurement(
        precision,
        step_seconds=[0.1, 0.3, 0.2],
        step_words=[1000, 3000, 2000],
        decode_seconds=[0.03, 0.09, 0.06],
        peak_memory=3 * 2**30,
        eval_sentences=800,
        eval_seconds=4.0,
        gpu={**SCORES, **{k.replace("_", "/"): v for k, v in gpu.items()}},
        cpu=dict(SCORES),
        same_files=not gpu,
    )


def test_without_cuda_it_says_so_and_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(gpu_check.torch.cuda, "is_available", lambda: False)
    assert gpu_check.main([]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_fp32_must_equal_the_cpu_and_bf16_is_reported():
    assert gpu_check.passed(measurement("32-true"))
    assert not gpu_check.passed(measurement("32-true", test_las=76.25))
    assert gpu_check.passed(measurement("bf16-mixed", test_las=76.25))
    assert gpu_check.differences(measurement("32-true", val_uas=80.5).gpu, SCORES) == {
        "val/uas": 0.5
    }


def test_report_rows():
    text = gpu_check.report(
        [measurement("32-true"), measurement("bf16-mixed", test_las=76.25)], "# header"
    )
    lines = text.splitlines()
    assert lines[0] == "# header"
    # median 200 ms; 6,000 words in 0.6 s; decoding 0.18 of 0.6 s; 3 GiB; 800 sentences in 4 s
    assert "| 32-true | 200.0 | 10,000 | 30.0 % | 3.00 | 200.0 |" in lines
    assert "| 32-true | 80.00 | 75.00 | 10.00 | 81.00 | 76.50 | 12.00 | yes | identical |" in lines
    assert ("| bf16-mixed | 80.00 | 75.00 | 10.00 | 81.00 | 76.25 (-0.25) | 12.00 | no | differ |"
            in lines)  # fmt: skip
    failed = gpu_check.report([measurement("32-true", val_lcm=11.0)], "#")
    assert "| no **FAILED** | differ |" in failed


@pytest.mark.gpu
def test_the_gpu_check_passes_on_a_gpu(tmp_path):
    out = tmp_path / "gpu_check.md"
    assert gpu_check.main(["--steps", "20", "--output", str(out)]) == 0
    assert "| 32-true |" in out.read_text(encoding="utf-8")


def test_the_whole_check_runs_without_cuda(tmp_path):
    """Every step of a precision's check (build, train, time, evaluate on the accelerator and
    again on the CPU, compare the files) on the smoke configuration, with ``accelerator="cpu"``:
    a renamed training helper fails here rather than on the next lent GPU."""
    args = gpu_check.parse_args(["--steps", "3", "--warmup", "1", "--", "experiment=smoke"])
    m = gpu_check.measure("32-true", args, tmp_path, accelerator="cpu")
    assert len(m.step_seconds) == len(m.step_words) == len(m.decode_seconds) == 2
    assert all(words > 0 for words in m.step_words) and m.peak_memory == 0
    assert set(m.gpu) == set(gpu_check.KEYS) and m.gpu == m.cpu and m.same_files
    assert gpu_check.passed(m)
