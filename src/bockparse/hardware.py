"""What the machine computes natively, the precision a run uses, and a run's environment record.

bf16 autocast pays only where the device has bf16 arithmetic: on a CPU, AVX-512 BF16 or AMX
(x86) or the BF16 extension (ARM); on CUDA, ``torch.cuda.is_bf16_supported()``. Elsewhere
oneDNN emulates bfloat16 (a 4096x384 @ 384x1536 matmul ran ~50x slower than in float32 on an
AVX2-only CPU) and has no bf16 LSTM primitive at all, so ``trainer.precision: auto`` (every CPU
preset's default) resolves to ``bf16-mixed`` only with native support and to ``32-true``
otherwise (:func:`resolve_precision`).

Two environment variables steer the probe, for testing the branch without bf16 on any machine:
``BOCKPARSE_NATIVE_BF16=0`` (or ``1``) forces its answer, and ``ONEDNN_MAX_CPU_ISA`` (oneDNN's
own limit, e.g. ``AVX2``) below ``AVX512_CORE_BF16`` makes it answer "no" on the CPU, as oneDNN
then behaves like such a CPU (it refuses the bf16 LSTM exactly as an AVX2-only CPU does).
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import torch

log = logging.getLogger("bockparse.hardware")

FORCE_ENV = "BOCKPARSE_NATIVE_BF16"
ISA_ENV = "ONEDNN_MAX_CPU_ISA"
AUTO = "auto"
BF16 = "bf16-mixed"
FP32 = "32-true"
# Lightning precisions that run under torch.autocast, and its dtype; any other is float32.
AUTOCAST_DTYPES = {"bf16-mixed": torch.bfloat16, "bf16": torch.bfloat16,
                   "16-mixed": torch.float16, "16": torch.float16}  # fmt: skip
# oneDNN's ONEDNN_MAX_CPU_ISA values in increasing order; bf16 is native from AVX512_CORE_BF16.
ONEDNN_ISAS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
               "AVX512_CORE_VNNI", "AVX512_CORE_BF16", "AVX10_1_512", "AVX512_CORE_FP16",
               "AVX10_1_512_AMX", "AVX512_CORE_AMX", "AVX10_1_512_AMX_FP16",
               "AVX512_CORE_AMX_FP16", "AVX10_2_512", "AVX10_2_512_AMX_2", "ALL",
               "DEFAULT")  # fmt: skip
# CPU flags a run records (x86 /proc/cpuinfo names; ARM's "bf16" feature).
RECORDED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "bf16")
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
PACKAGES = ("torch", "lightning", "transformers", "numba", "numpy")  # versions a run records


@functools.cache
def cpu_info() -> tuple[str, frozenset[str]]:
    """The CPU's model name and feature flags (``/proc/cpuinfo`` on Linux, ``sysctl`` on macOS;
    elsewhere the model from :mod:`platform` and the flags torch's probes report)."""
    model, flags = platform.processor() or platform.machine(), set()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("model name", "hardware", "cpu model") and value.strip():
                    model = value.strip()
                elif key in ("flags", "features"):
                    flags.update(value.split())
    elif sys.platform == "darwin":
        model = _sysctl("machdep.cpu.brand_string") or model
        if _sysctl("hw.optional.arm.FEAT_BF16") == "1":
            flags.add("bf16")
    if not flags:  # Windows and others: what torch can tell
        for flag, probe in (("avx2", "_is_avx2_supported"), ("avx512f", "_is_avx512_supported"),
                            ("avx512_bf16", "_is_avx512_bf16_supported"),
                            ("amx_tile", "_is_amx_tile_supported")):  # fmt: skip
            if getattr(torch.cpu, probe, lambda: False)():
                flags.add(flag)
    return model, frozenset(flags)


def _sysctl(name: str) -> str | None:
    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def isa_allows_bf16(isa: str) -> bool:
    """Whether oneDNN limited to ``isa`` (an ``ONEDNN_MAX_CPU_ISA`` value) still computes bf16;
    an unknown value limits nothing (oneDNN ignores it)."""
    name = isa.strip().upper()
    if name not in ONEDNN_ISAS:
        return True
    return ONEDNN_ISAS.index(name) >= ONEDNN_ISAS.index("AVX512_CORE_BF16")


def bf16_support(
    device_type: str,
    *,
    environ: Mapping[str, str] | None = None,
    flags: frozenset[str] | None = None,
    cuda_bf16: bool | None = None,
) -> tuple[bool, str]:
    """Whether ``device_type`` computes bfloat16 natively, and why (one phrase).

    Args:
        device_type: ``"cpu"`` or ``"cuda"`` (any other: no).
        environ: the environment (``os.environ``); :data:`FORCE_ENV` forces the answer,
            :data:`ISA_ENV` below bf16 makes the CPU's "no".
        flags: the CPU's flags (:func:`cpu_info`'s), for tests.
        cuda_bf16: ``torch.cuda.is_bf16_supported()``'s answer, for tests.

    Raises:
        ValueError: :data:`FORCE_ENV` is set to anything but ``0`` or ``1``.
    """
    env = os.environ if environ is None else environ
    forced = env.get(FORCE_ENV)
    if forced is not None and forced.strip() != "":
        if forced.strip() not in ("0", "1"):
            raise ValueError(f"{FORCE_ENV}={forced!r}: set it to 1 (native bf16) or 0 (none)")
        return forced.strip() == "1", f"{FORCE_ENV}={forced.strip()}"
    if device_type == "cuda":
        if cuda_bf16 is None:
            cuda_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return cuda_bf16, ("the GPU computes bf16" if cuda_bf16 else "the GPU has no bf16")
    if device_type != "cpu":
        return False, f"bf16 autocast is not probed on {device_type}"
    isa = env.get(ISA_ENV)
    if isa and not isa_allows_bf16(isa):
        return False, f"{ISA_ENV}={isa} limits oneDNN below bf16"
    found = sorted(BF16_FLAGS & (cpu_info()[1] if flags is None else flags))
    if found:
        return True, f"the CPU computes bf16 ({', '.join(found)})"
    return False, "the CPU has no native bf16 (no avx512_bf16, amx_bf16 or ARM bf16)"


@functools.cache
def native_bf16(device_type: str) -> bool:
    """:func:`bf16_support`'s answer for this process (the environment read once)."""
    return bf16_support(device_type)[0]


def device_type_of(accelerator: str) -> str:
    """The torch device type a Lightning ``accelerator`` runs on (``auto``: CUDA if present)."""
    if accelerator in ("gpu", "cuda"):
        return "cuda"
    if accelerator == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return accelerator


def resolve_precision(requested: str, accelerator: str, **probe: Any) -> tuple[str, str]:
    """The Lightning precision a run uses, and why.

    ``auto``: ``bf16-mixed`` where the device computes bf16 natively (:func:`bf16_support`),
    else ``32-true``. Any other value is kept; an explicit ``bf16-mixed`` on a CPU without
    native bf16 is kept too, and its reason says that it is emulated and slow.

    Args:
        requested: ``trainer.precision``.
        accelerator: ``trainer.accelerator``.
        probe: keyword arguments of :func:`bf16_support` (tests).
    """
    native, why = bf16_support(device_type_of(accelerator), **probe)
    if requested == AUTO:
        return (BF16, f"auto: {why}") if native else (FP32, f"auto: {why}")
    if requested.startswith("bf16") and not native:
        return requested, f"set explicitly; emulated and slow: {why}"
    return requested, "set explicitly"


_warned: set[str] = set()


def warn_if_emulated(precision: str, device_type: str) -> None:
    """Warn once per process that ``precision`` is emulated on ``device_type``."""
    if not precision.startswith("bf16") or native_bf16(device_type) or device_type in _warned:
        return
    _warned.add(device_type)
    why = bf16_support(device_type)[1]
    log.warning("%s on %s without native bf16 (%s): emulated, many times slower than 32-true; "
                "trainer.precision=auto chooses for this machine",
                precision, device_type, why)  # fmt: skip


def resolve_run_precision(cfg: Any, saved: Mapping[str, Any] | None = None) -> str:
    """Set ``cfg.trainer.precision`` to the precision the run uses, log it with its reason, and
    return the reason (:func:`resolve_precision`).

    ``auto`` resolves on this machine, or to the precision of ``saved`` (the config a resumed
    checkpoint was trained with), so that a run keeps one precision throughout.
    """
    requested = str(cfg.trainer.precision)
    saved_precision = ((saved or {}).get("trainer") or {}).get("precision")
    if requested == AUTO and saved_precision not in (None, AUTO):
        precision, reason = str(saved_precision), "auto: the precision the resumed run began with"
    else:
        precision, reason = resolve_precision(requested, str(cfg.trainer.accelerator))
    cfg.trainer.precision = precision
    log.info("precision %s (%s)", precision, reason)
    warn_if_emulated(precision, device_type_of(str(cfg.trainer.accelerator)))
    return reason


def lstm_autocast_ok(device_type: str) -> bool:
    """Whether an LSTM may run under the active autocast on ``device_type``: not on a CPU
    without native bf16 (oneDNN has no bf16 LSTM primitive there), nor under float16 on the
    CPU; the caller then runs it in float32."""
    if not torch.is_autocast_enabled(device_type):
        return True
    if device_type != "cpu":
        return True
    return torch.get_autocast_dtype("cpu") == torch.bfloat16 and native_bf16("cpu")


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except Exception:  # not installed, or no __version__
        return None


def environment(precision: str, reason: str) -> dict[str, Any]:
    """A run's environment record (``environment.json``): package versions, CPU model and the
    flags that decide precision, the GPU, the probe's variables, and the precision chosen."""
    model, flags = cpu_info()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "precision": precision,
        "precision_reason": reason,
        "versions": {name: _version(name) for name in PACKAGES}
        | {"python": platform.python_version()},
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": model,
        "cpu_flags": {flag: flag in flags for flag in RECORDED_FLAGS},
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "gpu": gpu,
        "env": {name: os.environ.get(name) for name in (FORCE_ENV, ISA_ENV, "OMP_NUM_THREADS")},
    }
