"""Training-step throughput of the biaffine parser against its encoder floor, fp32 and bf16.

One training step is forward (the full ``conf/model/biaffine.yaml`` scorer on MiniLM, fine-tuned)
+ the structured hinge with ``--decoder`` (margin 1, single root) + backward, on real
``--batch-words`` batches of the shipped UD English-EWT sample (``conf/data/ewt-sample.yaml``).
Everything is measured in one process, interleaved (repeat, batch, precision, code path), so
that the ratios compare like with like on a shared machine:

- **full step**, with the current code, with the former relation path alone (``all-pairs``:
  relation scores for every head-dependent pair, the gold heads' gathered by the loss; the
  current code scores the gold heads' alone) and with the former code (``legacy``: the
  character model and word BiLSTM as ``nn.LSTM`` over packed sequences, all wordpiece windows
  of a batch in one block padded to the longest, relations at every pair), on the same weights
  and batches;
- **encoder floor**: MiniLM alone, forward + backward over the same batch's real windows,
  sorted by length and chunked (``length_chunks``), the part no parser can remove;
- a **per-component breakdown** of the current step, each component run forward + backward on
  its own on the step's inputs (encoder, character model, word BiLSTM, biaffine scorers, the
  loss terms with decoding, decoding alone, Adam's step), and a ``torch.profiler`` table of the
  top operators of both code paths (``aten::slice_backward`` is the packed LSTMs' cost);
- **padded / real wordpieces** the transformer sees, former one-block path and current chunks,
  on the timed batches and (``--ewt``) on UD English-EWT train and dev at ``--ratio-words``;
- the share of loss-augmented decoding in the step, per decoder (``--decoders``).

The scores come from the model after ``--pretrain-steps`` Adam steps of the local cross-entropy
(an untrained biaffine scores every arc 0, which no decoder meets in training).

Run from the repository root::

    OMP_NUM_THREADS=2 python benchmarks/training_step.py --ewt /path/to/ud-english-ewt \\
        --output benchmarks/results/training_step.md
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shlex
import sys
import time
import types
from collections import defaultdict
from pathlib import Path

import torch
from hydra.utils import instantiate
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bockparse.data.subwords import length_chunks, pool_pieces
from bockparse.data.vocab import PAD_INDEX
from bockparse.decoders import get_decoder
from bockparse.losses import LocalCrossEntropy, StructuredHinge
from bockparse.model import ParserScores
from bockparse.model.lstm import bilstm

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
DECODERS = ("bock", "bock-original", "cle", "tarjan", "eisner")
PRECISIONS = ("fp32", "bf16")
PATHS = ("legacy", "all-pairs", "current")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--encoder", default="minilm", help="a conf/encoder/ option")
    p.add_argument("--decoder", default="bock", help="the hinge's oracle in the timed steps")
    p.add_argument("--decoders", nargs="*", default=list(DECODERS), help="decode-share table")
    p.add_argument("--batch-words", type=int, default=1000, help="word budget per timed batch")
    p.add_argument("--batches", type=int, default=3, help="timed batches")
    p.add_argument("--repeats", type=int, default=2, help="passes over the timed batches")
    p.add_argument("--pretrain-steps", type=int, default=5, help="local-CE steps before timing")
    p.add_argument("--lr", type=float, default=2e-4, help="Adam learning rate of the pretraining")
    p.add_argument("--ewt", type=Path, help="folder of the full UD English-EWT (padding ratios)")
    p.add_argument("--ratio-words", type=int, default=5000, help="batch words of those ratios")
    p.add_argument("--seed", type=int, default=1111)
    p.add_argument("--output", type=Path, help="also write the report to this file")
    return p.parse_args()


def data_config(args: argparse.Namespace, root: Path, batch_words: int):
    """The composed ``train`` config (data, encoder, model groups) on ``root``'s EWT files."""
    from hydra import compose, initialize_config_dir

    overrides = [
        f"encoder={args.encoder}",
        "data=ewt-sample",
        "model=biaffine",
        f"seed={args.seed}",
        f"data.root={root}",
        f"data.batch_size={batch_words}",
    ]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    cfg.data.tokenizer = cfg.encoder.tokenizer  # as bockparse.training.train.build wires them
    cfg.data.max_length = cfg.encoder.max_length
    return cfg


def build(args: argparse.Namespace):
    """The first training batches of the sample and the scorer."""
    cfg = data_config(args, ROOT / "data" / "ud-english-ewt-sample", args.batch_words)
    datamodule = instantiate(cfg.data)
    datamodule.setup("fit")
    loader = iter(datamodule.train_dataloader())
    batches = [next(loader) for _ in range(args.batches + 1)]  # the first one warms up
    torch.manual_seed(args.seed)
    scorer = instantiate(cfg.model)(
        vocabs=datamodule.vocabs, encoder=instantiate(cfg.encoder.model)
    ).train()
    return batches, scorer


# -- the former code path, kept here to time it against the current one on the same weights --


def _legacy_characters(self, chars: torch.Tensor) -> torch.Tensor:
    B, N, _ = chars.shape
    lengths = (chars != PAD_INDEX).sum(-1)
    present = lengths > 0
    words, inverse = torch.unique(chars[present], dim=0, return_inverse=True)
    packed = pack_padded_sequence(
        self.dropout(self.embedding(words)),
        (words != PAD_INDEX).sum(-1).cpu(),
        batch_first=True,
        enforce_sorted=False,
    )
    _, (final, _) = self.lstm(packed)
    vectors = self.projection(self.dropout(torch.cat([final[0], final[1]], dim=-1)))
    out = vectors.new_zeros(B, N, self.output_size)
    out[present] = vectors[inverse]
    return out


def _legacy_contextualize(self, batch) -> torch.Tensor:
    x = self.dropout(self.inputs(batch))
    packed = pack_padded_sequence(
        x, (batch.lengths + 1).cpu(), batch_first=True, enforce_sorted=False
    )
    out, _ = self.lstm(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return self.dropout(out)


def _legacy_encoder(self, subwords) -> torch.Tensor:
    return pool_pieces(self._mix(subwords.input_ids, subwords.attention_mask), subwords,
                       self.pooling)  # fmt: skip


def _all_pairs_at(self, u, v, heads) -> torch.Tensor:
    rel = self.pairs(u, v)  # [B, N, N, R]: every pair scored, then the asked ones gathered
    index = heads.clamp(min=0)[:, None, :, None].expand(-1, 1, -1, rel.shape[-1])
    return rel.gather(1, index).squeeze(1)  # [B, N, R]


@contextlib.contextmanager
def code_path(scorer, path: str):
    """Run ``scorer`` with the ``current`` code, the former relation path (``all-pairs``) or
    the ``legacy`` code (same modules, weights)."""
    swaps = {
        "current": [],
        "all-pairs": [(scorer.rel, "pairs_at", _all_pairs_at)],
        "legacy": [
            (scorer.rel, "pairs_at", _all_pairs_at),
            (scorer.context.char_model, "forward", _legacy_characters),
            (scorer.context, "contextualize", _legacy_contextualize),
            (scorer.encoder, "forward", _legacy_encoder),
        ],
    }[path]
    for obj, name, fn in swaps:
        setattr(obj, name, types.MethodType(fn, obj))
    try:
        yield
    finally:
        for obj, name, _ in swaps:
            delattr(obj, name)


def autocast(precision: str):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")


# -- measurements ------------------------------------------------------------------------------


def pretrain(scorer, batches, steps: int, lr: float) -> None:
    """Adam on the local cross-entropy, cycling over ``batches``."""
    optimizer = torch.optim.Adam(scorer.parameters(), lr=lr)
    loss = LocalCrossEntropy()
    for step in range(steps):
        batch = batches[step % len(batches)]
        optimizer.zero_grad()
        loss(scorer(batch), batch).loss.backward()
        optimizer.step()


def full_step(scorer, hinge, batch, precision: str, path: str) -> tuple[float, float]:
    """Seconds of forward + hinge + backward, and of its decoding."""
    scorer.zero_grad(set_to_none=True)
    start = time.perf_counter()
    with code_path(scorer, path), autocast(precision):
        out = hinge(scorer(batch), batch)
    out.loss.backward()
    return time.perf_counter() - start, out.decode_seconds


def encoder_floor(transformer, subwords, precision: str) -> float:
    """Seconds of the transformer alone, forward + backward over the real windows, chunked."""
    transformer.zero_grad(set_to_none=True)
    lengths = subwords.attention_mask.sum(-1).numpy()
    start = time.perf_counter()
    for windows in length_chunks(lengths, 4096, 1.25):
        index = torch.from_numpy(windows)
        t = int(lengths[windows].max())
        with autocast(precision):
            out = transformer(
                input_ids=subwords.input_ids[index, :t],
                attention_mask=subwords.attention_mask[index, :t],
            ).last_hidden_state
        out.float().sum().backward()
    return time.perf_counter() - start


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def backward_of(out) -> None:
    torch.stack([o.float().sum() for o in out if o is not None]).sum().backward()


def components(scorer, hinge, batch, precision: str, optimizer) -> dict[str, float]:
    """Seconds of each part of the current step, forward + backward each on its own."""
    parts = {}
    with torch.no_grad(), autocast(precision):
        x = scorer.context.inputs(batch)
        h = scorer.context.contextualize(batch)
        scores = scorer(batch)

    def leaf(t):
        return t.detach().requires_grad_()

    def run(name, fn):
        scorer.zero_grad(set_to_none=True)
        parts[name] = timed(fn)

    def encoder():
        with autocast(precision):
            out = scorer.encoder(batch.subwords)
        backward_of([out])

    def characters():
        with autocast(precision):
            out = scorer.context.char_model(batch.chars)
        backward_of([out])

    def word_lstm():
        with autocast(precision):
            out, _ = bilstm(scorer.context.lstm, scorer.context.dropout(leaf(x)), batch.lengths + 1)
        backward_of([out])

    def biaffine():
        y = leaf(h)
        with autocast(precision):
            out = [m(y) for m in (scorer.arc, scorer.linearization, scorer.distance)]
            out.append(scorer.rel.at(y, batch.heads))  # [B, N, R], as the loss reads them
        backward_of(out)

    decode = []

    def loss():
        rel = leaf(scores.rel_at_heads(batch.heads))
        s = ParserScores(leaf(scores.arc), linearization=leaf(scores.linearization),
                         distance=leaf(scores.distance), rel_fn=lambda: scores.rel,
                         rel_at_fn=lambda _: rel)  # fmt: skip
        with autocast(precision):
            out = hinge(s, batch)
        out.loss.backward()
        decode.append(out.decode_seconds)

    for name, fn in (
        ("encoder", encoder),
        ("character model", characters),
        ("word BiLSTM", word_lstm),
        ("biaffine scorers", biaffine),
        ("loss terms (with decoding)", loss),
    ):
        run(name, fn)
    parts["decoding (inside the loss)"] = decode[0]
    with autocast(precision):
        out = hinge(scorer(batch), batch)
    out.loss.backward()
    parts["optimiser step (Adam)"] = timed(optimizer.step)
    return parts


def forward_gflops(scorer, batch) -> dict[str, float]:
    """Forward GFLOPs (2 per multiply-add) of the matrix products of each part, as run.

    LSTMs: ``4 H (D + H)`` multiply-adds per step, direction and row, over the padded steps the
    fused kernels run; biaffine: ``[u; 1] W`` for every position and output, then every pair
    (the relations: at the distinct gold heads, then each word's gold pair);
    encoder: the transformer's projections and feed-forward per real-window piece of the chunks,
    plus attention. Machine-independent: the floor ratio of the step can be no lower than
    ``(encoder + parser) / encoder`` at equal arithmetic efficiency.
    """
    B, N = batch.mask.shape
    chars = batch.chars[(batch.chars != PAD_INDEX).any(-1)]
    steps = int((torch.unique(chars, dim=0) != PAD_INDEX).sum())  # each word over its own
    lstm, char_lstm = scorer.context.lstm, scorer.context.char_model.lstm
    H = lstm.hidden_size
    word = sum(
        2 * 2 * 4 * H * ((lstm.input_size if layer == 0 else 2 * H) + H) * B * N
        for layer in range(lstm.num_layers)
    )
    Hc = char_lstm.hidden_size
    char = 2 * 2 * 4 * Hc * (char_lstm.input_size + Hc) * steps
    words = batch.heads >= 0
    gold = int((batch.heads + N * torch.arange(B)[:, None])[words].unique().numel())
    biaffine = 0
    for m in (scorer.arc, scorer.rel, scorer.linearization, scorer.distance):
        O, K1, _ = m.weight.shape
        biaffine += 2 * B * N * 2 * m.head_mlp.in_features * (K1 - 1)  # the MLPs
        heads, pairs = (gold, int(words.sum())) if m is scorer.rel else (B * N, B * N * N)
        biaffine += 2 * (heads * K1 * K1 * O + pairs * K1 * O)
    config = scorer.encoder.transformer.config
    Hd, F = config.hidden_size, config.intermediate_size
    lengths = batch.subwords.attention_mask.sum(-1).numpy()
    chunks = length_chunks(lengths, scorer.encoder.chunk_pieces, scorer.encoder.max_padding)
    pieces = sum(len(c) * int(lengths[c].max()) for c in chunks)
    squares = sum(len(c) * int(lengths[c].max()) ** 2 for c in chunks)
    layers = config.num_hidden_layers
    encoder = 2 * layers * ((4 * Hd * Hd + 2 * Hd * F) * pieces + 2 * Hd * squares)
    return {
        "encoder (transformer)": encoder / 1e9,
        "word BiLSTM": word / 1e9,
        "character model": char / 1e9,
        "biaffine scorers": biaffine / 1e9,
    }


def padding(batches, chunk_pieces: int, max_padding: float) -> tuple[float, float]:
    """Padded / real wordpieces over ``batches``: one block per batch, and chunked."""
    real = block = chunked = 0
    for batch in batches:
        mask = batch.subwords.attention_mask
        lengths = mask.sum(-1).numpy()
        real += int(lengths.sum())
        block += mask.numel()
        chunked += sum(
            len(c) * int(lengths[c].max())
            for c in length_chunks(lengths, chunk_pieces, max_padding)
        )
    return block / real, chunked / real


def ewt_padding(args, encoder) -> list[str]:
    cfg = data_config(args, args.ewt, args.ratio_words)
    cfg.data.val = "en_ewt-ud-dev.conllu"
    datamodule = instantiate(cfg.data)
    datamodule.setup("fit")
    rows = []
    for split, loader in (
        ("train", datamodule.train_dataloader()),
        ("dev", datamodule.val_dataloader()),
    ):
        block, chunked = padding(list(loader), encoder.chunk_pieces, encoder.max_padding)
        rows.append(
            f"| EWT {split}, {args.ratio_words:,}-word batches | {block:.2f} | {chunked:.2f} |"
        )
    return rows


def profile_table(scorer, hinge, batch, rows: int = 6) -> list[str]:
    lines = []
    for path in PATHS:
        full_step(scorer, hinge, batch, "fp32", path)
        with torch.profiler.profile() as prof:
            full_step(scorer, hinge, batch, "fp32", path)
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:rows]
        slices = sum(e.cpu_time_total for e in events if e.key == "aten::slice_backward")
        ops = ", ".join(f"`{e.key}` {100 * e.self_cpu_time_total / total:.0f} %" for e in top)
        lines.append(f"| {path} | {100 * slices / total:.0f} % | {ops} |")
    return lines


def main() -> None:
    args = parse_args()
    for name in {args.decoder, *args.decoders}:
        get_decoder(name)  # fail now, naming the known decoders, not after the setup
    batches, scorer = build(args)
    pretrain(scorer, batches[1:], args.pretrain_steps, args.lr)
    params = sum(p.numel() for p in scorer.parameters())
    encoder_params = sum(p.numel() for p in scorer.encoder.parameters())
    hinge = StructuredHinge(args.decoder, margin=1.0, single_root=True)
    transformer = scorer.encoder.transformer
    warm, timed_batches = batches[0], batches[1:]
    words = [int(b.mask.sum()) for b in timed_batches]

    for precision in PRECISIONS:  # untimed: one-off allocations, oneDNN kernels, numba
        for path in PATHS:
            full_step(scorer, hinge, warm, precision, path)
        encoder_floor(transformer, warm.subwords, precision)

    step = defaultdict(float)  # (precision, path) -> seconds over every timed step
    floor = defaultdict(float)  # precision -> seconds
    for rep in range(args.repeats):
        for k, batch in enumerate(timed_batches):
            for precision in PRECISIONS:
                order = PATHS if (rep + k) % 2 == 0 else PATHS[::-1]
                for path in order:
                    step[precision, path] += full_step(scorer, hinge, batch, precision, path)[0]
                floor[precision] += encoder_floor(transformer, batch.subwords, precision)
    steps = args.repeats * len(timed_batches)
    total_words = args.repeats * sum(words)

    step_rows = []
    for precision in PRECISIONS:
        f = floor[precision] / steps
        for path in PATHS:
            s = step[precision, path] / steps
            step_rows.append(
                f"| {precision} | {path} | {s:.3f} | {f:.3f} | {s / f:.2f}× "
                f"| {total_words / step[precision, path]:,.0f} |"
            )
    ratio_rows = [
        f"| current / {path}, {precision} | "
        f"{step[precision, 'current'] / step[precision, path]:.2f} |"
        for path in ("all-pairs", "legacy")
        for precision in PRECISIONS
    ] + [
        f"| bf16 / fp32, current | {step['bf16', 'current'] / step['fp32', 'current']:.2f} |",
        f"| bf16 / fp32, legacy | {step['bf16', 'legacy'] / step['fp32', 'legacy']:.2f} |",
        f"| encoder floor bf16 / fp32 | {floor['bf16'] / floor['fp32']:.2f} |",
    ]

    optimizer = torch.optim.Adam(scorer.parameters(), lr=args.lr)
    parts = {p: defaultdict(float) for p in PRECISIONS}
    for batch in timed_batches:
        for precision in PRECISIONS:
            for name, seconds in components(scorer, hinge, batch, precision, optimizer).items():
                parts[precision][name] += seconds
    names = list(parts["fp32"])
    part_rows = []
    for name in names:
        cells = []
        for precision in PRECISIONS:
            s = parts[precision][name] / len(timed_batches)
            share = parts[precision][name] / (step[precision, "current"] / args.repeats)
            cells.append(f"{s:.3f} | {100 * share:.0f} %")
        part_rows.append(f"| {name} | {' | '.join(cells)} |")

    pad_rows = []
    block, chunked = padding(timed_batches, scorer.encoder.chunk_pieces, scorer.encoder.max_padding)
    pad_rows.append(
        f"| timed sample batches, {args.batch_words:,} words | {block:.2f} | {chunked:.2f} |"
    )
    if args.ewt is not None:
        pad_rows += ewt_padding(args, scorer.encoder)

    gflops = defaultdict(float)
    for batch in timed_batches:
        for name, value in forward_gflops(scorer, batch).items():
            gflops[name] += value / len(timed_batches)
    encoder_gflops = gflops["encoder (transformer)"]
    flop_rows = [
        f"| {name} | {value:.1f} | {value / encoder_gflops:.2f} |" for name, value in gflops.items()
    ]
    flop_rows.append(
        f"| (encoder + parser) / encoder | | {sum(gflops.values()) / encoder_gflops:.2f} |"
    )

    profile_rows = profile_table(scorer, hinge, timed_batches[0])

    decode_rows = []
    for name in args.decoders:
        decoder = StructuredHinge(name, margin=1.0, single_root=True)
        full_step(scorer, decoder, warm, "fp32", "current")
        s = d = 0.0
        for batch in timed_batches:
            a, b = full_step(scorer, decoder, batch, "fp32", "current")
            s, d = s + a, d + b
        n = len(timed_batches)
        decode_rows.append(f"| `{name}` | {s / n:.3f} | {d / n * 1e3:.1f} | {100 * d / s:.2f} % |")

    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    cpu = platform.processor() or platform.machine()
    lines = [
        f"`{command}`",
        "",
        f"Encoder `{args.encoder}` (fine-tuned); scorer `conf/model/biaffine.yaml`: "
        f"{params / 1e6:.1f} M parameters ({encoder_params / 1e6:.1f} M in the encoder); "
        f"hinge with `{args.decoder}`, margin 1, single root; {args.pretrain_steps} local-CE "
        f"pretraining steps; {len(timed_batches)} batches of about "
        f"{sum(words) / len(words):,.0f} words, {args.repeats} passes, interleaved; torch "
        f"{torch.__version__}, {torch.get_num_threads()} threads; {os.cpu_count()} CPUs ({cpu}). "
        "`legacy`: the former code path (packed `nn.LSTM`s, one padded block of windows, "
        "relations scored at every pair) on the same weights; `all-pairs`: the current code but "
        "relations scored at every pair, the gold ones gathered; `current`: fused BiLSTMs, "
        "length-sorted window chunks, relations at the gold heads alone.",
        "",
        "### Full step (forward + hinge + backward) against the encoder floor",
        "",
        "| precision | code | step s | encoder floor s | step / floor | words/s |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
        *step_rows,
        "",
        "| ratio (same run) | value |",
        "| --- | ---: |",
        *ratio_rows,
        "",
        "### Per-component breakdown of the current step (each forward + backward on its own)",
        "",
        "Shares are of the current full step of the same precision; the rest is glue (input "
        "embeddings, concatenation, the autograd graph across parts).",
        "",
        "| component | fp32 s | fp32 share | bf16 s | bf16 share |",
        "| --- | ---: | ---: | ---: | ---: |",
        *part_rows,
        "",
        "### Padded / real wordpieces seen by the transformer",
        "",
        "| batches | one padded block (legacy) | length chunks (current) |",
        "| --- | ---: | ---: |",
        *pad_rows,
        "",
        "### Forward GFLOPs per batch (matrix products, analytical; backward is about twice)",
        "",
        "| part | GFLOP | / encoder |",
        "| --- | ---: | ---: |",
        *flop_rows,
        "",
        "### Profile of one fp32 step (`torch.profiler`, self CPU time)",
        "",
        "| code | `aten::slice_backward` (total) | top operators |",
        "| --- | ---: | --- |",
        *profile_rows,
        "",
        "### Loss-augmented decoding in the current fp32 step, per decoder",
        "",
        "| decoder | step s | decode ms | decode share |",
        "| --- | ---: | ---: | ---: |",
        *decode_rows,
    ]
    report = "\n".join(lines)
    print(report)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
