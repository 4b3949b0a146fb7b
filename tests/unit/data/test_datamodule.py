"""``ParserDataModule`` from ``conf/data/*.yaml``: splits, vocabularies, loaders, checkpoints."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf.errors import MissingMandatoryValue

from bockparse.data import (
    UNK_INDEX,
    Batch,
    DataError,
    ParserDataModule,
    TokenBudgetSampler,
    Vocabs,
    read_conllu,
)
from bockparse.training.checks import DATA_ENV

CONFIGS = ("ewt-sample", "ud-english-ewt", "ud-chinese-gsd", "ptb", "ctb")


@pytest.fixture
def repo(sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository root, made the working directory (relative data roots start there)."""
    root = sample_dir.parents[1]
    monkeypatch.chdir(root)
    return root


def make(repo: Path, name: str = "ewt-sample", **overrides) -> ParserDataModule:
    items = [f"+data={name}", "+seed=1"] + [f"data.{k}={v}" for k, v in overrides.items()]
    with initialize_config_dir(config_dir=str(repo / "conf"), version_base="1.3"):
        cfg = compose(overrides=items)
    return instantiate(cfg.data)


def fixture_module(repo: Path, **overrides) -> ParserDataModule:
    files = {"root": "tests/fixtures/conllu/valid", "train": "mwt_empty_nodes.conllu"}
    files |= {"val": "basic.conllu", "test": "basic.conllu"}
    return make(repo, **(files | overrides))


@pytest.mark.parametrize("name", CONFIGS)
def test_every_data_config_instantiates(repo: Path, name: str, monkeypatch) -> None:
    monkeypatch.setenv(DATA_ENV, "/treebanks")  # the full UD treebanks' folder
    paths = {"train": "/x/train.conllu", "val": "/x/dev.conllu", "test": "/x/test.conllu"}
    dm = make(repo, name, **(paths if name in ("ptb", "ctb") else {}))
    assert isinstance(dm, ParserDataModule)
    assert dm.batch_size == 5000 and dm.on_malformed == "error" and dm.single_root
    assert dm.seed == 1 and dm.wordpieces is None
    expected = {"ptb": ["``", "''", ":", ",", "."], "ctb": ["PU"]}.get(name, ["PUNCT"])
    assert dm.punct_tags == expected
    assert dm.punct_field == ("xpos" if name in ("ptb", "ctb") else "upos")
    assert dm.paths["predict"] == dm.paths["test"]


def test_full_treebank_configs_read_the_data_folder(repo: Path, monkeypatch) -> None:
    monkeypatch.setenv(DATA_ENV, "/treebanks")
    assert make(repo, "ud-english-ewt").paths["train"] == Path(
        "/treebanks/ud-english-ewt/en_ewt-ud-train.conllu"
    )
    assert make(repo, "ud-chinese-gsd", root="/elsewhere").paths["test"] == Path(
        "/elsewhere/zh_gsd-ud1.3-test.conllu"
    )


@pytest.mark.parametrize("name", ["ptb", "ctb"])
def test_user_treebanks_need_their_paths(repo: Path, name: str) -> None:
    with pytest.raises(MissingMandatoryValue, match=r"data\.train"):
        make(repo, name)


def test_shipped_sample_is_the_offline_default(repo: Path) -> None:
    dm = make(repo)
    dm.setup("fit")
    assert len(dm.sentences("train")) == 2000 and len(dm.sentences("val")) == 400
    batch = next(iter(dm.train_dataloader()))
    assert isinstance(batch, Batch) and 0 < int(batch.lengths.sum()) <= 5000
    # vocabularies come from training data only
    train_words = {w for s in dm.sentences("train") for w in s.forms}
    dev_only = next(w for s in dm.sentences("val") for w in s.forms if w not in train_words)
    assert dm.vocabs.words[dev_only] == UNK_INDEX


def test_vocabularies_travel_in_the_state_dict(repo: Path, tmp_path: Path) -> None:
    trained = fixture_module(repo)
    trained.setup("fit")
    state = trained.state_dict()
    other = fixture_module(repo, train="basic.conllu")
    other.setup("fit")
    before = other.dataset("val")
    assert other.vocabs != trained.vocabs
    other.load_state_dict(state)  # as Lightning does when restoring a checkpoint
    assert other.vocabs == trained.vocabs
    assert other.dataset("val") is not before
    assert (other.dataset("val").words == trained.dataset("val").words).all()
    # or from a saved file, with no training file at all
    trained.vocabs.save(tmp_path / "vocabs.json")
    predictor = fixture_module(repo, train="null", vocabs=str(tmp_path / "vocabs.json"))
    predictor.setup("predict")
    assert predictor.vocabs == trained.vocabs
    assert len(predictor.dataset("predict")) == 2


def test_missing_files_and_vocabularies_are_clear_errors(repo: Path) -> None:
    dm = fixture_module(repo, train="null", test="null")
    with pytest.raises(DataError, match=r"no train file configured \(set data.train\)"):
        dm.setup("fit")
    dm.setup("validate")
    with pytest.raises(DataError, match="no vocabularies: call setup"):
        dm.dataset("val")
    with pytest.raises(DataError, match=r"no test file configured \(set data.test\)"):
        dm.sentences("test")
    with pytest.raises(DataError, match="unknown split 'dev'; splits: train, val, test, predict"):
        dm.sentences("dev")
    with pytest.raises(InstantiationException, match="on_malformed must be 'error' or 'skip'"):
        fixture_module(repo, on_malformed="ignore")


def test_skip_policy_from_config(repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    dm = fixture_module(
        repo, root="tests/fixtures/conllu/malformed", train="cycle.conllu", on_malformed="skip"
    )
    with caplog.at_level(logging.WARNING, logger="bockparse.data.conllu"):
        assert len(dm.sentences("train")) == 1
    assert "dropped 1 of 2 sentences (4 words)" in caplog.messages[-1]


def test_loaders_use_the_budget_and_the_seed(repo: Path) -> None:
    def train_batches(seed: int) -> list[list[int]]:
        dm = fixture_module(repo, train="basic.conllu", batch_size=5, seed=seed)
        dm.setup("fit")
        loader = dm.train_dataloader()
        assert isinstance(loader.sampler, TokenBudgetSampler)
        assert loader.sampler.seed == seed
        return [b.sentence_ids.tolist() for b in loader]

    assert train_batches(1) == train_batches(1)
    assert sorted(map(sorted, train_batches(1))) == [[0], [1]]  # 4 + 4 words > 5
    dm = fixture_module(repo)
    dm.setup(None)
    val = [b.sentence_ids.tolist() for b in dm.val_dataloader()]
    assert val == [[0, 1]]
    assert [b.sentence_ids.tolist() for b in dm.test_dataloader()] == val
    assert [b.sentence_ids.tolist() for b in dm.predict_dataloader()] == val


def test_tokenizer_folder_from_config(repo: Path, tiny_tokenizer_dir: Path) -> None:
    dm = fixture_module(repo, tokenizer=str(tiny_tokenizer_dir), max_length=8)
    dm.setup("fit")
    batch = next(iter(dm.val_dataloader()))
    assert batch.subwords is not None
    assert batch.subwords.input_ids.shape[1] == 8  # "Dogs bark loudly ." is 6 pieces


def test_vocab_built_from_train_matches_direct_build(repo: Path) -> None:
    dm = fixture_module(repo)
    dm.setup("fit")
    path = repo / "tests/fixtures/conllu/valid/mwt_empty_nodes.conllu"
    sentences = read_conllu(path, single_root=True, on_malformed="error")
    assert dm.vocabs == Vocabs.build(sentences, min_word_freq=2)
