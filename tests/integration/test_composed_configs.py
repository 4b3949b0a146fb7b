"""Nothing changes silently: every experiment x condition (and sweep) composed before the
config-group refactor composes to the same values now, key by key through the old -> new key
mapping, except the intended changes listed in ``INTENDED``; and every experiment instantiates
(data module, model, loss, trainer), not just composes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from composed_configs import flat_config, flat_configs
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from bockparse.compat import CONTEXT_PARAMS
from bockparse.hardware import resolve_run_precision
from bockparse.training.checks import DATA_ENV
from bockparse.training.train import CONF_DIR, build

REPO = Path(CONF_DIR).parent
FIXTURES = REPO / "tests" / "fixtures" / "composed"
EXPERIMENTS = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml"))

# The fixture gave the UD treebanks' root as data.root=/treebanks/<folder>; the new tree takes
# the folder holding them from the environment.
TREEBANKS = "/treebanks"

# Old key -> new key (a prefix maps every key below it); keys not listed keep their name.
KEY_MAP = {
    "condition.name": "name",
    "condition.decoder": "decoder",
    "condition.loss": "loss",
    "condition.system": "model.system",  # the transition system lived twice; now only here
    "hydra.sweeper.params.condition.decoder": "hydra.sweeper.params.decoder",
    # The inputs and the BiLSTM are one node, composed by every head (issue 28).
    **{f"model.{key}": f"model.context.{key}" for key in sorted(CONTEXT_PARAMS)},
}

# The ablation grid's old spelling, condition=<C> condition.decoder=<D>: the loss of each C.
ABLATION_LOSS = {"local-ce": "local-ce", "hinge-cle": "hinge", "crf": "crf"}

ABSENT = "<absent>"
# The CPU-budget experiments that keep the transformer unfrozen.
CPU_BUDGET = ("ewt-sample-cpu", "table1-ud-ewt", "transition-vs-graph")


def _same_as(key: str) -> Callable[[dict[str, Any]], Any]:
    """A new key whose value interpolates an existing one."""
    return lambda out: out[key]


def _if_key(key: str, value: Any, new: Any) -> Callable[[dict[str, Any]], Any]:
    """A new key present only where ``key`` composes to ``value`` (ABSENT elsewhere)."""
    return lambda out: new if out.get(key) == value else ABSENT


# Intended changes, each (key, old value, new key, new value[, fixtures]), keys of the new
# tree: wherever the old tree composed the old value under the key (in the given experiments,
# "default" for none, or in all), the new tree composes the new value under the new key
# (ABSENT: none; a callable: of the expected config, applied in list order). A deliberate
# change of a default (conf/optim, conf/trainer, ...) is added here as (key, old, key, new),
# with a comment saying why.
INTENDED: list[tuple[Any, ...]] = [
    # RequireData (the data files exist, the UD root is given) now checks every run, not only
    # the Table 1 experiments'.
    ("hydra.callbacks", {}, "hydra.callbacks.require_data._target_",
     "bockparse.training.checks.RequireData"),
    # The ablation sweeps loss x decoder instead of a condition x its decoder ...
    ("hydra.sweeper.params.condition", "local-ce,hinge-cle,crf",
     "hydra.sweeper.params.loss", "local-ce,hinge,crf"),
    # ... and its lookup from a loss class to the loss's name is gone: each conf/loss/ file
    # names its runs.
    ("ablation.loss_names.bockparse.losses.LocalCrossEntropy", "local-ce", "", ABSENT),
    ("ablation.loss_names.bockparse.losses.StructuredHinge", "hinge", "", ABSENT),
    ("ablation.loss_names.bockparse.losses.TreeCRF", "crf", "", ABSENT),
    # Stanza 1.15's settings (conf/optim/README.md): Adam's beta2 and eps, the transformer
    # without weight decay, frozen for 500 updates and at 1e-3 of the rate in stage 2 ...
    ("optim.stage2.betas", [0.9, 0.9], "optim.stage2.betas", [0.9, 0.999]),
    ("optim.stage2.eps", ABSENT, "optim.stage2.eps", 1e-6),
    ("optim.schedule.plateau_threshold", ABSENT, "optim.schedule.plateau_threshold", 1e-4),
    ("optim.schedule.transformer_weight_decay", ABSENT,
     "optim.schedule.transformer_weight_decay", 0.0),
    # ... except in the CPU budgets, where the switch comes at update 50: no freeze, stage 2 at
    # the full rate; and as Stanza's warm-ups move the rate only at evaluations (every 50
    # updates there), their 50- and 20-update warm-ups would freeze: none.
    ("optim.transformer_warmup", 50, "optim.transformer_warmup", 0, CPU_BUDGET),
    ("optim.stage2_warmup", 20, "optim.stage2_warmup", 0, CPU_BUDGET),
    ("optim.schedule.transformer_freeze", ABSENT, "optim.schedule.transformer_freeze", 0,
     CPU_BUDGET),
    ("optim.schedule.transformer_freeze", ABSENT, "optim.schedule.transformer_freeze", 500),
    ("optim.schedule.stage2_transformer_lr_scale", ABSENT,
     "optim.schedule.stage2_transformer_lr_scale", 1.0, CPU_BUDGET),
    ("optim.schedule.stage2_transformer_lr_scale", ABSENT,
     "optim.schedule.stage2_transformer_lr_scale", 1e-3),
    # The schedule is one object (bockparse.training.schedule.StanzaSchedule) built from conf/optim.
    ("optim.schedule._target_", ABSENT, "optim.schedule._target_",
     "bockparse.training.schedule.StanzaSchedule"),
    ("optim.schedule.stage2_warmup", ABSENT, "optim.schedule.stage2_warmup",
     _same_as("optim.stage2_warmup")),
    ("optim.schedule.transformer_warmup", ABSENT, "optim.schedule.transformer_warmup",
     _same_as("optim.transformer_warmup")),
    ("optim.schedule.transformer_lr_scale", ABSENT, "optim.schedule.transformer_lr_scale",
     _same_as("encoder.lr_scale")),
    # last.ckpt on an interval (best.ckpt only on improvement); evaluation in inference mode.
    ("optim.last_checkpoint.every_evaluations", ABSENT,
     "optim.last_checkpoint.every_evaluations", None),
    ("optim.last_checkpoint.every_minutes", ABSENT, "optim.last_checkpoint.every_minutes", 10),
    ("trainer.inference_mode", ABSENT, "trainer.inference_mode", True),
    # The trajectory-identity study (issue 16): the per-update trace (off), a fixed torch
    # thread count (none), the biaffine initialisation switch (zero, as before) and the hinge's
    # canonical-tie option (off).
    ("trace.enabled", ABSENT, "trace.enabled", False),
    ("trace.shadow", ABSENT, "trace.shadow", "bock"),
    ("trace.ties", ABSENT, "trace.ties", True),
    ("trace.tol", ABSENT, "trace.tol", 1e-9),
    ("trace.file", ABSENT, "trace.file", "trace.csv"),
    ("torch_threads", ABSENT, "torch_threads", None),
    ("model.biaffine_init_std", ABSENT, "model.biaffine_init_std", 0.0),
    ("loss.canonical_ties", ABSENT, "loss.canonical_ties", _if_key(
        "loss._target_", "bockparse.losses.StructuredHinge", False)),
    ("loss.value_tol", ABSENT, "loss.value_tol", _if_key(
        "loss._target_", "bockparse.losses.StructuredHinge", 1e-6)),
    # How batch_size is read under DDP (issue 17): per rank, the same as one process.
    ("data.batch_budget", ABSENT, "data.batch_budget", "per_rank"),
    # Stanza 1.15's word lower-casing and final-punctuation augmentation as options (issue
    # 53), off: the vocabulary and the batches as before.
    ("data.lowercase_words", ABSENT, "data.lowercase_words", False),
    ("data.augment_nopunct", ABSENT, "data.augment_nopunct", 0.0),
    # The CPU budgets on UD English-EWT train in bf16-mixed (issue 14): over three seeds of
    # make train, dev LAS within the seed standard deviation of fp32's, 0.75x the wall time
    # (benchmarks/results/make_train.md).
    # Precision by hardware (issue 26): the CPU default is auto (bf16-mixed only where the CPU
    # computes bf16 natively, else 32-true), the CPU budgets use it instead of an explicit
    # bf16-mixed, the one-GPU preset too; the smoke run and the published ablation grid pin
    # 32-true (same numbers on every CPU).
    ("trainer.precision", "32-true", "trainer.precision", "auto", CPU_BUDGET),
    ("trainer.precision", "32-true", "trainer.precision", "auto", ("default",)),
    # The training side is one package, bockparse.training (issue 28): its classes' paths.
    ("hydra.callbacks.require_data._target_", "bockparse.experiments.checks.RequireData",
     "hydra.callbacks.require_data._target_", "bockparse.training.checks.RequireData"),
    # One configuration per run folder (issue 49): overwrite=true sets a folder of another
    # config aside (off), and a Hydra callback refuses a folder that cannot be made and
    # removes the one of a refused job.
    ("overwrite", ABSENT, "overwrite", False),
    ("hydra.callbacks.run_folder._target_", ABSENT, "hydra.callbacks.run_folder._target_",
     "bockparse.training.train.RunFolderCheck"),
    # The parser heads side by side in bockparse.heads, the transition loss among the losses
    # (issue 51): the class paths only.
    ("model._target_", "bockparse.model.scorer.BiaffineScorer", "model._target_",
     "bockparse.heads.biaffine.BiaffineScorer"),
    ("model._target_", "bockparse.transition.TransitionParser", "model._target_",
     "bockparse.heads.transition.parser.TransitionParser"),
    ("loss._target_", "bockparse.transition.TransitionLoss", "loss._target_",
     "bockparse.losses.transition.TransitionLoss"),
    # A transition parser has no parameter for Stanza's arc-score terms (issue 51): it took
    # linearization and distance only to refuse them, false wherever a config composed one.
    ("model.linearization", False, "model.linearization", ABSENT),
    ("model.distance", False, "model.distance", ABSENT),
]  # fmt: skip

# The Table 1 stand-in at the paper's parser (issue 18): table1-ud-ewt and table1-ud-gsd compose
# table1-paper's 3 x 400 BiLSTM, character hidden 400 and 400-wide biaffines (was 2 x 200 and
# narrower layers), Stanza's second-stage rate, and a budget chosen from the calibration runs
# (experiments/table1-ud/README.md): key -> (old, new) per experiment. The cap is 8,000 updates
# (issue 29): the first plateau run on GSD was still improving at 3,800 of the earlier 4,000.
PAPER_PARSER = {
    "model.context.lstm_layers": (2, 3),
    "model.context.lstm_hidden": (200, 400),
    "model.context.char_hidden": (100, 400),
    "model.arc_hidden": (200, 400),
    "model.aux_hidden": (100, 400),
    "optim.eval_every": (50, 100),
    "trainer.val_check_interval": (50, 100),
    "optim.schedule.plateau_patience": (100, 300),
    "optim.schedule.stop_patience": (200, 300),
    "optim.schedule.switch_patience": (None, 300),  # None: differs per experiment, see below
    "trainer.log_every_n_steps": (10, 20),
}
REBUDGETED = {
    "table1-ud-ewt": {
        **PAPER_PARSER,
        "model.rel_hidden": (100, 400),
        "model.context.char_dim": (50, 100),
        "model.context.dropout": (0.33, 0.5),
        "optim.stage2.lr": (2e-3, 2e-4),
        "optim.max_steps": (300, 8000),
        "trainer.max_steps": (300, 8000),
        "optim.schedule.switch_patience": (100, 300),
        "optim.schedule.switch_step": (50, 300),
        "optim.schedule.stop_patience": (200, 500),
    },
    "table1-ud-gsd": {
        **PAPER_PARSER,
        "model.rel_hidden": (200, 400),
        "optim.max_steps": (600, 8000),
        "trainer.max_steps": (600, 8000),
        "optim.schedule.switch_patience": (200, 300),
        "optim.schedule.switch_step": (400, 200),
        "optim.schedule.stop_patience": (200, 500),
        "optim.stage2_warmup": (20, 0),
        "optim.schedule.stage2_warmup": (20, 0),
        # table1-paper's encoder settings, unused without a transformer
        "encoder.layers": (ABSENT, 4),
        "encoder.lr_scale": (None, 1.0),
        "optim.schedule.transformer_lr_scale": (None, 1.0),
    },
}
INTENDED += [
    (key, old, key, new, (experiment,))
    for experiment, changes in REBUDGETED.items()
    for key, (old, new) in changes.items()
]


# A run's name is a function of (loss, decoder) (issue 28): the two presets that named their
# runs after themselves now give <loss>-<decoder>, in the name and every path made of it.
RENAMED_RUNS = {"local-ce": "local-ce-cle", "crf": "crf-cle"}
NAMED_KEYS = ("name", "hydra.run.dir", "hydra.sweep.subdir", "logger.wandb.name")


def _renamed(out: dict[str, Any]) -> None:
    old = out.get("name")
    if old not in RENAMED_RUNS:
        return
    for key in NAMED_KEYS:
        if key in out:
            parts = str(out[key]).split("/")
            last = [p if p != old else RENAMED_RUNS[old] for p in parts]
            if key == "logger.wandb.name":  # <name>-seed<seed>
                last = [str(out[key]).replace(f"{old}-seed", f"{RENAMED_RUNS[old]}-seed", 1)]
            out[key] = "/".join(last)


def new_key(old: str) -> str:
    for prefix, target in sorted(KEY_MAP.items(), key=lambda kv: -len(kv[0])):
        if old == prefix or old.startswith(prefix + "."):
            return target + old[len(prefix) :]
    return old


def expected(old: dict[str, Any], overrides: str) -> dict[str, Any]:
    """The old flat config composed with ``overrides`` (fixture key) in the new tree's keys,
    with the intended changes applied."""
    words = overrides.split()
    out: dict[str, Any] = {}
    for key, value in old.items():
        key = new_key(key)
        assert out.get(key, value) == value, f"{key}: two old keys with different values"
        out[key] = value
    experiment = next((w.split("=", 1)[1] for w in words if w.startswith("experiment=")), None)
    for key, before, changed, after, *where in INTENDED:
        if where and (experiment or "default") not in where[0]:
            continue
        if out.get(key, ABSENT) == before:
            out.pop(key, None)
            if after is not ABSENT:
                out[changed] = after(out) if callable(after) else after
    _renamed(out)
    return out


def new_overrides(old: str) -> list[str]:
    """The new tree's overrides for an old override list (fixture key), data root given as
    the fixture gave it (``data.root=/treebanks/...`` -> the environment)."""
    words = old.split()
    values = dict(w.split("=", 1) for w in words)
    if "sweep=ablation" in words and "condition.decoder" in values:
        return [w for w in words if not w.startswith("condition")] + [
            f"loss={ABLATION_LOSS[values['condition']]}",
            f"decoder={values['condition.decoder']}",
        ]
    return words


def _diff(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    keys = sorted(set(got) | set(want))
    return [
        f"{k}: expected {want.get(k, ABSENT)!r}, got {got.get(k, ABSENT)!r}"
        for k in keys
        if got.get(k, ABSENT) != want.get(k, ABSENT)
    ]


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_every_old_composition_is_unchanged(fixture):
    old = json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
    assert old, fixture
    new = flat_configs((new_overrides(o) for o in old), env={DATA_ENV: TREEBANKS})
    for (overrides, old_flat), got in zip(old.items(), new, strict=True):
        problems = _diff(got, expected(old_flat, overrides))
        assert not problems, f"{overrides}:\n  " + "\n  ".join(problems)


def test_the_comparison_fails_on_a_changed_value():
    old = json.loads((FIXTURES / "smoke.json").read_text(encoding="utf-8"))
    key = "experiment=smoke condition=hinge-cle"
    flat = flat_config(["experiment=smoke", "condition=hinge-cle", "optim.stage1.lr=3.0"])
    problems = _diff(flat, expected(old[key], key))
    folder = "hinge-cle,optim.stage1.lr=3.0/seed1111"  # the override names the run's folder
    assert problems == [
        f"hydra.run.dir: expected 'outputs/smoke/hinge-cle/seed1111', got 'outputs/smoke/{folder}'",
        f"hydra.sweep.subdir: expected 'hinge-cle/seed1111', got '{folder}'",
        "optim.stage1.lr: expected 2.0, got 3.0",
    ]


def test_every_old_combination_is_in_the_fixture():
    conditions = sorted(p.stem for p in (Path(CONF_DIR) / "condition").glob("*.yaml"))
    for experiment in ("default", "ewt-sample-cpu", "smoke", "table1-ctb", "table1-ptb",
                       "table1-ud-ewt", "table1-ud-gsd", "transition-vs-graph"):  # fmt: skip
        table = json.loads((FIXTURES / f"{experiment}.json").read_text(encoding="utf-8"))
        prefix = [] if experiment == "default" else [f"experiment={experiment}"]
        want = {" ".join(prefix + ([f"condition={c}"] if c else [])) for c in [None, *conditions]}
        assert set(table) == want, experiment


# -- every experiment instantiates ------------------------------------------------------------

# Stand-ins where the real thing is absent here: the shipped sample for the full or licensed
# treebanks (their own punctuation settings kept), the tiny random encoder (on MiniLM's
# tokenizer) for the pretrained encoders not installed (MiniLM is), the CPU for a GPU trainer.
SAMPLE = [
    "data.root=data/ud-english-ewt-sample",
    "data.train=en_ewt-ud-dev.conllu",  # the smallest split: building the vocabularies is the cost
    "data.val=en_ewt-ud-dev.conllu",
    "data.test=en_ewt-ud-test.conllu",
    "data.batch_size=300",
]
TINY = ["encoder=tiny-random", "encoder.layers=2"]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_instantiates(experiment, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the sample's root is relative to the repository
    overrides = [f"experiment={experiment}", *SAMPLE]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=overrides)
        if cfg.encoder.name_or_path not in (None, "minilm"):
            overrides += TINY
        if cfg.trainer.accelerator != "cpu":
            overrides.append("trainer=cpu")
        cfg = compose("train", overrides=overrides)
    assert cfg.experiment_name == experiment
    datamodule, module = build(cfg)
    assert module.decoder == cfg.decoder and module.relations == datamodule.vocabs.rels.itos
    resolve_run_precision(cfg)
    trainer = instantiate(cfg.trainer, logger=False, default_root_dir=str(tmp_path))
    assert trainer.max_steps == cfg.optim.max_steps
    batch = next(iter(datamodule.train_dataloader()))
    module.train()
    out = module.loss(module.scorer(batch), batch)
    assert out.loss.isfinite() and out.words > 0


LOSSES = sorted(p.stem for p in (Path(CONF_DIR) / "loss").glob("*.yaml"))


@pytest.mark.parametrize("loss", LOSSES)
def test_every_loss_instantiates_and_names_its_runs(loss):
    # a transition parser has no decoder, and trains only as model=transition
    decoder = ["model=transition"] if loss == "transition" else ["decoder=tarjan"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[f"loss={loss}", *decoder])
    instance = instantiate(cfg.loss)
    assert type(instance).__name__ == cfg.loss._target_.rsplit(".", 1)[-1]
    if loss == "transition":  # the parser decodes itself and is named by its system
        assert cfg.decoder is None and cfg.name == cfg.model.system == "arc-standard"
        assert cfg.model._target_ == "bockparse.heads.transition.parser.TransitionParser"
    else:
        assert cfg.name == f"{loss}-tarjan"
        assert getattr(instance, "decoder", "tarjan") == "tarjan"  # the hinge's oracle
