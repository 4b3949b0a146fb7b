"""What every parser head shares: :class:`ContextHead`, the constructor part that builds the
:class:`~bockparse.model.context.Contextualizer` a head scores from and the joint
:class:`~bockparse.model.tagger.Tagger` (``model.tagger``, optional), the states both read
(:meth:`ContextHead.contextualize`: the tag inputs from the tagger's predictions), the biaffines
on the states, and the :class:`~bockparse.heads.ParserHead` members that follow from them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch
from torch import nn

from ..data.batch import Batch
from ..data.vocab import UNK_INDEX, Vocabs
from ..model.biaffine import DeepBiaffine
from ..model.context import Contextualizer, Untagged
from ..model.encoder import TransformerEncoder
from ..model.tagger import Tagger, TagScores
from . import kind_of


class ContextHead(nn.Module):
    """A parser head on a :class:`~bockparse.model.context.Contextualizer` (``self.context``).

    A head class takes these arguments by name in its own signature (the model schema checks a
    file's parameters against it: :func:`bockparse.modelfile.validate_spec`), passes them here,
    then builds its own layers, biaffines by :meth:`biaffine`, in a fixed order (the order of the
    random draws of a seeded run).

    Args:
        vocabs: the training vocabularies (embedding sizes, and ``R``).
        encoder: the transformer input, or ``None`` for none.
        context: the :class:`~bockparse.model.context.Contextualizer`'s other arguments
            (``conf/model/context/``); its ``dropout`` is also the head's (in its MLPs and
            classifier).
        biaffine_init_std: initial standard deviation of every biaffine's ``W``; 0 (Stanza's):
            all zero (:class:`~bockparse.model.biaffine.DeepBiaffine`).
        tagger: the :class:`~bockparse.model.tagger.Tagger`'s arguments
            (``conf/model/tagger/``; it reads each word's states and non-tag inputs,
            :meth:`contextualize`, with the head's dropout), or ``None`` for no tagger. It must
            predict every tag column the contextualiser reads.

    Attributes:
        tagger: the tagger, or ``None``.

    Raises:
        ValueError: no input is enabled; a tag input the tagger does not predict.
    """

    # The ParserHead contract: a head that decodes itself defines predict(batch, gold).
    predict: Callable[..., tuple[torch.Tensor, torch.Tensor, TagScores | None]] | None = None

    def __init__(
        self,
        *,
        vocabs: Vocabs,
        encoder: TransformerEncoder | None,
        context: Mapping[str, Any],
        biaffine_init_std: float,
        tagger: Mapping[str, Any] | None = None,
    ):
        super().__init__()
        self.context = Contextualizer(vocabs=vocabs, encoder=encoder, **dict(context))
        self.num_rels = len(vocabs.rels)
        self.biaffine_init_std = biaffine_init_std
        self.tagger = None
        if tagger is not None:
            width = self.width + self.context.untagged_width  # what _tag gives it
            self.tagger = Tagger(vocabs=vocabs, width=width, dropout=self.dropout, **dict(tagger))
            unpredicted = [c for c in self.context.tag_columns if c not in self.tagger.columns]
            if unpredicted:
                raise ValueError(
                    f"the model reads {', '.join(c.upper() for c in unpredicted)} but its tagger "
                    f"does not predict it: set model.tagger.{unpredicted[0]}: true, or "
                    f"model.context.use_{unpredicted[0]}: false"
                )

    @property
    def kind(self) -> str:
        """The model-file kind (:data:`bockparse.heads.HEADS`)."""
        return kind_of(type(self))

    @property
    def encoder(self) -> TransformerEncoder | None:
        """The contextualiser's transformer (its own learning rate in ``ParserModule``)."""
        return self.context.encoder

    @property
    def width(self) -> int:
        """The width of the contextualiser's states."""
        return self.context.width

    @property
    def dropout(self) -> float:
        """The contextualiser's dropout probability, the head's too."""
        return self.context.dropout.p

    def contextualize(
        self, batch: Batch, gold: Collection[str] | None = None
    ) -> tuple[torch.Tensor, TagScores | None]:
        """The states the head scores from, and the tagger's scores.

        Without a tagger: the contextualiser on the batch, tag inputs (if any) the batch's.
        With a tagger, it reads each word's states and, beside them, the word's non-tag inputs
        (words, characters and the transformer's vectors; :meth:`_tag`). With a tagger and no
        tag inputs: one pass; the tagger reads the head's states. With a tagger and tag inputs,
        the BiLSTM runs twice over the same non-tag inputs (computed once, one draw of word
        dropout):

        1. every word's tag inputs set to ``UNK_INDEX``, the vocabularies' unknown tag, as "no
           tag" (no training tag maps to it: the tag vocabularies keep every training tag, so
           no index is added and model files keep theirs; an input tag unseen in training reads
           the same): states ``[B, N, W]`` -> the tagger's scores ``[B, N, K_c]``;
        2. the tag inputs from the tagger's best tags (the argmax of pass 1, no gradient), or
           the batch's for the columns in ``gold``: the states the head scores from.

        Pass 1's states train the tagger alone, pass 2's the parser alone; both passes train
        the shared inputs and BiLSTM (two dropout draws on the inputs and states).

        Args:
            batch: the batch.
            gold: the tag inputs to read from the batch instead of the tagger's predictions
                (a subset of the contextualiser's ``tag_columns``); ``None``: in training all
                when ``model.tagger.train_tags`` is ``gold`` and none when ``predicted``, in
                evaluation none. Without a tagger, the batch's are read.

        Returns:
            ``(states, tags)``: float ``[B, N, W]`` (as
            :meth:`~bockparse.model.context.Contextualizer.contextualize`) and the
            :class:`~bockparse.model.tagger.TagScores`, ``None`` without a tagger.
        """
        if self.tagger is None:
            return self.context.contextualize(batch), None
        read = self.context.tag_columns
        untagged = self.context.untagged_inputs(batch)
        if not read:
            states = self.context.contextualize(batch, self.context.inputs(batch, None, untagged))
            return states, self._tag(states, untagged)
        if gold is None:
            gold = read if self.training and self.tagger.train_tags == "gold" else ()
        words = batch.mask
        blank = {c: getattr(batch, c).masked_fill(words, UNK_INDEX) for c in read}
        pass1 = self.context.inputs(batch, blank, untagged)
        tags = self._tag(self.context.contextualize(batch, pass1), untagged)
        best = tags.predicted()
        chosen = {c: getattr(batch, c) if c in gold else torch.where(words, best[c],
                                                                      getattr(batch, c))
                  for c in read}  # fmt: skip
        pass2 = self.context.inputs(batch, chosen, untagged)
        return self.context.contextualize(batch, pass2), tags

    def _tag(self, states: torch.Tensor, untagged: Untagged) -> TagScores:
        """The tagger on each word's states and, concatenated after them, its non-tag inputs
        (:meth:`~bockparse.model.context.Contextualizer.untagged_inputs`, with the input
        dropout).

        Why the inputs: the initial states of a deep plain BiLSTM carry little of the word
        (ewt-sample-cpu's 2 x 200 stack: an MLP on its frozen initial states tags 33 % of
        held-out UPOS right after 100 Adadelta updates, on its inputs 87 %), so a tagger on the
        states alone kept the majority tag for the first hundred updates of the Table 1
        schedule, and its parser read that tag (issue 52). Stanza's tagger (highway BiLSTM
        layers) and UDPipe 2's (residual ones) give their classifiers this short path to the
        word; here only the tagger takes it, so that the parser's stack stays Table 1's.

        Args:
            states: float ``[B, N, W]``, the contextualiser's states.
            untagged: the batch's non-tag inputs, ``U`` wide in all
                (:attr:`~bockparse.model.context.Contextualizer.untagged_width`).

        Returns:
            the tagger's scores of the ``[B, N, W + U]`` concatenation.
        """
        before, after = untagged
        inputs = self.context.dropout(torch.cat([*before, *after], dim=-1))  # [B, N, U]
        return self.tagger(torch.cat([states, inputs], dim=-1))

    def biaffine(self, hidden: int, outputs: int) -> DeepBiaffine:
        """A deep biaffine scorer on the states: MLP width ``hidden``, ``outputs`` scores per
        pair, the head's dropout and ``biaffine_init_std``."""
        return DeepBiaffine(self.width, hidden, outputs, self.dropout, self.biaffine_init_std)
