"""What every parser head scores from: :class:`Contextualizer`, the inputs and the BiLSTM.

Architecture (Qi et al. 2018, Stanza's ``GraphParser``; Dozat & Manning 2017):

- per position, the concatenation of the enabled inputs: word embeddings (with word dropout:
  word ids replaced by ``<unk>`` at random in training), a character BiLSTM whose final states
  are projected to the word width (:class:`CharacterModel`), UPOS, XPOS and FEATS embeddings
  (of the batch's tags, or of the tag ids a caller gives: a joint tagger's,
  :meth:`bockparse.heads.common.ContextHead.contextualize`), and the
  :class:`~bockparse.model.encoder.TransformerEncoder` vectors;
- dropout, then a multi-layer BiLSTM over ROOT and the words (padding never reaches a real
  position: :func:`bockparse.model.lstm.bilstm`, packed semantics with fused kernels), then
  dropout.

The heads of :mod:`bockparse.heads` each compose one (:class:`bockparse.heads.common.ContextHead`),
configured by their ``model.context`` node (``conf/model/context/``).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from ..data.batch import Batch
from ..data.conllu import TAG_FIELDS
from ..data.vocab import PAD_INDEX, UNK_INDEX, Vocabs
from .encoder import TransformerEncoder
from .lstm import bilstm

# The inputs other than the tags (Contextualizer.untagged_inputs): the parts before the tag
# embeddings and after them, float [B, N, *] each.
Untagged = tuple[list[torch.Tensor], list[torch.Tensor]]


class CharacterModel(nn.Module):
    """Word vectors from characters: a BiLSTM's final states, projected (no bias).

    Each distinct character sequence of the batch is run once, over its own characters only:
    the distinct words are grouped by length and each group is one fused BiLSTM call
    (:func:`~bockparse.model.lstm.bilstm`) without a padding step. One padded block of all of
    them would run every word as long as the batch's longest: 4.98 times the characters over
    an epoch of UD Chinese-GSD's 1,000-word training batches. The groups give that block's
    final states up to float rounding, and draw the same dropout masks (on the padded block of
    embeddings and on the final states).

    Args:
        num_chars: character vocabulary size (``PAD_INDEX`` pads a word's characters).
        char_dim: character embedding width.
        hidden_size: LSTM width per direction.
        output_size: width of the word vectors.
        dropout: on the character embeddings and on the final states.
    """

    def __init__(
        self, num_chars: int, char_dim: int, hidden_size: int, output_size: int, dropout: float
    ):
        super().__init__()
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=PAD_INDEX)
        self.lstm = nn.LSTM(char_dim, hidden_size, batch_first=True, bidirectional=True)
        self.projection = nn.Linear(2 * hidden_size, output_size, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.output_size = output_size

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """Encode the characters of every position.

        Args:
            chars: int64 ``[B, N, C]``, ``PAD_INDEX`` after each word's last character; an
                all-padding row (a padding position) gets the zero vector.

        Returns:
            float ``[B, N, output_size]``.
        """
        B, N, _ = chars.shape
        lengths = (chars != PAD_INDEX).sum(-1)  # [B, N]
        present = lengths > 0
        words, inverse = torch.unique(chars[present], dim=0, return_inverse=True)  # [M, C]
        word_lengths = (words != PAD_INDEX).sum(-1)  # [M]
        final = self.final_states(self.dropout(self.embedding(words)), word_lengths)
        vectors = self.projection(self.dropout(torch.cat([final[0], final[1]], dim=-1)))
        out = vectors.new_zeros(B, N, self.output_size)
        out[present] = vectors[inverse]
        return out

    def final_states(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Each direction's last state of the BiLSTM over each word, run by length groups.

        Args:
            x: float ``[M, C, char_dim]``, word ``m``'s characters in ``x[m, :lengths[m]]``.
            lengths: int64 ``[M]``, each in ``1..C``.

        Returns:
            float ``[2, M, hidden]`` (forward: at each word's last character; reverse: at its
            first), as :func:`~bockparse.model.lstm.bilstm`'s ``final``. Time
            O(sum(lengths) H (D + H)) in one call per distinct length.
        """
        order = torch.argsort(lengths, stable=True)  # [M]: shortest first
        sizes, counts = torch.unique_consecutive(lengths[order], return_counts=True)
        grouped, states, start = x[order], [], 0
        for size, count in zip(sizes.tolist(), counts.tolist(), strict=True):
            group = grouped[start : start + count, :size]  # [count, size, char_dim]
            states.append(bilstm(self.lstm, group, lengths[order[start : start + count]])[1])
            start += count
        return torch.cat(states, dim=1)[:, torch.argsort(order)]  # [2, M, hidden]


class Contextualizer(nn.Module):
    """The inputs and the BiLSTM (module doc): ``contextualize(batch)`` gives the states that
    every parser head (:mod:`bockparse.heads`) scores from; each composes one, configured by
    ``model.context`` (``conf/model/context/``).

    Args:
        vocabs: the training vocabularies (sizes of the embedding tables).
        encoder: the transformer input, or ``None`` for none.
        use_words: word embeddings of width ``word_dim``.
        word_dim: word embedding width, also the width of the character vectors.
        word_dropout: probability that a word's id is replaced by ``<unk>`` in training.
        use_chars: the character BiLSTM.
        char_dim: character embedding width.
        char_hidden: character LSTM width per direction.
        use_upos, use_xpos, use_feats: tag embeddings of width ``tag_dim`` each (FEATS is one
            tag: the whole column).
        tag_dim: tag embedding width.
        lstm_hidden: BiLSTM width per direction.
        lstm_layers: BiLSTM layers.
        dropout: on the concatenated inputs, between LSTM layers, on the LSTM output and in the
            character model.

    Attributes:
        width: ``2 * lstm_hidden``, the width of the states.
        untagged_width: the width of the inputs other than the tags (:meth:`untagged_inputs`
            concatenated).

    Raises:
        ValueError: no input is enabled.
    """

    def __init__(
        self,
        *,
        vocabs: Vocabs,
        encoder: TransformerEncoder | None,
        use_words: bool,
        word_dim: int,
        word_dropout: float,
        use_chars: bool,
        char_dim: int,
        char_hidden: int,
        use_upos: bool,
        use_xpos: bool,
        use_feats: bool,
        tag_dim: int,
        lstm_hidden: int,
        lstm_layers: int,
        dropout: float,
    ):
        super().__init__()
        self.encoder = encoder
        self.word_dropout = word_dropout

        def embedding(enabled: bool, size: int, dim: int) -> nn.Embedding | None:
            return nn.Embedding(size, dim, padding_idx=PAD_INDEX) if enabled else None

        self.word_embedding = embedding(use_words, len(vocabs.words), word_dim)
        self.upos_embedding = embedding(use_upos, len(vocabs.upos), tag_dim)
        self.xpos_embedding = embedding(use_xpos, len(vocabs.xpos), tag_dim)
        self.feats_embedding = embedding(use_feats, len(vocabs.feats), tag_dim)
        self.char_model = (
            CharacterModel(len(vocabs.chars), char_dim, char_hidden, word_dim, dropout)
            if use_chars
            else None
        )
        self.untagged_width = word_dim * (use_words + use_chars) + (
            encoder.hidden_size if encoder is not None else 0
        )
        input_size = self.untagged_width + tag_dim * (use_upos + use_xpos + use_feats)
        if input_size == 0:
            raise ValueError("the scorer needs at least one input (words, chars, tags, encoder)")
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(
            input_size,
            lstm_hidden,
            num_layers=lstm_layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if lstm_layers > 1 else 0.0,
        )
        self.width = 2 * lstm_hidden

    def untagged_inputs(self, batch: Batch) -> Untagged:
        """The inputs other than the tags, of every position: the parts before the tag
        embeddings (word embeddings, character vectors) and after them (the transformer's), in
        the order :meth:`inputs` concatenates them; computed once when the BiLSTM runs twice
        (:meth:`bockparse.heads.common.ContextHead.contextualize`).

        Returns:
            ``(before, after)``, lists of float ``[B, N, *]``.

        Raises:
            ValueError: the scorer has an encoder but the batch has no ``subwords``.
        """
        before, after = [], []
        if self.word_embedding is not None:
            words = batch.words
            if self.training and self.word_dropout > 0:
                dropped = torch.rand(words.shape, device=words.device) < self.word_dropout
                words = words.masked_fill(dropped & batch.mask, UNK_INDEX)
            before.append(self.word_embedding(words))
        if self.char_model is not None:
            before.append(self.char_model(batch.chars))
        if self.encoder is not None:
            if batch.subwords is None:
                raise ValueError(
                    "the scorer has a transformer encoder but the batch has no subwords: give "
                    "the data module the encoder's tokenizer"
                )
            after.append(self.encoder(batch.subwords))
        return before, after

    def inputs(
        self,
        batch: Batch,
        tags: Mapping[str, torch.Tensor] | None = None,
        untagged: Untagged | None = None,
    ) -> torch.Tensor:
        """The concatenated input vectors of every position.

        Args:
            batch: the batch.
            tags: the tag ids to embed, column -> int64 ``[B, N]`` for every column in
                :attr:`tag_columns`; ``None``: the batch's (``upos``, ``xpos``, ``feats``).
            untagged: :meth:`untagged_inputs` of the batch, if computed already.

        Returns:
            float ``[B, N, D]`` (before input dropout).

        Raises:
            ValueError: the scorer has an encoder but the batch has no ``subwords``.
        """
        before, after = self.untagged_inputs(batch) if untagged is None else untagged
        embedded = [
            table(getattr(batch, column) if tags is None else tags[column])
            for column, table in self.tag_tables()
        ]
        return torch.cat([*before, *embedded, *after], dim=-1)

    def tag_tables(self) -> list[tuple[str, nn.Embedding]]:
        """``(column, embedding)`` of each tag input read, in input order."""
        tables = (self.upos_embedding, self.xpos_embedding, self.feats_embedding)
        return [(c, t) for c, t in zip(TAG_FIELDS, tables, strict=True) if t is not None]

    @property
    def tag_columns(self) -> tuple[str, ...]:
        """The tag inputs read (``upos``, ``xpos``, ``feats``, in that order); empty without."""
        return tuple(c for c, _ in self.tag_tables())

    def contextualize(self, batch: Batch, inputs: torch.Tensor | None = None) -> torch.Tensor:
        """BiLSTM states of ROOT and the words.

        Args:
            batch: the batch.
            inputs: float ``[B, N, D]``, the input vectors (:meth:`inputs`, of a joint
                tagger's tag ids, say); ``None``: ``inputs(batch)``, of the batch's own tags.

        Returns:
            float ``[B, N, 2 * lstm_hidden]``, zero at padding (after output dropout).
        """
        x = self.dropout(self.inputs(batch) if inputs is None else inputs)  # [B, N, D]
        out, _ = bilstm(self.lstm, x, batch.lengths + 1)  # [B, N, 2 * lstm_hidden]
        positions = torch.arange(x.shape[1], device=x.device)
        padding = positions[None, :] > batch.lengths[:, None]  # [B, N]: after the last word
        return self.dropout(out.masked_fill(padding[..., None], 0.0))
