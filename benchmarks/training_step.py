"""Share of a structured-hinge training step spent in loss-augmented inference, per decoder.

A training step here is forward (the full ``conf/model/biaffine.yaml`` scorer on the chosen
encoder, MiniLM by default) + the structured hinge (``StructuredHinge(decoder, margin=1.0,
single_root=True)``) + backward, on real ~1,000-word batches of the shipped UD English-EWT
sample, built by the data module (``conf/data/ewt-sample.yaml``). The decoding time is the
hinge's own ``LossOutput.decode_seconds`` (the wall time of ``decode_batch``, which overlaps
with the relation and auxiliary terms).

The scores come from the model after ``--pretrain-steps`` Adam steps of the local cross-entropy
(an untrained biaffine scores every arc 0, which no decoder ever meets in training). The model
is then frozen: every decoder sees the same batches, the same weights and the same dropout
masks, so the decoders differ only in decoding. Each decoder gets one untimed step first (JIT
compilation, thread pools).

Run from the repository root::

    python benchmarks/training_step.py            # prints a markdown table
    python benchmarks/training_step.py --help
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from bockparse.decoders import METHODS, get_decoder
from bockparse.losses import LocalCrossEntropy, StructuredHinge

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
DECODERS = ("bock", "bock-original", "cle", "tarjan", "eisner")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--decoders", nargs="+", default=list(DECODERS), help="registry names")
    p.add_argument("--encoder", default="minilm", help="a conf/encoder/ option")
    p.add_argument("--batch-words", type=int, default=1000, help="word budget per batch")
    p.add_argument("--batches", type=int, default=4, help="timed batches per decoder")
    p.add_argument("--pretrain-steps", type=int, default=10, help="local-CE steps before timing")
    p.add_argument("--lr", type=float, default=2e-4, help="Adam learning rate of the pretraining")
    p.add_argument("--seed", type=int, default=1111)
    p.add_argument("--output", type=Path, help="also write the table to this file")
    return p.parse_args()


def build(args: argparse.Namespace):
    """The data module, its first training batches, and the scorer."""
    cfg = OmegaConf.create(
        {
            "seed": args.seed,
            "encoder": OmegaConf.load(CONF / "encoder" / f"{args.encoder}.yaml"),
            "data": OmegaConf.load(CONF / "data" / "ewt-sample.yaml"),
            "model": OmegaConf.load(CONF / "model" / "biaffine.yaml"),
        }
    )
    cfg.data.root = str(ROOT / cfg.data.root)
    cfg.data.batch_size = args.batch_words
    cfg.data.tokenizer = cfg.encoder.tokenizer
    cfg.data.max_length = cfg.encoder.max_length
    datamodule = instantiate(cfg.data)
    datamodule.setup("fit")
    loader = iter(datamodule.train_dataloader())
    batches = [next(loader) for _ in range(args.batches + 1)]  # the first one warms up
    torch.manual_seed(args.seed)
    scorer = instantiate(cfg.model)(
        vocabs=datamodule.vocabs, encoder=instantiate(cfg.encoder.model)
    ).train()
    return batches, scorer


def pretrain(scorer, batches, steps: int, lr: float) -> None:
    """Adam on the local cross-entropy, cycling over ``batches``."""
    optimizer = torch.optim.Adam(scorer.parameters(), lr=lr)
    loss = LocalCrossEntropy()
    for step in range(steps):
        batch = batches[step % len(batches)]
        optimizer.zero_grad()
        loss(scorer(batch), batch).loss.backward()
        optimizer.step()


def time_decoder(scorer, batches, decoder: str, seed: int) -> tuple[float, float, int]:
    """Seconds of the timed steps, of their decoding, and their words."""
    hinge = StructuredHinge(decoder, margin=1.0, single_root=True)
    step_seconds = decode_seconds = 0.0
    words = 0
    torch.manual_seed(seed)  # the same dropout masks for every decoder
    for k, batch in enumerate(batches):
        scorer.zero_grad(set_to_none=True)
        start = time.perf_counter()
        out = hinge(scorer(batch), batch)
        out.loss.backward()
        elapsed = time.perf_counter() - start
        if k > 0:
            step_seconds += elapsed
            decode_seconds += out.decode_seconds
            words += out.words
    return step_seconds, decode_seconds, words


def main() -> None:
    args = parse_args()
    for name in args.decoders:
        get_decoder(name)  # fail now, naming the known decoders, not after the setup
    batches, scorer = build(args)
    pretrain(scorer, batches[1:], args.pretrain_steps, args.lr)
    params = sum(p.numel() for p in scorer.parameters())
    encoder = 0 if scorer.encoder is None else sum(p.numel() for p in scorer.encoder.parameters())
    timed = len(batches) - 1
    rows = []
    for name in args.decoders:
        step, decode, words = time_decoder(scorer, batches, name, args.seed)
        rows.append(
            f"| `{name}` | {timed} | {words / timed:,.0f} | {step / timed:.3f} "
            f"| {decode / timed * 1e3:.1f} | {100 * decode / step:.2f}% |"
        )
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    cpu = platform.processor() or platform.machine()
    lines = [
        f"`{command}`",
        "",
        f"Encoder `{args.encoder}`; scorer `conf/model/biaffine.yaml`: {params / 1e6:.1f} M "
        f"parameters ({encoder / 1e6:.1f} M in the encoder); hinge margin 1, single root; "
        f"{args.pretrain_steps} local-CE pretraining steps; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; {os.cpu_count()} CPUs ({cpu}). "
        f"Registered decoders: {', '.join(METHODS)}.",
        "",
        "| decoder | batches | words/batch | step s (fwd+loss+bwd) | decode ms | decode share |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *rows,
    ]
    table = "\n".join(lines)
    print(table)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
