"""What cuDNN's weight compaction costs :func:`bockparse.model.lstm.bilstm`, on one device.

:func:`~bockparse.model.lstm.bilstm` runs each layer and direction of a bidirectional
``nn.LSTM`` as its own ``torch.lstm`` call. ``nn.LSTM`` keeps all its weights in one buffer on
a GPU; cuDNN takes a call's weights in place only when they fill a buffer of their own, and
otherwise warns ("RNN module weights are not part of single contiguous chunk of memory") and
copies them into a new one at every call. ``bilstm`` therefore gives each layer and direction a
buffer of its own first (``flatten_directions``). This script measures what that saves: the
same computation on the same weights, forward + backward, two ways:

- **one buffer**: ``bockparse.model.lstm._bilstm`` (``bilstm`` without the regrouping) on the
  module as ``nn.LSTM`` keeps it, all weights in one buffer (the code before the regrouping);
- **bilstm**: the public function on a copy of the module, which regroups the copy's weights
  once, at its first call.

Both run the word BiLSTM and the character BiLSTM of the Table 1 GSD parser
(``conf/model/context/bilstm.yaml``: 3 x 400 over 300 inputs, 1 x 400 over 100) on random
inputs of the shape of a shuffled 1,000-word UD Chinese-GSD training batch (about 41
sentences, the longest about 62 words; about 600 distinct words of up to 9 characters),
interleaved in rounds so that both see the same machine state. Outputs and gradients of the
two must be equal (the weights hold the same numbers); the report says whether they are, and
whether each way raised cuDNN's warning. On a CPU nothing is regrouped, and both should time
alike.

Run from the repository root::

    python benchmarks/lstm_weights.py --output benchmarks/results/lstm_weights.md
"""

from __future__ import annotations

import argparse
import copy
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from bockparse.model.lstm import _bilstm, bilstm, directions


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--sentences", type=int, default=41, help="word BiLSTM batch size")
    p.add_argument("--words", type=int, default=62, help="the longest sentence")
    p.add_argument("--distinct", type=int, default=600, help="character BiLSTM batch size")
    p.add_argument("--chars", type=int, default=9, help="the longest word")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    p.add_argument("--calls", type=int, default=20, help="timed calls per round and variant")
    p.add_argument("--seed", type=int, default=1111)
    p.add_argument("--output", type=Path, help="also write the report to this file")
    return p.parse_args(argv)


def parameters(lstm: nn.LSTM) -> list[torch.Tensor]:
    """Every layer and direction's weights, in ``_bilstm``'s order."""
    return [w for weights in directions(lstm) for w in weights]


def step(run, lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor, precision: str):
    """Forward + backward of ``run(lstm, x, lengths)``; returns the output and the gradients."""
    for weight in parameters(lstm):
        weight.grad = None
    x = x.detach().requires_grad_(True)
    with torch.autocast(x.device.type, torch.bfloat16, enabled=precision == "bf16-mixed"):
        out, final = run(lstm, x, lengths)
    (out.float().sum() + final.float().sum()).backward()
    return out.detach(), [x.grad, *(w.grad for w in parameters(lstm))]


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def measure(args: argparse.Namespace) -> list[dict]:
    """Every (LSTM, precision) pair: median ms per forward + backward of each variant."""
    torch.manual_seed(args.seed)
    device = args.device
    shapes = {  # name: (input size, layers, batch, steps)
        "word BiLSTM (3 x 400)": (300, 3, args.sentences, args.words),
        "character BiLSTM (1 x 400)": (100, 1, args.distinct, args.chars),
    }
    precisions = ["32-true"] + (["bf16-mixed"] if device.startswith("cuda") else [])
    rows = []
    for label, (size, layers, batch, steps) in shapes.items():
        lstm = nn.LSTM(size, 400, layers, batch_first=True, bidirectional=True).to(device).eval()
        variants = {"one buffer": (_bilstm, lstm), "bilstm": (bilstm, copy.deepcopy(lstm))}
        x = torch.randn(batch, steps, size, device=device)
        lengths = torch.randint(1, steps + 1, (batch,), device=device)
        lengths[0] = steps
        for precision in precisions:
            results, warned = {}, {}
            for name, variant in variants.items():
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    results[name] = step(*variant, x, lengths, precision)
                warned[name] = any("contiguous chunk" in str(w.message) for w in caught)
            equal = torch.equal(results["one buffer"][0], results["bilstm"][0]) and all(
                torch.equal(a, b) for a, b in zip(*(results[n][1] for n in variants), strict=True)
            )
            times = {name: [] for name in variants}
            for _ in range(args.rounds):
                for name, variant in variants.items():
                    step(*variant, x, lengths, precision)  # warm-up of this round
                    sync(device)
                    start = time.perf_counter()
                    for _ in range(args.calls):
                        step(*variant, x, lengths, precision)
                    sync(device)
                    times[name].append(1000 * (time.perf_counter() - start) / args.calls)
            rows.append(
                {
                    "lstm": label,
                    "shape": f"{batch} x {steps} x {size}",
                    "precision": precision,
                    "one buffer": statistics.median(times["one buffer"]),
                    "bilstm": statistics.median(times["bilstm"]),
                    "warned": warned,
                    "equal": equal,
                }
            )
    return rows


def report(args: argparse.Namespace, rows: list[dict]) -> str:
    on_gpu = args.device.startswith("cuda")
    device = torch.cuda.get_device_name() if on_gpu else platform.processor()
    cudnn = torch.backends.cudnn.version() if on_gpu else None
    lines = [
        f"## cuDNN weight compaction in bilstm: {device or args.device}, torch {torch.__version__}"
        + (f", cuDNN {cudnn}" if cudnn else ""),
        "",
        "`" + " ".join(["python benchmarks/lstm_weights.py", *args.argv]) + "`",
        f"({args.rounds} interleaved rounds of {args.calls} forward + backward calls per variant;"
        " median of the rounds' means).",
        "",
        "| LSTM | batch x steps x input | precision | one buffer (ms) | bilstm (ms)"
        " | one buffer / bilstm | cuDNN's warning (one buffer, bilstm) | outputs and gradients"
        " equal |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        warned = ", ".join("yes" if r["warned"][n] else "no" for n in ("one buffer", "bilstm"))
        lines.append(
            f"| {r['lstm']} | {r['shape']} | {r['precision']} | {r['one buffer']:.2f} | "
            f"{r['bilstm']:.2f} | {r['one buffer'] / r['bilstm']:.2f} | {warned} | "
            f"{'yes' if r['equal'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    args.argv = argv
    text = report(args, measure(args))
    print(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
