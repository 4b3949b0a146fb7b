"""The full treebanks of ../shared/data and the shipped sample: validity, byte-exact round trip."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bockparse.data import check_conllu, read_conllu, write_conllu

FULL = {
    "ud-english-ewt/en_ewt-ud-train.conllu": 12544,
    "ud-english-ewt/en_ewt-ud-dev.conllu": 2001,
    "ud-english-ewt/en_ewt-ud-test.conllu": 2077,
    "ud-chinese-gsd/zh_gsd-ud1.3-train.conllu": 3997,
    "ud-chinese-gsd/zh_gsd-ud1.3-dev.conllu": 500,
    "ud-chinese-gsd/zh_gsd-ud1.3-test.conllu": 500,
}
SAMPLE = {  # file -> (sentences, words, SHA-256), as in data/ud-english-ewt-sample/README.md
    "en_ewt-ud-train.conllu": (
        2000,
        39802,
        "4bdea09705eeefbb895525de44037bf652acd53bae1b0db1dbbd839f90e59c56",
    ),
    "en_ewt-ud-dev.conllu": (
        400,
        6729,
        "4147b53c52e34f208b79a40da0a665fb4caad836919a2110797cbc674c77e534",
    ),
    "en_ewt-ud-test.conllu": (
        400,
        6305,
        "9dfea1d4c3643d85dd2a61ebe4b99e06049bf5b2639e4c577bb0383bb409d77a",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FULL))
def test_full_treebank_round_trip_is_byte_exact(
    shared_data: Path, tmp_path: Path, name: str
) -> None:
    path = shared_data / name
    sentences = read_conllu(path, single_root=True, on_malformed="error")
    assert len(sentences) == FULL[name]
    out = tmp_path / "out.conllu"
    write_conllu(out, sentences)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_sample_is_valid_and_as_documented(sample_dir: Path, name: str) -> None:
    path = sample_dir / name
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == SAMPLE[name][2]
    assert check_conllu(path, single_root=True) == []
    sentences = read_conllu(path, single_root=True, on_malformed="error")
    assert (len(sentences), sum(map(len, sentences))) == SAMPLE[name][:2]
    assert (sample_dir / "LICENSE.txt").is_file() and (sample_dir / "README.md").is_file()


@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_sample_is_a_prefix_of_the_release(sample_dir: Path, shared_data: Path, name: str) -> None:
    sample = (sample_dir / name).read_bytes()
    with open(shared_data / "ud-english-ewt" / name, "rb") as f:
        assert f.read(len(sample)) == sample
