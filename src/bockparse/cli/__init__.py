"""Every console script, in one style: ``bockparse-<name>`` calls a function here, which runs
the script's function in a module of this package (``cli/data.py``, ``cli/decoders.py``,
``cli/metrics.py``, ``cli/experiments.py``, ``cli/parser.py``; ``bockparse-train`` is the Hydra
app :mod:`bockparse.training.train`); a missing optional extra is one line naming the install
command, not a traceback. The light install (``pip install bockparse``) has the decoders, the
CoNLL-U layer and the metrics; training and everything that loads a model need
``bockparse[train]``, the sweep launchers and plots ``bockparse[sweep]``, parsing raw text
(``bockparse-predict --text``) ``bockparse[spacy]``.

The script modules only parse arguments (one argument parser, :class:`.command.Command`: the
program name, ``--version``, one-line problems), check outputs (:mod:`.outputs`) and call the
domain modules' functions. Each script here imports its module on call (so the light scripts
never pay for the others).
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
    "spacy": "spacy",
}


def missing_extra(err: ModuleNotFoundError) -> str | None:
    """The extra that would provide the module ``err`` could not find, if it is one of ours."""
    return EXTRAS.get((err.name or "").partition(".")[0])


def run(module: str, function: str = "main") -> int:
    """Run ``module.function()`` (a script's ``function(argv=None) -> int``); exit 1 with
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
    """``bockparse-trace-bock`` (:func:`bockparse.cli.decoders.trace_bock`)."""
    return run("bockparse.cli.decoders", "trace_bock")


def check() -> int:
    """``bockparse-check`` (:func:`bockparse.cli.data.check`)."""
    return run("bockparse.cli.data", "check")


def eval_files() -> int:
    """``bockparse-eval`` (:func:`bockparse.cli.metrics.eval_files`)."""
    return run("bockparse.cli.metrics", "eval_files")


def train() -> int:
    """``bockparse-train`` (:mod:`bockparse.training.train`, through
    :func:`bockparse.cli.hydra_app.train`: a command line Hydra cannot compose is one line,
    ``--version`` is bockparse's)."""
    return run("bockparse.cli.hydra_app", "train")


def table() -> int:
    """``bockparse-table`` (:func:`bockparse.cli.experiments.table`)."""
    return run("bockparse.cli.experiments", "table")


def stopping() -> int:
    """``bockparse-stopping`` (:func:`bockparse.cli.experiments.stopping`)."""
    return run("bockparse.cli.experiments", "stopping")


def substitute() -> int:
    """``bockparse-substitute`` (:func:`bockparse.cli.experiments.substitute`)."""
    return run("bockparse.cli.experiments", "substitute")


def reeval() -> int:
    """``bockparse-reeval`` (:func:`bockparse.cli.experiments.reeval`)."""
    return run("bockparse.cli.experiments", "reeval")


def rootstudy() -> int:
    """``bockparse-rootstudy`` (:func:`bockparse.cli.experiments.rootstudy`)."""
    return run("bockparse.cli.experiments", "rootstudy")


def publish() -> int:
    """``bockparse-publish`` (:func:`bockparse.cli.experiments.publish`)."""
    return run("bockparse.cli.experiments", "publish")


def predict() -> int:
    """``bockparse-predict`` (:func:`bockparse.cli.parser.predict`)."""
    return run("bockparse.cli.parser", "predict")


def evaluate() -> int:
    """``bockparse-evaluate`` (:func:`bockparse.cli.parser.evaluate`)."""
    return run("bockparse.cli.parser", "evaluate")


def export() -> int:
    """``bockparse-export`` (:func:`bockparse.cli.parser.export`)."""
    return run("bockparse.cli.parser", "export")
