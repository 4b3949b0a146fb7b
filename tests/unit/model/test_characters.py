"""The character model runs each distinct word over its own characters (one BiLSTM call per
length): no padding step, and, on fixed weights in fp32, the word vectors and gradients of one
padded block of all words (its former path) up to float rounding, with the same dropout."""

from __future__ import annotations

import pytest
import torch

from bockparse.model import context
from bockparse.model.context import CharacterModel
from bockparse.model.lstm import bilstm

TOL = dict(rtol=1e-5, atol=1e-6)  # float rounding: the groups' products sum in another order
GRAD_TOL = dict(rtol=1e-4, atol=1e-5)


def padded_block(model: CharacterModel, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The former ``final_states``: every word in one padded block."""
    return bilstm(model.lstm, x, lengths)[1]


@pytest.mark.parametrize("hidden,dim,words,chars", [(8, 6, 9, 7), (64, 16, 120, 12)])
def test_final_states_and_gradients_equal_one_padded_block(hidden, dim, words, chars):
    torch.manual_seed(0)
    model = CharacterModel(50, dim, hidden, 5, dropout=0.0)
    lengths = torch.randint(1, chars + 1, (words,))
    lengths[0] = chars
    x = torch.randn(words, chars, dim, requires_grad=True)
    new, old = model.final_states(x, lengths), padded_block(model, x, lengths)
    assert new.shape == (2, words, hidden)
    torch.testing.assert_close(new, old, **TOL)
    params = [x, *model.lstm.parameters()]
    for g, ref in zip(torch.autograd.grad((new**2).sum(), params),
                      torch.autograd.grad((old**2).sum(), params), strict=True):  # fmt: skip
        torch.testing.assert_close(g, ref, **GRAD_TOL)


def test_each_group_runs_one_length_without_padding(monkeypatch):
    calls = []

    def recording(lstm, x, lengths):
        calls.append((tuple(x.shape[:2]), lengths.tolist()))
        return bilstm(lstm, x, lengths)

    monkeypatch.setattr(context, "bilstm", recording)
    torch.manual_seed(0)
    model = CharacterModel(50, 4, 3, 5, dropout=0.0)
    lengths = torch.tensor([3, 1, 3, 2, 1, 3])
    model.final_states(torch.randn(6, 4, 4), lengths)
    assert calls == [((2, 1), [1, 1]), ((1, 2), [2]), ((3, 3), [3, 3, 3])]


def test_word_vectors_of_a_batch_and_their_dropout_equal_the_padded_block(
    vocabs, collate, monkeypatch
):
    torch.manual_seed(0)
    model = CharacterModel(len(vocabs.chars), 6, 8, 5, dropout=0.5).train()
    chars = collate([3, 0, 4, 11, 7]).chars
    torch.manual_seed(1)
    new = model(chars)
    with monkeypatch.context() as patch:
        patch.setattr(CharacterModel, "final_states", padded_block)
        torch.manual_seed(1)
        old = model(chars)
    torch.testing.assert_close(new, old, **TOL)  # the same dropout masks, else far apart
    assert new.abs().sum() > 0 and torch.equal(new[chars[..., 0] == 0], torch.zeros_like(
        new[chars[..., 0] == 0]))  # fmt: skip
