"""``bockparse-train``: the Hydra application over ``conf/train.yaml``.

One run trains the condition's loss with Stanza's schedule, keeps the checkpoint with the best
dev LAS (the later one on ties), then evaluates it on dev and test. The run folder (Hydra's
``hydra.run.dir``) receives the composed config (``.hydra/``), ``checkpoints/best.ckpt`` and
``last.ckpt``, ``predictions/val.conllu`` and ``test.conllu``, ``metrics.json`` and the CSV log;
every file is written atomically. W&B runs offline unless an API key is configured, and a W&B
failure only costs the W&B log.
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
from .schedule import StanzaSchedule, save_atomic

log = logging.getLogger("bockparse.train")

CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")  # the repository's conf/ tree


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
        stage2_warmup=cfg.optim.stage2_warmup,
        transformer_lr_scale=cfg.encoder.lr_scale,
        transformer_warmup=cfg.optim.transformer_warmup,
        max_grad_norm=cfg.optim.max_grad_norm,
        exclude_punct=cfg.exclude_punct,
    )
    return datamodule, module


def run(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Train, select, evaluate and write the outputs of one run; returns ``metrics.json``."""
    pl.seed_everything(cfg.seed, workers=True)
    datamodule, module = build(cfg, run_dir)
    ckpt_dir = run_dir / "checkpoints"
    schedule = StanzaSchedule(ckpt_dir, **cfg.optim.schedule)
    loggers = make_loggers(cfg, run_dir)
    trainer: pl.Trainer = instantiate(
        cfg.trainer, logger=loggers or False, callbacks=[schedule], default_root_dir=str(run_dir)
    )
    resume = schedule.last_path if cfg.resume and schedule.last_path.exists() else None
    if cfg.resume and resume is None:
        log.warning("resume=true but %s does not exist: starting afresh", schedule.last_path)
    start = time.perf_counter()
    trainer.fit(module, datamodule=datamodule, ckpt_path=resume)
    train_seconds = time.perf_counter() - start
    if not schedule.best_path.exists():  # no evaluation happened: the final model is the best
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        save_atomic(trainer, schedule.best_path)
        schedule.best_step = trainer.global_step
    result: dict[str, Any] = {}
    for stage, evaluate in (("val", trainer.validate), ("test", trainer.test)):
        evaluate(module, datamodule=datamodule, ckpt_path=str(schedule.best_path))
        module.write_predictions(stage, run_dir / "predictions" / f"{stage}.conllu")
        result.update({metric_key(stage, n): module.scores[stage][n] for n in NAMES})
    result.update(
        best_step=schedule.best_step,
        seed=cfg.seed,
        experiment=cfg.experiment_name,
        condition=cfg.name,
        decoder=cfg.decoder,
        loss=cfg.loss._target_.rsplit(".", 1)[-1],
        train_seconds=round(train_seconds, 3),
        decode_seconds=round(module.decode_seconds, 3),
    )
    write_json_atomic(run_dir / "metrics.json", result)
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
