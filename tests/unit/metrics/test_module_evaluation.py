"""The module's evaluation: counts from the batch equal the CoNLL-U file evaluation of the
predictions it writes, every sentence once, punctuation excluded by the data's mask."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest
from hydra import compose, initialize_config_dir

from bockparse.metrics import evaluate_files
from bockparse.training.predictions import PredictionWriter
from bockparse.training.train import CONF_DIR, build

REPO = Path(__file__).resolve().parents[3]
GOLD = REPO / "data" / "ud-english-ewt-sample" / "en_ewt-ud-dev.conllu"


@pytest.mark.parametrize(("condition", "exclude"), [("hinge-bock", "upos"), ("arc-eager", None)])
def test_batch_counts_equal_the_written_file(tmp_path, monkeypatch, condition, exclude):
    monkeypatch.chdir(REPO)  # the sample's path is relative to the repository
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=smoke", f"condition={condition}"])
    pl.seed_everything(7)
    datamodule, module = build(cfg)
    module.exclude_punct = exclude
    writer = PredictionWriter()
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[writer])  # fmt: skip
    trainer.validate(module, datamodule=datamodule, verbose=False)
    sentences = datamodule.dataset("val").sentences
    assert sorted(writer.trees["val"]) == list(range(len(sentences)))
    writer.write(trainer, "val", tmp_path / "val.conllu")
    from_file = evaluate_files(str(GOLD), str(tmp_path / "val.conllu"), exclude)
    assert module.rates["val"] == {k: from_file[k] for k in ("uas", "las", "lcm")}
    words = sum(len(s) for s in sentences)
    assert (from_file["words"] < words) == (exclude is not None)
    assert 0 < from_file["heads"] < from_file["words"]
    module.exclude_punct = "ctb"  # not what the data marks: refused before any prediction
    with pytest.raises(
        ValueError, match="exclude_punct=ctb but the data marks punctuation as upos"
    ):
        trainer.validate(module, datamodule=datamodule, verbose=False)
