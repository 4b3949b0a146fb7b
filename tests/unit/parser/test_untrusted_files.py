"""A model file, a run folder and a checkpoint are data, never code: every payload below would
leave a marker file if anything in it ran (each does under a plain ``torch.load`` or
``hydra.utils.instantiate``); each is refused with one line naming the file, and the marker
never appears."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from bockparse.cli.parser import predict as predict_cli
from bockparse.modelfile import ModelError, UnsafeFileError
from bockparse.parser import Parser

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"
TEST = SAMPLE / "en_ewt-ud-test.conllu"


class Payload:
    """Unpickling it creates ``marker``: a stand-in for code a malicious file would run."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def touch_node(marker: Path) -> dict:
    """A Hydra node that creates ``marker`` when instantiated."""
    return {"_target_": "pathlib.Path.touch", "_args_": [str(marker)]}


@pytest.fixture
def exported(smoke_run, tmp_path) -> Path:
    path = tmp_path / "model.pt"
    Parser.load(smoke_run).save(path)
    return path


def _rewrite_settings(source: Path, target: Path, change) -> Path:
    content = torch.load(source, weights_only=True)
    meta = json.loads(content["config"])
    change(meta, content)
    content["config"] = json.dumps(meta)
    torch.save(content, target)
    return target


def _one_line(capsys, path: Path) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "Traceback" not in err[0], err
    return err[0]


def test_a_target_in_a_model_files_config_is_refused(exported, tmp_path, capsys):
    marker = tmp_path / "ran"

    def version1_with_target(meta, content):  # the old layout, whose model node was instantiated
        content["version"] = 1
        meta["settings"]["model"] = {**touch_node(marker), "_partial_": False}
        meta["settings"]["encoder"] = None

    def version2_with_target(meta, content):
        meta["settings"]["model"]["params"]["word_dim"] = touch_node(marker)

    def unknown_kind(meta, content):
        meta["settings"]["model"]["kind"] = "pathlib.Path.touch"

    def savetxt_chain(meta, content):  # write a pickle with numpy.savetxt, then torch.load it
        content["version"] = 1
        meta["settings"]["encoder"] = None
        meta["settings"]["model"] = {
            "_target_": "torch.load",
            "f": {"_target_": "numpy.savetxt", "fname": str(tmp_path / "p.pkl"), "X": [1]},
            "weights_only": False,
        }

    for change in (version1_with_target, version2_with_target, unknown_kind, savetxt_chain):
        evil = _rewrite_settings(exported, tmp_path / f"{change.__name__}.pt", change)
        with pytest.raises(ModelError, match=f"{evil}: (model|encoder)"):
            Parser.load(evil)
        assert predict_cli([str(evil), str(TEST), "--out", str(tmp_path / "o.conllu")]) == 1
        _one_line(capsys, evil)
        assert not marker.exists() and not (tmp_path / "p.pkl").exists()
        assert not (tmp_path / "o.conllu").exists()


def test_a_target_in_a_run_folders_config_is_refused(smoke_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    marker = tmp_path / "ran"
    config = OmegaConf.load(run / ".hydra" / "config.yaml")
    config.model = {**touch_node(marker), "_partial_": True}
    OmegaConf.save(config, run / ".hydra" / "config.yaml")
    with pytest.raises(ModelError, match=r"config.yaml: model: unknown class 'pathlib.Path.touch'"):
        Parser.load(run)
    config.model = OmegaConf.load(smoke_run / ".hydra" / "config.yaml").model
    config.encoder.tokenizer = touch_node(marker)
    OmegaConf.save(config, run / ".hydra" / "config.yaml")
    with pytest.raises(ModelError, match="encoder tokenizer: unknown class"):
        Parser.load(run)
    assert not marker.exists()


def test_a_config_planted_above_a_checkpoint_is_never_read(smoke_run, tmp_path):
    marker = tmp_path / "ran"
    shared = tmp_path / "shared"
    (shared / ".hydra").mkdir(parents=True)
    config = OmegaConf.load(smoke_run / ".hydra" / "config.yaml")
    config.model = {**touch_node(marker), "_partial_": True}
    OmegaConf.save(config, shared / ".hydra" / "config.yaml")
    for folder in (shared / "downloads", shared / "a" / "checkpoints"):
        folder.mkdir(parents=True)
        checkpoint = folder / "best.ckpt"
        shutil.copy(smoke_run / "checkpoints" / "best.ckpt", checkpoint)
        with pytest.raises(ModelError, match=f"{checkpoint}: not in a run folder"):
            Parser.load(checkpoint)
    assert not marker.exists()


@pytest.mark.parametrize("name", ["best.ckpt", "last.ckpt"])
def test_a_pickle_in_a_runs_checkpoint_is_refused(smoke_run, tmp_path, name, capsys):
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    marker = tmp_path / "ran"
    checkpoint = run / "checkpoints" / name
    content = torch.load(checkpoint, weights_only=True)
    content["payload"] = Payload(marker)
    torch.save(content, checkpoint)
    with pytest.raises(UnsafeFileError, match=f"^{re.escape(str(checkpoint))}: refused: .*could "
                       "run code"):  # fmt: skip
        Parser.load(checkpoint)
    if name == "best.ckpt":
        with pytest.raises(UnsafeFileError, match=f"^{re.escape(str(checkpoint))}: refused"):
            Parser.load(run)  # the same file, as the run's
        assert predict_cli([str(run), str(TEST), "--out", str(tmp_path / "o.conllu")]) == 1
        assert "refused" in _one_line(capsys, checkpoint)
    assert not marker.exists()


def test_resume_refuses_a_pickle_in_last_ckpt(smoke_run, tmp_path):
    from hydra import compose, initialize_config_dir

    from bockparse.training.resume import ResumeError, check_resume
    from bockparse.training.train import CONF_DIR

    marker = tmp_path / "ran"
    last = tmp_path / "checkpoints" / "last.ckpt"
    last.parent.mkdir()
    content = torch.load(smoke_run / "checkpoints" / "last.ckpt", weights_only=True)
    content["payload"] = Payload(marker)
    torch.save(content, last)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke", "resume=true"])
    with pytest.raises(ResumeError, match=f"refused to resume from {last}.*could run code"):
        check_resume(cfg, last)
    assert not marker.exists()
    torch.load(last, weights_only=False)  # what the unsafe load would have done
    assert marker.exists()


def test_random_bytes_are_not_a_model_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for name, data in (("random.pt", rng.bytes(4096)), ("zeros.pt", bytes(64))):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ModelError, match=f"{path}: not a model file"):
            Parser.load(path)
    truncated = tmp_path / "truncated.pt"
    buffer = tmp_path / "whole.pt"
    torch.save({"x": torch.zeros(3)}, buffer)
    truncated.write_bytes(buffer.read_bytes()[:200])
    with pytest.raises(ModelError, match=f"{truncated}: not a"):
        Parser.load(truncated)
