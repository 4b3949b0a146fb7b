"""Where a run logs: its log file (``train.log``, which opens with the run's choices:
:func:`log_choices`) and its metric loggers (CSV, W&B).

The log file is opened once the run folder is locked and checked, appending and without
following a link (:func:`attach_job_log`). The CSV logger writes ``csv/metrics.csv``; a resumed
run keeps its rows up to the resumed update. W&B runs offline unless an API key is configured,
and a W&B failure only costs the W&B log (:func:`make_loggers`).
"""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.loggers import CSVLogger, Logger
from omegaconf import DictConfig, OmegaConf

from .. import rundir

log = logging.getLogger("bockparse.training.loggers")

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
