"""Precision by hardware (bockparse.hardware): the probe's decision table, ``auto``'s
resolution (also of make train's composed config and on resume), the warning for emulated bf16,
the LSTMs under autocast without native bf16, and the environment record."""

from __future__ import annotations

import logging

import pytest
import torch
from hydra import compose, initialize_config_dir
from torch import nn

from bockparse import hardware
from bockparse.hardware import (
    FORCE_ENV,
    ISA_ENV,
    bf16_support,
    resolve_precision,
    resolve_run_precision,
)
from bockparse.model.lstm import bilstm
from bockparse.training.train import CONF_DIR

X86_BF16 = frozenset({"avx2", "avx512f", "avx512_bf16"})
X86_AMX = frozenset({"avx2", "avx512f", "amx_bf16", "amx_tile"})
X86_AVX2 = frozenset({"avx2", "fma"})
ARM_BF16 = frozenset({"fp", "asimd", "bf16"})
ARM_PLAIN = frozenset({"fp", "asimd"})


@pytest.mark.parametrize(
    ("device", "environ", "flags", "cuda", "native", "why"),
    [
        ("cpu", {}, X86_BF16, None, True, "avx512_bf16"),
        ("cpu", {}, X86_AMX, None, True, "amx_bf16"),
        ("cpu", {}, ARM_BF16, None, True, "bf16"),
        ("cpu", {}, X86_AVX2, None, False, "no native bf16"),
        ("cpu", {}, ARM_PLAIN, None, False, "no native bf16"),
        ("cpu", {ISA_ENV: "AVX2"}, X86_BF16, None, False, f"{ISA_ENV}=AVX2"),
        ("cpu", {ISA_ENV: "avx512_core"}, X86_BF16, None, False, f"{ISA_ENV}=avx512_core"),
        ("cpu", {ISA_ENV: "AVX512_CORE_BF16"}, X86_BF16, None, True, "avx512_bf16"),
        ("cpu", {ISA_ENV: "AVX512_CORE_AMX"}, X86_AVX2, None, False, "no native bf16"),
        ("cpu", {ISA_ENV: "NONSENSE"}, X86_BF16, None, True, "avx512_bf16"),
        ("cpu", {FORCE_ENV: "0"}, X86_BF16, None, False, f"{FORCE_ENV}=0"),
        ("cpu", {FORCE_ENV: "1"}, X86_AVX2, None, True, f"{FORCE_ENV}=1"),
        ("cpu", {FORCE_ENV: "1", ISA_ENV: "AVX2"}, X86_AVX2, None, True, f"{FORCE_ENV}=1"),
        ("cpu", {FORCE_ENV: ""}, X86_AVX2, None, False, "no native bf16"),
        ("cuda", {}, X86_AVX2, True, True, "GPU computes bf16"),
        ("cuda", {}, X86_BF16, False, False, "GPU has no bf16"),
        ("cuda", {FORCE_ENV: "0"}, X86_BF16, True, False, f"{FORCE_ENV}=0"),
        ("mps", {}, ARM_BF16, None, False, "not probed on mps"),
    ],
)
def test_the_probes_decision_table(device, environ, flags, cuda, native, why):
    got, reason = bf16_support(device, environ=environ, flags=flags, cuda_bf16=cuda)
    assert got is native
    assert why in reason


def test_a_forced_answer_must_be_0_or_1():
    with pytest.raises(ValueError, match=f"{FORCE_ENV}='yes'"):
        bf16_support("cpu", environ={FORCE_ENV: "yes"}, flags=X86_BF16)


@pytest.mark.parametrize(
    ("requested", "flags", "precision", "reason"),
    [
        ("auto", X86_BF16, "bf16-mixed", "auto: the CPU computes bf16"),
        ("auto", X86_AVX2, "32-true", "auto: the CPU has no native bf16"),
        ("bf16-mixed", X86_AVX2, "bf16-mixed", "set explicitly; emulated and slow"),
        ("bf16-mixed", X86_BF16, "bf16-mixed", "set explicitly"),
        ("32-true", X86_BF16, "32-true", "set explicitly"),
    ],
)
def test_auto_resolves_by_the_hardware(requested, flags, precision, reason):
    got, why = resolve_precision(requested, "cpu", environ={}, flags=flags)
    assert got == precision and why.startswith(reason)


def test_gpu_accelerators_probe_cuda():
    assert resolve_precision("auto", "gpu", environ={}, cuda_bf16=True)[0] == "bf16-mixed"
    assert resolve_precision("auto", "cuda", environ={}, cuda_bf16=False)[0] == "32-true"


def _make_train_config():
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=["experiment=ewt-sample-cpu"])


@pytest.mark.parametrize(("forced", "precision"), [("0", "32-true"), ("1", "bf16-mixed")])
def test_make_trains_composition_resolves_by_the_machine(forced, precision, monkeypatch, caplog):
    cfg = _make_train_config()
    assert cfg.trainer.precision == "auto"
    monkeypatch.setenv(FORCE_ENV, forced)
    hardware.native_bf16.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="bockparse.hardware"):
            reason = resolve_run_precision(cfg)
    finally:
        hardware.native_bf16.cache_clear()
    assert cfg.trainer.precision == precision
    assert reason == f"auto: {FORCE_ENV}={forced}"
    assert f"precision {precision} (auto: {FORCE_ENV}={forced})" in caplog.text


def test_a_resumed_auto_run_keeps_the_precision_it_began_with(monkeypatch):
    cfg = _make_train_config()
    monkeypatch.setenv(FORCE_ENV, "0")  # this machine would choose 32-true ...
    reason = resolve_run_precision(cfg, {"trainer": {"precision": "bf16-mixed"}})
    assert cfg.trainer.precision == "bf16-mixed"  # ... but the run began in bf16
    assert "resumed" in reason


def test_emulated_bf16_warns_once(monkeypatch, caplog):
    monkeypatch.setenv(FORCE_ENV, "0")
    monkeypatch.setattr(hardware, "_warned", set())
    hardware.native_bf16.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="bockparse.hardware"):
            hardware.warn_if_emulated("bf16-mixed", "cpu")
            hardware.warn_if_emulated("bf16-mixed", "cpu")
            hardware.warn_if_emulated("32-true", "cpu")
    finally:
        hardware.native_bf16.cache_clear()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "emulated" in warnings[0].getMessage()


def _lstm_case():
    torch.manual_seed(0)
    lstm = nn.LSTM(6, 5, 2, batch_first=True, bidirectional=True)
    x = torch.randn(3, 7, 6)
    return lstm, x, torch.tensor([7, 4, 1])


def test_without_native_bf16_the_lstm_runs_in_float32_under_autocast(monkeypatch):
    """The fp32 fallback is exactly the LSTM without autocast (same kernels, same inputs)."""
    lstm, x, lengths = _lstm_case()
    reference, reference_final = bilstm(lstm, x, lengths)
    monkeypatch.setenv(FORCE_ENV, "0")
    hardware.native_bf16.cache_clear()
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, final = bilstm(lstm, x.bfloat16(), lengths)
            fallback, _ = bilstm(lstm, x, lengths)
    finally:
        hardware.native_bf16.cache_clear()
    assert out.dtype == final.dtype == torch.float32
    assert torch.equal(fallback, reference)
    # a bf16 input is rounded, so close to (not equal to) the float32 run
    torch.testing.assert_close(out, reference, rtol=0.05, atol=0.05)
    torch.testing.assert_close(final, reference_final, rtol=0.05, atol=0.05)


@pytest.mark.skipif(not hardware.native_bf16("cpu"), reason="this CPU has no native bf16")
def test_with_native_bf16_the_lstm_stays_in_bf16():
    lstm, x, lengths = _lstm_case()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = bilstm(lstm, x, lengths)
    assert out.dtype == torch.bfloat16


def test_the_environment_record():
    env = hardware.environment("32-true", "auto: test")
    assert env["precision"] == "32-true" and env["precision_reason"] == "auto: test"
    assert set(env["versions"]) == {"torch", "lightning", "transformers", "numba", "numpy",
                                    "python"}  # fmt: skip
    assert env["versions"]["torch"] == torch.__version__
    assert set(env["cpu_flags"]) == set(hardware.RECORDED_FLAGS)
    assert env["cpu"] and env["env"].keys() == {FORCE_ENV, ISA_ENV, "OMP_NUM_THREADS"}
