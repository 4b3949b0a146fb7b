"""``bockparse-train``: the Hydra application over ``conf/train.yaml``, and the run it wires.

One run (:func:`run`) checks its settings, locks its run folder and claims it (:mod:`.claim`;
Hydra writes nothing there itself), checks a resumed ``last.ckpt`` (:mod:`.resume`), then
writes ``.hydra/`` (:func:`bockparse.rundir.write_hydra_config`) and opens ``train.log``
(:mod:`.loggers`). ``trainer.precision: auto`` resolves before anything is built
(:func:`bockparse.hardware.resolve_run_precision`: ``bf16-mixed`` where the device computes
bf16 natively, else ``32-true``; a resumed run keeps its own), and the saved config, the
checkpoints and ``environment.json`` hold the resolved value. The run trains the condition's
loss with Stanza's schedule (the callbacks in their order: :mod:`.callbacks`), keeps the
checkpoint with the best dev LAS (the later one on ties), evaluates it on dev and test
(:func:`.predictions.evaluate`) and writes ``timing.json`` (:mod:`.clock`) and, last,
``metrics.json``: the run folder's layout is :mod:`bockparse.rundir`'s, and every file is
written atomically. Under Lightning DDP (``trainer=ddp``) every rank runs :func:`run`; rank 0
alone holds the lock and writes.

The run folder is one configuration's: ``conf/train.yaml``'s ``hydra.run.dir`` names it by
:func:`bockparse.rundir.folder_name`, through the ``run_folder`` resolver registered here.
"""

from __future__ import annotations

import atexit
import json
import logging
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
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig, OmegaConf

from .. import rundir
from ..data.conllu import DataError
from ..hardware import environment, resolve_run_precision
from ..modelfile import spec_from_config
from .callbacks import run_callbacks
from .checks import setting_problems
from .claim import claim
from .loggers import attach_job_log, detach_job_log, log_choices, make_loggers
from .module import ParserModule
from .predictions import evaluate
from .resume import ResumeError, check_resume

log = logging.getLogger("bockparse.training.train")


# The Hydra tree: package data in an installed wheel (setup.py ships conf/ as bockparse/conf),
# the repository's top-level conf/ in a checkout (editable install or PYTHONPATH=src).
_PACKAGED_CONF = Path(__file__).resolve().parents[1] / "conf"  # bockparse/conf
CONF_DIR = str(_PACKAGED_CONF if _PACKAGED_CONF.is_dir() else _PACKAGED_CONF.parents[2] / "conf")


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


class SettingsError(ValueError):
    """A setting that cannot work (:func:`bockparse.training.checks.setting_problems`)."""


def _run_folder(name: object, overrides: Any) -> str:
    """The ``run_folder`` resolver of ``conf/train.yaml``'s ``hydra.run.dir`` and
    ``hydra.sweep.subdir``: :func:`bockparse.rundir.folder_name` of the run's name and its
    command-line overrides (``hydra.overrides.task``, a multirun job's own included)."""
    return rundir.folder_name(name, [str(o) for o in overrides or []])


OmegaConf.register_new_resolver("run_folder", _run_folder, replace=True)


def run(cfg: DictConfig, run_dir: Path, hydra: DictConfig | None = None) -> dict[str, Any]:
    """Train, select, evaluate and write the outputs of one run; returns ``metrics.json``.

    The settings are checked first; then the run folder is locked for this process before
    anything is written into it (:class:`bockparse.rundir.RunLock`; under DDP by rank 0, the
    other ranks write nothing but their own log) and claimed (:func:`.claim.claim`), and a
    resumed run's ``last.ckpt`` compared with ``cfg`` (:func:`.resume.check_resume`). Under
    Hydra (``hydra``: Hydra's config of the job), ``.hydra/`` is written only then, and the
    job's log file opened (:func:`.loggers.attach_job_log`; the caller detaches it).

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
        rundir.write_hydra_config(run_dir, cfg, hydra)  # trainer.precision: the one it uses
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
    checkpoints.log_summary(fit_seconds)
    best_step = module.schedule.best_step
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
