"""Run folders: finished, failed, unreadable; discovery below sweep folders."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from bockparse.compat import current_keys
from bockparse.experiments.runs import discover, metric, read_run
from bockparse.rundir import CONFIG as CONFIG_FILE


def test_finished_and_failed(make_run, tmp_path):
    done = read_run(make_run("smoke", "local-ce-cle", 1111, (10.0, 5.0, 1.0), data="ewt-sample"))
    assert done.ok and done.error is None
    assert (done.experiment, done.condition, done.seed, done.data) == (
        "smoke", "local-ce-cle", 1111, "ewt-sample")  # fmt: skip
    assert done.loss == "LocalCrossEntropy" and done.decoder == "cle"
    assert metric(done, "test/las") == 5.0 and metric(done, "val/las") is None
    failed = read_run(make_run("smoke", "hinge-bock", 2222, None))
    assert not failed.ok and "no metrics.json" in failed.error
    # identity from the saved config when metrics.json is absent
    assert (failed.condition, failed.seed, failed.loss) == ("hinge-bock", 2222, "StructuredHinge")


@pytest.mark.parametrize(
    ("name", "decoder", "now"),
    [("local-ce", "cle", "local-ce-cle"), ("crf", "cle", "crf-cle"),
     ("local-ce", "bock", "local-ce"), ("hinge-cle", "cle", "hinge-cle")],
)  # fmt: skip
def test_runs_of_the_old_presets_read_under_their_current_name(make_run, name, decoder, now):
    # condition=local-ce and condition=crf named their runs after themselves (decoder cle)
    finished = read_run(make_run("x", name, 1, (1.0, 1.0, 1.0), decoder=decoder))
    failed = read_run(make_run("x", name, 2, None, decoder=decoder))  # from the config
    assert finished.condition == failed.condition == now
    cfg = current_keys(OmegaConf.load(failed.path / CONFIG_FILE))
    assert cfg.name == now


def test_run_folders_of_the_old_key_layout(tmp_path):
    # Saved before the config groups mirrored the code: the run's keys under `condition`.
    hinge = {"seed": 7, "experiment_name": "x", "ablation": {"names": {"hinge": "hinge"}},
             "condition": {"name": "${ablation.names.hinge}-${condition.decoder}",
                           "decoder": "tarjan",
                           "loss": {"_target_": "bockparse.losses.StructuredHinge",
                                    "decoder": "${..decoder}", "margin": 1.0}}}  # fmt: skip
    path = tmp_path / "run"
    (path / ".hydra").mkdir(parents=True)
    OmegaConf.save(OmegaConf.create(hinge), path / CONFIG_FILE)
    run = read_run(path)
    assert (run.condition, run.decoder, run.loss) == ("hinge-tarjan", "tarjan", "StructuredHinge")
    cfg = current_keys(OmegaConf.load(path / CONFIG_FILE))
    assert "condition" not in cfg and (cfg.name, cfg.decoder) == ("hinge-tarjan", "tarjan")
    loss = OmegaConf.to_container(cfg.loss, resolve=True)
    assert loss == {"_target_": "bockparse.losses.StructuredHinge", "decoder": "tarjan",
                    "margin": 1.0}  # fmt: skip
    transition = OmegaConf.create(
        {"model": {"system": "${condition.system}", "stack_features": 3},
         "condition": {"name": "arc-eager", "system": "arc-eager", "decoder": None,
                       "loss": {"_target_": "T"}}}
    )  # fmt: skip
    cfg = current_keys(transition)
    assert cfg.model == {"system": "arc-eager", "stack_features": 3} and cfg.decoder is None
    assert "condition" in transition  # the given config is left as it was
    assert current_keys(cfg) is cfg  # the current layout is returned as is


def test_unreadable_metrics(make_run):
    path = make_run("smoke", "local-ce-cle", 1, (1.0, 1.0, 1.0))
    (path / "metrics.json").write_text("{trunc", encoding="utf-8")
    run = read_run(path)
    assert not run.ok and "unreadable" in run.error


def test_non_finite_metric_is_none(make_run):
    path = make_run("smoke", "local-ce-cle", 1, (1.0, 1.0, 1.0))
    text = (path / "metrics.json").read_text(encoding="utf-8").replace("1.0", "NaN", 1)
    (path / "metrics.json").write_text(text, encoding="utf-8")
    assert metric(read_run(path), "test/uas") is None


def test_discover_sweep_and_run_folders(make_run, tmp_path):
    a = make_run("smoke", "local-ce-cle", 1, (1.0, 1.0, 1.0))
    make_run("smoke", "local-ce-cle", 2, None)
    (tmp_path / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params:\n      seed: 1,2\n  overrides:\n    task:\n    - seed=3\n",
        encoding="utf-8",
    )
    found = discover([tmp_path, a])  # a run given twice counts once
    assert sorted(r.seed for r in found.runs) == [1, 2]
    assert found.sweep_seeds == {1, 2, 3}
    assert [r.seed for r in discover([a]).runs] == [1]
    with pytest.raises(FileNotFoundError):
        discover([tmp_path / "absent"])


def test_a_run_kept_aside_by_overwrite_is_not_discovered(make_run, tmp_path):
    # overwrite=true moves the old folder to <folder>.replaced-<time>; the sweep holds the new run
    make_run("smoke", "local-ce-cle", 1, (1.0, 1.0, 1.0))
    old = make_run("smoke", "local-ce-cle", 2, (2.0, 2.0, 2.0))
    old.rename(old.with_name(f"{old.name}.replaced-20261206T051500Z"))
    make_run("smoke", "local-ce-cle", 2, (3.0, 3.0, 3.0))
    runs = discover([tmp_path]).runs
    assert sorted((r.seed, metric(r, "test/las")) for r in runs) == [(1, 1.0), (2, 3.0)]
