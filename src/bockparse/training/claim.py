"""Whether a locked run folder can take a training of a config (:func:`claim`).

The run folder is one configuration's (:func:`bockparse.rundir.folder_name`). A folder holding
a symbolic link where a run writes, a finished run (``metrics.json``) or the saved config of
another run is refused with the choices in one line (:func:`folder_conflict`); ``overwrite=true``
sets it aside for a fresh one, and ``resume=true`` over the finished run of this config returns
its scores (nothing to do).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .. import rundir
from ..hardware import AUTO
from .resume import read_finished

log = logging.getLogger("bockparse.training.claim")

# What a run folder may not hold as a symbolic link: everything a run writes there before
# Lightning's own files, and what it reads to decide whether to start.
_NEVER_LINKED = (rundir.CONFIG, rundir.HYDRA, rundir.OVERRIDES, rundir.TRAIN_LOG, rundir.METRICS)
_KEPT = f"the old folder kept as <folder>{rundir.REPLACED}<UTC time>"


def folder_conflict(cfg: DictConfig, run_dir: Path, job_log: str | None = None) -> str | None:
    """Why ``run_dir`` cannot take a training of ``cfg`` as it is, with the choices (one line
    without the folder), or ``None``: it holds a symbolic link where the run writes, a finished
    run (``metrics.json``), or the saved config of another run (every differing setting named,
    :func:`bockparse.rundir.config_changes`). A ``resume=true`` run over an unfinished run's
    ``last.ckpt`` is compared with the checkpoint instead (:func:`.resume.check_resume`).
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
    (:func:`bockparse.hardware.resolve_run_precision`)."""
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
