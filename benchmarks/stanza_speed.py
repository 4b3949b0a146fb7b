"""Training and prediction speed against Stanza's own trainer: words/s, same machine, same run.

Trains bockparse and Stanza 1.15's trainer (``python -m stanza.models.parser``, the ``bench``
extra) on UD Chinese-GSD with the same sizes, one process at a time, alternating the systems
(bockparse, Stanza, bockparse, Stanza, ...: one pair per seed), and times in each:

- **training**: every update, in the trainer's own process, by a wrapper around its update
  function (bockparse's ``ParserModule.training_step``: forward, loss, backward, clipping, the
  optimiser's step and its logging; Stanza's ``Trainer.update``: the same), with the words of
  its batch (bockparse: ``Batch.mask``; Stanza: the batch's sentence texts). Updates 2 to
  ``--updates`` are timed (the first pays one-off set-up); words/s is their words over their
  summed time, and over the wall time from the end of update 1 to the end of the last (the
  data loading between updates and the loop included). The one development evaluation comes
  after the last update (``eval_every`` / ``--eval_interval`` = ``--updates``), outside both;
- **prediction** of the development file by the model each run saved, in a process of its own:
  the file read once, then one untimed pass and ``--passes`` timed ones (median): bockparse's
  ``Parser.predict`` on the sentences (batches, scorer, decoder ``cle``, the trees as
  sentences), Stanza's evaluation path (its ``DataLoader`` in evaluation mode, sorted,
  ``predict_dataset``, the trees set into its document), neither writing nor scoring a file.

Both systems: Stanza 1.15's parser sizes (3 x 400 BiLSTM, character BiLSTM 400, biaffines 400;
bockparse ``experiment=table1-ud-gsd``, local CE, in the preset's fp32 or ``--precision``'s,
stated in the report; Stanza in fp32), no pretrained vectors (``--no_pretrain``), no charlm,
1,000-word batches, Adadelta; the command lines are :mod:`stanza_parity`'s
(``bockparse_arguments``, the preset's schedule; ``stanza_train_arguments``). Every process gets
``--threads`` CPU threads (``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, and bockparse's
``torch_threads``; the prediction workers set torch's count), and each records the count torch
reports inside it. Run it on a quiet machine: nothing else running.

    python benchmarks/stanza_speed.py --data DIR/ud-chinese-gsd --threads 2 \\
        --seeds 1111 2222 --work speed-runs --output benchmarks/results/stanza_speed.md

``--report-only`` tables the timings already in ``--work``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import runpy
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stanza_parity import (  # the sibling benchmark's helpers
    DEV,
    REPO,
    Setup,
    bockparse_arguments,
    publish,
    stanza_model_arguments,
    stanza_train_arguments,
)

SYSTEMS = ("bockparse", "stanza")
TIMINGS = "timings.json"


# -- inside the trainers' processes --------------------------------------------------------------


def timed(fn, records: list[dict], words):
    """``fn`` that appends ``{"seconds", "words", "end", "threads"}`` to ``records`` at each call
    (``words(*args, **kwargs)``: the words of the call's batch)."""
    import torch

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        end = time.perf_counter()
        records.append({"seconds": end - start, "words": int(words(*args, **kwargs)), "end": end,
                        "threads": torch.get_num_threads()})  # fmt: skip
        return out

    return wrapper


def write_json(path: Path, value: object) -> None:
    """``value`` as JSON at ``path``, atomically (a partial file is never left)."""
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def train_worker(system: str, out: Path, argv: list[str]) -> None:
    """Run the system's own trainer on ``argv`` with its update function timed (module doc);
    the records go to ``out``."""
    records: list[dict] = []
    if system == "bockparse":
        from bockparse.training.module import ParserModule

        step = ParserModule.training_step
        ParserModule.training_step = timed(
            step, records, lambda _s, batch, *_a, **_k: batch.mask.sum()
        )
        module = "bockparse.training.train"
    else:
        from stanza.models.depparse.trainer import Trainer

        # batch[15]: the sentences' words, ROOT not among them (depparse/data.py collate)
        Trainer.update = timed(
            Trainer.update, records, lambda _t, batch, *_a, **_k: sum(map(len, batch[15]))
        )
        module = "stanza.models.parser"
    sys.argv = [module, *argv]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
    finally:
        write_json(out, {"updates": records})


def predict_worker(system: str, out: Path, threads: int, passes: int, argv: list[str]) -> None:
    """Parse the development file with the model a run saved (module doc): one untimed pass,
    then ``passes`` timed ones; seconds, words and sentences go to ``out``."""
    import torch

    torch.set_num_threads(threads)
    if system == "bockparse":
        from bockparse.parser import Parser

        run_dir, dev = argv
        parser = Parser.load(run_dir)
        sentences = parser.sentences(dev)

        def once():
            parser.predict(sentences, progress=False)

        words, count, precision = sum(len(s) for s in sentences), len(sentences), parser.precision
    else:
        from stanza.models import parser as stanza_parser
        from stanza.models.common.doc import DEPREL, HEAD
        from stanza.models.common.foundation_cache import FoundationCache
        from stanza.models.depparse.data import DataLoader
        from stanza.models.depparse.trainer import Trainer
        from stanza.models.depparse.utils import predict_dataset
        from stanza.utils.conll import CoNLL

        args = stanza_parser.parse_args(argv)  # as stanza.models.parser.evaluate loads it
        load_args = {k: args.get(k) for k in ("charlm_forward_file", "charlm_backward_file")}
        trainer = Trainer.load(pretrain=None, filename=stanza_parser.model_file_name(args),
                               device=args["device"], args=load_args,
                               foundation_cache=FoundationCache())  # fmt: skip
        loaded = trainer.args
        for k in args:  # stanza.models.parser.evaluate_trainer's copy of the paths
            if k.endswith("_dir") or k.endswith("_file") or k in ("shorthand", "mode"):
                loaded[k] = args[k]
        doc = CoNLL.conll2doc(input_file=args["eval_file"])

        def once():
            batch = DataLoader(doc, args["batch_size"], loaded, None, vocab=trainer.vocab,
                               evaluation=True, sort_during_eval=True)  # fmt: skip
            preds = predict_dataset(trainer, batch)
            batch.doc.set([HEAD, DEPREL], [y for x in preds for y in x])

        words, count = sum(len(s.words) for s in doc.sentences), len(doc.sentences)
        precision = "32-true"
    once()
    seconds = []
    for _ in range(passes):
        start = time.perf_counter()
        once()
        seconds.append(time.perf_counter() - start)
    write_json(out, {"seconds": seconds, "words": words, "sentences": count,
                     "threads": torch.get_num_threads(), "precision": precision})  # fmt: skip


# -- the comparison ----------------------------------------------------------------------------


def training_summary(records: list[dict], updates: int) -> dict[str, float]:
    """Updates 2..``updates`` of a run's records: their words, summed and median seconds,
    words/s over their time and over the wall time from the end of update 1 to the end of the
    last (loading between updates included).

    Raises:
        ValueError: fewer than ``updates`` records (the run stopped early).
    """
    if len(records) < updates:
        raise ValueError(f"{len(records)} updates timed, {updates} needed: the run stopped early")
    window = records[1:updates]
    words = sum(r["words"] for r in window)
    seconds = sum(r["seconds"] for r in window)
    wall = window[-1]["end"] - records[0]["end"]
    return {"words": words, "seconds": seconds, "words/s": words / seconds,
            "median ms": 1e3 * statistics.median(r["seconds"] for r in window),
            "wall": wall, "wall words/s": words / wall,
            "threads": records[0]["threads"]}  # fmt: skip


def prediction_summary(result: dict) -> dict[str, float]:
    """The median pass of a prediction worker's result, in seconds and words/s."""
    seconds = statistics.median(result["seconds"])
    return {**result, "median s": seconds, "words/s": result["words"] / seconds}


def run(system: str, pair: int, seed: int, args: argparse.Namespace, setup: Setup) -> None:
    """Train one system for pair ``pair`` and time its prediction (module doc)."""
    run_dir = args.work.resolve() / system / f"pair{pair}"
    run_dir.mkdir(parents=True, exist_ok=False)
    data = args.data.resolve()
    if system == "bockparse":
        argv = bockparse_arguments(data, seed, args.updates, run_dir, setup,
                                   eval_every=args.updates, schedule=())  # fmt: skip
        if args.precision is not None:
            argv.append(f"trainer.precision={args.precision}")
        predict = [str(run_dir), str(data / DEV)]
    else:
        argv = stanza_train_arguments(data, seed, args.updates, run_dir, setup,
                                      eval_interval=args.updates)  # fmt: skip
        predict = ["--mode", "predict", "--eval_file", str(data / DEV),
                   "--output_file", str(run_dir / "unused.conllu"),
                   *stanza_model_arguments(run_dir)]  # fmt: skip
    me = [sys.executable, str(Path(__file__).resolve())]
    calls = (["--train-worker", system, str(run_dir / TIMINGS), "--", *argv],
             ["--predict-worker", system, str(run_dir / "prediction.json"), "--threads",
              str(args.threads), "--passes", str(args.passes), "--", *predict])  # fmt: skip
    cwd = REPO if system == "bockparse" else run_dir  # Stanza writes beside its start folder
    with open(run_dir / "train.log", "w", encoding="utf-8") as log:
        for call in calls:
            subprocess.run([*me, *call], cwd=cwd, env=setup.env(), check=True, stdout=log,
                           stderr=subprocess.STDOUT)  # fmt: skip


def read(work: Path, updates: int) -> dict[int, dict[str, dict]]:
    """Pair -> system -> ``{"training": ..., "prediction": ...}`` summaries of the runs in
    ``work`` that finished both parts."""
    pairs: dict[int, dict[str, dict]] = {}
    for system in SYSTEMS:
        for folder in sorted((work / system).glob("pair*")):
            timings, prediction = folder / TIMINGS, folder / "prediction.json"
            if not (timings.is_file() and prediction.is_file()):
                continue
            records = json.loads(timings.read_text(encoding="utf-8"))["updates"]
            result = json.loads(prediction.read_text(encoding="utf-8"))
            pairs.setdefault(int(folder.name.removeprefix("pair")), {})[system] = {
                "training": training_summary(records, updates),
                "prediction": prediction_summary(result),
            }
    return pairs


def ratio(pairs: dict[int, dict[str, dict]], part: str, key: str) -> float:
    """bockparse's ``key`` over Stanza's, summed over the complete pairs (words / time)."""
    totals = {}
    for system in SYSTEMS:
        runs = [p[system][part] for p in pairs.values() if len(p) == 2]
        if part == "training" and key == "words/s":
            totals[system] = sum(r["words"] for r in runs) / sum(r["seconds"] for r in runs)
        elif part == "training":
            totals[system] = sum(r["words"] for r in runs) / sum(r["wall"] for r in runs)
        else:
            totals[system] = sum(r["words"] for r in runs) / sum(r["median s"] for r in runs)
    return totals["bockparse"] / totals["stanza"]


def rows(pairs: dict[int, dict[str, dict]], part: str, row) -> list[str]:
    """A table's rows: ``row(pair, system, summary)`` for each pair and each system that ran
    it, ``summary`` its ``part`` (``training`` or ``prediction``)."""
    return [row(pair, system, systems[system][part])
            for pair, systems in sorted(pairs.items())
            for system in SYSTEMS if system in systems]  # fmt: skip


def report(pairs: dict[int, dict[str, dict]], updates: int, command: str, setup: dict) -> str:
    """The speed tables: per pair and system, training and prediction, and the ratios."""
    precision = setup.get("precision") or "32-true (the preset's)"
    lines = [
        "# Training and prediction speed: bockparse and Stanza 1.15's trainer (UD Chinese-GSD)",
        "",
        f"`{command}`",
        "",
        f"Setup: {setup['date']}; {setup['cpu']}, {setup['cpus']} CPUs; {setup['threads']} CPU "
        f"thread(s) per process (OMP_NUM_THREADS = MKL_NUM_THREADS = {setup['threads']}, "
        f"bockparse torch_threads = {setup['threads']}); one process at a time, alternated "
        f"(bockparse, Stanza per pair); torch {setup['torch']}. Both: 3 x 400 BiLSTM, "
        "character BiLSTM 400, biaffines 400, no pretrained vectors, no charlm, 1,000-word "
        "batches, Adadelta; bockparse `experiment=table1-ud-gsd` (local CE, decoder `cle`); "
        f"bockparse trained in {precision}, Stanza in fp32.",
        "",
        f"## Training: updates 2–{updates}",
        "",
        "| pair | system | torch threads | words | update s | median update ms | words/s "
        "| wall s (loading included) | words/s (wall) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += rows(pairs, "training", lambda pair, system, t: (
        f"| {pair} | {system} | {t['threads']} | {t['words']:,} | {t['seconds']:.1f} | "
        f"{t['median ms']:.0f} | {t['words/s']:,.0f} | {t['wall']:.1f} | "
        f"{t['wall words/s']:,.0f} |"))  # fmt: skip
    complete = {k: v for k, v in pairs.items() if len(v) == 2}
    if complete:
        lines += [
            "",
            f"bockparse / Stanza, words/s over the complete pairs: "
            f"**{ratio(complete, 'training', 'words/s'):.2f}×** (update time), "
            f"{ratio(complete, 'training', 'wall'):.2f}× (wall).",
        ]
    lines += [
        "",
        "## Prediction of the development file",
        "",
        "| pair | system | precision | torch threads | sentences | words | median s | words/s |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += rows(pairs, "prediction", lambda pair, system, p: (
        f"| {pair} | {system} | {p['precision']} | {p['threads']} | {p['sentences']:,} | "
        f"{p['words']:,} | {p['median s']:.2f} | {p['words/s']:,.0f} |"))  # fmt: skip
    if complete:
        lines += ["", f"bockparse / Stanza, words/s over the complete pairs: "
                      f"**{ratio(complete, 'prediction', 'words/s'):.2f}×**."]  # fmt: skip
    missing = sorted(k for k, v in pairs.items() if len(v) < 2)
    if missing:
        lines += ["", f"Incomplete pairs (one system only): {', '.join(map(str, missing))}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, help="the UD Chinese-GSD v1.3 folder")
    p.add_argument("--seeds", type=int, nargs="+", default=[1111, 2222], help="one pair each")
    p.add_argument("--updates", type=int, default=101, help="updates per run (2.. are timed)")
    p.add_argument("--passes", type=int, default=3, help="timed prediction passes")
    p.add_argument("--threads", type=int, default=2, help="CPU threads of each process")
    p.add_argument("--work", type=Path, default=Path("speed-runs"), help="run folders")
    p.add_argument(
        "--precision",
        choices=("32-true", "bf16-mixed", "auto"),
        help="bockparse's training precision (default: the preset's, 32-true)",
    )
    p.add_argument("--output", type=Path, help="also write the tables here")
    p.add_argument("--report-only", action="store_true", help="table the runs in --work")
    p.add_argument("--train-worker", nargs=2, metavar=("SYSTEM", "OUT"), help=argparse.SUPPRESS)
    p.add_argument("--predict-worker", nargs=2, metavar=("SYSTEM", "OUT"), help=argparse.SUPPRESS)
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.train_worker:
        train_worker(args.train_worker[0], Path(args.train_worker[1]), args.rest)
        return 0
    if args.predict_worker:
        system, out = args.predict_worker
        predict_worker(system, Path(out), args.threads, args.passes, args.rest)
        return 0
    if args.updates < 2 or args.threads < 1 or args.passes < 1:
        p.error("--updates: at least 2; --threads and --passes: at least 1")
    setup_file = args.work / "setup.json"
    if not args.report_only:
        if args.data is None:
            p.error("--data: the UD Chinese-GSD v1.3 folder (unless --report-only)")
        if args.work.exists() and any(args.work.iterdir()):
            p.error(f"{args.work}: not empty; speed runs start afresh (or --report-only)")
        args.work.mkdir(parents=True, exist_ok=True)
        import torch

        from bockparse.hardware import cpu_info

        recorded = {"date": time.strftime("%Y-%m-%d"), "cpu": cpu_info()[0],
                    "cpus": os.cpu_count(), "threads": args.threads, "torch": torch.__version__,
                    "machine": platform.machine(), "precision": args.precision}  # fmt: skip
        write_json(setup_file, recorded)
        setup = Setup(args.threads)
        for pair, seed in enumerate(args.seeds, start=1):
            for system in SYSTEMS:
                start = time.perf_counter()
                run(system, pair, seed, args, setup)
                print(f"pair {pair} {system}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    recorded = json.loads(setup_file.read_text(encoding="utf-8"))
    given = sys.argv[1:] if argv is None else argv
    command = "python benchmarks/stanza_speed.py " + " ".join(
        os.path.basename(a) if args.data is not None and a == str(args.data) else a for a in given
    )
    return publish(
        report(read(args.work, args.updates), args.updates, command, recorded), args.output
    )


if __name__ == "__main__":
    sys.exit(main())
