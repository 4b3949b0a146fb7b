"""GPU check: a short ``trainer=gpu`` run on the shipped sample with MiniLM, in fp32 and
bf16-mixed, measured, and its best checkpoint evaluated on the CPU for comparison.

For each precision the script trains ``--steps`` updates of the default condition
(``conf/train.yaml``: hinge + Bock, MiniLM, the UD English-EWT sample, 5,000-word batches) with
one development evaluation at the end, then evaluates the best checkpoint on dev and test on
the GPU and again on the CPU (``trainer=cpu``, ``32-true``) and reports:

* step time: median wall time of a training update (``torch.cuda.synchronize`` on both ends),
  the first ``--warmup`` updates left out (JIT compilation, cuDNN autotuning, decoder pool);
* words/s: words of the timed updates over their time;
* decode share: the hinge's loss-augmented decoding (on the CPU) over the timed update time;
* peak GPU memory: ``torch.cuda.max_memory_allocated`` over training;
* evaluation sentences/s: dev + test sentences over the GPU evaluation's wall time
  (loading the checkpoint and writing the predictions included);
* whether the GPU's dev and test UAS/LAS/LCM equal the CPU evaluation of the same checkpoint.
  Required in fp32 (exit status 1 otherwise); in bf16-mixed the differences are reported only,
  since bf16 rounds differently from the CPU's fp32.

Run from the repository root on a machine with one CUDA GPU (a few minutes on an H200-class
GPU)::

    python benchmarks/gpu_check.py --output benchmarks/results/gpu_check.md
    python benchmarks/gpu_check.py --steps 100 -- data.batch_size=2000   # overrides after --

Without CUDA it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
PRECISIONS = ("32-true", "bf16-mixed")
KEYS = tuple(f"{stage}/{name}" for stage in ("val", "test") for name in ("uas", "las", "lcm"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60, help="training updates per precision")
    p.add_argument("--warmup", type=int, default=5, help="first updates left out of the timing")
    p.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    p.add_argument("--output", type=Path, help="also write the report to this file")
    p.add_argument("overrides", nargs="*", help="further bockparse-train overrides (after --)")
    return p.parse_args(argv)


@dataclass
class Measurement:
    """What one precision's run measured (times in seconds, memory in bytes)."""

    precision: str
    step_seconds: list[float] = field(default_factory=list)
    step_words: list[int] = field(default_factory=list)
    decode_seconds: list[float] = field(default_factory=list)
    peak_memory: int = 0
    eval_sentences: int = 0
    eval_seconds: float = 0.0
    gpu: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    same_files: bool = False


def differences(gpu: dict[str, float], cpu: dict[str, float]) -> dict[str, float]:
    """``gpu - cpu`` for every metric in ``KEYS`` that differs (empty: equal)."""
    return {key: gpu[key] - cpu[key] for key in KEYS if gpu[key] != cpu[key]}


def passed(m: Measurement) -> bool:
    """fp32 must reproduce the CPU evaluation exactly; bf16-mixed is only reported."""
    return m.precision != "32-true" or (not differences(m.gpu, m.cpu) and m.same_files)


def report(measurements: list[Measurement], header: str) -> str:
    """A markdown report: one row per precision, then the metric comparison."""
    lines = [header, "", "| precision | step time (ms, median) | words/s | decode share | "
             "peak GPU memory (GiB) | evaluation sentences/s |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for m in measurements:
        seconds = sum(m.step_seconds)
        lines.append(
            f"| {m.precision} | {1000 * statistics.median(m.step_seconds):.1f} "
            f"| {sum(m.step_words) / seconds:,.0f} | {100 * sum(m.decode_seconds) / seconds:.1f} % "
            f"| {m.peak_memory / 2**30:.2f} | {m.eval_sentences / m.eval_seconds:,.1f} |"
        )
    lines += ["", "| precision | " + " | ".join(KEYS) + " | equal to the CPU | files |",
              "|---|" + "---|" * (len(KEYS) + 2)]  # fmt: skip
    for m in measurements:
        diff = differences(m.gpu, m.cpu)
        cells = [f"{m.gpu[k]:.2f}" + (f" ({diff[k]:+.2f})" if k in diff else "") for k in KEYS]
        verdict = "yes" if not diff else "no"
        files = "identical" if m.same_files else "differ"
        note = "" if passed(m) else " **FAILED**"
        lines.append(f"| {m.precision} | " + " | ".join(cells) + f" | {verdict}{note} | {files} |")
    lines += ["", "GPU metrics; in brackets the difference to the CPU evaluation (32-true) of the "
              "same checkpoint where there is one."]  # fmt: skip
    return "\n".join(lines) + "\n"


def measure(
    precision: str, args: argparse.Namespace, work: Path, accelerator: str = "gpu"
) -> Measurement:
    """Train, time and evaluate one precision on ``accelerator``, then evaluate the best
    checkpoint again on the CPU in ``32-true``.

    ``accelerator="cpu"`` runs the same steps without CUDA (no synchronisation, no memory
    peak): the tests run the whole check that way on the smoke configuration.
    """
    import lightning.pytorch as pl
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from bockparse.training.callbacks import run_callbacks
    from bockparse.training.predictions import PredictionWriter, evaluate
    from bockparse.training.train import CONF_DIR, build

    cuda = accelerator == "gpu"
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    m = Measurement(precision)

    class StepTimer(pl.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            synchronize()
            self.start, self.decode = time.perf_counter(), module.decode_seconds

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            synchronize()
            if trainer.global_step > args.warmup:
                m.step_seconds.append(time.perf_counter() - self.start)
                m.step_words.append(int(batch.lengths.sum()))
                m.decode_seconds.append(module.decode_seconds - self.decode)

    overrides = [f"trainer={accelerator}", f"trainer.precision={precision}",
                 f"optim.max_steps={args.steps}", f"optim.eval_every={args.steps}",
                 "logger.wandb.enabled=false", "logger.csv=false",
                 "trainer.enable_progress_bar=false", *args.overrides]  # fmt: skip
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    run_dir = work / precision
    pl.seed_everything(cfg.seed, workers=True)
    datamodule, module = build(cfg)
    callbacks = run_callbacks(cfg, run_dir)
    writer, best = callbacks.predictions, callbacks.checkpoints.best_path
    trainer = instantiate(cfg.trainer, logger=False,
                          callbacks=[*callbacks.ordered(), StepTimer()],
                          default_root_dir=str(run_dir))  # fmt: skip
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    trainer.fit(module, datamodule=datamodule)
    m.peak_memory = torch.cuda.max_memory_allocated() if cuda else 0
    synchronize()
    start = time.perf_counter()
    m.gpu = evaluate(trainer, module, datamodule, writer, best, run_dir / "gpu")
    m.eval_seconds = time.perf_counter() - start
    m.eval_sentences = len(datamodule.dataset("val")) + len(datamodule.dataset("test"))
    cpu_writer = PredictionWriter()
    cpu_trainer = instantiate(cfg.trainer, accelerator="cpu", precision="32-true", logger=False,
                              callbacks=[cpu_writer], default_root_dir=str(run_dir))  # fmt: skip
    m.cpu = evaluate(cpu_trainer, module, datamodule, cpu_writer, best, run_dir / "cpu")
    m.same_files = all(
        (run_dir / "gpu" / name).read_bytes() == (run_dir / "cpu" / name).read_bytes()
        for name in ("predictions/val.conllu", "predictions/test.conllu")
    )
    return m


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device here (torch.cuda.is_available() is False): run it on a "
              "machine with a GPU and a CUDA build of torch", file=sys.stderr)  # fmt: skip
        return 2
    with tempfile.TemporaryDirectory(prefix="gpu_check-") as work:
        measurements = [measure(p, args, Path(work)) for p in args.precisions]
    header = (f"# GPU check: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
              f"{platform.node()}\n\n`python benchmarks/gpu_check.py "
              f"{shlex.join(argv if argv is not None else sys.argv[1:])}`, {args.steps} updates "
              f"per precision, the first {args.warmup} untimed.")  # fmt: skip
    text = report(measurements, header)
    print(text)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    return 0 if all(passed(m) for m in measurements) else 1


if __name__ == "__main__":
    sys.exit(main())
