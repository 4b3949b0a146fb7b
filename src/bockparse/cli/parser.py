"""``bockparse-predict``, ``bockparse-evaluate`` and ``bockparse-export``: a trained parser
(:class:`bockparse.parser.Parser`) from the command line.

Each prints ``PROGRAM: problem`` on standard error, one line, and exits with status 1 on a bad
model, input, setting or a failed write (naming the output, never a temporary file), and with
130 on Ctrl-C; no output file is written then (outputs are written atomically, when complete).
An output is checked before any work (:func:`bockparse.cli.outputs.output_problem`: never an
input, nor inside the run folder read). A CoNLL-U input or output ``-`` is standard input or
output; everything else the commands print then goes to standard error.
"""

from __future__ import annotations

import argparse
import errno
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..data.conllu import DataError, is_standard_stream
from ..metrics import format_scores
from ..rundir import describe_os_error
from .command import Command, whole_number
from .metrics import add_punct_argument
from .outputs import output_problem

PROGRESS_SECONDS = 5.0  # at most one progress line per this many seconds


def save_failure(err: RuntimeError, needed: int, out: str) -> str:
    """One line for a model file that torch could not write: its zip writer turns a failed
    write (a full disk) into a ``RuntimeError`` that names neither the file nor the reason, so
    the free space of the output's folder against the ``needed`` bytes tells."""
    free = shutil.disk_usage(Path(out).resolve().parent).free
    if free < needed:
        full = describe_os_error(OSError(errno.ENOSPC, "No space left on device"), out)
        return f"{full} ({needed / 2**20:.1f} MiB needed, {free / 2**20:.1f} MiB free)"
    return f"cannot write {out}: {str(err).splitlines()[0] if str(err) else 'the write failed'}"


def _model_argument(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "model", help="a run folder, a checkpoint of a run, or a model file from bockparse-export"
    )
    command.add_argument(
        "--precision",
        default=None,
        choices=["32-true", "bf16-mixed", "auto"],
        help="fp32, bf16 autocast, or auto (bf16 where this CPU/GPU computes it natively); "
        "default: the precision the run used (its scores)",
    )
    command.add_argument(
        "--device",
        default="cpu",
        help="where the parser runs: cpu (default), cuda, cuda:1, ... (as Parser.load takes it)",
    )


def _decoder_argument(command: argparse.ArgumentParser) -> None:
    from ..parser.settings import MAX_BATCH_WORDS

    command.add_argument(
        "--decoder",
        default=None,
        help="registry decoder (bock, bock-original, cle, tarjan, eisner, ...); default: the run's",
    )
    command.add_argument(
        "--batch-size",
        type=whole_number(1, MAX_BATCH_WORDS, "words"),
        default=None,
        metavar="WORDS",
        help=f"words per batch, at most {MAX_BATCH_WORDS:,} (a model file's cap); default: the "
        "run's",
    )


def _tags_argument(command: argparse.ArgumentParser, default: str | None, shown: str) -> None:
    from ..parser.inputs import TAG_SOURCES

    command.add_argument(
        "--tags",
        default=default,
        choices=TAG_SOURCES,
        help="for a model with a tagger (model=biaffine-tagger): the tag inputs it reads come "
        "from the input where it has them and from the tagger where it lacks them (auto), or "
        f"from the tagger always (predicted); default: {shown}",
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
    """``bockparse-predict MODEL INPUT --out OUTPUT [--decoder NAME] [--batch-size WORDS]
    [--tags auto|predicted] [--write-tags]`` or ``bockparse-predict MODEL --text TEXT|- [--lang
    en] [--out OUTPUT] [--svg FILE]``."""
    command = Command(
        "bockparse-predict",
        description="Parse a CoNLL-U file (HEAD and DEPREL may be _) with a trained parser; the "
        "output is the input with only HEAD and DEPREL replaced (and UPOS, XPOS, FEATS with "
        "--write-tags). A model with a tagger (model=biaffine-tagger) tags the words itself "
        "where the input has no tags. With --text, parse raw text: spaCy splits it into "
        "sentences and words (pip install 'bockparse[spacy]'; a model with a tagger or one "
        "that reads words only, model=biaffine-notags), and the output is new CoNLL-U.",
    )
    _model_argument(command)
    command.add_argument(
        "input", nargs="?", default=None, help="CoNLL-U file to parse (- for standard input)"
    )
    command.add_argument(
        "--text",
        default=None,
        help="raw text to parse instead of a CoNLL-U file (- for standard input)",
    )
    command.add_argument(
        "--lang",
        default="en",
        help="with --text: the spaCy language whose tokenizer splits the words (en, zh, de, "
        "...; spacy.blank, no download); default: en",
    )
    command.add_argument(
        "--svg",
        default=None,
        metavar="FILE",
        help="with --text: also draw the trees with displaCy into this SVG file (atomically)",
    )
    command.add_argument(
        "--out",
        default=None,
        help="CoNLL-U file to write (atomically; - for standard output); required for a "
        "CoNLL-U input, standard output by default with --text",
    )
    _decoder_argument(command)
    _tags_argument(command, "auto", "auto")
    command.add_argument(
        "--write-tags",
        action="store_true",
        help="write the tagger's UPOS, XPOS and FEATS into the output (a model with a tagger); "
        "without it a CoNLL-U input's columns are kept byte for byte",
    )
    args = command.parse_args(argv)
    if (args.input is None) == (args.text is None):
        command.error("give either a CoNLL-U INPUT file or --text, not both")
    if args.text is None and args.out is None:
        command.error("the following arguments are required: --out")
    if args.text is None and args.svg is not None:
        command.error("--svg draws the trees of --text (raw text); give --text")
    if args.text is not None and (args.write_tags or args.tags != "auto"):
        command.error("--tags and --write-tags are for a CoNLL-U INPUT; --text writes the "
                      "tagger's tags (a model with one) and reads no tags")  # fmt: skip
    if args.text is not None:
        return _predict_text(command, args)
    from ..data.conllu import write_conllu
    from ..parser import Parser

    if problem := output_problem(args.out, args.input, args.model):
        return command.fail(problem)
    try:
        model = Parser.load(args.model, device=args.device, precision=args.precision)
        sentences = model.sentences(args.input)
        start = time.perf_counter()
        parsed = model.predict(
            sentences, args.decoder, args.batch_size, progress=_progress(sys.stderr),
            tags=args.tags, write_tags=args.write_tags,
        )  # fmt: skip
        seconds = time.perf_counter() - start
    except (DataError, ValueError, OSError) as err:
        return command.fail(err)
    except KeyboardInterrupt:
        return command.interrupted()
    try:
        write_conllu(args.out, parsed)
    except OSError as err:
        return command.fail(describe_os_error(err, args.out))
    except KeyboardInterrupt:
        return command.interrupted()
    words = sum(len(s) for s in parsed)
    print(
        f"{len(parsed):,} sentences, {words:,} words in {seconds:.2f} s: "
        f"{len(parsed) / seconds:.1f} sentences/s, {words / seconds:.0f} words/s -> {args.out}",
        file=sys.stderr if is_standard_stream(args.out) else sys.stdout,
    )
    return 0


def _predict_text(command: Command, args: argparse.Namespace) -> int:
    """``bockparse-predict MODEL --text ...``: spaCy's tokenizer and sentencizer, the
    ``bockparse`` component (:mod:`bockparse.rawtext`), CoNLL-U to ``--out`` (standard output by
    default) and the trees to ``--svg``; every output checked before any work."""
    out = "-" if args.out is None else args.out
    if args.svg is not None and is_standard_stream(args.svg):
        return command.fail("--svg -: give a file name for the drawing")
    if args.svg is not None and not is_standard_stream(out) and Path(args.svg) == Path(out):
        return command.fail(f"--svg {args.svg} is also --out: give two files")
    for target in (out, args.svg):
        if target is not None and (problem := output_problem(target, args.model)):
            return command.fail(problem)
    from .. import rawtext
    from ..rundir import write_atomic

    try:
        text = sys.stdin.read() if is_standard_stream(args.text) else args.text
        nlp = rawtext.language(args.lang)
        nlp.add_pipe("bockparse", config={
            "model": str(args.model), "device": args.device, "precision": args.precision,
            "decoder": args.decoder, "batch_size": args.batch_size,
        })  # fmt: skip
        sentences = rawtext.parsed_sentences(nlp(text))
    except (DataError, ValueError, OSError) as err:
        return command.fail(err)
    except KeyboardInterrupt:
        return command.interrupted()
    written = [(out, rawtext.conllu(sentences))]
    if args.svg is not None:
        written.append((args.svg, rawtext.svg(sentences)))
    for target, content in written:
        try:
            if is_standard_stream(target):
                sys.stdout.write(content)
                sys.stdout.flush()
            else:
                write_atomic(target, content)
        except OSError as err:
            return command.fail(describe_os_error(err, target))
        except KeyboardInterrupt:
            return command.interrupted()
    words = sum(len(s.forms) for s in sentences)
    print(
        f"{len(sentences):,} sentences, {words:,} words -> {out}"
        + (f", trees drawn in {args.svg}" if args.svg is not None else ""),
        file=sys.stderr if is_standard_stream(out) else sys.stdout,
    )
    return 0


def evaluate(argv: Sequence[str] | None = None) -> int:
    """``bockparse-evaluate MODEL GOLD [--decoder NAME] [--exclude-punct ptb|ctb|upos]``."""
    command = Command(
        "bockparse-evaluate",
        description="UAS, LAS (base relations) and LCM of a trained parser on a gold CoNLL-U "
        "file, with the training conventions (punctuation included unless excluded), and the "
        "UPOS, XPOS, UFeats and AllTags accuracy of the tags it used: its tagger's (a model "
        "with one), else the gold file's own (100 %).",
    )
    _model_argument(command)
    command.add_argument("gold", help="gold CoNLL-U file (- for standard input)")
    _decoder_argument(command)
    add_punct_argument(command)
    _tags_argument(command, None, "predicted for such a model (as its run evaluated)")
    args = command.parse_args(argv)
    from ..parser import Parser

    try:
        result = Parser.load(args.model, device=args.device, precision=args.precision).evaluate(
            args.gold, args.decoder, args.exclude_punct, args.batch_size, tags=args.tags
        )
    except (DataError, ValueError, OSError) as err:
        return command.fail(err)
    except KeyboardInterrupt:
        return command.interrupted()
    print(format_scores(result))
    return 0


def export(argv: Sequence[str] | None = None) -> int:
    """``bockparse-export RUN --out MODEL``."""
    command = Command(
        "bockparse-export",
        description="Write a run's best model as one slim model file: weights, vocabularies, "
        "model and encoder settings, tokenizer, run metadata; no optimiser state.",
    )
    command.add_argument("run", help="a run folder (its best.ckpt) or a checkpoint of a run")
    command.add_argument("--out", required=True, help="the model file to write (e.g. model.pt)")
    args = command.parse_args(argv)
    from ..parser import Parser

    if is_standard_stream(args.out):
        return command.fail("--out -: a model file is not written to standard output; "
                     "give a file name")  # fmt: skip
    if problem := output_problem(args.out, args.run):
        return command.fail(problem)
    try:
        model = Parser.load(args.run)
    except (DataError, ValueError, OSError) as err:
        return command.fail(err)
    except KeyboardInterrupt:
        return command.interrupted()
    try:
        size = model.save(args.out)
    except OSError as err:
        return command.fail(describe_os_error(err, args.out))
    except RuntimeError as err:  # torch's report of a failed write (save_failure)
        weights = model.scorer.state_dict().values()
        needed = sum(t.numel() * t.element_size() for t in weights)
        return command.fail(save_failure(err, needed, args.out))
    except KeyboardInterrupt:
        return command.interrupted()
    print(f"{args.out}: {size / 2**20:.1f} MiB (from {Path(args.run)})")
    return 0
