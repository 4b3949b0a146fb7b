"""Sweeps: every sweep and launcher config composes; the Table 1 experiments pin the paper's
settings and check their data; the smoke sweep runs end to end (slow) and the experiment tools
read it; a failed job leaves the other jobs of its sweep intact (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bockparse.training.train import CONF_DIR

REPO = Path(CONF_DIR).parent
SWEEPS = sorted(p.stem for p in (Path(CONF_DIR) / "sweep").glob("*.yaml"))
TABLE1 = ("local-ce", "hinge-cle", "hinge-bock")  # the conditions (presets of loss and decoder)
TABLE1_RUNS = ("local-ce-cle", "hinge-cle", "hinge-bock")  # the names of their runs


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=list(overrides), return_hydra_config=True)


def _axes(cfg) -> dict[str, list[str]]:
    return {k: str(v).split(",") for k, v in (cfg.hydra.sweeper.params or {}).items()}


@pytest.mark.parametrize("sweep", SWEEPS)
def test_every_sweep_composes_as_a_multirun(sweep):
    cfg = composed("experiment=smoke", f"sweep={sweep}")
    assert str(cfg.hydra.mode) == "RunMode.MULTIRUN"
    assert "seed" in _axes(cfg)


def test_sweep_axes():
    assert _axes(composed("sweep=seeds")) == {"seed": ["1111", "2222", "3333"]}
    assert _axes(composed("sweep=table1")) == {"seed": ["1111", "2222", "3333"],
                                               "condition": list(TABLE1)}  # fmt: skip
    assert _axes(composed("sweep=smoke")) == {"seed": ["1111", "2222"], "condition": list(TABLE1)}
    ud = _axes(composed("sweep=table1-ud"))
    assert ud["experiment"] == ["table1-ud-ewt", "table1-ud-gsd"]
    assert ud["condition"] == list(TABLE1) and len(ud["seed"]) == 3
    grid = _axes(composed("sweep=ablation"))
    assert grid["loss"] == ["local-ce", "hinge", "crf"]
    assert grid["decoder"] == ["cle", "bock", "tarjan", "eisner"]
    tags = _axes(composed("sweep=tags"))
    assert tags["experiment"] == ["tags-ewt", "tags-gsd"] and len(tags["seed"]) == 3
    assert tags["model"] == ["biaffine-tagger", "biaffine-notags"]


def _flat(cfg) -> dict:
    """The config without Hydra's node, unresolved (interpolations as written), flattened."""
    from composed_configs import flatten

    return flatten({k: OmegaConf.to_container(cfg[k]) if OmegaConf.is_config(cfg[k])
                    else cfg[k] for k in cfg if k != "hydra"})  # fmt: skip


@pytest.mark.parametrize("treebank", ["ewt", "gsd"])
def test_the_predicted_tag_table_is_table1s_local_ce_run_with_the_model_chosen(treebank):
    """experiment=tags-<treebank> composes table1-ud-<treebank>'s local-CE run exactly (the
    gold-tag row), but for its name and folder; model=biaffine-tagger adds the tagger alone,
    model=biaffine-notags drops the tag inputs alone."""
    table1 = composed(f"experiment=table1-ud-{treebank}", "condition=local-ce")
    ours = composed(f"experiment=tags-{treebank}")
    names = {"experiment_name": (f"table1-ud-{treebank}", f"tags-{treebank}")}
    old, new = _flat(table1), _flat(ours)
    differ = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
    assert differ == set(names)
    assert ours.hydra.run.dir == f"outputs/tags-{treebank}/local-ce-cle/seed1111"
    tagger = _flat(composed(f"experiment=tags-{treebank}", "model=biaffine-tagger"))
    assert {k: v for k, v in tagger.items() if new.get(k) != v} == {
        "model.tagger.upos": True, "model.tagger.xpos": True, "model.tagger.feats": True,
        "model.tagger.hidden": 400, "model.tagger.loss_weight": 1.0,
        "model.tagger.train_tags": "predicted",
    }  # fmt: skip
    notags = _flat(composed(f"experiment=tags-{treebank}", "model=biaffine-notags"))
    assert {k: v for k, v in notags.items() if new.get(k) != v} == {
        f"model.context.use_{t}": False for t in ("upos", "xpos", "feats")}  # fmt: skip


def test_table1_ud_jobs_get_one_folder_per_treebank():
    dirs = set()
    for experiment in ("table1-ud-ewt", "table1-ud-gsd"):
        cfg = composed("sweep=table1-ud", f"experiment={experiment}", "condition=hinge-cle")
        dirs.add(f"{cfg.hydra.sweep.dir}/{cfg.hydra.sweep.subdir}")
    assert dirs == {"multirun/table1-ud/table1-ud-ewt/hinge-cle/seed1111",
                    "multirun/table1-ud/table1-ud-gsd/hinge-cle/seed1111"}  # fmt: skip


@pytest.mark.parametrize(
    ("loss", "decoder", "name"),
    [("local-ce", "eisner", "local-ce-eisner"), ("local-ce", "cle", "local-ce-cle"),
     ("hinge", "bock", "hinge-bock"), ("crf", "tarjan", "crf-tarjan")],
)  # fmt: skip
@pytest.mark.parametrize("experiment", ["smoke", "table1-ud-gsd"])
def test_ablation_names_loss_and_decoder(experiment, loss, decoder, name):
    # table1-ud-gsd picks the condition local-ce, a preset the grid's axes replace
    cfg = composed(f"experiment={experiment}", "sweep=ablation", f"loss={loss}",
                   f"decoder={decoder}")  # fmt: skip
    assert cfg.name == name and cfg.decoder == decoder
    assert cfg.hydra.sweep.dir == f"multirun/{experiment}-ablation"
    assert cfg.hydra.sweep.subdir == f"{name}/seed1111"
    if "decoder" in cfg.loss:  # the hinge's oracle follows the decoder
        assert cfg.loss.decoder == decoder
    # the saved config resolves on its own (no Hydra resolver in it)
    saved = OmegaConf.create(OmegaConf.to_yaml({k: v for k, v in cfg.items() if k != "hydra"}))
    assert saved.name == name and saved.logger.wandb.name == f"{name}-seed1111"


@pytest.mark.parametrize(
    ("overrides", "name"),
    [(["loss=hinge", "decoder=eisner"], "hinge-eisner"), (["loss=crf"], "crf-bock"),
     (["model=transition", "loss=transition"], "arc-standard"), (["condition=crf"], "crf-cle"),
     (["condition=local-ce"], "local-ce-cle"), (["loss=local-ce", "decoder=cle"], "local-ce-cle"),
     (["condition=hinge-cle"], "hinge-cle"), (["condition=arc-eager"], "arc-eager"),
     (["experiment=table1-ud-gsd", "loss=crf", "decoder=tarjan"], "crf-tarjan"),
     (["experiment=table1-ud-gsd", "~condition", "loss=crf", "decoder=tarjan"], "crf-tarjan"),
     (["condition=local-ce", "name=mine"], "mine")],
)  # fmt: skip
def test_runs_are_named_by_loss_and_decoder_however_spelled(overrides, name):
    # a function of (loss, decoder) (a transition parser: its system), or an explicit name
    cfg = composed(*overrides)
    assert cfg.name == name
    # the folder: the name, and the overrides it does not spell (issue 49): here the model's,
    # and under an explicit name the condition's
    spelled = {"model=transition": ",model=transition", "name=mine": ",condition=local-ce"}
    folder = name + "".join(rest for key, rest in spelled.items() if key in overrides)
    assert cfg.hydra.run.dir == f"outputs/{cfg.experiment_name}/{folder}/seed1111"


@pytest.mark.parametrize(
    ("experiment", "encoder"),
    [("table1-ptb", "bert-base-cased"), ("table1-ctb", "bert-base-chinese")],
)
def test_paper_settings(experiment, encoder):
    cfg = composed(f"experiment={experiment}")
    assert cfg.experiment_name == experiment
    assert cfg.encoder.name_or_path == encoder and cfg.encoder.lr_scale == 1.0
    assert (cfg.model.context.lstm_layers, cfg.model.context.lstm_hidden) == (3, 400)
    assert cfg.data.batch_size == 5000
    assert (cfg.optim.max_steps, cfg.optim.eval_every, cfg.optim.transformer_warmup) == (
        50000, 100, 500)  # fmt: skip
    assert cfg.exclude_punct is None and cfg.name == "local-ce-cle"
    assert OmegaConf.is_missing(cfg.data, "train")
    assert cfg.hydra.callbacks.require_data._target_.endswith("checks.RequireData")


@pytest.mark.parametrize("experiment", ["table1-ud-ewt", "table1-ud-gsd"])
def test_stand_in_settings(experiment):
    cfg = composed(f"experiment={experiment}")
    assert cfg.trainer.accelerator == "cpu"
    assert cfg.hydra.callbacks.require_data._target_.endswith("checks.RequireData")
    encoder = cfg.encoder.name_or_path
    assert encoder == ("minilm" if experiment.endswith("ewt") else None)
    # the paper's parser (table1-paper) ...
    paper = composed("experiment=table1-paper").model
    assert cfg.model == paper
    context = cfg.model.context
    assert (context.lstm_layers, context.lstm_hidden, context.char_hidden) == (3, 400, 400)
    assert cfg.model.arc_hidden == cfg.model.rel_hidden == 400
    assert context.use_upos and context.use_xpos and context.use_feats
    # ... and Stanza 1.15's schedule to the dev plateau: the switch where the calibration run
    # took it, three evaluations of patience, the stop after five, max_steps only a cap
    optim, stanza = cfg.optim, composed().optim
    calibration = composed(f"experiment={experiment.replace('table1', 'calibration')}").optim
    assert (optim.stage1, optim.stage2) == (stanza.stage1, stanza.stage2)
    assert optim.schedule.switch_step == calibration.schedule.switch_step
    for patience in ("plateau_patience", "switch_patience"):
        assert optim.schedule[patience] == 3 * optim.eval_every
    assert optim.schedule.stop_patience == 5 * optim.eval_every
    assert optim.max_steps >= 2 * calibration.max_steps
    assert optim.schedule.plateau_decay == stanza.schedule.plateau_decay


def test_transition_vs_graph_keeps_the_first_stand_ins_setting():
    """make train's reduced parser and budget on the full UD English-EWT, for every seed."""
    for condition in ("hinge-bock", "arc-eager"):
        ours = composed("experiment=transition-vs-graph", f"condition={condition}")
        base = composed("experiment=ewt-sample-cpu", f"condition={condition}")
        assert ours.experiment_name == "transition-vs-graph"
        assert ours.seed == base.seed
        assert OmegaConf.to_container(ours.data)["root"].endswith("/ud-english-ewt")
        ours, base = OmegaConf.to_container(ours), OmegaConf.to_container(base)
        for key in ("encoder", "model", "name", "decoder", "loss", "optim", "trainer"):
            assert ours[key] == base[key], key


def test_launchers_compose():
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    local = composed("sweep=table1", "hydra/launcher=local-parallel").hydra.launcher
    assert local._target_.endswith("JoblibLauncher") and local.n_jobs == 3
    slurm = composed("sweep=table1", "hydra/launcher=slurm").hydra.launcher
    assert slurm._target_.endswith("SlurmLauncher")
    assert (slurm.gpus_per_node, slurm.timeout_min) == (1, 2880)


def test_missing_treebank_stops_before_training(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bockparse.training.train", "experiment=table1-ptb", "sweep=table1",
         f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "data.train is not set" in proc.stderr
    assert not (tmp_path / "sweep").exists()  # no job started


# -- slow: real sweeps ------------------------------------------------------------------------


def _train(*overrides: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    env = {**os.environ, "WANDB_MODE": "disabled"}
    return subprocess.run(
        [sys.executable, "-m", "bockparse.training.train", *overrides,
         "trainer.enable_progress_bar=false"],
        cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def smoke_sweep(tmp_path_factory):
    sweep = tmp_path_factory.mktemp("smoke")
    proc = _train("experiment=smoke", "sweep=smoke", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sweep


@pytest.mark.slow
def test_smoke_sweep_and_table(smoke_sweep, tmp_path, capsys):
    from bockparse.cli.experiments import table as main
    from bockparse.experiments.runs import discover
    from bockparse.experiments.table import aggregate

    for condition in TABLE1_RUNS:
        for seed in (1111, 2222):
            metrics = json.loads((smoke_sweep / condition / f"seed{seed}" / "metrics.json")
                                 .read_text(encoding="utf-8"))  # fmt: skip
            assert (metrics["condition"], metrics["seed"]) == (condition, seed)
    [group] = aggregate(discover([smoke_sweep]))
    assert group.label == "smoke (ewt-sample)"
    assert group.expected_seeds == (1111, 2222)
    assert not group.missing and not group.failed and len(group.used) == 6
    assert all(group.cells[c]["las"].n == 2 for c in TABLE1_RUNS)
    assert group.paired().n == 2
    out = tmp_path / "table"
    assert main([str(smoke_sweep), "--out", str(out), "--strict"]) == 0
    assert "Hinge (Bock) | 2 |" in capsys.readouterr().out
    for name in ("table1.md", "table1.csv", "table1.png", "dev_las.png"):
        assert (out / name).is_file(), name


@pytest.mark.slow
def test_smoke_sweep_substitution_reeval_rootstudy(smoke_sweep, tmp_path, capsys):
    from bockparse.cli.experiments import reeval, rootstudy
    from bockparse.experiments import substitute

    run = smoke_sweep / "local-ce-cle" / "seed1111"
    report = substitute.substitute(run, stages=("val",))
    res = report["stages"]["val"]
    assert res["sentences"] == 400
    for pair in res["pairs"]:  # identical scores: the exact decoders agree everywhere
        assert pair["heads"] == pair["labels"] == pair["tree_scores"] == 400, pair
    assert res["reproduced"]["identical"] == 400  # the reloaded model is the saved one
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert res["scores"]["cle"]["las"] == pytest.approx(metrics["val/las"])
    assert reeval([str(smoke_sweep)]) == 0
    assert "matches metrics.json" in capsys.readouterr().out
    out = tmp_path / "root"
    args = [str(run), "--k", "5", "10", "--max-sentences", "60", "--out", str(out)]
    assert rootstudy(args) == 0
    rows = json.loads((out / "rootstudy.json").read_text(encoding="utf-8"))
    assert [r["decoding"] for r in rows] == ["1-best", "5-best", "10-best"]
    assert all(r["constrained_violating"] == 0 for r in rows)
    assert (out / "rootstudy.png").is_file()


@pytest.mark.slow
def test_a_failed_job_leaves_the_others_intact(tmp_path):
    from bockparse.experiments.runs import discover
    from bockparse.experiments.table import aggregate

    sweep = tmp_path / "sweep"
    proc = _train(
        *("-m", "experiment=smoke", "condition=local-ce", "seed=1111", "encoder.layers=99,2"),
        *("optim.max_steps=2", "optim.eval_every=2", f"hydra.sweep.dir={sweep}"),
        "hydra.sweep.subdir=layers${encoder.layers}",
    )
    assert proc.returncode != 0  # the sweep reports its failed job ...
    assert not (sweep / "layers99" / "metrics.json").exists()
    assert (sweep / "layers2" / "metrics.json").is_file()  # ... after running the other
    [group] = aggregate(discover([sweep]), seeds=[1111])
    assert len(group.used) == 1 and len(group.failed) == 1


@pytest.mark.slow
def test_a_data_error_leaves_the_others_intact(tmp_path):
    sweep = tmp_path / "sweep"
    proc = _train("-m", "experiment=smoke", "condition=local-ce", "seed=1111",
                  "data.train=missing.conllu,en_ewt-ud-train.conllu", "optim.max_steps=2",
                  "optim.eval_every=2", f"hydra.sweep.dir={sweep}",
                  "hydra.sweep.subdir=${hydra.job.num}")  # fmt: skip
    assert proc.returncode != 0
    assert not (sweep / "0" / "metrics.json").exists()
    assert (sweep / "1" / "metrics.json").is_file()
