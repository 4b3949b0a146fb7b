"""Use a trained parser: ``Parser.load(path)``, then ``predict``, ``evaluate`` or ``save``.

A thin facade over three parts: :mod:`.files` reads a run folder, a checkpoint or a model file
into a model (data, never code: :mod:`bockparse.modelfile`) and writes model files;
:mod:`.inputs` turns CoNLL-U files, ``Sentence`` objects and pre-tokenized sentences into
batches; :mod:`.settings` holds what a parser needs from its run.

Prediction is the training code's (:func:`bockparse.predict.predict_trees`): heads from a
registry decoder under the single-root constraint (the run's decoder unless another is asked
for), each word's relation the best one at its predicted head, batches of at most
``batch_size`` words sorted by length, as in development evaluation; long sentences span
several encoder windows (:mod:`bockparse.data.subwords`), never truncated. Evaluation counts
with :func:`bockparse.metrics.batch_counts`, so a run's test file gives its ``metrics.json``
scores exactly.

A model with a joint tagger (``model.tagger``: ``model=biaffine-tagger``,
``biaffine-notags-tagger``) parses words alone: the tag inputs it reads come from its tagger
wherever the input lacks them, or always with ``tags="predicted"``
(:func:`.inputs.input_tags`); its tags are written into the output's UPOS, XPOS and FEATS only
when asked (``write_tags``; pre-tokenized sentences get them in the columns they lack).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from ..data.batch import Batch
from ..data.conllu import Sentence, read_conllu, source_name
from ..data.subwords import WordPieces
from ..data.vocab import Vocabs, base_relation_ids
from ..decoders import get_decoder
from ..hardware import AUTO, AUTOCAST_DTYPES, resolve_precision, warn_if_emulated
from ..metrics import COUNTS, batch_counts, scores, tag_counts
from ..modelfile import ModelError
from ..predict import predict_trees, sentence_rows
from . import files
from .files import FORMAT, FORMAT_VERSION, Loaded
from .inputs import (
    LONG_SENTENCE_WORDS,
    batches,
    check_tags,
    input_tags,
    missing_tags,
    parsed,
    read_sentences,
    report_unknown,
    tagger_fields,
    warn_long,
)
from .settings import RunSettings, checked_settings, run_settings

__all__ = ["FORMAT", "FORMAT_VERSION", "ModelError", "Parser", "RunSettings", "checked_settings",
           "run_settings"]  # fmt: skip

Progress = Callable[[int, int], None]
"""``progress(sentences_done, sentences_total)``, called after each batch."""

PROGRESS_DELAY = 2.0
"""Seconds of parsing before the progress bar a terminal gets unasked shows (a large input)."""


@contextlib.contextmanager
def progress_report(progress: bool | Progress | None, total: int) -> Iterator[Progress | None]:
    """What :meth:`Parser.predict` reports progress with: ``progress`` itself when it is a
    callable; a tqdm bar on standard error when ``True``, or when ``None`` and standard error is
    a terminal (then only once parsing has taken :data:`PROGRESS_DELAY` seconds); else nothing.
    The bar is closed on leaving."""
    if callable(progress):
        yield progress
        return
    if not (progress or (progress is None and sys.stderr.isatty())):
        yield None
        return
    from tqdm import tqdm  # installed with the train extra (Lightning's too)

    delay = 0.0 if progress else PROGRESS_DELAY
    with tqdm(total=total, unit=" sentences", file=sys.stderr, delay=delay) as bar:
        yield lambda done, _total: bar.update(done - bar.n)


def checked_device(device: torch.device | str) -> torch.device:
    """``device`` as a ``torch.device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).

    Raises:
        ValueError: an unknown device, or a CUDA one where torch sees no CUDA device.
    """
    try:
        checked = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {device!r} ({str(err).splitlines()[0]})") from None
    if checked.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: no CUDA device is available here")
    return checked


class Parser:
    """A trained parser: scorer (eval mode), vocabularies, wordpieces and the run's settings.

    Build it with :meth:`load`.

    Args:
        scorer: the scorer, weights loaded.
        vocabs: the training vocabularies.
        wordpieces: the transformer's wordpieces, or ``None`` without a transformer.
        settings: the run's settings (:func:`run_settings`).
        metadata: the run's metadata (condition, decoder, seed, best step, scores, ...).
        device: where the scorer runs.

    Attributes:
        decoder: the run's decoder (``None`` for a parser that predicts trees itself).
        relations: the relation labels, the scorer's ``R`` classes in order.
        precision: the Lightning precision predictions run in: the run's
            (``settings.precision``; ``auto``, for a run that did not record what it resolved
            to, becomes what this device computes natively) unless set (``"32-true"``: fp32).
        long_sentence_words: inputs with longer sentences are parsed with a warning (memory
            grows with the square of a sentence's length); ``None``: no warning.
    """

    def __init__(
        self,
        scorer: nn.Module,
        vocabs: Vocabs,
        wordpieces: WordPieces | None,
        settings: RunSettings,
        metadata: dict[str, Any],
        device: torch.device | str,
    ) -> None:
        self.device = torch.device(device)
        self.scorer = scorer.to(self.device).eval()
        self.precision = self.precision_here(settings.precision)
        self.long_sentence_words: int | None = LONG_SENTENCE_WORDS
        self.vocabs = vocabs
        self.wordpieces = wordpieces
        self.settings = settings
        self.metadata = metadata
        self.decoder = settings.decoder
        self.relations = list(vocabs.rels.itos)
        self._base_of = torch.tensor(base_relation_ids(self.relations)[1], dtype=torch.long)

    def precision_here(self, precision: str) -> str:
        """``precision`` for predictions on this parser's device: ``auto`` (a run that did not
        record what it resolved to, or a caller's request) becomes what the device computes
        natively (:func:`bockparse.hardware.resolve_precision`); any other is kept."""
        return resolve_precision(AUTO, self.device.type)[0] if precision == AUTO else precision

    # -- loading and saving ------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        device: torch.device | str = "cpu",
        precision: str | None = None,
    ) -> Parser:
        """Load a run folder, one of its checkpoints, or an exported model file
        (:func:`.files.load`).

        Args:
            path: a run folder (its ``checkpoints/best.ckpt`` is used), a checkpoint inside a
                run folder's ``checkpoints/``, or a model file from :meth:`save` /
                ``bockparse-export``.
            device: where the scorer runs.
            precision: ``None`` to predict as the run evaluated (its precision: a
                ``bf16-mixed`` run predicts under bf16 autocast, which reproduces its
                ``metrics.json``), a Lightning precision (``"32-true"`` for fp32), or
                ``"auto"``: bf16-mixed where this device computes bf16 natively, else fp32.

        Raises:
            ModelError: the path is none of these, or the file is refused (never run).
            DataError: the saved vocabularies are unusable.
            ValueError: an unknown device, or ``cuda`` where no CUDA device is available.
        """
        device = checked_device(device)
        parser = cls(*files.load(path), device)
        if precision is not None:
            parser.precision = parser.precision_here(precision)
        return parser

    def save(self, path: str | os.PathLike) -> int:
        """Write the model file (``bockparse-export``), atomically (:func:`.files.save`).

        Returns:
            The bytes written.
        """
        model = Loaded(self.scorer, self.vocabs, self.wordpieces, self.settings, self.metadata)
        return files.save(path, model)

    # -- input ------------------------------------------------------------------------------

    @property
    def tag_fields(self) -> list[str]:
        """The tag fields (``upos``, ``xpos``, ``feats``) the model's joint tagger predicts;
        empty without a tagger."""
        return tagger_fields(self.settings)

    def sentences(self, data: str | os.PathLike | Sequence[Any]) -> list[Sentence]:
        """The sentences of an input: a CoNLL-U file (HEAD and DEPREL ignored), ``Sentence``
        objects, or pre-tokenized sentences (lists of words, or dicts with ``forms`` and
        optionally ``upos``, ``xpos``, ``feats``); a warning when some are longer than
        :attr:`long_sentence_words`, and when more than 5 % of a tag input the model reads
        from the input is outside its vocabulary (:func:`.inputs.report_unknown`).

        Raises:
            DataError: a malformed file (``FILE:LINE: reason``) or sentence, or a tag input the
                model uses, the input lacks and no tagger of the model predicts.
        """
        sentences, source = read_sentences(data)
        check_tags(sentences, self.settings, self.vocabs, source)
        warn_long(sentences, self.long_sentence_words, source)
        read = input_tags(sentences, self.settings, self.vocabs, "auto")
        report_unknown(sentences, self.settings, self.vocabs, source, gold=False, read=read)
        return sentences

    def batches(
        self,
        sentences: Sequence[Sentence],
        batch_size: int | None = None,
        *,
        exclude_punct: str | None = None,
    ) -> Iterator[Batch]:
        """Batches of at most ``batch_size`` words (the run's when ``None``), sorted by length
        as in development evaluation, on the parser's device (:func:`.inputs.batches`)."""
        return batches(sentences, self.vocabs, self.settings, self.wordpieces, self.device,
                       batch_size, exclude_punct)  # fmt: skip

    # -- prediction -------------------------------------------------------------------------

    def autocast(self) -> contextlib.AbstractContextManager:
        """``torch.autocast`` of :attr:`precision` on the parser's device (a no-op for fp32);
        the decoders and the losses' terms cast up themselves, as in training."""
        dtype = AUTOCAST_DTYPES.get(self.precision)
        if dtype is None:
            return contextlib.nullcontext()
        warn_if_emulated(self.precision, self.device.type)
        return torch.autocast(self.device.type, dtype=dtype)

    def _decoder_name(self, decoder: str | None) -> str | None:
        if decoder is None:
            return self.decoder
        if self.decoder is None:
            raise ValueError(
                f"this parser ({self.settings.condition}) predicts trees itself; it takes no "
                f"decoder (got {decoder!r})"
            )
        get_decoder(decoder)  # unknown names fail listing the known ones
        return decoder

    def predict_batch(
        self, batch: Batch, decoder: str | None = None, gold: Sequence[str] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor] | None]:
        """Labelled single-root trees of a batch (:func:`bockparse.predict.predict_trees`), and
        its tags for a model with a tagger.

        Args:
            batch: the batch.
            decoder: as :meth:`predict`.
            gold: for a model with a tagger, the tag inputs read from the batch rather than
                the tagger's predictions (:func:`.inputs.input_tags`); ``None``: none.

        Returns:
            ``(heads, rels, tags)``: int64 ``[B, N]`` each, ``-1`` at ROOT and padding, and the
            tagger's best tags (tag field -> int64 ``[B, N]`` ids of the field's vocabulary,
            any value at ROOT and padding), ``None`` without a tagger.
        """
        name = self._decoder_name(decoder)
        with torch.inference_mode(), self.autocast():
            if name is None:
                heads, rels, tags = self.scorer.predict(batch, gold)
            else:
                scores = self.scorer(batch, gold)
                heads, rels = predict_trees(scores, batch.lengths, name)
                tags = scores.tags
        return heads, rels, None if tags is None else tags.predicted()

    def _trees(
        self,
        sentences: Sequence[Sentence],
        decoder: str | None,
        batch_size: int | None,
        progress: Progress | None,
        exclude_punct: str | None = None,
        gold: Sequence[str] | None = None,
    ) -> Iterator[tuple[Batch, torch.Tensor, torch.Tensor, dict[str, torch.Tensor] | None]]:
        name = self._decoder_name(decoder)
        done = 0
        for batch in self.batches(sentences, batch_size, exclude_punct=exclude_punct):
            heads, rels, tags = self.predict_batch(batch, name, gold)
            yield batch, heads, rels, tags
            done += len(batch)
            if progress is not None:
                progress(done, len(sentences))

    def _tag_values(
        self, batch: Batch, tags: dict[str, torch.Tensor] | None, fields: Sequence[str]
    ) -> Iterator[tuple[int, dict[str, list[str]]]]:
        """Each sentence of a batch with the tagger's tags of ``fields`` (a subset of
        :attr:`tag_fields`; none: empty mappings), as strings."""
        padded = [tags[f].cpu().numpy() for f in fields] if fields else []
        for sid, *rows in sentence_rows(batch, *padded):
            yield sid, {f: getattr(self.vocabs, f).tokens(row[1:].tolist())
                        for f, row in zip(fields, rows, strict=True)}  # fmt: skip

    def predict(
        self,
        data: str | os.PathLike | Sequence[Any],
        decoder: str | None = None,
        batch_size: int | None = None,
        *,
        progress: bool | Progress | None = None,
        tags: str = "auto",
        write_tags: bool | None = None,
    ) -> list[Sentence]:
        """Parse sentences (and tag them, with a model that has a tagger).

        Args:
            data: a CoNLL-U file (HEAD and DEPREL may be ``_``; filled ones are ignored), a list
                of ``Sentence``, or pre-tokenized sentences: lists of words
                (``[["I", "saw", "it", "."]]``), or dicts with ``forms`` and optionally
                ``upos``, ``xpos``, ``feats``. Words alone suffice for a model with a tagger
                (``model=biaffine-tagger``) or without tag inputs (``model/context=notags``);
                a model that reads UPOS, XPOS or FEATS without a tagger needs them. Raw text is
                no input here: :mod:`bockparse.rawtext` splits it into sentences and words with
                spaCy (``bockparse-predict MODEL --text TEXT``).
            decoder: a registry decoder name; ``None`` for the run's.
            batch_size: words per batch; ``None`` for the run's.
            progress: a callable called after each batch with the sentences done and the
                total; ``True`` for a progress bar on standard error, ``False`` for none;
                ``None``: a bar when standard error is a terminal and parsing takes more than
                :data:`PROGRESS_DELAY` seconds (:func:`progress_report`).
            tags: for a model with a tagger, where the tag inputs it reads come from:
                ``"auto"``, the input's columns where it has them and the tagger's where it
                lacks them; ``"predicted"``, the tagger's always (as its run was evaluated).
            write_tags: write the tagger's tags into the sentences' UPOS, XPOS and FEATS (the
                columns it predicts): ``True``, every one; ``False``, none (the input's kept
                byte for byte); ``None``, the columns pre-tokenized sentences lack (``_`` on
                every word: bockparse's placeholders), none of a file's or of ``Sentence``
                objects. Without a tagger, nothing is written.

        Returns:
            The sentences in input order, each a copy with ``heads`` (1-based, 0 for ROOT,
            exactly one word on ROOT) and ``rels`` filled (and the tags written, above), and
            the same in its ``lines``: write them with :func:`bockparse.data.write_conllu` to
            get the input file with only HEAD and DEPREL replaced (and the tags written;
            comments, multiword tokens, empty nodes kept byte for byte).

        Raises:
            DataError: as :meth:`sentences`; a string that names no file (raw text is parsed
                through spaCy, above).
            ValueError: an unknown decoder name or ``tags``, or ``tags="predicted"`` for a
                model without a tagger.
        """
        pretokenized = not isinstance(data, str | os.PathLike) and any(
            not isinstance(s, Sentence) for s in data
        )
        sentences = self.sentences(data)
        gold = input_tags(sentences, self.settings, self.vocabs, tags)
        if write_tags is None:
            absent = missing_tags(sentences, self.tag_fields, self.vocabs)
            written = [f for f in self.tag_fields if pretokenized and f in absent]
        else:
            written = self.tag_fields if write_tags else []
        out: list[Sentence | None] = [None] * len(sentences)
        itos = self.relations
        with progress_report(progress, len(sentences)) as report:
            for batch, heads, rels, predicted in self._trees(
                sentences, decoder, batch_size, report, gold=gold
            ):
                values = dict(self._tag_values(batch, predicted, written))
                rows = sentence_rows(batch, heads.cpu().numpy(), rels.cpu().numpy())
                for sid, head_row, rel_row in rows:
                    labels = [itos[r] for r in rel_row[1:].tolist()]
                    out[sid] = parsed(sentences[sid], head_row[1:].tolist(), labels, values[sid])
        return out

    def evaluate(
        self,
        path: str | os.PathLike,
        decoder: str | None = None,
        exclude_punct: str | None = None,
        batch_size: int | None = None,
        *,
        tags: str | None = None,
    ) -> dict[str, Any]:
        """UAS, LAS and LCM on a gold CoNLL-U file, with the training conventions, and the
        tag accuracies UPOS, XPOS, UFeats and AllTags of the CoNLL 2018 evaluator.

        Punctuation included unless ``exclude_punct`` names one of
        :data:`bockparse.metrics.PUNCT_EXCLUSIONS`, ROOT excluded, LAS on base relations,
        counts by :func:`bockparse.metrics.batch_counts`: on a run's test file, with the run's
        decoder, batch size and exclusion, the scores of its ``metrics.json``. A warning when
        more than 5 % of the gold relations or of a tag input the model reads from the file is
        outside its vocabularies (a model of another treebank; :func:`.inputs.report_unknown`).

        The tag scores (:func:`bockparse.metrics.tag_counts`, over the same words) compare the
        tags the parser used with the gold file's: its tagger's (a model with one, with the
        default ``tags``: its run's scores), else the gold file's own, read as they are (then
        100 %: they say which tags the attachment scores were computed with, not how well any
        tagger did).

        Args:
            tags: as :meth:`predict`; ``None``: ``"predicted"`` for a model with a tagger (as
                its run was evaluated), ``"auto"`` (the file's tags) otherwise.

        Returns:
            ``{"uas", "las", "lcm", "upos", "xpos", "ufeats", "alltags"}`` in percent and the
            integer counts ``words``, ``heads``, ``labels``, ``sentences``, ``complete`` and
            ``right_upos``, ``right_xpos``, ``right_ufeats``, ``right_alltags``.

        Raises:
            DataError: a malformed gold file (``FILE:LINE: reason``).
            ValueError: an unknown decoder, exclusion or ``tags``.
        """
        gold = read_conllu(path, single_root=False, on_malformed="error", skip_option=None)
        source = source_name(path)
        check_tags(gold, self.settings, self.vocabs, source)
        if tags is None:
            tags = "predicted" if self.tag_fields else "auto"
        given = input_tags(gold, self.settings, self.vocabs, tags)
        report_unknown(gold, self.settings, self.vocabs, source, gold=True, read=given)
        predicted = [f for f in self.tag_fields if f not in (given or ())]  # the tagger's used
        total = torch.zeros(len(COUNTS), dtype=torch.long)
        base_of = self._base_of.to(self.device)
        exclude = exclude_punct is not None
        used = list(gold)  # each sentence with the tags the parser used
        for batch, heads, rels, tags in self._trees(gold, decoder, batch_size, None,
                                                    exclude_punct, given):  # fmt: skip
            total += batch_counts(heads, rels, batch, base_of, exclude).cpu()
            for sid, values in self._tag_values(batch, tags, predicted):
                used[sid] = replace(gold[sid], **values)
        return scores(total, tag_counts(gold, used, exclude_punct))
