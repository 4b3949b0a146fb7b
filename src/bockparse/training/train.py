"""``bockparse-train``: the Hydra application over ``conf/train.yaml``.

One run trains the condition's loss with Stanza's schedule, keeps the checkpoint with the best
dev LAS (the later one on ties), then evaluates it on dev and test. The run folder (Hydra's
``hydra.run.dir``) receives the composed config (``.hydra/``), ``train.log`` (the config's
choices, every evaluation, decay, stage switch, the stop reason and where the outputs went),
``checkpoints/best.ckpt`` (weights only) and ``last.ckpt`` (full state, for ``resume=true``; see
:mod:`.checkpoints`), ``predictions/val.conllu`` and ``test.conllu``, ``metrics.json``,
``timing.json`` (the wall time by part, :mod:`.clock`), ``environment.json`` (package versions,
CPU and GPU, the precision chosen and why: :func:`bockparse.hardware.environment`) and
the CSV log; every file is written atomically.

``trainer.precision: auto`` (every CPU preset's default) resolves before anything is built
(:func:`resolve_run_precision`): ``bf16-mixed`` where the device computes bf16 natively, else
``32-true``; the checkpoints' config and ``environment.json`` hold the resolved value, and a
resumed run keeps the precision it started with. W&B runs offline unless an API key is
configured, and a W&B failure only costs the W&B log.

Under Lightning DDP (``trainer=ddp``) every rank runs :func:`run`; evaluation scores every
sentence once across the ranks, and rank 0 alone writes the predictions and ``metrics.json``.

The run folder is one configuration's (``conf/train.yaml``'s ``hydra.run.dir`` names it by
:func:`bockparse.rundir.folder_name`, through the ``run_folder`` resolver registered here). It
is locked before anything is written into it (Hydra writes nothing there itself: the run
writes ``.hydra/`` and opens ``train.log`` once it holds the lock), and a folder holding a
finished run or another config is refused with the choices (:func:`claim`); ``overwrite=true``
sets it aside.

``resume=true`` continues from ``checkpoints/last.ckpt`` when the run folder has one; it says
so and exits when the run is finished (``metrics.json`` exists), and refuses a damaged
``last.ckpt`` or a config whose model, data, loss, decoder or condition differ from the one the
checkpoint was trained with (:func:`check_resume`).
"""

from __future__ import annotations

import atexit
import csv
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import lightning.pytorch as pl
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from hydra.utils import instantiate
from lightning.pytorch.loggers import CSVLogger, Logger
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig, OmegaConf

from .. import rundir
from ..data.conllu import DataError
from ..hardware import AUTO, device_type_of, environment, resolve_precision, warn_if_emulated
from ..metrics import NAMES, metric_key
from ..modelfile import spec_from_config
from .callbacks import run_callbacks
from .checks import setting_problems
from .module import ParserModule
from .predictions import PredictionWriter
from .resume import ResumeError, check_resume, read_finished

log = logging.getLogger("bockparse.training.train")


def resolve_run_precision(cfg: DictConfig, saved: dict[str, Any] | None = None) -> str:
    """Set ``cfg.trainer.precision`` to the precision the run uses, log it with its reason, and
    return the reason (:func:`bockparse.hardware.resolve_precision`).

    ``auto`` resolves on this machine, or to the precision of ``saved`` (the config a resumed
    checkpoint was trained with), so that a run keeps one precision throughout.
    """
    requested = str(cfg.trainer.precision)
    saved_precision = ((saved or {}).get("trainer") or {}).get("precision")
    if requested == AUTO and saved_precision not in (None, AUTO):
        precision, reason = str(saved_precision), "auto: the precision the resumed run began with"
    else:
        precision, reason = resolve_precision(requested, str(cfg.trainer.accelerator))
    cfg.trainer.precision = precision
    log.info("precision %s (%s)", precision, reason)
    warn_if_emulated(precision, device_type_of(str(cfg.trainer.accelerator)))
    return reason


# The Hydra tree: package data in an installed wheel (setup.py ships conf/ as bockparse/conf),
# the repository's top-level conf/ in a checkout (editable install or PYTHONPATH=src).
_PACKAGED_CONF = Path(__file__).resolve().parents[1] / "conf"  # bockparse/conf
CONF_DIR = str(_PACKAGED_CONF if _PACKAGED_CONF.is_dir() else _PACKAGED_CONF.parents[2] / "conf")


def _csv_logger(run_dir: Path, resumed_step: int | None) -> CSVLogger:
    """Lightning's CSV logger on ``<run>/csv/metrics.csv``; resumed, it keeps the rows up to
    the resumed update (Lightning's writer would delete the file) and appends after them."""
    path = run_dir / rundir.CSV
    kept: list[dict[str, str]] = []
    header: list[str] = []
    if resumed_step is not None and path.is_file():
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or [])
            kept = [row for row in reader if int(float(row.get("step") or 0)) <= resumed_step]
    logger = CSVLogger(save_dir=str(run_dir), name="csv", version="")
    if header:
        writer = logger.experiment  # created now: it removes the old file ...
        with rundir.atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
            out = csv.DictWriter(f, fieldnames=header)
            out.writeheader()
            out.writerows(kept)  # ... which comes back with the rows before the resumed update
        writer.metrics_keys = header
    return logger


def make_loggers(cfg: DictConfig, run_dir: Path, resumed_step: int | None = None) -> list[Logger]:
    """The CSV logger, and W&B unless disabled or unavailable (never fatal)."""
    loggers: list[Logger] = []
    if cfg.logger.csv:
        loggers.append(_csv_logger(run_dir, resumed_step))
    wb = cfg.logger.wandb
    if not wb.enabled:
        return loggers
    mode = wb.mode or os.environ.get("WANDB_MODE")
    if mode is None:
        mode = "online" if os.environ.get("WANDB_API_KEY") else "offline"
    try:
        from lightning.pytorch.loggers import WandbLogger

        logger = WandbLogger(
            project=wb.project,
            group=wb.group,
            name=wb.name,
            save_dir=str(run_dir),
            mode=mode,
            config=OmegaConf.to_container(cfg, resolve=True),
        )
        logger.experiment  # start it now, so that a failure is caught here  # noqa: B018
    except Exception as err:  # W&B must never stop a run
        log.warning("W&B logging disabled: %s", err)
        return loggers
    loggers.append(logger)
    return loggers


def build(cfg: DictConfig) -> tuple[pl.LightningDataModule, ParserModule]:
    """The data module (vocabularies built) and the LightningModule of a config.

    The config is the user's command over the project's tree (never a file a run wrote). Its
    model must be one the closed model schema describes (:func:`bockparse.modelfile.
    spec_from_config`), checked first, so that every trained run can be loaded and exported.
    """
    spec_from_config(
        OmegaConf.to_container(cfg.model, resolve=True),
        OmegaConf.to_container(cfg.encoder, resolve=True),
        "the config",
    )
    tokenizer = instantiate(cfg.encoder.tokenizer) if cfg.encoder.tokenizer else None
    datamodule = instantiate(cfg.data, tokenizer=tokenizer, max_length=cfg.encoder.max_length)
    datamodule.setup("fit")
    encoder = instantiate(cfg.encoder.model) if cfg.encoder.model else None
    scorer = instantiate(cfg.model)(vocabs=datamodule.vocabs, encoder=encoder)
    module = ParserModule(
        scorer=scorer,
        loss=instantiate(cfg.loss),
        decoder=cfg.decoder,
        relations=datamodule.vocabs.rels.itos,
        stage1=instantiate(cfg.optim.stage1),
        stage2=instantiate(cfg.optim.stage2),
        schedule=instantiate(cfg.optim.schedule),
        max_grad_norm=cfg.optim.max_grad_norm,
        exclude_punct=cfg.exclude_punct,
    )
    return datamodule, module


def log_choices(cfg: DictConfig, run_dir: Path) -> None:
    """Log the run folder and the composed config's choices that decide the results."""
    log.info("run folder: %s", run_dir.resolve())
    if HydraConfig.initialized():
        choices = HydraConfig.get().runtime.choices
        log.info("config: %s", ", ".join(f"{group}={choice}" for group, choice in choices.items()
                                          if not group.startswith("hydra/")))  # fmt: skip
    optim, trainer = cfg.optim, cfg.trainer
    log.info("experiment %s, seed %d, %s on %s", cfg.experiment_name, cfg.seed,
             trainer.precision, trainer.accelerator)  # fmt: skip
    log.info("updates: at most %d, %d-word batches, dev evaluation every %d; stage 1 %s lr %g, "
             "stage 2 %s lr %g", optim.max_steps, cfg.data.batch_size, optim.eval_every,
             optim.stage1._target_.rsplit(".", 1)[-1], optim.stage1.lr,
             optim.stage2._target_.rsplit(".", 1)[-1], optim.stage2.lr)  # fmt: skip
    log.info("schedule: %s", OmegaConf.to_container(optim.schedule, resolve=True))


def evaluate(
    trainer: pl.Trainer,
    module: ParserModule,
    datamodule: pl.LightningDataModule,
    writer: PredictionWriter,
    checkpoint: Path,
    run_dir: Path,
) -> dict[str, float]:
    """Evaluate ``checkpoint`` on dev and test and write ``predictions/{val,test}.conllu`` in
    ``run_dir`` through ``writer`` (rank 0 alone under DDP, with the trees of every rank).

    Returns:
        ``{"val/uas": ..., ..., "test/lcm": ...}``: the same on every rank.
    """
    result: dict[str, float] = {}
    for stage, evaluate_stage in (("val", trainer.validate), ("test", trainer.test)):
        evaluate_stage(module, datamodule=datamodule, ckpt_path=str(checkpoint), weights_only=True)
        path = rundir.predictions(run_dir, stage)
        writer.write(trainer, stage, path)
        result.update({metric_key(stage, n): module.rates[stage][n] for n in NAMES})
        scores = ", ".join(f"{n.upper()} {module.rates[stage][n]:.2f}" for n in NAMES)
        log.info("%s: %s; predictions in %s", stage, scores, path)
    return result


class SettingsError(ValueError):
    """A setting that cannot work (:func:`bockparse.training.checks.setting_problems`)."""


def _run_folder(name: object, overrides: Any) -> str:
    """The ``run_folder`` resolver of ``conf/train.yaml``'s ``hydra.run.dir`` and
    ``hydra.sweep.subdir``: :func:`bockparse.rundir.folder_name` of the run's name and its
    command-line overrides (``hydra.overrides.task``, a multirun job's own included)."""
    return rundir.folder_name(name, [str(o) for o in overrides or []])


OmegaConf.register_new_resolver("run_folder", _run_folder, replace=True)

# What a run folder may not hold as a symbolic link: everything a run writes there before
# Lightning's own files, and what it reads to decide whether to start.
_NEVER_LINKED = (rundir.CONFIG, rundir.HYDRA, rundir.OVERRIDES, rundir.TRAIN_LOG, rundir.METRICS)
_KEPT = f"the old folder kept as <folder>{rundir.REPLACED}<UTC time>"


def folder_conflict(cfg: DictConfig, run_dir: Path, job_log: str | None = None) -> str | None:
    """Why ``run_dir`` cannot take a training of ``cfg`` as it is, with the choices (one line
    without the folder), or ``None``: it holds a symbolic link where the run writes, a finished
    run (``metrics.json``), or the saved config of another run (every differing setting named,
    :func:`bockparse.rundir.config_changes`). A ``resume=true`` run over an unfinished run's
    ``last.ckpt`` is compared with the checkpoint instead (:func:`check_resume`).
    """
    names = [*_NEVER_LINKED, *([job_log] if job_log else []),
             *([cfg.trace.file] if cfg.trace.enabled else [])]  # fmt: skip
    if links := rundir.planted_links(run_dir, names):
        return ("it holds symbolic links where a run writes (" + ", ".join(map(str, links)) +
                "), and a run never writes through one: remove them, train elsewhere (name=...), "
                f"or overwrite=true to replace the folder ({_KEPT})")  # fmt: skip
    finished = os.path.lexists(run_dir / rundir.METRICS)
    changes = _saved_config_changes(cfg, run_dir)
    if not finished and (not changes or (cfg.resume and (run_dir / rundir.LAST).is_file())):
        return None
    what = "a finished run" if finished else "a run"
    if changes:
        more = f"; and {len(changes) - 8} more" if len(changes) > 8 else ""
        what += f" of another config ({'; '.join(changes[:8])}{more})"
    else:
        what += f" of this config ({rundir.METRICS})"
    resume = "" if finished else "resume=true to continue it, "
    return (f"it holds {what}; choose {resume}name=... for a new run, or overwrite=true to "
            f"replace it ({_KEPT})")  # fmt: skip


def _saved_config_changes(cfg: DictConfig, run_dir: Path) -> list[str]:
    """How ``cfg`` differs from the config saved in ``run_dir`` (empty when none is saved).

    The saved config names the precision its run resolved ``auto`` to: a ``cfg`` asking for
    ``auto`` takes it, as a resumed run keeps the precision it began with
    (:func:`resolve_run_precision`)."""
    config = run_dir / rundir.CONFIG
    if not config.is_file():
        return []
    try:
        saved = OmegaConf.to_container(OmegaConf.load(config), resolve=False)
    except Exception as err:  # a damaged YAML file: OmegaConf/yaml raise many types
        return [f"{rundir.CONFIG} cannot be read ({type(err).__name__})"]
    if not isinstance(saved, dict):
        return [f"{rundir.CONFIG} holds no config"]
    current = OmegaConf.to_container(cfg, resolve=False)
    trainer = saved.get("trainer")
    if cfg.trainer.precision == AUTO and isinstance(trainer, dict) and "precision" in trainer:
        current["trainer"]["precision"] = trainer["precision"]
    return rundir.config_changes(saved, current)


def claim(cfg: DictConfig, lock: rundir.RunLock, job_log: str | None = None) -> dict | None:
    """Make the locked run folder ready for a training of ``cfg``.

    A folder that cannot take it (:func:`folder_conflict`) is refused, or with
    ``overwrite=true`` set aside (:meth:`bockparse.rundir.RunLock.set_aside`) for a fresh one.

    Returns:
        The finished run's ``metrics.json`` when ``resume=true`` finds the run of this config
        finished (nothing to do), else ``None``; a finished run of another config is refused
        like any other.

    Raises:
        bockparse.rundir.RunFolderError: the folder cannot take the run (one line: the folder,
            why, and the choices).
    """
    run_dir = lock.run_dir
    done = run_dir / rundir.METRICS
    conflict = folder_conflict(cfg, run_dir, job_log)
    finished_here = done.is_file() and not done.is_symlink() and not _saved_config_changes(
        cfg, run_dir)  # fmt: skip
    if cfg.resume and conflict is not None and finished_here:
        log.info("%s is finished (%s exists): nothing to resume; resume=false trains it again "
                 "(in a new folder: name=..., or overwrite=true)", run_dir, done)  # fmt: skip
        return read_finished(done)
    if conflict is None:
        return None
    if not cfg.overwrite:
        raise rundir.RunFolderError(f"{run_dir}: {conflict}")
    kept = lock.set_aside()
    log.info("overwrite=true: %s moved to %s; training afresh", run_dir, kept)
    return None


def write_hydra_config(run_dir: Path, cfg: DictConfig, hydra: DictConfig) -> None:
    """Write Hydra's record of the job into ``<run>/.hydra/``, as Hydra would (the same files
    and content), but through the atomic writer and only once the folder is locked:
    ``config.yaml`` (the composed config), ``hydra.yaml`` (``hydra``, Hydra's own config) and
    ``overrides.yaml`` (the command line's overrides)."""
    (run_dir / rundir.CONFIG).parent.mkdir(exist_ok=True)
    rundir.write_atomic(run_dir / rundir.CONFIG, OmegaConf.to_yaml(cfg))
    rundir.write_atomic(run_dir / rundir.HYDRA, OmegaConf.to_yaml(hydra))
    rundir.write_atomic(run_dir / rundir.OVERRIDES, OmegaConf.to_yaml(hydra.hydra.overrides.task))


_JOB_LOG = "bockparse.job_log"  # the name of the handler that writes the job's log file


def attach_job_log(run_dir: Path, hydra: DictConfig) -> None:
    """Log to ``<run>/<job name>.log`` (``train.log``; under DDP, rank k's
    ``train_ddp_process_k.log``) in the format of Hydra's job logging (``conf/hydra/
    job_logging/console.yaml``), appending, opened without following a link (``O_NOFOLLOW``);
    removed by :func:`detach_job_log`.

    Raises:
        bockparse.rundir.RunFolderError: the file cannot be opened (a planted link, say).
    """
    path = run_dir / f"{hydra.hydra.job.name}.log"
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
    try:
        stream = open(os.open(path, flags, 0o666), "a", encoding="utf-8")
    except OSError as err:
        raise rundir.RunFolderError(
            f"{path}: cannot open the run's log ({err.strerror}); a run never writes through a link"
        ) from None
    handler = logging.StreamHandler(stream)
    handler.set_name(_JOB_LOG)
    handler.setFormatter(logging.Formatter(hydra.hydra.job_logging.formatters.simple.format))
    logging.getLogger().addHandler(handler)


def detach_job_log() -> None:
    """Close the log file of :func:`attach_job_log` (at the end of a job)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == _JOB_LOG]:
        root.removeHandler(handler)
        handler.close()
        handler.stream.close()


def run(cfg: DictConfig, run_dir: Path, hydra: DictConfig | None = None) -> dict[str, Any]:
    """Train, select, evaluate and write the outputs of one run; returns ``metrics.json``.

    The settings are checked first; then the run folder is locked for this process before
    anything is written into it (:class:`bockparse.rundir.RunLock`; under DDP by rank 0, the
    other ranks write nothing but their own log) and checked (:func:`claim`), and a resumed
    run's ``last.ckpt`` compared with ``cfg`` (:func:`check_resume`). Under Hydra (``hydra``:
    Hydra's config of the job), ``.hydra/`` is written only then (:func:`write_hydra_config`),
    and the job's log file opened (:func:`attach_job_log`; the caller detaches it).

    Raises:
        SettingsError: a setting that cannot work, all named.
        bockparse.rundir.RunFolderError: the folder cannot take the run (locked by another
            process, a finished run or another config in it, a planted link, not writable).
        ResumeError: ``resume=true`` and ``last.ckpt`` cannot continue under ``cfg``.
    """
    if problems := setting_problems(cfg):
        raise SettingsError("; ".join(problems))
    if getattr(rank_zero_only, "rank", 0) != 0:  # rank 0's process holds the lock
        return _run(cfg, run_dir, hydra)
    job_log = f"{hydra.hydra.job.name}.log" if hydra is not None else None
    with rundir.RunLock(run_dir) as lock:
        finished = claim(cfg, lock, job_log)
        if finished is not None:
            return finished
        return _run(cfg, run_dir, hydra)


def _run(cfg: DictConfig, run_dir: Path, hydra: DictConfig | None) -> dict[str, Any]:
    """:func:`run` once the settings are checked and the folder is locked and checked."""
    ckpt_dir = run_dir / rundir.CHECKPOINTS
    done = run_dir / rundir.METRICS
    last = run_dir / rundir.LAST
    resume = last if cfg.resume and last.exists() else None
    saved, resumed_step = check_resume(cfg, resume) if resume is not None else (None, None)
    if hydra is not None:  # nothing written before the folder and last.ckpt are checked
        attach_job_log(run_dir, hydra)
    if cfg.resume and resume is None:
        log.warning("resume=true but %s does not exist: starting afresh", last)
    precision_reason = resolve_run_precision(cfg, saved)
    if hydra is not None and getattr(rank_zero_only, "rank", 0) == 0:
        write_hydra_config(run_dir, cfg, hydra)  # its trainer.precision: the one the run uses
    log_choices(cfg, run_dir)
    if resume is not None:
        log.info("%s %s at update %d", rundir.RESUMING, resume, resumed_step)
    if cfg.torch_threads is not None:  # a fixed count: CPU kernels' reductions depend on it
        torch.set_num_threads(cfg.torch_threads)
    pl.seed_everything(cfg.seed, workers=True)
    datamodule, module = build(cfg)
    loggers = make_loggers(cfg, run_dir, resumed_step)
    callbacks = run_callbacks(cfg, run_dir)  # in their order: bockparse.training.callbacks
    clock, writer, checkpoints = callbacks.clock, callbacks.predictions, callbacks.checkpoints
    trainer: pl.Trainer = instantiate(cfg.trainer, logger=loggers or False,
                                      callbacks=callbacks.ordered(),
                                      default_root_dir=str(run_dir))  # fmt: skip
    # Lightning evaluates under torch.no_grad inside fit (inference_mode=False for the fit's
    # validation loop); dev evaluations here only decode and count, so inference mode is safe.
    trainer.fit_loop.epoch_loop.val_loop.inference_mode = cfg.trainer.inference_mode
    if trainer.is_global_zero:
        rundir.write_json(run_dir / rundir.ENVIRONMENT,
                          environment(cfg.trainer.precision, precision_reason))  # fmt: skip
    start = time.perf_counter()
    trainer.fit(module, datamodule=datamodule, ckpt_path=resume, weights_only=True)
    fit_seconds = time.perf_counter() - start
    train_seconds = clock.resumed_seconds + fit_seconds  # a resumed run: its earlier processes too
    stop_reason = callbacks.decisions.stop_reason or f"max_steps={cfg.optim.max_steps} reached"
    log.info("training ended at update %d after %.1f s: %s", trainer.global_step, train_seconds,
             stop_reason)  # fmt: skip
    best_step = module.schedule.best_step
    written = checkpoints.bytes_written
    writes = checkpoints.writes
    log.info("checkpoints: best.ckpt %d× (%.1f MB), last.ckpt %d× (%.1f MB) over %d evaluations, "
             "%.1f s (%.1f %% of training)", writes["best"], written["best"] / 1e6, writes["last"],
             written["last"] / 1e6, checkpoints.evaluations, checkpoints.write_seconds,
             100 * checkpoints.write_seconds / max(fit_seconds, 1e-9))  # fmt: skip
    log.info("evaluating best.ckpt (update %d) on dev and test", best_step)
    start = time.perf_counter()
    result: dict[str, Any] = evaluate(trainer, module, datamodule, writer, checkpoints.best_path,
                                      run_dir)  # fmt: skip
    timing = clock.split(checkpoints.write_seconds, time.perf_counter() - start)
    result.update(
        best_step=best_step,
        seed=cfg.seed,
        experiment=cfg.experiment_name,
        condition=cfg.name,
        decoder=cfg.decoder,
        loss=cfg.loss._target_.rsplit(".", 1)[-1],
        precision=cfg.trainer.precision,
        train_seconds=round(train_seconds, 3),
        decode_seconds=round(module.decode_seconds, 3),
    )
    log.info("wall time: %s", ", ".join(f"{k} {v:.1f} s" for k, v in timing.items()
                                         if isinstance(v, float)))  # fmt: skip
    if trainer.is_global_zero:
        rundir.write_json(run_dir / rundir.TIMING, timing)
        rundir.write_json(done, result)
        log.info("metrics in %s; checkpoints in %s", done, ckpt_dir)
    return result


class RunFolderCheck(Callback):
    """Hydra's side of the run folder (``hydra.callbacks.run_folder`` in ``conf/train.yaml``,
    before ``require_data``).

    Hydra makes a job's folder before the job starts: a single run's folder that cannot be made
    (a file there, a folder that is not writable) is refused in one line before Hydra tries;
    a job stopped before it wrote anything (a refused setting, a locked folder) leaves no
    folder behind (:func:`bockparse.rundir.remove_empty`, when the process ends).
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        if problem := rundir.unusable_folder(str(config.hydra.run.dir)):
            sys.exit(f"bockparse-train: {problem}")

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        runtime = config.hydra.runtime
        atexit.register(rundir.remove_empty, runtime.output_dir, runtime.cwd)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def main(cfg: DictConfig) -> None:
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        result = run(cfg, run_dir, HydraConfig.instance().cfg)
    except (DataError, FloatingPointError, InstantiationException, ResumeError, SettingsError,
            rundir.RunFolderError) as err:  # fmt: skip
        # A bad data file or setting surfaces from instantiate() as the exception's cause.
        if isinstance(err, InstantiationException) and not isinstance(err.__cause__, DataError):
            raise
        message = err.__cause__ if isinstance(err, InstantiationException) else err
        log.error("%s", message)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise  # the launcher records the job as failed and runs the others
        print(f"bockparse-train: {message}", file=sys.stderr)
        sys.exit(1)
    finally:
        if "wandb" in sys.modules:
            sys.modules["wandb"].finish()
        detach_job_log()
    print(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
