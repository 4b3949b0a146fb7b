"""The console scripts of the experiments (:mod:`bockparse.experiments`): ``bockparse-table``,
``-stopping``, ``-reeval``, ``-substitute``, ``-rootstudy`` and ``-publish``. Each parses its
arguments, checks ``--out`` before any work (:mod:`bockparse.cli.outputs`), calls the experiment
module's functions and reports a problem in one line (:class:`~bockparse.cli.command.Command`).
The modules that load a model (torch) are imported on call.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ..data.conllu import DataError
from ..experiments.runs import Discovery, discover
from ..metrics import PUNCT_EXCLUSIONS
from .command import Command, whole_number
from .outputs import inside_problem, out_folder_problem


def _runs_command(prog: str, description: str) -> Command:
    """The command of a script that reads ``RUN_DIR...``: run or sweep folders."""
    command = Command(prog, description=description)
    command.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR",
        help="run folders or sweep folders (searched recursively)",
    )
    return command


def _out_argument(command: Command, writes: str) -> None:
    """The optional ``--out DIR`` of a report command: what it ``writes`` there (the folder is
    made if missing; checked before any work, :func:`out_folder_problem`)."""
    command.add_argument("--out", metavar="DIR", default=None, help=f"{writes} here")


def _discover(runs: Sequence[str], out: str | None) -> tuple[Discovery | None, str | None]:
    """The runs found under the folders ``runs``, and why the command cannot go on (``None``
    when it can): a folder missing, no run found, or ``--out`` inside a run read."""
    try:
        found = discover(runs)
    except FileNotFoundError as err:
        return None, str(err)
    if not found.runs:
        return None, f"no run folders under {', '.join(runs)}"
    return found, out_folder_problem(out, [run.path for run in found.runs])


def _write(out: str, write: Callable[[], Any]) -> tuple[Any, str | None]:
    """Run ``write`` (a report into ``--out DIR``): what it returns and ``None``, or ``None``
    and one line for a failed write (a full disk, no right to write, a file where the folder
    should be) naming the folder, never the atomic writer's temporary file."""
    from ..rundir import describe_os_error

    try:
        return write(), None
    except OSError as err:
        return None, describe_os_error(err, out)


def table(argv: Sequence[str] | None = None) -> int:
    """``bockparse-table RUN_DIR... [--out DIR] [--stage test|val] [--layout table1|grid]``."""
    from ..experiments.table import (
        EXPECT,
        aggregate,
        bootstrap_markdown,
        environment_markdown,
        problems,
        render,
        write_report,
    )

    command = _runs_command(
        "bockparse-table",
        "Table 1 (mean ± sample std over seeds, paired LAS differences) or the loss × decoder "
        "grid from bockparse-train run folders.",
    )
    _out_argument(command, "also write table1.md/.csv (or ablation.md/.csv) and the plots")
    command.add_argument("--stage", choices=("test", "val"), default="test")
    command.add_argument("--layout", choices=("table1", "grid"), default="table1")
    command.add_argument(
        "--seeds",
        default=None,
        help="comma-separated seeds every row should have (default: those "
        "seen, swept, and for table1-* the paper's)",
    )
    command.add_argument("--no-plots", action="store_true", help="with --out: tables only")
    command.add_argument(
        "--environment",
        action="store_true",
        help="also list where each run ran (precision and why, CPU, bf16 flags, torch)",
    )
    command.add_argument(
        "--bootstrap",
        type=whole_number(0),
        metavar="N",
        default=0,
        help="also give each cell's sentence-level bootstrap interval of LAS, N resamples "
        "(reads the saved predictions and the gold files; with --out: table1-bootstrap.md)",
    )
    command.add_argument(
        "--expect",
        choices=sorted(EXPECT),
        default=None,
        help="also expect a preset's rows and seeds (table1: its three conditions, seeds "
        "1111, 2222, 3333); default: the grid of conditions and seeds that was run",
    )
    command.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 when a run is missing (from the grid run, or the --expect "
        "preset) or failed",
    )
    args = command.parse_args(argv)
    seeds = None
    if args.seeds:
        try:
            seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
        except ValueError:
            return command.fail(f"--seeds must be integers, got {args.seeds!r}", 2)
    found, problem = _discover(args.runs, args.out)
    if problem is not None:
        return command.fail(problem, 2)
    if args.expect and args.layout != "table1":
        return command.fail(f"--expect {args.expect} needs --layout table1", 2)
    groups = aggregate(found, stage=args.stage, layout=args.layout, seeds=seeds, expect=args.expect)
    text = render(groups, args.stage, args.layout)
    if args.environment:
        text += "\n" + environment_markdown(groups) + "\n"
    print(text, end="", flush=True)
    boot = None
    if args.bootstrap > 0:
        try:
            boot = bootstrap_markdown(groups, args.stage, args.bootstrap) + "\n"
        except DataError as err:
            return command.fail(f"--bootstrap: {err}")
        print("\n" + boot, end="", flush=True)
    if args.out:
        written, problem = _write(args.out, partial(
            write_report, groups, args.out, args.stage, args.layout, text, boot,
            plots=not args.no_plots))  # fmt: skip
        if problem:
            return command.fail(problem)
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 1 if args.strict and problems(groups) else 0


def stopping(argv: Sequence[str] | None = None) -> int:
    """``bockparse-stopping RUN_DIR... [--out DIR] [--no-plots]``: the stop-time analysis
    (:mod:`bockparse.experiments.stopping`)."""
    from ..experiments.stopping import pairs, report, write_stopping
    from ..experiments.table import aggregate

    command = _runs_command(
        "bockparse-stopping",
        "Stop time against Table 1's paired differences, from run folders: dev-LAS "
        "differences at matched updates, test LAS against the best update.",
    )
    _out_argument(command, "also write stopping.md, matched.csv, seeds.csv and the two figures")
    command.add_argument("--no-plots", action="store_true", help="with --out: tables only")
    args = command.parse_args(argv)
    found_runs, problem = _discover(args.runs, args.out)
    if problem is not None:
        return command.fail(problem, 2)
    groups = aggregate(found_runs)
    found = pairs(groups)
    if not found:
        return command.fail(
            f"no paired runs with development curves under {', '.join(args.runs)}", 2
        )
    text = report(groups, found, " ".join(args.runs))
    print(text, end="", flush=True)
    write = partial(write_stopping, groups, found, text, args.out, plots=not args.no_plots)
    if args.out and (problem := _write(args.out, write)[1]):
        return command.fail(problem)
    return 0


def reeval(argv: Sequence[str] | None = None) -> int:
    """``bockparse-reeval RUN_DIR... [--exclude-punct auto|ptb|ctb|upos] [--out DIR]``."""
    from ..experiments.reeval import punct_report, write_punct_report

    command = _runs_command(
        "bockparse-reeval",
        "Re-evaluate saved predictions with punctuation excluded (no retraining); Table 1 layout.",
    )
    command.add_argument(
        "--exclude-punct",
        default="auto",
        choices=["auto", *sorted(PUNCT_EXCLUSIONS)],
        help="auto: from each run's data config (punct_field, punct_tags)",
    )
    command.add_argument("--stage", choices=("test", "val"), default="test")
    _out_argument(command, "write table1-punct.md and table1-punct.csv")
    args = command.parse_args(argv)
    found, problem = _discover(args.runs, args.out)
    if problem is not None:
        return command.fail(problem, 2)
    text, groups, failures = punct_report(found, args.stage, args.exclude_punct)
    print(text, end="", flush=True)
    write = partial(write_punct_report, groups, text, args.out, args.stage)
    if args.out and (problem := _write(args.out, write)[1]):
        return command.fail(problem)
    return 1 if failures else 0


def substitute(argv: Sequence[str] | None = None) -> int:
    """``bockparse-substitute RUN_DIR... [--decoders ...] [--stages val test] [--out DIR]``."""
    from ..experiments import substitute as substitution

    command = Command(
        "bockparse-substitute",
        description="Decode a trained model's fixed dev/test scores with several decoders and "
        "count identical heads, labels and tree scores per pair.",
    )
    command.add_argument("runs", nargs="+", metavar="RUN_DIR")
    command.add_argument(
        "--decoders",
        nargs="+",
        default=None,
        help=f"registry names (default: {' '.join(substitution.SUBSTITUTED)}, and "
        f"{' '.join(substitution.OPTIONAL_DECODERS)} when registered)",
    )
    command.add_argument(
        "--stages", nargs="+", choices=substitution.STAGES, default=list(substitution.STAGES)
    )
    command.add_argument(
        "--scores",
        choices=substitution.SCORES,
        default="auto",
        help="the matrices decoded: the scorer's arc scores, or their log-softmax over heads "
        "as Stanza decodes (auto: log-softmax when stanza-cle is compared)",
    )
    _out_argument(command, "write substitution.md and substitution.json")
    args = command.parse_args(argv)
    if problem := out_folder_problem(args.out, args.runs):
        return command.fail(problem)
    reports, texts = [], []
    for run_dir in args.runs:
        try:
            report = substitution.substitute(run_dir, args.stages, args.decoders, args.scores)
        except (FileNotFoundError, ValueError) as err:
            return command.fail(err)
        if not report["condition"].startswith("local-ce"):
            command.report(
                f"note: {run_dir} is a {report['condition']} run; the paper substitutes "
                "decoders in local-CE models"
            )
        reports.append(report)
        texts.append(substitution.to_markdown(report))
    text = "\n".join(texts)
    print(text, end="")
    write = partial(substitution.write_reports, reports, text, args.out)
    if args.out and (problem := _write(args.out, write)[1]):
        return command.fail(problem)
    return 0


def rootstudy(argv: Sequence[str] | None = None) -> int:
    """``bockparse-rootstudy RUN_DIR [--stage val] [--k 5 10 20 50] [--out DIR]``."""
    from ..experiments.loading import load_run
    from ..experiments.rootstudy import KS, run_matrices, study_matrices, to_markdown, write_study

    command = Command(
        "bockparse-rootstudy",
        description="Percentage of 1-best and K-best trees violating the single-root "
        "constraint without it, against root-constrained decoding (Zmigrod et al. 2021, "
        "Fig. 1), on a trained model's fixed scores.",
    )
    command.add_argument("run", metavar="RUN_DIR")
    command.add_argument("--stage", choices=("val", "test"), default="val")
    command.add_argument("--k", nargs="+", type=whole_number(1), default=list(KS))
    command.add_argument("--decoder", default=None, help="1-best decoder (default: the run's)")
    command.add_argument(
        "--max-sentences", type=whole_number(1), default=None, help="the first N only"
    )
    _out_argument(command, "write rootstudy.md/.csv/.json/.png")
    args = command.parse_args(argv)
    if problem := out_folder_problem(args.out, [args.run]):
        return command.fail(problem)
    try:
        run = load_run(args.run)
    except (FileNotFoundError, ValueError) as err:
        return command.fail(err)
    decoder = args.decoder or str(run.cfg.decoder)
    try:
        matrices = run_matrices(run, args.stage, args.max_sentences)
        rows = study_matrices(matrices, args.k, decoder)
    except (OSError, ValueError) as err:  # the split's file (DataError a ValueError), a decoder
        return command.fail(err)
    title = (
        f"Root-constraint violations on {args.run} ({run.cfg.name}, seed "
        f"{run.cfg.seed}), {args.stage} scores, {len(matrices)} sentences; 1-best by "
        f"{decoder}, K-best by bockparse.decoders.kbest."
    )
    text = to_markdown(rows, title)
    print(text, end="", flush=True)
    write = partial(write_study, rows, text, args.out, title=f"{args.run}: {args.stage}")
    if args.out and (problem := _write(args.out, write)[1]):
        return command.fail(problem)
    return 0


def publish(argv: Sequence[str] | None = None) -> int:
    """``bockparse-publish SWEEP_OR_RUN_DIR... --out DIR``."""
    from .. import rundir
    from ..experiments.publish import publish_run

    command = Command(
        "bockparse-publish",
        description="Copy finished runs' metrics, logs, configs and compressed predictions "
        "(never checkpoints) into DIR, each under its path relative to the folder given.",
    )
    command.add_argument("runs", nargs="+", metavar="DIR", help="sweep or run folders")
    command.add_argument("--out", required=True, metavar="DIR")
    args = command.parse_args(argv)
    out = Path(args.out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        what = "a symlink" if out.is_symlink() else "not a folder"
        return command.fail(f"--out {out} is {what}: publish writes into real folders only")
    for given in args.runs:
        problem = inside_problem(out, [(given, given)], "the folder")
        if problem is None and Path(given).resolve().is_relative_to(out.resolve()):
            problem = f"--out {out} holds the folder {given}, which is read: write outside it"
        if problem is not None:
            return command.fail(problem)
    skipped = 0
    for given in args.runs:
        root = Path(given)
        try:
            found = discover([root])
        except FileNotFoundError as err:
            return command.fail(err, 2)
        for run in found.runs:
            # A run given itself goes under its folder's name (``.`` resolved to it).
            relative = (run.path.relative_to(root) if run.path != root
                        else Path(root.resolve().name))  # fmt: skip
            try:
                written = publish_run(run.path, out / relative, out)
            except FileNotFoundError as err:
                command.report(f"skipped {err}")
                skipped += 1
                continue
            except ValueError as err:
                command.report(f"refused {run.path}: {err}")
                skipped += 1
                continue
            except OSError as err:
                return command.fail(rundir.describe_os_error(err, err.filename or out))
            size = sum(p.stat().st_size for p in written)
            print(f"{run.path} -> {out / relative} ({len(written)} files, {size:,} bytes)")
    return 1 if skipped else 0
