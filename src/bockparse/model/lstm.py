"""A bidirectional ``nn.LSTM`` over right-padded sequences, fused, with packed semantics.

``nn.LSTM`` on a ``PackedSequence`` gives each sequence its own length, but on the CPU it runs
ATen's generic loop: every time step slices the ``[total, 4H]`` gate tensors, and each slice's
backward allocates and zero-fills the whole source (``aten::slice_backward`` -> ``fill_``),
quadratic in the sequence length. On a padded tensor ``nn.LSTM`` instead runs one fused
kernel per layer and direction (oneDNN's ``mkldnn_rnn_layer`` on the CPU, cuDNN on a GPU) with
a fused backward, but its reverse direction would then start at the padding.

:func:`bilstm` keeps the packed semantics with the fused kernels: every layer runs each
direction as a one-layer unidirectional ``torch.lstm`` with that direction's weights of the
given ``nn.LSTM``; the reverse direction reads each sequence reversed within its own length
(padding stays at the end), so padding only ever follows the real steps and never reaches
them. Between layers the concatenated outputs get dropout ``lstm.dropout`` in training, as
``nn.LSTM`` does. The result equals ``nn.LSTM`` on ``pack_padded_sequence`` up to float
rounding (without dropout; with it, the same distribution), with the same parameters.

Under autocast the LSTM runs in the autocast dtype only where a primitive for it exists
(:func:`bockparse.hardware.lstm_autocast_ok`: bf16 on a CPU with native bf16, CUDA); elsewhere
(an AVX2-only CPU, where oneDNN has no bf16 LSTM and would fail) it runs in float32 with
autocast off, and returns float32.

On a GPU, cuDNN takes a call's weights in place only when they fill one buffer of their own;
``nn.LSTM`` keeps all its layers and directions in one buffer, so :func:`bilstm` first gives
each layer and direction a buffer of its own (:func:`flatten_directions`), as
``nn.LSTM.flatten_parameters`` does for the whole module. Without that cuDNN warns ("not part
of single contiguous chunk of memory") and copies the weights at every call: 11 % of the word
BiLSTM's forward + backward and 17 % of the character BiLSTM's in fp32 on an H200, and 5 % of
the Table 1 GSD parser's peak memory (``benchmarks/results/lstm_weights.md``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..hardware import lstm_autocast_ok


def reverse_index(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """Index reversing each row within its length, padding left in place (an involution).

    Args:
        lengths: int64 ``[B]``, each in ``1..steps``.
        steps: the padded length ``T``.

    Returns:
        int64 ``[B, T]``: ``lengths[b] - 1 - t`` for ``t < lengths[b]``, else ``t``.
    """
    t = torch.arange(steps, device=lengths.device)[None, :]  # [1, T]
    last = lengths[:, None] - 1  # [B, 1]
    return torch.where(t <= last, last - t, t)


def _gather_steps(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x[b, index[b, t]]`` for ``x [B, T, D]`` and ``index [B, T]``."""
    return x.gather(1, index[..., None].expand(-1, -1, x.shape[-1]))


WEIGHTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
CUDNN_LSTM = 2  # cuDNN's mode number of the LSTM (torch.backends.cudnn.rnn.get_cudnn_mode)


def direction_weights(lstm: nn.LSTM, layer: int, suffix: str) -> list[nn.Parameter]:
    """The four weights of one layer and direction (``suffix`` ``""`` or ``"_reverse"``)."""
    return [getattr(lstm, f"{name}_l{layer}{suffix}") for name in WEIGHTS]


def directions(lstm: nn.LSTM) -> list[list[nn.Parameter]]:
    """Every layer and direction's four weights, in :func:`bilstm`'s order (layer, then
    forward before reverse)."""
    return [
        direction_weights(lstm, layer, suffix)
        for layer in range(lstm.num_layers)
        for suffix in ("", "_reverse")
    ]


def flatten_directions(lstm: nn.LSTM) -> None:
    """Put each layer and direction's weights of a CUDA ``lstm`` in one buffer of their own.

    The parameters stay the same objects with the same values; only their storage changes
    (``torch._cudnn_rnn_flatten_weight``, the call behind ``nn.LSTM.flatten_parameters``), so
    optimisers, DDP and state dicts are unaffected. Does nothing where the weights already are
    so, and nothing unless cuDNN would run them (a GPU, cuDNN enabled, float weights); runs
    again after anything (``.to()``, ``flatten_parameters()``) regroups them.
    """
    first = lstm.weight_ih_l0
    if not (
        first.is_cuda
        and torch._use_cudnn_rnn_flatten_weight()
        and torch.backends.cudnn.is_acceptable(first)
    ):
        return
    for weights in directions(lstm):
        storage = weights[0].untyped_storage()
        if (
            weights[0].data_ptr() == storage.data_ptr()
            and all(w.untyped_storage().data_ptr() == storage.data_ptr() for w in weights)
            and storage.nbytes() == sum(w.numel() * w.element_size() for w in weights)
        ):
            continue
        with torch.cuda.device_of(first), torch.no_grad():
            torch._cudnn_rnn_flatten_weight(
                weights, len(WEIGHTS), weights[0].shape[1], CUDNN_LSTM,
                lstm.hidden_size, 0, 1, True, False,
            )  # fmt: skip


def bilstm(
    lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run a bidirectional, batch-first ``lstm`` over right-padded sequences (module doc).

    Args:
        lstm: a bidirectional ``nn.LSTM`` with ``batch_first=True``, biases, no projection.
        x: float ``[B, T, D]``, sequence ``b`` in ``x[b, :lengths[b]]``.
        lengths: int64 ``[B]``, each in ``1..T``, on ``x``'s device.

    Returns:
        ``out [B, T, 2 H]`` (forward then reverse states of the last layer; unspecified at
        padding) and ``final [2, B, H]``, each direction's last state of the last layer
        (forward: at step ``lengths - 1``; reverse: at step 0), as ``nn.LSTM``'s ``h_n``.
        Time O(layers T B H (D + H)), one fused kernel per layer and direction.

    Raises:
        ValueError: ``lstm`` is not a bidirectional batch-first LSTM with biases.
    """
    if not (lstm.bidirectional and lstm.batch_first and lstm.bias and lstm.proj_size == 0):
        raise ValueError("bilstm needs a bidirectional batch-first nn.LSTM with biases")
    flatten_directions(lstm)
    device_type = x.device.type
    if not lstm_autocast_ok(device_type):
        with torch.autocast(device_type, enabled=False):
            return _bilstm(lstm, x.float(), lengths)
    return _bilstm(lstm, x, lengths)


def _bilstm(
    lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`bilstm` under the autocast state of the caller."""
    B, T, _ = x.shape
    H = lstm.hidden_size
    reverse = reverse_index(lengths, T)  # [B, T]
    last = (lengths - 1)[:, None, None].expand(-1, 1, H)  # [B, 1, H]
    zeros = x.new_zeros(1, B, H)
    train = torch.is_grad_enabled()
    inputs = x
    for layer in range(lstm.num_layers):
        if layer > 0 and lstm.dropout > 0:
            inputs = F.dropout(inputs, lstm.dropout, lstm.training)
        states = []
        for suffix, seq in (("", inputs), ("_reverse", _gather_steps(inputs, reverse))):
            weights = direction_weights(lstm, layer, suffix)
            # train=grad enabled: oneDNN keeps its backward workspace only in training mode.
            out, _, _ = torch.lstm(seq, (zeros, zeros), weights, True, 1, 0.0, train, False, True)
            states.append(out)  # [B, T, H], in its own time order
        forward, backward = states
        inputs = torch.cat([forward, _gather_steps(backward, reverse)], dim=-1)  # [B, T, 2H]
    final = torch.stack([forward.gather(1, last).squeeze(1), backward.gather(1, last).squeeze(1)])
    return inputs, final
