"""Console scripts that need an optional extra: a missing extra is one line naming the install
command, not a traceback. The light install (``pip install bockparse``) has the decoders, the
CoNLL-U layer and the metrics; training and everything that loads a model need
``bockparse[train]``, the sweep launchers and plots ``bockparse[sweep]``.

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
}


def missing_extra(err: ModuleNotFoundError) -> str | None:
    """The extra that would provide the module ``err`` could not find, if it is one of ours."""
    return EXTRAS.get((err.name or "").partition(".")[0])


def run(module: str) -> int:
    """Run ``module.main()``; exit 1 with ``pip install 'bockparse[EXTRA]'`` when an optional
    dependency is missing."""
    try:
        main: Callable[[], int | None] = import_module(module).main
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


def train() -> int:
    """``bockparse-train`` (:mod:`bockparse.train`)."""
    return run("bockparse.train")


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
