"""``bockparse-train``: the Hydra application over ``conf/train.yaml``.

One run trains the condition's loss with Stanza's schedule, keeps the checkpoint with the best
dev LAS (the later one on ties), then evaluates it on dev and test. The run folder (Hydra's
``hydra.run.dir``) receives the composed config (``.hydra/``), ``train.log`` (the config's
choices, every evaluation, decay, stage switch, the stop reason and where the outputs went),
``checkpoints/best.ckpt`` (weights only) and ``last.ckpt`` (full state, for ``resume=true``; see
:mod:`bockparse.schedule`), ``predictions/val.conllu`` and ``test.conllu``, ``metrics.json`` and
the CSV log; every file is written atomically. W&B runs offline unless an API key is
configured, and a W&B failure only costs the W&B log.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import lightning.pytorch as pl
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.types import RunMode
from hydra.utils import instantiate
from lightning.pytorch.loggers import CSVLogger, Logger
from omegaconf import DictConfig, OmegaConf

from .data.conllu import DataError
from .metrics import NAMES, metric_key
from .module import ParserModule
from .schedule import ScheduleCallback, save_atomic

log = logging.getLogger("bockparse.train")

# The Hydra tree: package data in an installed wheel (setup.py ships conf/ as bockparse/conf),
# the repository's top-level conf/ in a checkout (editable install or PYTHONPATH=src).
_PACKAGED_CONF = Path(__file__).resolve().parent / "conf"
CONF_DIR = str(_PACKAGED_CONF if _PACKAGED_CONF.is_dir() else _PACKAGED_CONF.parents[2] / "conf")


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON through a temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def make_loggers(cfg: DictConfig, run_dir: Path) -> list[Logger]:
    """The CSV logger, and W&B unless disabled or unavailable (never fatal)."""
    loggers: list[Logger] = []
    if cfg.logger.csv:
        loggers.append(CSVLogger(save_dir=str(run_dir), name="csv", version=""))
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


def build(cfg: DictConfig, run_dir: Path) -> tuple[pl.LightningDataModule, ParserModule]:
    """The data module (vocabularies built) and the LightningModule of a config."""
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


def run(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Train, select, evaluate and write the outputs of one run; returns ``metrics.json``."""
    log_choices(cfg, run_dir)
    pl.seed_everything(cfg.seed, workers=True)
    datamodule, module = build(cfg, run_dir)
    ckpt_dir = run_dir / "checkpoints"
    callback = ScheduleCallback(ckpt_dir, **cfg.optim.last_checkpoint)
    loggers = make_loggers(cfg, run_dir)
    trainer: pl.Trainer = instantiate(
        cfg.trainer, logger=loggers or False, callbacks=[callback], default_root_dir=str(run_dir)
    )
    # Lightning evaluates under torch.no_grad inside fit (inference_mode=False for the fit's
    # validation loop); dev evaluations here only decode and count, so inference mode is safe.
    trainer.fit_loop.epoch_loop.val_loop.inference_mode = cfg.trainer.inference_mode
    resume = callback.last_path if cfg.resume and callback.last_path.exists() else None
    if cfg.resume and resume is None:
        log.warning("resume=true but %s does not exist: starting afresh", callback.last_path)
    if resume is not None:
        log.info("resuming from %s", resume)
    start = time.perf_counter()
    trainer.fit(module, datamodule=datamodule, ckpt_path=resume)
    train_seconds = time.perf_counter() - start
    schedule = module.schedule
    log.info("training ended at update %d after %.1f s: %s", trainer.global_step, train_seconds,
             callback.stop_reason or f"max_steps={cfg.optim.max_steps} reached")  # fmt: skip
    if not callback.best_path.exists():  # no evaluation happened: the final model is the best
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        save_atomic(trainer, callback.best_path, weights_only=True)
        schedule.best_step = trainer.global_step
    best_step = schedule.best_step
    written = callback.bytes_written
    writes = callback.writes
    log.info("checkpoints: best.ckpt %d× (%.1f MB), last.ckpt %d× (%.1f MB) over %d evaluations, "
             "%.1f s (%.1f %% of training)", writes["best"], written["best"] / 1e6, writes["last"],
             written["last"] / 1e6, callback.evaluations, callback.write_seconds,
             100 * callback.write_seconds / max(train_seconds, 1e-9))  # fmt: skip
    log.info("evaluating best.ckpt (update %d) on dev and test", best_step)
    result: dict[str, Any] = {}
    for stage, evaluate in (("val", trainer.validate), ("test", trainer.test)):
        evaluate(module, datamodule=datamodule, ckpt_path=str(callback.best_path))
        path = run_dir / "predictions" / f"{stage}.conllu"
        module.write_predictions(stage, path)
        result.update({metric_key(stage, n): module.scores[stage][n] for n in NAMES})
        scores = ", ".join(f"{n.upper()} {module.scores[stage][n]:.2f}" for n in NAMES)
        log.info("%s: %s; predictions in %s", stage, scores, path)
    result.update(
        best_step=best_step,
        seed=cfg.seed,
        experiment=cfg.experiment_name,
        condition=cfg.name,
        decoder=cfg.decoder,
        loss=cfg.loss._target_.rsplit(".", 1)[-1],
        train_seconds=round(train_seconds, 3),
        decode_seconds=round(module.decode_seconds, 3),
    )
    write_json_atomic(run_dir / "metrics.json", result)
    log.info("metrics in %s; checkpoints in %s", run_dir / "metrics.json", ckpt_dir)
    return result


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def main(cfg: DictConfig) -> None:
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        result = run(cfg, run_dir)
    except (DataError, FloatingPointError, InstantiationException) as err:
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
    print(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
