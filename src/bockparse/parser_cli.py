"""``bockparse-predict``, ``bockparse-evaluate`` and ``bockparse-export``: a trained parser
(:class:`bockparse.parser.Parser`) from the command line.

Each prints ``PROGRAM: problem`` on standard error and exits with status 1 on a bad model, input
or setting; no output file is written then (outputs are written atomically, when complete).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .data.conllu import DataError
from .metrics import add_punct_argument, format_scores

PROGRESS_SECONDS = 5.0  # at most one progress line per this many seconds


def _parser_class(program: str):
    """:class:`bockparse.parser.Parser`, or exit naming the extra that installs what it needs
    (the light install has no torch)."""
    from .cli import missing_extra

    try:
        from .parser import Parser
    except ModuleNotFoundError as err:
        extra = missing_extra(err)
        if extra is None:
            raise
        install = f"pip install 'bockparse[{extra}]'"
        raise SystemExit(
            f"{program}: needs the optional dependency {err.name!r}: {install}"
        ) from None
    return Parser


def _fail(program: str, err: Exception) -> int:
    print(f"{program}: {err}", file=sys.stderr)
    return 1


def _model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "model", help="a run folder, a checkpoint of a run, or a model file from bockparse-export"
    )
    parser.add_argument(
        "--precision",
        default=None,
        choices=["32-true", "bf16-mixed", "auto"],
        help="fp32, bf16 autocast, or auto (bf16 where this CPU/GPU computes it natively); "
        "default: the precision the run used (its scores)",
    )


def _decoder_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--decoder",
        default=None,
        help="registry decoder (bock, bock-original, cle, tarjan, eisner, ...); default: the run's",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        metavar="WORDS",
        help="words per batch; default: the run's",
    )


def _progress(stream) -> Callable[[int, int], None]:
    """A progress callback printing ``parsed D / S sentences`` at most every few seconds."""
    last = [time.perf_counter()]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= PROGRESS_SECONDS or done == total:
            print(f"parsed {done:,} / {total:,} sentences", file=stream, flush=True)
            last[0] = now

    return report


def predict(argv: Sequence[str] | None = None) -> int:
    """``bockparse-predict MODEL INPUT --out OUTPUT [--decoder NAME] [--batch-size WORDS]``."""
    parser = argparse.ArgumentParser(
        prog="bockparse-predict",
        description="Parse a CoNLL-U file (HEAD and DEPREL may be _) with a trained parser; the "
        "output is the input with only HEAD and DEPREL replaced.",
    )
    _model_argument(parser)
    parser.add_argument("input", help="CoNLL-U file to parse")
    parser.add_argument("--out", required=True, help="CoNLL-U file to write (atomically)")
    _decoder_argument(parser)
    args = parser.parse_args(argv)
    from .data.conllu import write_conllu

    Parser = _parser_class(parser.prog)
    try:
        model = Parser.load(args.model, precision=args.precision)
        sentences = model.sentences(args.input)
        start = time.perf_counter()
        parsed = model.predict(
            sentences, args.decoder, args.batch_size, progress=_progress(sys.stderr)
        )
        seconds = time.perf_counter() - start
        write_conllu(args.out, parsed)
    except (DataError, ValueError, OSError) as err:
        return _fail(parser.prog, err)
    words = sum(len(s) for s in parsed)
    print(
        f"{len(parsed):,} sentences, {words:,} words in {seconds:.2f} s: "
        f"{len(parsed) / seconds:.1f} sentences/s, {words / seconds:.0f} words/s -> {args.out}"
    )
    return 0


def evaluate(argv: Sequence[str] | None = None) -> int:
    """``bockparse-evaluate MODEL GOLD [--decoder NAME] [--exclude-punct ptb|ctb|upos]``."""
    parser = argparse.ArgumentParser(
        prog="bockparse-evaluate",
        description="UAS, LAS (base relations) and LCM of a trained parser on a gold CoNLL-U "
        "file, with the training conventions (punctuation included unless excluded).",
    )
    _model_argument(parser)
    parser.add_argument("gold", help="gold CoNLL-U file")
    _decoder_argument(parser)
    add_punct_argument(parser)
    args = parser.parse_args(argv)
    Parser = _parser_class(parser.prog)
    try:
        result = Parser.load(args.model, precision=args.precision).evaluate(
            args.gold, args.decoder, args.exclude_punct, args.batch_size
        )
    except (DataError, ValueError, OSError) as err:
        return _fail(parser.prog, err)
    print(format_scores(result))
    return 0


def export(argv: Sequence[str] | None = None) -> int:
    """``bockparse-export RUN --out MODEL``."""
    parser = argparse.ArgumentParser(
        prog="bockparse-export",
        description="Write a run's best model as one slim model file: weights, vocabularies, "
        "model and encoder settings, tokenizer, run metadata; no optimiser state.",
    )
    parser.add_argument("run", help="a run folder (its best.ckpt) or a checkpoint of a run")
    parser.add_argument("--out", required=True, help="the model file to write (e.g. model.pt)")
    args = parser.parse_args(argv)
    Parser = _parser_class(parser.prog)
    try:
        size = Parser.load(args.run).save(args.out)
    except (DataError, ValueError, OSError) as err:
        return _fail(parser.prog, err)
    print(f"{args.out}: {size / 2**20:.1f} MiB (from {Path(args.run)})")
    return 0
