"""Learning efficiency against Stanza's own trainer: dev LAS after the same number of updates.

Trains bockparse and Stanza 1.15's trainer (``python -m stanza.models.parser``, the ``bench``
extra) on UD Chinese-GSD for the same number of updates of the same word budget, one run at a
time, alternating the two systems within each seed, and reads each one's dev LAS at every
evaluation (every 100 updates):

- bockparse: ``experiment=table1-ud-gsd`` (Stanza 1.15's 3 x 400 parser, no transformer, no
  pretrained vectors, 1,000-word batches) with Stanza's own schedule (``conf/optim/stanza.yaml``:
  plateau patience 500, switch at 10,000 updates or after 2,000 without improvement), local CE
  decoded with ``cle``; its dev LAS is ``val/las`` of ``csv/metrics.csv``;
- Stanza: ``--no_pretrain`` (no word vectors), no charlm, no transformer, ``--batch_size 1000``,
  its defaults otherwise (the same sizes); its dev LAS is the ``dev_score`` it logs.

``--like-stanza`` removes the data differences: bockparse then uses Stanza's word vocabulary
(lower-cased, ``data.lowercase_words``; cut-off ``--word-cutoff``, 7 unless given, Stanza's
``DEFAULT_WORD_CUTOFF``) and its ``augment_nopunct`` at the rate Stanza 1.15 computes for this
training file (:func:`stanza_nopunct_ratio`), and Stanza is given the same cut-off and rate
explicitly (``--word_cutoff``, ``--augment_nopunct``): with ``--no_pretrain`` Stanza's own
cut-off would be 0 (``utils.update_word_cutoff`` without a pretrain), every training word kept.
What still differs (the highway LSTM, the character model, the FEATS encoding, Stanza's
``simplify_punct`` of ``?!`` runs; Stanza's drop of a leading ``¿``/``¡`` finds none in this
treebank) is in ``experiments/table1-ud/README.md``. Every run gets
``--threads`` CPU threads (``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` for both processes, and
bockparse's ``torch_threads``); the thread count torch sees under those variables, the
vocabulary settings and the rate are written to ``setup.json`` in ``--work`` and to the table.
A ``--work`` folder holds runs of one setup only (a different setup there is refused).

Both numbers are the CoNLL 2018 evaluator's LAS F1 on the full dev file (Stanza scores its
predictions with that script; bockparse's counts equal it, ``tests/unit/metrics``). As a check
that the two curves are on one scale, each system's best model also parses the dev file once
more after training (Stanza's ``--mode predict``; bockparse's ``predictions/val.conllu``), and
``bockparse-eval`` scores both files: each must equal the best dev LAS its own log reports. A
run that has finished is read again, not retrained (``--work``); ``--report-only`` trains
nothing and tables the runs as far as they got (saying which are unfinished).

    python benchmarks/stanza_parity.py --data DIR/ud-chinese-gsd --seeds 1111 2222 \\
        --at 100 300 1000 --work parity-runs --output benchmarks/results/stanza_parity.md
    python benchmarks/stanza_parity.py --data DIR/ud-chinese-gsd --like-stanza --threads 1 \\
        --work parity-like-stanza --output benchmarks/results/stanza_parity_like.md
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAIN, DEV = "zh_gsd-ud1.3-train.conllu", "zh_gsd-ud1.3-dev.conllu"
# Stanza 1.15's schedule (conf/optim/stanza.yaml), instead of table1-ud-gsd's rescaled one.
STANZA_SCHEDULE = ("optim.schedule.plateau_patience=500", "optim.schedule.switch_patience=2000",
                   "optim.schedule.switch_step=10000", "optim.schedule.stop_patience=2000",
                   "optim.stage2_warmup=200")  # fmt: skip
STANZA_LOG = re.compile(r"step (\d+): train_loss = [-\d.eE+]+, dev_score = ([\d.]+)")
STANZA_WORD_CUTOFF = 7  # stanza/models/common/utils.py: DEFAULT_WORD_CUTOFF


@dataclass(frozen=True)
class Setup:
    """What both systems are given besides the data: CPU threads and, with ``like_stanza``,
    Stanza's word vocabulary and final-punctuation rate (module doc)."""

    threads: int
    like_stanza: bool = False
    word_cutoff: int | None = None
    augment_nopunct: float | None = None

    def bockparse_overrides(self) -> list[str]:
        out = [f"torch_threads={self.threads}"]
        if self.like_stanza:
            out += [f"data.min_word_freq={self.word_cutoff}", "data.lowercase_words=true",
                    f"data.augment_nopunct={self.augment_nopunct!r}"]  # fmt: skip
        return out

    def stanza_arguments(self) -> list[str]:
        if not self.like_stanza:
            return []
        return ["--word_cutoff", str(self.word_cutoff),
                "--augment_nopunct", repr(self.augment_nopunct)]  # fmt: skip

    def env(self) -> dict[str, str]:
        """The environment of both systems' processes (the thread count)."""
        n = str(self.threads)
        return {**os.environ, "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n}


def stanza_nopunct_ratio(train: Path) -> float:
    """The ``augment_nopunct`` rate Stanza 1.15 uses for a training file when none is given:
    ``stanza/models/common/data.py``'s ``get_augment_ratio`` (aim: 10 % of the sentences
    without final punctuation, at most 0.5) with ``depparse/data.py``'s predicates
    (``record_ends_with_punct``: the last word's UPOS is ``PUNCT``;
    ``record_can_augment_nopunct``: and another word, none of them headed by the last)."""
    from bockparse.data import read_conllu

    sentences = read_conllu(train, single_root=True, on_malformed="error")
    ends = [s for s in sentences if s.upos[-1] == "PUNCT"]
    can = sum(len(s) > 1 and len(s) not in s.heads[:-1] for s in ends)
    if can == 0:
        return 0.0
    needed = 0.1 * len(sentences) - (len(sentences) - len(ends))
    return 0.0 if needed < 0 else min(needed / can, 0.5)


def torch_threads_seen(setup: Setup) -> int:
    """The thread count torch reports in a process started with ``setup.env()``."""
    cmd = [sys.executable, "-c", "import torch; print(torch.get_num_threads())"]
    return int(subprocess.run(cmd, env=setup.env(), check=True, capture_output=True,
                              text=True).stdout)  # fmt: skip


def bockparse_arguments(
    data: Path,
    seed: int,
    updates: int,
    run_dir: Path,
    setup: Setup,
    eval_every: int = 100,
    schedule: Sequence[str] = STANZA_SCHEDULE,
) -> list[str]:
    """``bockparse-train``'s overrides for a run of ``experiment=table1-ud-gsd`` (module doc)
    in ``run_dir``: local CE, ``updates`` updates, dev evaluation every ``eval_every``, the
    ``schedule`` overrides (Stanza's by default; none: the preset's)."""
    return ["experiment=table1-ud-gsd", "condition=local-ce", f"data.root={data}",
            f"seed={seed}", f"optim.max_steps={updates}", f"optim.eval_every={eval_every}",
            *schedule, *setup.bockparse_overrides(), "logger.wandb.enabled=false",
            "trainer.enable_progress_bar=false", f"hydra.run.dir={run_dir}"]  # fmt: skip


def stanza_train_arguments(
    data: Path, seed: int, updates: int, run_dir: Path, setup: Setup, eval_interval: int = 100
) -> list[str]:
    """``python -m stanza.models.parser``'s arguments for a training run with the preset's
    sizes (module doc) in ``run_dir``: ``updates`` updates, dev evaluation every
    ``eval_interval``; its best model is saved there."""
    return ["--mode", "train", "--train_file", str(data / TRAIN), "--eval_file", str(data / DEV),
            "--output_file", str(run_dir / "dev.conllu"), *stanza_model_arguments(run_dir),
            "--max_steps", str(updates), "--eval_interval", str(eval_interval), "--seed",
            str(seed), *setup.stanza_arguments()]  # fmt: skip


def stanza_model_arguments(run_dir: Path) -> list[str]:
    """The arguments that name a Stanza model in ``run_dir`` (training or prediction)."""
    return ["--lang", "zh-hans", "--shorthand", "zh-hans_gsd", "--no_pretrain", "--batch_size",
            "1000", "--save_dir", str(run_dir), "--cpu"]  # fmt: skip


def bockparse_curve(
    data: Path, seed: int, updates: int, work: Path, setup: Setup, train: bool = True
) -> dict[int, float]:
    """Train bockparse (module doc), unless ``train`` is False; dev LAS by update so far."""
    run_dir = work / "bockparse" / f"seed{seed}"
    if train and not (run_dir / "metrics.json").is_file():
        cmd = [sys.executable, "-m", "bockparse.training.train",
               *bockparse_arguments(data, seed, updates, run_dir, setup)]  # fmt: skip
        subprocess.run(cmd, cwd=REPO, env=setup.env(), check=True, stdout=subprocess.DEVNULL)
    curve: dict[int, float] = {}
    if not (run_dir / "csv" / "metrics.csv").is_file():
        return curve
    with open(run_dir / "csv" / "metrics.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            step = int(float(row["step"]))  # Lightning logs update u's evaluation at step u - 1
            if row.get("val/las") and (step + 1) % 100 == 0:  # (not the final re-evaluation)
                curve[step + 1] = float(row["val/las"])
    return curve


def stanza_curve(
    data: Path, seed: int, updates: int, work: Path, setup: Setup, train: bool = True
) -> dict[int, float]:
    """Train Stanza's parser (module doc), unless ``train`` is False; dev LAS by update so far,
    from its log."""
    run_dir = work / "stanza" / f"seed{seed}"
    log = run_dir / "train.log"
    if not log.is_file() and not train:
        return {}
    if train and (not log.is_file() or f"step {updates}:" not in log.read_text(encoding="utf-8")):
        run_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "stanza.models.parser",
               *stanza_train_arguments(data, seed, updates, run_dir, setup)]  # fmt: skip
        with open(log, "w", encoding="utf-8") as out:
            subprocess.run(cmd, cwd=run_dir, env=setup.env(), check=True, stdout=out,
                           stderr=subprocess.STDOUT)  # fmt: skip
    found = STANZA_LOG.findall(log.read_text(encoding="utf-8"))
    return {int(step): 100 * float(score) for step, score in found}


def kept(path: Path) -> Path:
    """``path``, or its gzip copy ``<path>.gz`` where only that exists (the dev predictions
    committed with a table, ``benchmarks/results/stanza_parity_like/``)."""
    packed = path.with_name(path.name + ".gz")
    return packed if not path.is_file() and packed.is_file() else path


def same_scorer(data: Path, seed: int, work: Path, setup: Setup) -> dict[str, tuple[float, float]]:
    """Per system, (best dev LAS its log reports, bockparse-eval's LAS of its best model's dev
    predictions), in percent (module doc); a run not started, a bockparse run still training
    and a Stanza run before its first evaluation are left out."""
    from bockparse.metrics import evaluate_files

    gold = str(data / DEV)
    bock = work / "bockparse" / f"seed{seed}"
    checks = {}
    if (bock / "metrics.json").is_file():
        logged = json.loads((bock / "metrics.json").read_text(encoding="utf-8"))["val/las"]
        rescored = evaluate_files(gold, str(kept(bock / "predictions" / "val.conllu")))["las"]
        checks["bockparse"] = (logged, rescored)
    log = work / "stanza" / f"seed{seed}" / "train.log"
    text = log.read_text(encoding="utf-8") if log.is_file() else ""  # not started yet
    found = [(int(step), 100 * float(score)) for step, score in STANZA_LOG.findall(text)]
    if not found:
        return checks
    run_dir = log.parent
    best = max(found, key=lambda x: (x[1], x[0]))  # Stanza keeps the later model on ties
    pred = kept(run_dir / f"dev-best-{best[0]}.conllu")  # the model saved at that evaluation
    if not pred.is_file():
        cmd = [sys.executable, "-m", "stanza.models.parser", "--mode", "predict",
               "--eval_file", gold, "--output_file", str(pred),
               *stanza_model_arguments(run_dir)]  # fmt: skip
        subprocess.run(cmd, cwd=run_dir, env=setup.env(), check=True, capture_output=True)
    checks["stanza"] = (best[1], evaluate_files(gold, str(pred))["las"])
    return checks


def report(
    results: dict, at: list[int], command: str, setup: dict, checks: dict | None = None
) -> str:
    """The parity table: dev LAS per seed, system and update, and bockparse - Stanza; first
    the setup (``setup.json``)."""
    if setup["like_stanza"]:
        data = (
            f"both systems: words lower-cased, cut-off {setup['word_cutoff']}, "
            f"augment_nopunct {setup['augment_nopunct']:.4f} (Stanza's rate for this file)"
        )
    else:
        data = (
            "bockparse: words cased, cut-off 2, no augment_nopunct; Stanza: its defaults "
            "(lower-cased, cut-off 0 without a pretrain, its own augment_nopunct rate)"
        )
    lines = ["# Dev LAS after equal updates: bockparse and Stanza 1.15's trainer (UD Chinese-GSD)",
             "", f"`{command}`", "",
             f"Setup: {setup['threads']} CPU thread(s) per process (torch reports "
             f"{setup['torch_threads_seen']}), one run at a time; {data}.", "",
             "| seed | system | " + " | ".join(f"update {u}" for u in at) + " |",
             "|---|---|" + "---:|" * len(at)]  # fmt: skip
    for seed, curves in sorted(results.items()):
        for system in ("bockparse", "stanza"):
            values = [curves[system].get(u) for u in at]
            shown = " | ".join("-" if v is None else f"{v:.2f}" for v in values)
            lines.append(f"| {seed} | {system} | {shown} |")
        gaps = []
        for u in at:
            a, b = curves["bockparse"].get(u), curves["stanza"].get(u)
            gaps.append("-" if a is None or b is None else f"{a - b:+.2f}")
        lines.append(f"| {seed} | bockparse − Stanza | " + " | ".join(gaps) + " |")
    lines += ["", "Target (issue): bockparse − Stanza ≥ −0.5 at 300 and 1,000 updates, every seed."]
    unfinished = [
        f"seed {seed} {system} (last evaluation: update {max(curve, default=0)})"
        for seed, curves in sorted(results.items())
        for system, curve in curves.items()
        if max(curve, default=0) < max(at)
    ]
    if unfinished:
        lines += ["", "Not finished when this table was written: " + "; ".join(unfinished) + "."]
    if checks:
        lines += [
            "",
            "One scorer: each system's best model re-parses the dev file after training, "
            "and `bockparse-eval` scores it (logged best dev LAS / bockparse-eval):",
            "",
        ]
        for seed, per_system in sorted(checks.items()):
            shown = ", ".join(f"{name} {a:.2f} / {b:.2f}" for name, (a, b) in per_system.items())
            lines.append(f"- seed {seed}: {shown}")
    return "\n".join(lines) + "\n"


def publish(text: str, output: Path | None) -> int:
    """Print a benchmark's report, and write it to ``output`` when given; ``main``'s exit
    status (0)."""
    print(text, end="")
    if output:
        output.write_text(text, encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="the UD Chinese-GSD v1.3 folder")
    p.add_argument("--seeds", type=int, nargs="+", default=[1111, 2222])
    p.add_argument("--at", type=int, nargs="+", default=[100, 300, 1000], help="updates shown")
    p.add_argument("--work", type=Path, default=Path("parity-runs"), help="run folders")
    p.add_argument("--output", type=Path, help="also write the table here")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: the runs in --work as far as they got",
    )
    p.add_argument("--threads", type=int, default=1, help="CPU threads of each process")
    p.add_argument(
        "--like-stanza",
        action="store_true",
        help="Stanza's word vocabulary and augment_nopunct in both (module doc)",
    )
    p.add_argument("--word-cutoff", type=int,
                   help=f"with --like-stanza: the cut-off of both (default "
                        f"{STANZA_WORD_CUTOFF}, Stanza's DEFAULT_WORD_CUTOFF)")  # fmt: skip
    args = p.parse_args(argv)
    updates = max(args.at)
    if any(u % 100 for u in args.at):
        p.error("--at: multiples of 100 (both systems evaluate every 100 updates)")
    if args.threads < 1 or (args.word_cutoff is not None and args.word_cutoff < 1):
        p.error("--threads and --word-cutoff: at least 1")
    if args.word_cutoff is not None and not args.like_stanza:
        p.error("--word-cutoff: only with --like-stanza")
    setup = Setup(args.threads)
    if args.like_stanza:
        cutoff = STANZA_WORD_CUTOFF if args.word_cutoff is None else args.word_cutoff
        setup = Setup(args.threads, True, cutoff, stanza_nopunct_ratio(args.data / TRAIN))
    recorded = {**asdict(setup), "torch_threads_seen": torch_threads_seen(setup)}
    results, checks, cache = {}, {}, args.work / "curves.json"
    args.work.mkdir(parents=True, exist_ok=True)
    setup_file = args.work / "setup.json"
    if setup_file.is_file():
        before = json.loads(setup_file.read_text(encoding="utf-8"))
        if before != recorded:
            p.error(f"{setup_file}: the runs there have another setup ({before}); use another "
                    "--work")  # fmt: skip
    setup_file.write_text(json.dumps(recorded, indent=2) + "\n", encoding="utf-8")
    for seed in args.seeds:
        start = time.perf_counter()
        train = not args.report_only
        data, work = args.data.resolve(), args.work.resolve()
        results[seed] = {
            "bockparse": bockparse_curve(data, seed, updates, work, setup, train),
            "stanza": stanza_curve(data, seed, updates, work, setup, train),
        }
        checks[seed] = same_scorer(data, seed, work, setup)
        print(f"seed {seed}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
        cache.write_text(json.dumps(results, indent=2), encoding="utf-8")
    command = "python benchmarks/stanza_parity.py " + " ".join(
        a if a.startswith("--") else os.path.basename(a) if a == str(args.data) else a
        for a in (argv if argv is not None else sys.argv[1:])
    )
    return publish(report(results, args.at, command, recorded, checks), args.output)


if __name__ == "__main__":
    sys.exit(main())
