"""The fused BiLSTM against ``nn.LSTM`` on packed sequences (the scorer's former code path)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bockparse.data.vocab import PAD_INDEX
from bockparse.model.lstm import _bilstm, bilstm, directions, reverse_index

TOL = dict(rtol=1e-5, atol=1e-6)


def packed_lstm(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor):
    """The reference: ``nn.LSTM`` over ``pack_padded_sequence``, outputs padded back."""
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, (final, _) = lstm(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out, final[-2:]


def real(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    return torch.arange(steps)[None, :] < lengths[:, None]  # [B, T]


def test_reverse_index_reverses_within_length():
    index = reverse_index(torch.tensor([3, 1, 5]), 5)
    assert index.tolist() == [[2, 1, 0, 3, 4], [0, 1, 2, 3, 4], [4, 3, 2, 1, 0]]
    assert torch.equal(index.gather(1, index), torch.arange(5).expand(3, 5))


@pytest.mark.parametrize("layers", [1, 3])
def test_bilstm_equals_packed_lstm(layers):
    torch.manual_seed(0)
    lstm = nn.LSTM(7, 5, num_layers=layers, batch_first=True, bidirectional=True)
    x = torch.randn(6, 9, 7, requires_grad=True)
    lengths = torch.tensor([9, 1, 4, 9, 2, 7])
    ref_out, ref_final = packed_lstm(lstm, x, lengths)
    out, final = bilstm(lstm, x, lengths)
    keep = real(lengths, 9)
    torch.testing.assert_close(out[keep], ref_out[keep], **TOL)
    torch.testing.assert_close(final, ref_final, **TOL)
    # The same gradients for the inputs and for every weight.
    params = [x, *lstm.parameters()]
    ref_grads = torch.autograd.grad((ref_out[keep] ** 2).sum() + ref_final.sum(), params)
    grads = torch.autograd.grad((out[keep] ** 2).sum() + final.sum(), params)
    for g, ref in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, ref, **TOL)


def test_padding_never_reaches_real_steps():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    x = torch.randn(2, 6, 3)
    lengths = torch.tensor([4, 6])
    noisy = x.clone()
    noisy[0, 4:] = 100.0
    with torch.no_grad():
        a, fa = bilstm(lstm, x, lengths)
        b, fb = bilstm(lstm, noisy, lengths)
    torch.testing.assert_close(a[0, :4], b[0, :4])
    torch.testing.assert_close(fa, fb)


def test_dropout_between_layers_in_training_only():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True, dropout=0.5)
    x = torch.randn(2, 5, 3)
    lengths = torch.tensor([5, 3])
    with torch.no_grad():
        evaluated = bilstm(lstm.eval(), x, lengths)[0]
        assert torch.equal(evaluated, bilstm(lstm, x, lengths)[0])
        trained = bilstm(lstm.train(), x, lengths)[0]
    assert not torch.allclose(trained, evaluated)


def test_bilstm_rejects_other_lstms():
    with pytest.raises(ValueError, match="bidirectional"):
        bilstm(nn.LSTM(3, 4, batch_first=True), torch.zeros(1, 2, 3), torch.tensor([2]))


def test_cpu_weights_keep_their_storage():
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    before = [w.data_ptr() for d in directions(lstm) for w in d]
    bilstm(lstm, torch.randn(2, 5, 3), torch.tensor([5, 3]))
    assert [w.data_ptr() for d in directions(lstm) for w in d] == before


@pytest.mark.gpu
def test_on_a_gpu_each_direction_gets_a_buffer_of_its_own():
    """cuDNN takes the weights in place (no warning), the parameters stay the same objects with
    the same values, a second call moves nothing, and the results equal those on ``nn.LSTM``'s
    single buffer, which cuDNN copies at every call."""
    torch.manual_seed(0)
    lstm = nn.LSTM(7, 5, num_layers=3, batch_first=True, bidirectional=True).cuda()
    reference = copy.deepcopy(lstm)
    params = [w for d in directions(lstm) for w in d]
    values = [w.detach().clone() for w in params]
    x = torch.randn(4, 9, 7, device="cuda")
    lengths = torch.tensor([9, 1, 4, 6], device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, final = bilstm(lstm, x, lengths)
    for weights in directions(lstm):
        storage = weights[0].untyped_storage()
        assert weights[0].data_ptr() == storage.data_ptr()
        assert storage.nbytes() == sum(w.numel() * w.element_size() for w in weights)
    assert all(
        a is b for a, b in zip([w for d in directions(lstm) for w in d], params, strict=True)
    )
    assert all(torch.equal(w, v) for w, v in zip(params, values, strict=True))
    placed = [w.data_ptr() for w in params]
    bilstm(lstm, x, lengths)
    assert [w.data_ptr() for w in params] == placed
    ref_out, ref_final = _bilstm(reference, x, lengths)
    assert torch.equal(out, ref_out) and torch.equal(final, ref_final)
    grads = torch.autograd.grad(out.sum() + final.sum(), params)
    ref_grads = torch.autograd.grad(
        ref_out.sum() + ref_final.sum(), [w for d in directions(reference) for w in d]
    )
    assert all(torch.equal(a, b) for a, b in zip(grads, ref_grads, strict=True))


def packed_characters(model, chars: torch.Tensor) -> torch.Tensor:
    """The character model's former forward: every present word packed, no deduplication."""
    B, N, _ = chars.shape
    lengths = (chars != PAD_INDEX).sum(-1)  # [B, N]
    present = lengths > 0
    _, final = packed_lstm(model.lstm, model.embedding(chars[present]), lengths[present])
    out = torch.zeros(B, N, model.output_size)
    out[present] = model.projection(torch.cat([final[0], final[1]], dim=-1))
    return out


def packed_contextualize(scorer, batch) -> torch.Tensor:
    """The scorer's former BiLSTM step: ``nn.LSTM`` over packed ROOT + words."""
    x = scorer.context.inputs(batch)
    out, _ = packed_lstm(scorer.context.lstm, x, batch.lengths + 1)
    return out


def test_scorer_equals_the_packed_code_path(make_scorer, make_encoder, collate):
    """Same weights, old and new code paths: the same character vectors, BiLSTM states and
    gradients; and the parameter count of the packed-path scorer (same modules)."""
    scorer = make_scorer(make_encoder(), context={"lstm_layers": 3})
    batch = collate([3, 0, 4, 11, 7])
    with torch.no_grad():
        torch.testing.assert_close(
            scorer.context.char_model(batch.chars),
            packed_characters(scorer.context.char_model, batch.chars),
            **TOL,
        )
    new = scorer.context.contextualize(batch)
    ref = packed_contextualize(scorer, batch)
    torch.testing.assert_close(new, ref, **TOL)  # zero at padding in both
    params = list(scorer.parameters())
    grads = torch.autograd.grad((new**2).sum(), params, allow_unused=True)
    ref_grads = torch.autograd.grad((ref**2).sum(), params, allow_unused=True)
    for g, r in zip(grads, ref_grads, strict=True):
        assert (g is None) == (r is None)
        if g is not None:
            torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)


def test_parameter_count_unchanged(make_scorer):
    scorer = make_scorer(None)
    # Counted on the packed-path scorer (commit 26506b6) with the same small sizes.
    assert sum(p.numel() for p in scorer.parameters()) == 25908
    assert len(list(scorer.parameters())) == 50
