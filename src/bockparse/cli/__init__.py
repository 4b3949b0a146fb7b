"""Every console script, in one style: ``bockparse-<name>`` calls a function here, which runs its
module's ``main(argv=None) -> int`` (or :mod:`bockparse.cli.parser`'s ``predict``, ``evaluate``,
``export``); a missing optional extra is one line naming the install command, not a
traceback. The light install (``pip install bockparse``) has the decoders, the CoNLL-U layer
and the metrics; training and everything that loads a model need ``bockparse[train]``, the
sweep launchers and plots ``bockparse[sweep]``.

Each script here imports its module's ``main`` on call (so the light scripts never pay for it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

# top-level module -> the extra that installs it
EXTRAS = {
    "torch": "train",
    "lightning": "train",
    "transformers": "train",
    "torchmetrics": "train",
    "hydra": "train",
    "omegaconf": "train",
    "wandb": "train",
    "matplotlib": "sweep",
    "scipy": "sweep",
    "statsmodels": "sweep",
}


def missing_extra(err: ModuleNotFoundError) -> str | None:
    """The extra that would provide the module ``err`` could not find, if it is one of ours."""
    return EXTRAS.get((err.name or "").partition(".")[0])


def run(module: str, function: str = "main") -> int:
    """Run ``module.function()`` (a script's ``main(argv=None) -> int``); exit 1 with
    ``pip install 'bockparse[EXTRA]'`` when an optional dependency is missing, at import or
    when the script imports it later."""
    try:
        main: Callable[[], int | None] = getattr(import_module(module), function)
        return main() or 0
    except ModuleNotFoundError as err:
        extra = missing_extra(err)
        if extra is None:
            raise
        prog = Path(sys.argv[0]).name
        print(
            f"{prog}: needs the optional dependency {err.name!r}: pip install 'bockparse[{extra}]'",
            file=sys.stderr,
        )
        return 1


# -- the console scripts (pyproject.toml), light ones first -----------------------------------


def trace_bock() -> int:
    """``bockparse-trace-bock`` (:mod:`bockparse.decoders.trace`)."""
    return run("bockparse.decoders.trace")


def check() -> int:
    """``bockparse-check`` (:mod:`bockparse.data.check`)."""
    return run("bockparse.data.check")


def eval_files() -> int:
    """``bockparse-eval`` (:mod:`bockparse.metrics`)."""
    return run("bockparse.metrics")


def train() -> int:
    """``bockparse-train`` (:mod:`bockparse.training.train`, through
    :func:`bockparse.cli.hydra_app.train`: a command line Hydra cannot compose is one line,
    ``--version`` is bockparse's)."""
    return run("bockparse.cli.hydra_app", "train")


def table() -> int:
    """``bockparse-table`` (:mod:`bockparse.experiments.table`)."""
    return run("bockparse.experiments.table")


def substitute() -> int:
    """``bockparse-substitute`` (:mod:`bockparse.experiments.substitute`)."""
    return run("bockparse.experiments.substitute")


def reeval() -> int:
    """``bockparse-reeval`` (:mod:`bockparse.experiments.reeval`)."""
    return run("bockparse.experiments.reeval")


def rootstudy() -> int:
    """``bockparse-rootstudy`` (:mod:`bockparse.experiments.rootstudy`)."""
    return run("bockparse.experiments.rootstudy")


def publish() -> int:
    """``bockparse-publish`` (:mod:`bockparse.experiments.publish`)."""
    return run("bockparse.experiments.publish")


def predict() -> int:
    """``bockparse-predict`` (:func:`bockparse.cli.parser.predict`)."""
    return run("bockparse.cli.parser", "predict")


def evaluate() -> int:
    """``bockparse-evaluate`` (:func:`bockparse.cli.parser.evaluate`)."""
    return run("bockparse.cli.parser", "evaluate")


def export() -> int:
    """``bockparse-export`` (:func:`bockparse.cli.parser.export`)."""
    return run("bockparse.cli.parser", "export")
