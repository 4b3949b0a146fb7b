"""Prediction throughput of a trained parser on a CoNLL-U file, against the encoder's floor.

For each precision (fp32, bf16 autocast) and thread count it times, after a warm-up:

- ``Parser.predict`` end to end (reading excluded: the file is read once), in sentences/s and
  words/s;
- the same batches piece by piece: batch building (ids, characters, wordpiece windows), the
  transformer encoder (``scorer.encoder``: windows, layer mix, pooling), the rest of the
  scorer (the relation MLPs included), and decoding with the relation scores at the
  predicted heads (``bockparse.predict.predict_trees``); the decoding share is of that total;
- the floor: the transformer's forward alone (``scorer.encoder.transformer``, the last hidden
  state only) over the file's real wordpiece windows, sorted by length and run in chunks of at
  most ``--floor-pieces`` padded pieces;
- relation scores at the predicted heads only (``[B, N, R]``, what prediction computes), timed
  again alone, against the relation biaffine over all ``[B, N, N, R]`` pairs (what it
  computed before): what scoring them only where they are used saves.

    python benchmarks/prediction.py MODEL FILE [--threads 1 2] [--precision fp32 bf16]
        [--batch-size WORDS] [--output benchmarks/results/prediction.md]

MODEL is anything ``Parser.load`` takes (a run folder, a checkpoint, an exported model file).
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import torch
from torch import nn

from bockparse.parser import Parser
from bockparse.predict import predict_trees

# The benchmark's precisions as Parser.precision (Lightning's names): Parser.predict and
# Parser.autocast() run under the autocast they name.
PRECISIONS = {"fp32": "32-true", "bf16": "bf16-mixed"}


class Stopwatch:
    """Seconds spent in a module's forward, by forward hooks."""

    def __init__(self, module: nn.Module | None):
        self.seconds = 0.0
        self._start = 0.0
        if module is not None:
            module.register_forward_pre_hook(self._begin)
            module.register_forward_hook(self._end)

    def _begin(self, *_) -> None:
        self._start = time.perf_counter()

    def _end(self, *_) -> None:
        self.seconds += time.perf_counter() - self._start


def timed_batches(parser: Parser, sentences, batch_size) -> Iterator[tuple[object, float]]:
    """The parser's batches, each with the seconds spent building it."""
    iterator = parser.batches(sentences, batch_size)
    while True:
        start = time.perf_counter()
        try:
            batch = next(iterator)
        except StopIteration:
            return
        yield batch, time.perf_counter() - start


def breakdown(parser: Parser, sentences, batch_size) -> dict[str, float]:
    """Seconds per part of prediction (module doc), one pass over the batches."""
    scorer = parser.scorer
    encoder = Stopwatch(getattr(scorer, "encoder", None))
    captured: dict[str, torch.Tensor] = {}
    if getattr(scorer, "rel", None) is not None:  # the biaffines' input, x [B, N, D]
        scorer.arc.register_forward_pre_hook(lambda _m, args: captured.update(x=args[0]))
    parts = dict.fromkeys(("batches", "scorer", "decoding", "rel_at_heads", "rel_all_pairs"), 0.0)
    with torch.inference_mode(), parser.autocast():
        for batch, seconds in timed_batches(parser, sentences, batch_size):
            parts["batches"] += seconds
            start = time.perf_counter()
            scores = scorer(batch)
            middle = time.perf_counter()
            heads, _ = predict_trees(scores, batch.lengths, parser.decoder)
            parts["scorer"] += middle - start
            parts["decoding"] += time.perf_counter() - middle
            if "x" in captured:
                start = time.perf_counter()
                scorer.rel.at(captured["x"], heads)
                parts["rel_at_heads"] += time.perf_counter() - start
                start = time.perf_counter()
                scorer.rel(captured["x"])
                parts["rel_all_pairs"] += time.perf_counter() - start
    parts["encoder"] = encoder.seconds
    return parts


def floor(parser: Parser, sentences, batch_size, max_pieces: int) -> float:
    """Seconds of the transformer's forward alone over the file's real windows, sorted by
    length, in chunks of at most ``max_pieces`` padded pieces."""
    rows = []
    for batch in parser.batches(sentences, batch_size):
        sub = batch.subwords
        for ids, mask in zip(sub.input_ids, sub.attention_mask, strict=True):
            rows.append(ids[: int(mask.sum())])
    rows.sort(key=len)
    chunks, current = [], []
    for row in rows:
        if current and len(row) * (len(current) + 1) > max_pieces:
            chunks.append(current)
            current = []
        current.append(row)
    chunks.append(current)
    padded = []
    pad = parser.wordpieces.pad_id
    for chunk in chunks:
        T = len(chunk[-1])
        ids = torch.full((len(chunk), T), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), T), dtype=torch.long)
        for i, row in enumerate(chunk):
            ids[i, : len(row)], mask[i, : len(row)] = row, 1
        padded.append((ids, mask))
    transformer = parser.scorer.encoder.transformer
    start = time.perf_counter()
    with torch.inference_mode(), parser.autocast():
        for ids, mask in padded:
            transformer(input_ids=ids, attention_mask=mask)
    return time.perf_counter() - start


def measure(parser, sentences, batch_size, precision, threads, floor_pieces) -> dict:
    torch.set_num_threads(threads)
    words = sum(len(s) for s in sentences)
    parser.precision = PRECISIONS[precision]  # predict, breakdown and floor run under it
    parser.predict(sentences[:50], batch_size=batch_size, progress=False)  # warm-up: kernels
    start = time.perf_counter()
    parser.predict(sentences, batch_size=batch_size, progress=False)  # no bar in the timing
    total = time.perf_counter() - start
    parts = breakdown(parser, sentences, batch_size)
    row = {
        "precision": precision,
        "threads": threads,
        "seconds": total,
        "sentences/s": len(sentences) / total,
        "words/s": words / total,
        **parts,
    }
    if parser.wordpieces is not None:
        row["floor"] = floor(parser, sentences, batch_size, floor_pieces)
        row["floor words/s"] = words / row["floor"]
    return row


def table(rows: list[dict], parser: Parser, path: str, sentences, batch_size) -> str:
    words = sum(len(s) for s in sentences)
    lines = [
        f"# Prediction throughput ({date.today().isoformat()}, {platform.processor() or 'CPU'})",
        "",
        f"`python benchmarks/prediction.py` on `{path}` ({len(sentences):,} sentences, "
        f"{words:,} words), batches of {batch_size or parser.settings.batch_size:,} words, "
        f"decoder `{parser.decoder}`; model: {parser.metadata.get('condition')} "
        f"(encoder max_length {parser.wordpieces.max_length if parser.wordpieces else '-'}).",
        "",
        "| precision | threads | sentences/s | words/s | floor words/s | prediction / floor "
        "| decoding share | encoder share | rel at heads / all pairs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        pieces = r["batches"] + r["scorer"] + r["decoding"]
        floor_ratio = f"{r['seconds'] / r['floor']:.2f}×" if "floor" in r else "-"
        floor_speed = f"{r['floor words/s']:,.0f}" if "floor" in r else "-"
        rel_ratio = f"{r['rel_at_heads'] / r['rel_all_pairs']:.2f}" if r["rel_all_pairs"] else "-"
        lines.append(
            f"| {r['precision']} | {r['threads']} | {r['sentences/s']:,.1f} | "
            f"{r['words/s']:,.0f} | {floor_speed} | {floor_ratio} | "
            f"{100 * r['decoding'] / pieces:.1f} % | {100 * r['encoder'] / pieces:.1f} % | "
            f"{rel_ratio} |"
        )
    lines += [
        "",
        "Shares are of one pass timed piece by piece (batch building + scorer + decoding); the "
        "encoder share includes the layer mix and pooling; the floor is the transformer's "
        "forward alone over the same windows sorted by length; decoding includes the relation "
        "scores at the predicted heads (their MLPs are the scorer's); the two rel columns "
        "(MLPs included) are timed again, outside the pass.",
        "",
        "Seconds per part (the same pass):",
        "",
        "| precision | threads | batches | encoder | rest of scorer | decoding | rel at heads "
        "| rel all pairs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        rest = r["scorer"] - r["encoder"]
        lines.append(
            f"| {r['precision']} | {r['threads']} | {r['batches']:.2f} | {r['encoder']:.2f} | "
            f"{rest:.2f} | {r['decoding']:.2f} | {r['rel_at_heads']:.2f} | "
            f"{r['rel_all_pairs']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="run folder, checkpoint or exported model file")
    parser.add_argument("file", help="CoNLL-U file to parse (HEAD/DEPREL ignored)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--precision", nargs="+", choices=sorted(PRECISIONS),
                        default=["fp32", "bf16"])  # fmt: skip
    parser.add_argument("--batch-size", type=int, default=None, help="words; default the run's")
    parser.add_argument("--floor-pieces", type=int, default=8192,
                        help="padded pieces per transformer call in the floor")  # fmt: skip
    parser.add_argument("--output", type=Path, default=None, help="write the table here")
    args = parser.parse_args()

    model = Parser.load(args.model)
    sentences = model.sentences(args.file)
    rows = []
    for precision in args.precision:
        for threads in args.threads:
            rows.append(
                measure(model, sentences, args.batch_size, precision, threads, args.floor_pieces)
            )
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()})
    text = table(rows, model, args.file, sentences, args.batch_size)
    print(text)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
