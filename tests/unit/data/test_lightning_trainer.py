"""``ParserDataModule`` under a Lightning ``Trainer``: per-epoch shuffle, vocabs in checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bockparse.data import Batch, ParserDataModule, TokenBudgetSampler


def data_module(fixtures: Path) -> ParserDataModule:
    return ParserDataModule(
        root=str(fixtures / "valid"),
        train="mwt_empty_nodes.conllu",
        val="basic.conllu",
        test="basic.conllu",
        batch_size=10,
        min_word_freq=1,
        max_word_chars=20,
        on_malformed="error",
        single_root=True,
        punct_field="upos",
        punct_tags=["PUNCT"],
        seed=5,
        num_workers=0,
    )


@pytest.mark.slow
def test_trainer_reshuffles_each_epoch_and_checkpoints_vocabs(
    fixtures: Path, tmp_path: Path
) -> None:
    import lightning.pytorch as pl

    class Recorder(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(1))
            self.seen: dict[int, list[list[int]]] = {}

        def training_step(self, batch: Batch, index: int) -> torch.Tensor:
            assert isinstance(batch, Batch)
            self.seen.setdefault(self.current_epoch, []).append(batch.sentence_ids.tolist())
            return (self.weight**2).sum()

        def validation_step(self, batch: Batch, index: int) -> None:
            assert batch.sentence_ids.tolist() == [0, 1]  # sorted by length, one batch

        def predict_step(self, batch: Batch, index: int) -> list[int]:
            return batch.sentence_ids.tolist()

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    dm = data_module(fixtures)
    model = Recorder()
    trainer = pl.Trainer(
        max_epochs=4,
        logger=False,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, datamodule=dm)
    sampler = TokenBudgetSampler(dm.dataset("train").lengths, 10, shuffle=True, seed=5)
    for epoch, batches in model.seen.items():
        sampler.set_epoch(epoch)
        assert batches == list(sampler)  # Lightning set the epoch
    assert len({str(b) for b in model.seen.values()}) > 1
    checkpoint = torch.load(next(tmp_path.rglob("*.ckpt")), weights_only=False)
    assert checkpoint["ParserDataModule"]["vocabs"] == dm.vocabs.to_dict()
    assert trainer.predict(model, datamodule=dm) == [[0, 1]]
