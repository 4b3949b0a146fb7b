"""Installation: the light install (decoders, CoNLL-U layer and metrics without the training
stack), every console script, and a wheel built from the repository that runs from another
folder with its packaged configs."""

from __future__ import annotations

import email.parser
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bockparse import cli

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SCRIPTS = PYPROJECT["project"]["scripts"]
FIXTURE = REPO / "tests" / "fixtures" / "conllu" / "valid" / "basic.conllu"
SAMPLE = REPO / "data" / "ud-english-ewt-sample"
LIGHT_MODULES = (
    "bockparse.decoders",
    "bockparse.decoders.trace",
    "bockparse.data",
    "bockparse.data.conllu",
    "bockparse.cli.data",
    "bockparse.cli.decoders",
    "bockparse.cli.metrics",
    "bockparse.metrics",
    "bockparse.cli",
)
# Imports the light modules, decodes and evaluates, and prints which optional modules loaded.
LIGHT_PROBE = f"""
import importlib, json, sys
import numpy as np
for name in {LIGHT_MODULES!r}:
    importlib.import_module(name)
from bockparse.decoders import decode
from bockparse.metrics import evaluate_files
assert decode(np.zeros((4, 4)), "bock").tolist()[0] == -1
assert evaluate_files({str(FIXTURE)!r}, {str(FIXTURE)!r})["las"] == 100.0
from bockparse.cli import EXTRAS
# numba imports scipy by itself wherever scipy is installed (the sweep extra's)
print(json.dumps(sorted({{m.partition(".")[0] for m in sys.modules}} & set(EXTRAS) - {{"scipy"}})))
"""


def requirement_names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_light_modules_load_without_the_training_stack():
    out = subprocess.run(
        [sys.executable, "-c", LIGHT_PROBE], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == []


def test_metadata_light_dependencies_and_unpinned_torch():
    project = PYPROJECT["project"]
    assert requirement_names(project["dependencies"]) == {"numpy", "numba", "conllu"}
    extras = project["optional-dependencies"]
    torch = [Requirement(r) for r in extras["train"] if Requirement(r).name == "torch"]
    assert len(torch) == 1 and all(s.operator != "==" for s in torch[0].specifier)
    # every module bockparse.cli names an extra for is installed by that extra
    distributions = importlib.metadata.packages_distributions()
    for module, extra in cli.EXTRAS.items():
        provided_by = {canonicalize_name(d) for d in distributions[module]}
        assert provided_by & requirement_names(extras[extra]), (module, extra)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_console_script_answers_help(script, monkeypatch, capsys):
    from hydra.core.global_hydra import GlobalHydra

    entry = importlib.metadata.EntryPoint(script, SCRIPTS[script], "console_scripts")
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    try:
        with pytest.raises(SystemExit) as exit_:
            entry.load()()
    finally:
        GlobalHydra.instance().clear()  # bockparse-train's help leaves Hydra initialised
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {script} ") or "powered by Hydra" in out


# bockparse-train is the Hydra app: its --version is handled in bockparse.cli.train
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_console_script_prints_the_bockparse_version(script, monkeypatch, capsys):
    entry = importlib.metadata.EntryPoint(script, SCRIPTS[script], "console_scripts")
    monkeypatch.setattr(sys, "argv", [script, "--version"])
    with pytest.raises(SystemExit) as exit_:
        sys.exit(entry.load()())  # bockparse-train returns its status, the others exit
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"bockparse {importlib.metadata.version('bockparse')}\n"


def test_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hydra", None)  # import hydra now fails
    monkeypatch.delitem(sys.modules, "bockparse.training.train", raising=False)
    monkeypatch.setattr(sys, "argv", ["bockparse-train", "experiment=smoke"])
    assert cli.train() == 1
    err = capsys.readouterr().err
    assert err == (
        "bockparse-train: needs the optional dependency 'hydra': pip install 'bockparse[train]'\n"
    )


def test_other_missing_modules_are_not_hidden():
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        cli.run("bockparse.no_such_module")


# --- the wheel ------------------------------------------------------------------------------

PIP = (sys.executable, "-m", "pip", "--disable-pip-version-check")
OFFLINE = ("-q", "--no-deps", "--no-index")


def build_wheel(tmp: Path) -> Path:
    """Build the wheel offline from a copy of the build inputs (the checkout stays clean)."""
    source = tmp / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "local")
    for folder in ("src", "conf", "data/ud-english-ewt-sample"):
        shutil.copytree(REPO / folder, source / folder, ignore=skip)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, source / name)
    wheelhouse = tmp / "wheelhouse"
    subprocess.run(
        [*PIP, "wheel", *OFFLINE, "--no-build-isolation", "-w", str(wheelhouse), str(source)],
        check=True,
    )
    (wheel,) = wheelhouse.glob("bockparse-*.whl")
    return wheel


def light_closure(metadata: str) -> set[str]:
    """Distributions that ``pip install bockparse`` (no extras) brings: the wheel's
    unconditional requirements and theirs, as installed in this environment."""
    todo = list(email.parser.Parser().parsestr(metadata).get_all("Requires-Dist"))
    seen: set[str] = set()
    while todo:
        req = Requirement(todo.pop())
        name = canonicalize_name(req.name)
        if (req.marker and not req.marker.evaluate({"extra": ""})) or name in seen:
            continue
        seen.add(name)
        todo.extend(importlib.metadata.distribution(name).requires or [])
    return seen


def link_distributions(names: set[str], folder: Path) -> None:
    """A site folder holding (links to) exactly the installed distributions ``names``."""
    folder.mkdir()
    for name in names:
        dist = importlib.metadata.distribution(name)
        for top in {f.parts[0] for f in dist.files or []} - {".."}:
            target = Path(dist.locate_file(top))
            if target.exists() and not (folder / top).exists():
                (folder / top).symlink_to(target)


@pytest.mark.slow
def test_wheel_light_install_and_smoke_training_from_another_folder(tmp_path):
    """About 1.5-2 min on 2 busy cores (mostly the smoke run and numba's first compilation)."""
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    shipped = {n.removeprefix("bockparse/conf/") for n in names if n.startswith("bockparse/conf/")}
    in_repo = {p.relative_to(REPO / "conf").as_posix() for p in (REPO / "conf").rglob("*.yaml")}
    assert shipped == {p for p in in_repo if not p.startswith("local/")}
    assert "experiment/smoke.yaml" in shipped and "encoder/tiny-random.yaml" in shipped
    sample = {
        n.removeprefix("bockparse/sample/") for n in names if n.startswith("bockparse/sample/")
    }
    assert sample == {p.name for p in SAMPLE.iterdir()}  # the treebank sample, its licence

    # One venv that sees nothing but the wheel and a .pth: first the light closure, then the
    # project's whole environment (the training stack and the MiniLM tokenizer wheel).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python, bin_ = venv / "bin" / "python", venv / "bin"
    subprocess.run([*PIP, "--python", str(python), "install", *OFFLINE, str(wheel)], check=True)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    ).resolve()  # fmt: skip
    light = light_closure(metadata)
    assert {"numpy", "numba", "conllu"} <= light and "torch" not in light
    link_distributions(light, tmp_path / "light-site")
    (site / "deps.pth").write_text(f"{tmp_path / 'light-site'}\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "numba"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")

    def call(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=elsewhere, env=env, capture_output=True, text=True)

    probe = call(str(python), "-c", LIGHT_PROBE + "import bockparse; print(bockparse.__file__)")
    assert probe.returncode == 0, probe.stderr
    loaded, location = probe.stdout.splitlines()
    assert loaded == "[]" and Path(location).resolve().is_relative_to(site)
    assert call(str(python), "-c", "import torch").returncode == 1  # truly absent
    trace = call(str(bin_ / "bockparse-trace-bock"))
    assert trace.returncode == 0 and "I* = (⊥, 0, 1), cost 60" in trace.stdout, trace.stderr
    assert call(str(bin_ / "bockparse-check"), str(FIXTURE)).returncode == 0
    evaluation = call(str(bin_ / "bockparse-eval"), str(FIXTURE), str(FIXTURE))
    assert evaluation.stdout.startswith("UAS 100.00  LAS 100.00  LCM 100.00"), evaluation.stderr
    for script in ("bockparse-train", "bockparse-table"):
        missing = call(str(bin_ / script), "--help")
        assert missing.returncode == 1
        assert missing.stderr.endswith("pip install 'bockparse[train]'\n"), missing.stderr

    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    smoke = call(str(bin_ / "bockparse-train"), "experiment=smoke")  # the packaged sample
    assert smoke.returncode == 0, smoke.stderr[-3000:]
    run_dir = elsewhere / "outputs" / "smoke" / "hinge-bock" / "seed1111"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert 0.0 <= metrics["test/las"] <= 100.0 and metrics["decoder"] == "bock"
    hydra = (run_dir / ".hydra" / "hydra.yaml").read_text()
    assert f"path: {site / 'bockparse' / 'conf'}\n" in hydra  # the packaged configs

    # The trained run, used from outside the repository: predict the sample's test file, then
    # evaluate it, both through the installed console scripts.
    test_file = Path(SAMPLE) / "en_ewt-ud-test.conllu"
    out = elsewhere / "parsed.conllu"
    predict = call(str(bin_ / "bockparse-predict"), str(run_dir), str(test_file), "--out", str(out))
    assert predict.returncode == 0, predict.stderr[-3000:]
    assert "sentences/s" in predict.stdout + predict.stderr
    assert call(str(bin_ / "bockparse-check"), str(out)).returncode == 0
    score = call(str(bin_ / "bockparse-evaluate"), str(run_dir), str(test_file))
    assert score.returncode == 0, score.stderr[-3000:]
    assert f"LAS {metrics['test/las']:.2f}" in score.stdout, score.stdout
