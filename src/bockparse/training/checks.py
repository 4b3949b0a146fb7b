"""Checks run by Hydra before any training job starts (``hydra.callbacks`` in ``conf/train.yaml``).

:func:`setting_problems` refuses settings that would fail or never end only after start-up
work (``optim.max_steps=0`` trained forever, ``optim.eval_every=0`` divided by zero, a
non-integer seed, a negative batch size), one line each.

Most treebanks are not shipped: the licensed ones (``data=ptb``, ``ctb``) have their files as
required settings (``???``), and the full UD ones (``data=ud-english-ewt``, ``ud-chinese-gsd``)
live under the folder named by the environment variable :data:`DATA_ENV`. :class:`RequireData`
stops the run or the whole sweep at start, before a single model is built, naming every missing
setting or file and how to give it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError

SPLITS = ("train", "val", "test")
DATA_ENV = "BOCKPARSE_DATA"  # the folder holding the UD treebank folders (conf/data/ud-*.yaml)


def root_problem(data: DictConfig) -> str | None:
    """Why ``data.root`` cannot be resolved (the data folder's environment variable is not
    set), with how to give it; ``None`` when it resolves or is missing."""
    try:
        if not OmegaConf.is_missing(data, "root"):
            data.get("root")  # resolves ${oc.env:...}
    except InterpolationResolutionError as err:
        return (
            f"data.root cannot be resolved ({str(err).splitlines()[0]}); export {DATA_ENV}=DIR "
            "(the folder holding the treebank folders, e.g. ud-english-ewt/) or give "
            "data.root=DIR (the treebank's own folder)"
        )
    return None


def data_problems(data: DictConfig, skip: Iterable[str] = ()) -> list[str]:
    """What is wrong with the data files of a config, one line per problem (empty when fine).

    Args:
        data: the ``data`` node of a training config (``root``, ``train``, ``val``, ``test``);
            relative paths start from ``root``, itself relative to the directory the program
            started in, as in :class:`bockparse.data.datamodule.ParserDataModule`.
        skip: splits not to check (set per job by a sweep).

    Returns:
        Messages such as ``"data.train is not set"`` or ``"data.val: /x/dev.conllu does not
        exist"``.
    """
    problems: list[str] = []
    skip = set(skip)
    problem = root_problem(data)
    if problem is not None:
        return [problem]
    root = None if OmegaConf.is_missing(data, "root") else data.get("root")
    base = Path(to_absolute_path(root if root is not None else "."))
    for split in SPLITS:
        if split in skip:
            continue
        if OmegaConf.is_missing(data, split):
            problems.append(f"data.{split} is not set")
            continue
        value = data.get(split)
        if value is None:
            problems.append(f"data.{split} is null")
            continue
        path = base / Path(str(value)).expanduser()
        if not path.is_file():
            problems.append(f"data.{split}: {path} does not exist")
    return problems


# Integer settings and their least value, with what they mean.
INTEGER_SETTINGS = {
    "seed": (0, "the run seed"),
    "optim.max_steps": (1, "the most updates"),
    "optim.eval_every": (1, "updates between dev evaluations"),
    "data.batch_size": (1, "words per batch"),
    "data.min_word_freq": (1, "the rarest training word kept"),
    "data.max_word_chars": (1, "characters per word"),
    "data.num_workers": (0, "data loader processes"),
    "torch_threads": (1, "torch's CPU threads, or null"),
}


def setting_problems(config: DictConfig) -> list[str]:
    """One line per setting of :data:`INTEGER_SETTINGS` that is not an integer at least its
    least value (``null`` where the config allows it is fine), and one if the transition
    parser and its loss are not chosen together; empty when all is well."""
    problems = []
    model = str(OmegaConf.select(config, "model._target_", default=""))
    loss = str(OmegaConf.select(config, "loss._target_", default=""))
    if model.endswith(".TransitionParser") != loss.endswith(".TransitionLoss"):
        model, loss = model.rsplit(".", 1)[-1] or None, loss.rsplit(".", 1)[-1] or None
        problems.append(
            f"model {model} with loss {loss}: "
            "the transition parser (model=transition) trains with loss=transition and only "
            "with it (condition=arc-standard or arc-eager chooses both)"
        )
    for key, (least, meaning) in INTEGER_SETTINGS.items():
        if OmegaConf.select(config, key, default=None, throw_on_missing=False) is None:
            continue
        value = OmegaConf.select(config, key)
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{key}={value!r}: must be an integer ({meaning})")
        elif value < least:
            problems.append(f"{key}={value}: must be at least {least} ({meaning})")
    return problems


def swept_keys(config: DictConfig) -> set[str]:
    """Keys that a multirun sets per job: ``hydra.sweeper.params`` and sweep overrides."""
    keys = set((OmegaConf.select(config, "hydra.sweeper.params") or {}).keys())
    task = list(OmegaConf.select(config, "hydra.overrides.task") or [])
    for override in OverridesParser.create().parse_overrides(task):
        if override.is_sweep_override():
            keys.add(override.get_key_element())
    return {k.lstrip("+~") for k in keys}


def _skipped_splits(keys: set[str]) -> set[str] | None:
    """Splits whose files a sweep sets per job; ``None`` when it may set all of them."""
    if keys & {"data", "experiment", "data.root"}:
        return None
    return {k.split(".", 1)[1] for k in keys if k.startswith("data.") and k.count(".") == 1}


def _stop(config: DictConfig, problems: list[str]) -> None:
    name = OmegaConf.select(config, "experiment_name", default="?")
    lines = "\n".join(f"  - {p}" for p in problems)
    sys.exit(
        f"bockparse-train: experiment {name!r} needs its treebank files:\n{lines}\n"
        "Give data.train=... data.val=... data.test=... (paths, or file names in a folder "
        "given as data.root=DIR), or put them in the git-ignored conf/local/default.yaml."
    )


def _stop_settings(problems: list[str]) -> None:
    sys.exit("bockparse-train: " + "; ".join(problems))


class RequireData(Callback):
    """Stop before training when a setting is invalid (:func:`setting_problems`) or a data
    file is not given or does not exist.

    Runs once per ``bockparse-train`` call: at the start of a single run, or of a multirun
    before any job is launched (splits set per job by the sweep are left to the jobs). Each job
    also checks that its data root resolves (a sweep over experiments, ``sweep=table1-ud``,
    learns its treebanks only there): an unset data folder would fail every job alike, so the
    sweep stops at the first.
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        if problems := setting_problems(config):
            _stop_settings(problems)
        problems = data_problems(config.data)
        if problems:
            _stop(config, problems)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        skip = _skipped_splits(swept_keys(config))
        if skip is None:
            return
        problems = data_problems(config.data, skip)
        if problems:
            _stop(config, problems)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if problems := setting_problems(config):
            _stop_settings(problems)
        problem = root_problem(config.data)
        if problem is not None:
            _stop(config, [problem])
