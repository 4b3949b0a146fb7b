"""Every training setting is checked before anything is created (issue 49, items 2 and 7): one
``bockparse-train:`` line per problem on standard error, exit 1, no traceback, no run folder;
resources bounded; the shipped sample found wherever a run starts; a long CPU budget says so."""

from __future__ import annotations

import copy
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bockparse import __version__
from bockparse.cli.hydra_app import COMPOSITION_ERRORS, one_line
from bockparse.training.checks import (
    REFERENCE_WEIGHTS,
    SAMPLE_ENV,
    SETTINGS,
    RequireData,
    budget_estimate,
    data_problems,
    parameters_per_word,
    range_problems,
    sample_dir,
    setting_problems,
)
from bockparse.training.train import CONF_DIR

NO_INPUT = ("model.context.use_words=false model.context.use_chars=false "
            "model.context.use_upos=false model.context.use_xpos=false "
            "model.context.use_feats=false encoder=none")  # fmt: skip

# The cases (and a few more), each -> a fragment of its one line.
CASES = [
    ("decoder=bok", "decoder='bok': an unknown decoder"),
    pytest.param("model.context.dropout=1.5", "dropout"),
    ("trainer.precision=bf15", "trainer.precision='bf15': must be one of auto,"),
    ("encoder=bert-base-cased", "encoder.name_or_path='bert-base-cased': no such folder"),
    ("seed=4294967296", "seed=4294967296: must be at least 0 and at most 4294967295"),
    ("optim.stage1.lr=-1", "optim.stage1.lr=-1: must be above 0"),
    ("exclude_punct=bogus", "exclude_punct='bogus': must be one of ptb, ctb, upos or null"),
    pytest.param("model.arc_hidden=0", "arc_hidden"),
    ("loss.margin=-1", "loss.margin=-1: must be at least 0"),
    ("optim.max_grad_norm=-1", "optim.max_grad_norm=-1: must be above 0"),
    (NO_INPUT, "every input is off"),
    ("trace.file=/tmp/x.csv", "trace.file='/tmp/x.csv': must be a plain file name"),
    ("torch_threads=1000000", "torch_threads=1000000: must be at least 1 and at most"),
    ("data.num_workers=100000", "data.num_workers=100000: must be at least 0 and at most"),
    ("data.batch_size=1000000", "data.batch_size=1000000: must be at least 1 and at most 100000"),
    ("optim.max_steps=abc", "optim.max_steps='abc': must be an integer"),
    ("decoder=brute", "decoder='brute': decodes at most 8 words"),
    ("decoder=stanza-cle", "decoder='stanza-cle': Stanza's CL/E needs log-probabilities"),
    ("condition=arc-standard decoder=bock", "decoder='bock' with model=transition"),
    ("loss=transition", "the transition parser (model=transition) trains with loss=transition"),
    ("exclude_punct=ptb", "exclude_punct=ptb but the data marks punctuation as upos"),
    ("optim.schedule.plateau_decay=1", "plateau_decay=1: must be above 0 and below 1"),
    ("data.min_word_freq=0", "data.min_word_freq=0: must be at least 1"),
    ("data.augment_nopunct=1.5", "data.augment_nopunct=1.5: must be at least 0 and at most 1"),
    ("data.augment_nopunct=-0.1", "data.augment_nopunct=-0.1: must be at least 0 and at most 1"),
]


# Command lines Hydra cannot compose -> a fragment of bockparse-train's one line (naming the
# option and the group's choices), not Hydra's multi-line report.
COMPOSITION_CASES = [
    ("encoder=nonexistent", "Could not find 'encoder/nonexistent'; available options in "
                            "'encoder': bert-base-cased, bert-base-chinese, minilm, none,"),
    ("loss=bogus",
     "Could not find 'loss/bogus'; available options in 'loss': crf, hinge, local-ce, transition"),
    ("model=x", "Could not find 'model/x'; available options in 'model': biaffine,"),
    ("optim.max_steps=[1", "cannot parse the override 'optim.max_steps=[1': no viable alternative"),
    ("trainer.precision", "cannot parse the override 'trainer.precision': missing EQUAL"),
    ("foo.bar=1", "Could not override 'foo.bar'. To append to your config use +foo.bar=1 (Key "
                  "'foo' is not in struct)"),
]  # fmt: skip


def composed(*overrides: str, experiment: str | None = "smoke"):
    base = [f"experiment={experiment}"] if experiment else []
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=[*base, *overrides])


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """An empty Hugging Face cache (bert-base-cased is in no cache), and no sample variable
    (RequireData sets it; monkeypatch takes it back)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv(SAMPLE_ENV, raising=False)


@pytest.mark.parametrize(("case", "fragment"), CASES)
def test_each_bad_setting_is_one_line_before_anything_is_built(case, fragment, offline, capsys):
    """Through the Hydra callback that bockparse-train runs before its run folder exists."""
    cfg = composed(*case.split())
    with pytest.raises(SystemExit) as stop:
        RequireData().on_run_start(cfg)
    assert stop.value.code == 1
    err = capsys.readouterr().err
    [line] = err.splitlines()
    assert line.startswith("bockparse-train: ") and fragment in line, line


def test_every_problem_gets_its_own_line(offline, capsys):
    cfg = composed("decoder=bok", "seed=-1", "loss.margin=-1", "trace.file=../x")
    with pytest.raises(SystemExit):
        RequireData().on_run_start(cfg)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and all(line.startswith("bockparse-train: ") for line in lines)
    assert [line.split("=", 1)[0] for line in lines] == [
        "bockparse-train: seed", "bockparse-train: loss.margin", "bockparse-train: decoder",
        "bockparse-train: trace.file"]  # fmt: skip


def test_a_sweep_with_a_bad_fixed_setting_stops_before_its_first_job(offline, capsys):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke", "loss.margin=-1", "decoder=cle"],
                      return_hydra_config=True)  # fmt: skip
    cfg.hydra.overrides.task = ["experiment=smoke", "loss.margin=-1", "seed=1,2", "decoder=cle"]
    with pytest.raises(SystemExit):
        RequireData().on_multirun_start(cfg)
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("bockparse-train: loss.margin=-1")
    cfg.hydra.overrides.task = ["experiment=smoke", "loss.margin=-1,1", "decoder=cle"]
    RequireData().on_multirun_start(cfg)  # swept: each job checks its own


@pytest.fixture(scope="module")
def smoke():
    return composed()


@pytest.mark.parametrize("key", sorted(SETTINGS))
@pytest.mark.parametrize("value", [{"k": 1}, "nonsense"])
def test_every_setting_of_the_table_refuses_a_wrong_type(key, value, smoke):
    """Generated from checks.SETTINGS: every key is in the smoke config, and a mapping or a
    string where it does not belong is one line naming the key."""
    cfg = copy.deepcopy(smoke)
    assert OmegaConf.select(cfg, key, default="<absent>") != "<absent>", key
    OmegaConf.update(cfg, key, value, merge=False)
    [problem] = range_problems(cfg)
    assert problem.startswith(f"{key}=") and "must be" in problem
    assert problem in setting_problems(cfg)


@pytest.mark.parametrize("experiment", ["smoke", "ewt-sample-cpu", "table1-ud-ewt", "table1-paper",
                                        "transition-vs-graph", "ablation-ud-gsd"])  # fmt: skip
def test_the_shipped_experiments_pass(experiment, offline):
    problems = setting_problems(composed(experiment=experiment))
    assert problems == [] or all("encoder.name_or_path" in p for p in problems), problems


def test_the_shipped_sample_is_found_from_any_folder(tmp_path, monkeypatch, offline):
    """README: `cd /tmp && bockparse-train experiment=smoke` (the sample is in the package)."""
    from hydra.core.hydra_config import HydraConfig

    monkeypatch.chdir(tmp_path)
    # A fresh process: no Hydra job whose start folder relative paths would resolve against
    # (an earlier test in this process may have left one set: hydra.utils.to_absolute_path).
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)
    assert data_problems(composed().data) != []  # relative to the start folder: not here
    RequireData()  # what bockparse-train makes first
    assert os.environ[SAMPLE_ENV] == str(sample_dir())
    data = composed().data
    assert data_problems(data) == [] and Path(data.root) == sample_dir()
    assert (sample_dir() / "en_ewt-ud-train.conllu").is_file()


def test_a_budget_of_days_on_a_cpu_says_so_in_one_line(offline, caplog):
    """README: `bockparse-train condition=hinge-cle seed=2222` without experiment= composes the
    paper's budget (50,000 updates of 5,000 words)."""
    paper = composed("condition=hinge-cle", "seed=2222", "torch_threads=2", experiment=None)
    with caplog.at_level(logging.WARNING, logger="bockparse.training.checks"):
        RequireData().on_job_start(paper)
    [record] = caplog.records
    message = record.getMessage()
    assert "\n" not in message
    assert "50,000 updates of 5,000 words, about 139 h" in message
    assert "benchmarks/results/training_step.md" in message
    for quick in ("smoke", "ewt-sample-cpu"):
        assert budget_estimate(composed(experiment=quick)) is None
    assert budget_estimate(composed("trainer=gpu", experiment=None)) is None  # CPU estimates only


def test_the_estimate_basis_is_the_benchmarked_parser():
    """REFERENCE_WEIGHTS is parameters_per_word of the benchmarked model (the paper's parser
    with MiniLM), so that it gives the benchmark's words/s."""
    weights = parameters_per_word(composed(experiment=None))
    assert weights == pytest.approx(REFERENCE_WEIGHTS, rel=0.01)


def test_the_estimate_counts_a_taggers_second_bilstm_pass():
    plain, notags = composed(experiment=None), composed("model=biaffine-notags", experiment=None)
    tagger = composed("model=biaffine-tagger", experiment=None)
    lone = composed("model=biaffine-notags-tagger", experiment=None)
    sizes = plain.model.context
    lstm = sum(2 * 4 * (i + sizes.lstm_hidden) * sizes.lstm_hidden for i in (
        384 + 2 * sizes.word_dim + 3 * sizes.tag_dim, *[2 * sizes.lstm_hidden] * 2))  # fmt: skip
    mlps = 3 * 2 * sizes.lstm_hidden * tagger.model.tagger.hidden
    assert parameters_per_word(tagger) == pytest.approx(parameters_per_word(plain) + lstm + mlps)
    assert parameters_per_word(lone) == pytest.approx(parameters_per_word(notags) + mlps)


@pytest.mark.parametrize(("case", "fragment"), COMPOSITION_CASES)
def test_hydras_composition_errors_are_one_line_naming_the_option(case, fragment):
    with pytest.raises(COMPOSITION_ERRORS) as err:
        composed(case)
    line = one_line(err.value)
    assert fragment in line and "\n" not in line and "search path" not in line.lower()


# -- the real command line -----------------------------------------------------------------------


def train(cwd: Path, *overrides: str, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "HF_HUB_CACHE": str(cwd / "hf"), **env}
    environ.pop(SAMPLE_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "bockparse.training.train", *overrides], cwd=cwd, env=environ,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("case", "fragment"), CASES)
def test_the_command_line_refuses_each_case_in_one_line_leaving_no_folder(case, fragment, tmp_path):
    """About 10 s each (start-up): `bockparse-train experiment=smoke <bad> hydra.run.dir=...`."""
    run_dir = tmp_path / "run"
    proc = train(tmp_path, "experiment=smoke", *case.split(), f"hydra.run.dir={run_dir}")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("bockparse-train:")]
    assert fragment in line
    assert not run_dir.exists()


def console_script(cwd: Path, *args: str, before: str = "", **env: str):
    """``bockparse-train *args`` as installed (:func:`bockparse.cli.train`), after ``before``."""
    script = f"import sys\n{before}\nfrom bockparse.cli import train\nsys.exit(train())"
    environ = {**os.environ, "HF_HUB_CACHE": str(cwd / "hf")}
    environ.pop("HYDRA_FULL_ERROR", None)
    environ.update(env)
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("case", "fragment"), COMPOSITION_CASES)
def test_the_command_line_says_in_one_line_what_hydra_cannot_compose(case, fragment, tmp_path):
    """About 10 s each: Hydra's multi-line report becomes one line and exit status 1, no
    traceback, no run folder; HYDRA_FULL_ERROR=1 still shows Hydra's full trace."""
    run_dir = tmp_path / "run"
    proc = console_script(tmp_path, "experiment=smoke", case, f"hydra.run.dir={run_dir}")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "search path" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("bockparse-train:")]
    assert fragment in line and not run_dir.exists()
    if case == "encoder=nonexistent":
        full = console_script(tmp_path, "experiment=smoke", case, HYDRA_FULL_ERROR="1")
        assert full.returncode == 1 and "Traceback" in full.stderr
        assert "MissingConfigException" in full.stderr


@pytest.mark.slow
def test_a_bug_keeps_its_traceback_and_version_is_bockparses(tmp_path):
    bug = ("import bockparse.training.train as t; "
           "t.run = lambda *a: (_ for _ in ()).throw(RuntimeError('a bug'))")  # fmt: skip
    proc = console_script(tmp_path, "experiment=smoke", f"hydra.run.dir={tmp_path / 'r'}",
                          before=bug)  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "RuntimeError: a bug" in proc.stderr
    version = console_script(tmp_path, "--version")
    assert version.returncode == 0 and version.stdout == f"bockparse {__version__}\n"


@pytest.mark.slow
def test_the_smoke_run_trains_from_another_folder(tmp_path):
    """README's installation check, started outside the checkout (about a minute)."""
    run_dir = tmp_path / "r"
    proc = train(tmp_path, "experiment=smoke", f"hydra.run.dir={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (run_dir / "metrics.json").is_file()
    assert not (tmp_path / "data").exists()  # the sample came from the package
    saved = OmegaConf.to_container(OmegaConf.load(run_dir / ".hydra" / "config.yaml"))
    assert saved["data"]["root"] == "${oc.env:BOCKPARSE_SAMPLE,data/ud-english-ewt-sample}"
