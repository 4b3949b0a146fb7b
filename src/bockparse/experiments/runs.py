"""Finding the run folders of ``bockparse-train`` and reading what each one left behind.

A run folder holds ``.hydra/config.yaml`` (written by Hydra when the job starts) and, once the
run has finished, ``metrics.json`` (written last, atomically, by
:func:`bockparse.training.train.run`).
A folder with the first and not the second is a *failed* run (crashed, killed, or still
running); it is reported, never averaged over.

Development curves come from each run's CSV log (``csv/metrics.csv``, Lightning's CSVLogger).
Lightning logs the evaluation after update ``u`` at ``step = u - 1``, so the update is
``step + 1``; the last ``val/las`` row before the first ``test/las`` row is the final
re-evaluation of the selected checkpoint by :func:`bockparse.training.train.run`, not a point
of the curve, and is dropped.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ..compat import current_name
from ..rundir import (
    CSV,
    METRICS,
    RESUMED_EXACTLY,
    RESUMING,
    TRAIN_LOG,
    LinkRefused,
    RunDir,
    RunFileError,
    read_yaml,
)
from ..rundir import discover as run_folders

DEV_KEY = "val/las"


@dataclass(frozen=True)
class Run:
    """One run folder.

    Attributes:
        path: the folder.
        experiment: ``experiment_name`` (from ``metrics.json``, else the saved config).
        data: the data config chosen (``ud-english-ewt``, ``ptb``, ...), or ``None``.
        condition: the run's name (``local-ce-cle``, ``hinge-bock``, ``arc-eager``, ...; the
            config's ``name``), or ``None``.
        decoder: the run's decoder, or ``None``.
        loss: the loss class name (``StructuredHinge``, ...), or ``None``.
        seed: the run seed, or ``None``.
        metrics: the parsed ``metrics.json``; ``None`` for a failed run.
        error: why the run counts as failed (``None`` when it finished).
    """

    path: Path
    experiment: str | None
    data: str | None
    condition: str | None
    decoder: str | None
    loss: str | None
    seed: int | None
    metrics: dict[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.metrics is not None

    @property
    def group(self) -> tuple[str, str | None]:
        """The key runs are grouped by into treebank columns: ``(experiment, data)``."""
        return (self.experiment or "?", self.data)


@dataclass
class Discovery:
    """The runs found under some folders, and the seeds their sweeps asked for."""

    runs: list[Run] = field(default_factory=list)
    sweep_seeds: set[int] = field(default_factory=set)


def _readable(read: Callable[[], DictConfig | None]) -> DictConfig | None:
    """``read()`` (a run folder's YAML file), ``None`` when it is absent or unreadable (a
    truncated or foreign file: the run is read from its other files); a link is refused."""
    try:
        return read()
    except LinkRefused:
        raise
    except (FileNotFoundError, RunFileError):
        return None


def _select(cfg: DictConfig | None, key: str) -> Any:
    if cfg is None:
        return None
    try:
        return OmegaConf.select(cfg, key, throw_on_resolution_failure=False)
    except Exception:  # interpolation errors in a foreign config
        return None


def read_run(path: str | Path) -> Run:
    """Read one run folder (finished or failed)."""
    run = RunDir(path)
    metrics: dict[str, Any] | None = None
    error: str | None = None
    try:
        cfg = _readable(run.config)
        data = _select(_readable(run.hydra), "hydra.runtime.choices.data")
        metrics = run.metrics()
    except RunFileError as err:
        cfg, data, error = None, None, f"unreadable: {err}"
    if metrics is None and error is None:
        error = f"no {METRICS} (the run failed, was stopped, or is still running)"
    source = metrics or {}
    seed = source.get("seed", _select(cfg, "seed"))
    decoder = source.get("decoder", _select(cfg, "decoder"))
    loss = source.get("loss")
    if loss is None:
        target = _select(cfg, "loss._target_")
        loss = str(target).rsplit(".", 1)[-1] if target else None
    return Run(
        path=run.path,
        experiment=source.get("experiment", _select(cfg, "experiment_name")),
        data=data,
        condition=current_name(source.get("condition", _select(cfg, "name")), decoder),
        decoder=decoder,
        loss=loss,
        seed=None if seed is None else int(seed),
        metrics=metrics,
        error=error,
    )


def _sweep_seeds(root: Path) -> set[int]:
    """Seeds a multirun asked for, from its ``multirun.yaml`` (sweeper params or overrides)."""
    cfg = _readable(lambda: read_yaml(root / "multirun.yaml"))
    if cfg is None:
        return set()
    values: list[str] = []
    params = _select(cfg, "hydra.sweeper.params") or {}
    if "seed" in params:
        values.append(str(params["seed"]))
    for override in _select(cfg, "hydra.overrides.task") or []:
        key, _, value = str(override).partition("=")
        if key.lstrip("+") == "seed":
            values.append(value)
    seeds: set[int] = set()
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part.lstrip("-").isdigit():
                seeds.add(int(part))
    return seeds


def discover(paths: Sequence[str | Path]) -> Discovery:
    """Every run folder at or below ``paths`` (sweep roots or run folders), each once.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    found = Discovery()
    seen: set[Path] = set()
    for given in paths:
        root = Path(given)
        if not root.exists():
            raise FileNotFoundError(f"{root}: no such folder")
        found.sweep_seeds |= _sweep_seeds(root)
        for run in run_folders(root):
            key = run.path.resolve()
            if key not in seen:
                seen.add(key)
                found.runs.append(read_run(run.path))
    return found


def metric(run: Run, key: str) -> float | None:
    """A finite metric of a finished run (``"test/las"``), else ``None``."""
    if run.metrics is None:
        return None
    value = run.metrics.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return float(value)


def dev_curve(run_dir: str | Path, key: str = DEV_KEY) -> dict[int, float]:
    """Update -> development score during training, from ``csv/metrics.csv`` (empty if none)."""
    path = RunDir(run_dir).file(CSV)
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    first_test = next((i for i, r in enumerate(rows) if r.get("test/las")), len(rows))
    points = [r for r in rows[:first_test] if r.get(key)]
    if first_test < len(rows) and points:
        points = points[:-1]  # the final re-evaluation of the selected checkpoint
    curve: dict[int, float] = {}
    for row in points:
        try:
            update, value = int(row["step"]) + 1, float(row[key])
        except (KeyError, ValueError):
            continue
        if math.isfinite(value):
            curve[update] = value  # a resumed run re-logs a step: the later row wins
    return curve


@dataclass(frozen=True)
class Plateau:
    """Where a finished run's selected checkpoint lies on its development curve.

    Attributes:
        best_step: the update of the best development LAS (``metrics.json``'s ``best_step``).
        last_step: the update of the last evaluation during training.
        evaluations: how many evaluations training made.
        after_best: how many of them came after the best one (0: the curve was still rising
            when training stopped).
    """

    best_step: int
    last_step: int
    evaluations: int
    after_best: int


@dataclass(frozen=True)
class Resume:
    """One resume of a run from its ``last.ckpt``.

    Attributes:
        update: the update it continued from; ``None`` where an earlier bockparse did not log it.
        bit_exact: whether it continued exactly as the uninterrupted run would (the generators
            and the epoch's place restored).
    """

    update: int | None
    bit_exact: bool


_RESUMED_AT = re.compile(rf"{RESUMING} \S+(?: at update (\d+))?")


def resumes(run_dir: str | Path) -> list[Resume]:
    """Every resume recorded in the run's ``train.log``, in order (empty without a log)."""
    path = RunDir(run_dir).file(TRAIN_LOG)
    if not path.is_file():
        return []
    found: list[Resume] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if match := _RESUMED_AT.search(line):
            found.append(Resume(int(match[1]) if match[1] else None, bit_exact=False))
        elif RESUMED_EXACTLY in line and found:
            found[-1] = Resume(found[-1].update, bit_exact=True)
    return found


def plateau(run: Run) -> Plateau | None:
    """The :class:`Plateau` of a finished run, or ``None`` without ``best_step`` or a dev curve."""
    best = (run.metrics or {}).get("best_step")
    curve = dev_curve(run.path)
    if not isinstance(best, int) or isinstance(best, bool) or not curve:
        return None
    return Plateau(best, max(curve), len(curve), sum(step > best for step in curve))
