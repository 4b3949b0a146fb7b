"""Wordpieces: first-piece map, mean pooling, overlapping windows for long sentences."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from bockparse.data import (
    Collator,
    DataError,
    ParserDataset,
    Vocabs,
    WordPieces,
    load_tokenizer,
    pool_pieces,
    read_conllu,
)
from bockparse.data.subwords import length_chunks

CLS, SEP, UNK = 2, 3, 1
THE, CAT, SAT, DOG, BARK, LOUD, S, LY, DOT = 5, 6, 7, 8, 9, 10, 11, 12, 13


def dataset(path: Path, wordpieces: WordPieces) -> ParserDataset:
    sentences = read_conllu(path, single_root=True, on_malformed="error")
    return ParserDataset(
        sentences,
        Vocabs.build(sentences, min_word_freq=1),
        max_word_chars=8,
        punct_field="upos",
        punct_tags=["PUNCT"],
        wordpieces=wordpieces,
    )


def long_sentence_file(tmp_path: Path, n: int) -> Path:
    """One sentence of ``n`` words "cats" (2 pieces each), a chain from ROOT."""
    rows = [f"{i}\tcats\tcat\tNOUN\tNNS\t_\t{i - 1}\tdep\t_\t_" for i in range(1, n + 1)]
    path = tmp_path / "long.conllu"
    path.write_text("\n".join(rows) + "\n\n", encoding="utf-8")
    return path


def test_pieces_per_word_never_empty(tiny_tokenizer) -> None:
    wordpieces = WordPieces(tiny_tokenizer, max_length=None)
    assert wordpieces.max_length == 16  # the tokenizer's model_max_length
    assert wordpieces.pieces(["The", "cats", "\u200b", "loudly"]) == [
        [THE],
        [CAT, S],
        [UNK],  # a zero-width space has no piece: [UNK] stands in
        [LOUD, LY],
    ]


def test_first_piece_map_and_pooling(fixtures: Path, tiny_tokenizer) -> None:
    ds = dataset(fixtures / "valid" / "basic.conllu", WordPieces(tiny_tokenizer, max_length=None))
    batch = Collator(ds)([0, 1])  # "The cat sat ." and "Dogs bark loudly ."
    sub = batch.subwords
    assert sub.input_ids.tolist() == [
        [CLS, THE, CAT, SAT, DOT, SEP, 0, 0],
        [CLS, DOG, S, BARK, LOUD, LY, DOT, SEP],
    ]
    assert sub.attention_mask.sum(1).tolist() == [6, 8]
    assert sub.first_piece.tolist() == [[0, 1, 2, 3, 4], [0, 1, 3, 4, 6]]
    assert sub.piece_word.tolist() == [[0, 1, 2, 3, 4, 0, 0], [0, 1, 1, 2, 3, 3, 4]]
    assert sub.piece_mask.sum(1).tolist() == [5, 7]
    # hidden state = the flat position w * T + t, so pooled values name the pieces used
    W, T = sub.input_ids.shape
    hidden = torch.arange(W * T, dtype=torch.float32).reshape(W, T, 1)
    first = pool_pieces(hidden, sub, "first")[..., 0]
    assert first.tolist() == [[0, 1, 2, 3, 4], [8, 9, 11, 12, 14]]
    mean = pool_pieces(hidden, sub, "mean")[..., 0]
    assert mean.tolist() == [[0, 1, 2, 3, 4], [8, 9.5, 11, 12.5, 14]]
    with pytest.raises(ValueError, match="pooling must be 'first' or 'mean'"):
        pool_pieces(hidden, sub, "last")


def test_long_sentence_is_windowed_not_truncated(tmp_path: Path, tiny_tokenizer) -> None:
    wordpieces = WordPieces(tiny_tokenizer, max_length=8)  # 6 pieces per window
    ds = dataset(long_sentence_file(tmp_path, 10), wordpieces)  # 20 pieces
    assert wordpieces.windows(20) == [0, 3, 6, 9, 12, 14]
    sub = Collator(ds)([0]).subwords
    W, T = sub.input_ids.shape
    assert (W, T) == (6, 8)
    assert (sub.input_ids[:, 0] == CLS).all() and (sub.input_ids[:, -1] == SEP).all()
    # gathering the chosen encoder positions gives back [CLS] and all 20 pieces, in order
    flat = sub.input_ids.reshape(-1)
    assert flat[sub.piece_index[0]].tolist() == [CLS] + [CAT, S] * 10
    assert sub.piece_mask.all()
    # each piece comes from the window where it is farthest from a window edge
    window, position = sub.piece_index[0, 1:] // T, sub.piece_index[0, 1:] % T - 1
    starts = np.array(wordpieces.windows(20))
    for j in range(20):
        covering = starts[(starts <= j) & (j < starts + 6)]
        best = max(min(j - s, s + 5 - j) for s in covering)
        chosen = int(starts[window[j]])
        assert int(position[j]) == j - chosen
        assert min(j - chosen, chosen + 5 - j) == best
    assert sub.first_piece[0].tolist() == [0, *range(1, 20, 2)]
    hidden = torch.arange(W * T, dtype=torch.float32).reshape(W, T, 1)
    assert pool_pieces(hidden, sub, "first").shape == (1, 11, 1)


def test_windows_and_short_sentences_share_a_batch(
    tmp_path: Path, fixtures: Path, tiny_tokenizer
) -> None:
    long_path = long_sentence_file(tmp_path, 12)
    text = (fixtures / "valid" / "basic.conllu").read_text(encoding="utf-8")
    both = tmp_path / "both.conllu"
    both.write_text(text + long_path.read_text(encoding="utf-8"), encoding="utf-8")
    ds = dataset(both, WordPieces(tiny_tokenizer, max_length=None))  # 16: 14 pieces a window
    sub = Collator(ds)([0, 2]).subwords
    assert sub.input_ids.shape == (1 + 3, 16)  # 24 pieces: windows at 0, 7, 10
    flat = sub.input_ids.reshape(-1)
    assert flat[sub.piece_index[0, :5]].tolist() == [CLS, THE, CAT, SAT, DOT]
    assert flat[sub.piece_index[1]].tolist() == [CLS] + [CAT, S] * 12
    assert sub.piece_index[1, 0] == 16  # ROOT: the [CLS] of the long sentence's first window


def test_bad_tokenizer_settings_are_clear_errors(tiny_tokenizer, tmp_path: Path) -> None:
    stub = SimpleNamespace(
        cls_token_id=None,
        sep_token_id=3,
        pad_token_id=0,
        unk_token_id=1,
        name_or_path="stub",
        model_max_length=10**30,
    )
    with pytest.raises(DataError, match="tokenizer 'stub' has no cls token"):
        WordPieces(stub, max_length=None)
    stub.cls_token_id = 2
    with pytest.raises(DataError, match="does not know its encoder's maximum length"):
        WordPieces(stub, max_length=None)
    with pytest.raises(DataError, match="max_length must be at least 3"):
        WordPieces(tiny_tokenizer, max_length=2)
    with pytest.raises(DataError, match="cannot load a tokenizer from"):
        load_tokenizer(tmp_path)


def test_tokenizer_from_a_local_folder(tiny_tokenizer_dir: Path) -> None:
    tokenizer = load_tokenizer(str(tiny_tokenizer_dir))
    assert WordPieces(tokenizer, max_length=None).pieces(["cats"]) == [[CAT, S]]
    assert load_tokenizer(tokenizer) is tokenizer


def test_minilm_tokenizer_offline(minilm_dir: Path, fixtures: Path) -> None:
    wordpieces = WordPieces(load_tokenizer(minilm_dir), max_length=None)
    assert wordpieces.max_length == 512
    ds = dataset(fixtures / "valid" / "mwt_empty_nodes.conllu", wordpieces)
    sub = Collator(ds)([0, 1, 2]).subwords
    tokenizer = wordpieces.tokenizer
    assert sub.input_ids.shape[0] == 3  # short sentences: one window each
    first = sub.input_ids.reshape(-1)[sub.piece_index.gather(1, sub.first_piece)]  # [B, N]
    assert tokenizer.convert_ids_to_tokens(first[1, 1:8].tolist()) == [
        "mary", "likes", "tea", "and", "john", "coffee", ".",
    ]  # fmt: skip
    assert first[:, 0].tolist() == [tokenizer.cls_token_id] * 3


@pytest.mark.parametrize(("max_pieces", "max_padding"), [(64, 1.25), (10**9, 1.1), (40, 10.0)])
def test_length_chunks_bound_the_padding(max_pieces: int, max_padding: float) -> None:
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.integers(3, 30, size=200), [80, 120, 3]])
    chunks = length_chunks(lengths, max_pieces, max_padding)
    assert sorted(np.concatenate(chunks).tolist()) == list(range(len(lengths)))
    padded = 0
    for chunk in chunks:
        size = len(chunk) * lengths[chunk].max()
        assert size <= max(max_pieces, lengths[chunk].max())
        assert size <= max_padding * lengths[chunk].sum()
        padded += size
    assert padded <= max_padding * lengths.sum()
    tops = [lengths[c].max() for c in chunks]
    assert tops == sorted(tops)  # shortest windows first, each chunk a length range
