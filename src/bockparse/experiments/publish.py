"""``bockparse-publish``: copy the small files of finished runs into the repository.

A published table must regenerate from files in the repository, yet a run folder holds
checkpoints of hundreds of megabytes. This command copies, per run, what the tables and
analyses read and what an auditor needs, and nothing else:

* ``metrics.json`` (the scores, written last by ``bockparse-train``), ``timing.json`` (its wall
  time split), ``environment.json`` (versions, CPU, precision), ``train.log``,
  ``csv/metrics.csv`` (the per-evaluation curve);
* ``.hydra/config.yaml``, ``hydra.yaml`` and ``overrides.yaml`` (the composed config);
* ``predictions/{val,test}.conllu`` gzip-compressed as ``<stage>.conllu.gz`` (a fixed gzip
  header, so the same predictions give the same bytes); ``bockparse-reeval`` and the CoNLL-U
  reader take the ``.gz`` files as they are.

Never checkpoints. Each run keeps its path relative to the folder it was found under, so
``bockparse-publish multirun/table1-ud --out experiments/table1-ud/runs`` gives
``experiments/table1-ud/runs/table1-ud-ewt/local-ce-cle/seed1111/...``. Only finished runs (with
``metrics.json``) are copied; a failed one is named and skipped, so the published table
lists it as missing rather than failed. Files are written atomically.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import rundir
from ..rundir import write_atomic
from .runs import METRICS_FILE, discover

_FILES = (rundir.METRICS, rundir.TIMING, rundir.ENVIRONMENT, rundir.TRAIN_LOG, rundir.CSV,
          rundir.CONFIG, rundir.HYDRA, rundir.OVERRIDES)  # fmt: skip
SMALL = tuple(str(name) for name in _FILES)
PREDICTIONS = ("val", "test")


def _copy(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


def publish_run(run_dir: str | Path, dest: str | Path) -> list[Path]:
    """Copy one run's small files (:data:`SMALL`, compressed predictions) to ``dest``.

    Returns:
        The files written, in :data:`SMALL` order, then the predictions.

    Raises:
        FileNotFoundError: ``run_dir`` has no ``metrics.json`` (not a finished run).
    """
    run_dir, dest = Path(run_dir), Path(dest)
    if not (run_dir / METRICS_FILE).is_file():
        raise FileNotFoundError(f"{run_dir}: no {METRICS_FILE} (the run did not finish)")
    written = []
    for name in SMALL:
        if (run_dir / name).is_file():
            _copy(dest / name, (run_dir / name).read_bytes())
            written.append(dest / name)
    for stage in PREDICTIONS:
        source = rundir.predictions(run_dir, stage)
        if source.is_file():
            target = dest / rundir.PREDICTIONS / f"{stage}.conllu.gz"
            _copy(target, gzip.compress(source.read_bytes(), compresslevel=9, mtime=0))
            written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``bockparse-publish SWEEP_OR_RUN_DIR... --out DIR``."""
    parser = argparse.ArgumentParser(
        prog="bockparse-publish",
        description="Copy finished runs' metrics, logs, configs and compressed predictions "
        "(never checkpoints) into DIR, each under its path relative to the folder given.",
    )
    parser.add_argument("runs", nargs="+", metavar="DIR", help="sweep or run folders")
    parser.add_argument("--out", required=True, metavar="DIR")
    args = parser.parse_args(argv)
    skipped = 0
    for given in args.runs:
        root = Path(given)
        try:
            found = discover([root])
        except FileNotFoundError as err:
            print(f"bockparse-publish: {err}", file=sys.stderr)
            return 2
        for run in found.runs:
            relative = run.path.relative_to(root) if run.path != root else Path(root.name)
            try:
                written = publish_run(run.path, Path(args.out) / relative)
            except FileNotFoundError as err:
                print(f"bockparse-publish: skipped {err}", file=sys.stderr)
                skipped += 1
                continue
            size = sum(p.stat().st_size for p in written)
            target = Path(args.out) / relative
            print(f"{run.path} -> {target} ({len(written)} files, {size:,} bytes)")
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
