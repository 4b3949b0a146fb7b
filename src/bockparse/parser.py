"""Use a trained parser: ``Parser.load(path)``, then ``predict``, ``evaluate`` or ``save``.

``Parser.load`` takes a run folder of ``bockparse-train`` (its ``checkpoints/best.ckpt``), a
Lightning checkpoint in a run folder's ``checkpoints/`` (``best.ckpt``, ``last.ckpt``, full or
weights only) or a model file written by :meth:`Parser.save` (``bockparse-export``). It
rebuilds the scorer from the closed model schema (:mod:`bockparse.modelfile`: the run's
composed model and encoder config turned into plain, validated data by :func:`run_settings`,
the one place that knows the config's keys), with the vocabularies and the weights from the
file: no Hydra application, no ``instantiate``, no training data, no hub access. The transformer
is built from its configuration only (the weights come from the file); its tokenizer comes from
the encoder's local folder or embedded name for a run, and from the model file itself for an
exported model.

Prediction is the training code's (:func:`bockparse.predict.predict_trees`): heads from a
registry decoder under the single-root constraint (the run's decoder unless another is asked
for), each word's relation the best one at its predicted head, batches of at most
``batch_size`` words sorted by length, as in development evaluation; long sentences span
several encoder windows (:mod:`bockparse.data.subwords`), never truncated. Evaluation counts
with :func:`bockparse.metrics.batch_counts`, so a run's test file gives its ``metrics.json``
scores exactly.

Model files are data, never code: they are read with ``torch.load(weights_only=True)``
(:func:`bockparse.modelfile.load_tensors`), which only admits tensors and plain containers,
strings and numbers (anything else is refused with :class:`ModelError`), and the model they
describe is validated against the schema before anything is built. A model file holds the
scorer's weights (no optimiser state), and one JSON string with the vocabularies, the settings
(the model spec among them) and the run's metadata; the transformer's configuration and
tokenizer files travel as byte tensors. Version 1 files (whose settings held the Hydra nodes)
are read through the same closed lookup.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from . import rundir
from .data.batch import Batch, Collator, TokenBudgetSampler
from .data.conllu import COLUMNS, DataError, Sentence, format_sentence, read_conllu
from .data.dataset import ParserDataset
from .data.subwords import WordPieces
from .data.vocab import SPECIALS, Vocabs, base_relation_ids
from .decoders import get_decoder
from .hardware import AUTO, resolve_precision, warn_if_emulated
from .metrics import COUNTS, PUNCT_EXCLUSIONS, batch_counts, rates
from .modelfile import (
    ModelError,
    build_scorer,
    build_transformer,
    load_tensors,
    spec_from_config,
    validate_spec,
)
from .predict import predict_trees

log = logging.getLogger("bockparse.parser")

# Sentences longer than this (words) are parsed with a warning: arc scores and exact decoding
# are quadratic in the length (memory) and worse (time); see README, "Use a trained parser".
LONG_SENTENCE_WORDS = 1000

FORMAT = "bockparse-model"
FORMAT_VERSION = 2  # 2: settings.model is the closed schema's spec; 1: Hydra nodes (read too)

# Tag inputs of the scorer: input field -> (model switch, CoNLL-U column name)
TAG_INPUTS = {
    "upos": ("use_upos", "UPOS"),
    "xpos": ("use_xpos", "XPOS"),
    "feats": ("use_feats", "FEATS"),
}

Progress = Callable[[int, int], None]
"""``progress(sentences_done, sentences_total)``, called after each batch."""


@dataclass(frozen=True)
class RunSettings:
    """What a parser needs from its run's composed config (all plain, resolved values).

    Attributes:
        model: the scorer's spec in the closed schema (:mod:`bockparse.modelfile`): ``kind``,
            ``params`` and ``encoder`` (``None`` for a parser without a transformer).
        decoder: registry name of the run's decoder; ``None`` for a parser that predicts trees
            itself (the transition parsers).
        condition: the run's condition (``hinge-bock``, ...).
        max_word_chars: characters per word seen by the character model.
        batch_size: the run's evaluation batch size in words.
        punct_field, punct_tags: how the run's data marks punctuation.
        exclude_punct: the run's punctuation exclusion for its scores, or ``None``.
        seed: the run seed.
        experiment: the run's ``experiment_name``.
        precision: the run's ``trainer.precision`` (``32-true``, ``bf16-mixed``, ...): a parser
            predicts under the autocast its run was evaluated with (:data:`AUTOCAST`), so that
            its scores are the run's.
    """

    model: dict[str, Any]
    decoder: str | None
    condition: str | None
    max_word_chars: int
    batch_size: int
    punct_field: str
    punct_tags: list[str]
    exclude_punct: str | None
    seed: int | None
    experiment: str | None
    precision: str = "32-true"  # model files exported before this field predicted in fp32


# Lightning precisions that evaluate under torch.autocast, and its dtype; any other is fp32.
AUTOCAST = {"bf16-mixed": torch.bfloat16, "bf16": torch.bfloat16,
            "16-mixed": torch.float16, "16": torch.float16}  # fmt: skip


def run_settings(cfg: Any, source: str = "the run's config") -> RunSettings:
    """The settings a parser reads from a run's composed config (``.hydra/config.yaml``).

    The one function that knows the config's key names (configs of the old layout, with a
    ``condition`` group, are read through :func:`bockparse.rundir.current_keys`).
    The model and encoder nodes become the closed schema's spec
    (:func:`bockparse.modelfile.spec_from_config`): their ``_target_`` strings are looked up
    in a fixed table, never imported.

    Args:
        cfg: the composed config (an OmegaConf ``DictConfig``).
        source: the config's file, for messages.

    Raises:
        ModelError: a needed key is missing or of the wrong type, or the model is not one of
            the project's.
    """
    from omegaconf import OmegaConf

    cfg = rundir.current_keys(cfg)

    def get(key: str, required: bool = True) -> Any:
        node = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if node is None and required:
            raise ModelError(f"{source}: no {key}")
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node

    return checked_settings(
        {
            "model": spec_from_config(get("model"), get("encoder", required=False), source),
            "decoder": get("decoder", required=False),
            "condition": get("name", required=False),
            "max_word_chars": get("data.max_word_chars"),
            "batch_size": get("data.batch_size"),
            "punct_field": get("data.punct_field"),
            "punct_tags": get("data.punct_tags"),
            "exclude_punct": get("exclude_punct", required=False),
            "seed": get("seed", required=False),
            "experiment": get("experiment_name", required=False),
            "precision": get("trainer.precision", required=False) or "32-true",
        },
        source,
    )


# RunSettings fields besides the model: their types (None allowed where listed).
_SETTING_TYPES: dict[str, tuple[type, ...]] = {
    "decoder": (str, type(None)),
    "condition": (str, type(None)),
    "max_word_chars": (int,),
    "batch_size": (int,),
    "punct_field": (str,),
    "punct_tags": (list,),
    "exclude_punct": (str, type(None)),
    "seed": (int, type(None)),
    "experiment": (str, type(None)),
    "precision": (str,),
}


def checked_settings(values: Any, source: str) -> RunSettings:
    """:class:`RunSettings` from plain ``values`` after checking every field's type and the
    model spec (:func:`bockparse.modelfile.validate_spec`).

    Raises:
        ModelError: an unknown or missing field, a value of the wrong type, or a spec the
            schema refuses; the message names ``source``.
    """
    if not isinstance(values, Mapping):
        raise ModelError(f"{source}: settings must be a mapping")
    fields = {f.name for f in dataclasses.fields(RunSettings)}
    if set(values) - fields or {"model"} - set(values):
        raise ModelError(f"{source}: settings must have the fields {sorted(fields)}; got "
                         f"{sorted(values)}")  # fmt: skip
    for name, types in _SETTING_TYPES.items():
        value = values.get(name)
        if name in values and (isinstance(value, bool) or not isinstance(value, types)):
            raise ModelError(f"{source}: setting {name} = {value!r} has the wrong type")
    if not all(isinstance(t, str) for t in values.get("punct_tags", [])):
        raise ModelError(f"{source}: setting punct_tags must be a list of strings")
    return RunSettings(**{**values, "model": validate_spec(values["model"], source)})


def _files_from_tensors(files: Mapping[str, torch.Tensor], folder: Path) -> None:
    for name, data in files.items():
        if Path(name).name != name:
            raise ModelError(f"encoder file name {name!r} is not a plain file name")
        (folder / name).write_bytes(data.numpy().tobytes())


def _tensors_from_folder(folder: Path) -> dict[str, torch.Tensor]:
    return {
        p.name: torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8)
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _transformer_from_files(folder: Path) -> nn.Module:
    from transformers import AutoConfig, AutoModel

    from .model.encoder import without_pooler

    return without_pooler(AutoModel.from_config(AutoConfig.from_pretrained(folder)))


def _vocabs_of_checkpoint(path: Path, checkpoint: Mapping[str, Any]) -> Vocabs:
    """The vocabularies a Lightning checkpoint carries (the data module's state)."""
    for value in checkpoint.values():
        if isinstance(value, dict) and isinstance(value.get("vocabs"), dict):
            return Vocabs.from_dict(value["vocabs"])
    raise ModelError(f"{path}: the checkpoint carries no vocabularies (not a bockparse run?)")


def _scorer_state(path: Path, state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The scorer's weights from a LightningModule state dict (keys ``scorer.*``)."""
    prefix = "scorer."
    state = {k[len(prefix) :]: v for k, v in state_dict.items() if k.startswith(prefix)}
    if not state:
        raise ModelError(f"{path}: the checkpoint holds no scorer weights")
    return state


def _run_precision(run_dir: Path, device: torch.device | str) -> str:
    """The precision a run with ``trainer.precision: auto`` used (its ``environment.json``);
    for a run without one (stopped before training), what ``auto`` gives on this machine."""
    path = run_dir / rundir.ENVIRONMENT
    try:
        precision = json.loads(path.read_text(encoding="utf-8"))["precision"]
    except FileNotFoundError:
        return resolve_precision(AUTO, torch.device(device).type)[0]
    except (ValueError, KeyError, TypeError) as e:
        raise ModelError(f"{path}: damaged ({e!r}); it should name the run's precision") from None
    if precision not in (*AUTOCAST, "32-true", "32"):
        raise ModelError(f"{path}: unknown precision {precision!r}")
    return str(precision)


def _words(index: int, item: Any) -> Sentence:
    """A sentence from pre-tokenized input: a list of words, or a mapping with ``forms`` and
    optionally ``upos``, ``xpos``, ``feats`` (lists as long as ``forms``)."""
    where = f"sentence {index}"
    if isinstance(item, Mapping):
        unknown = set(item) - {"forms", *TAG_INPUTS}
        if unknown:
            raise DataError(f"{where}: unknown keys {sorted(unknown)} (forms, upos, xpos, feats)")
        if "forms" not in item:
            raise DataError(f"{where}: no 'forms' (the list of its words)")
        forms = list(item["forms"])
        tags = {f: list(item.get(f, ["_"] * len(forms))) for f in TAG_INPUTS}
    elif isinstance(item, Sequence) and not isinstance(item, str):
        forms = list(item)
        tags = {f: ["_"] * len(forms) for f in TAG_INPUTS}
    else:
        raise DataError(
            f"{where}: a {type(item).__name__}; give each sentence as a list of words or a dict "
            "with 'forms' (and optionally 'upos', 'xpos', 'feats')"
        )
    if not forms:
        raise DataError(f"{where}: no words")
    for field, values in tags.items():
        if len(values) != len(forms):
            raise DataError(f"{where}: {len(forms)} words but {len(values)} {field} values")
    lines = []
    for i, values in enumerate(
        zip(forms, tags["upos"], tags["xpos"], tags["feats"], strict=True), 1
    ):
        for value, column in zip(values, ("FORM", "UPOS", "XPOS", "FEATS"), strict=True):
            if not isinstance(value, str) or not value or {"\t", "\n", "\r"} & set(value):
                raise DataError(
                    f"{where}, word {i}: {column} {value!r} must be a non-empty string without "
                    "tabs or line breaks"
                )
        form, upos, xpos, feats = values
        lines.append("\t".join([str(i), form, "_", upos, xpos, feats, "_", "_", "_", "_"]))
    return Sentence(
        lines=lines,
        line=0,
        word_lines=list(range(len(forms))),
        forms=forms,
        lemmas=["_"] * len(forms),
        upos=tags["upos"],
        xpos=tags["xpos"],
        feats=tags["feats"],
        heads=[-1] * len(forms),
        rels=["_"] * len(forms),
    )


def _parsed(sentence: Sentence, heads: list[int], rels: list[str]) -> Sentence:
    """A copy of ``sentence`` with its predicted tree, in its fields and in its lines."""
    text = format_sentence(sentence, heads, rels)
    return replace(sentence, lines=text[:-2].split("\n"), heads=heads, rels=rels, problems=[])


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
        precision: the Lightning precision predictions run in, the run's
            (``settings.precision``) unless set (``"32-true"``: fp32).
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
        self.scorer = scorer.to(device).eval()
        self.precision = settings.precision
        self.long_sentence_words: int | None = LONG_SENTENCE_WORDS
        self.vocabs = vocabs
        self.wordpieces = wordpieces
        self.settings = settings
        self.metadata = metadata
        self.device = torch.device(device)
        self.decoder = settings.decoder
        self.relations = list(vocabs.rels.itos)
        self._base_of = torch.tensor(base_relation_ids(self.relations)[1], dtype=torch.long)

    # -- loading and saving ------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        device: torch.device | str = "cpu",
        precision: str | None = None,
    ) -> Parser:
        """Load a run folder, one of its checkpoints, or an exported model file.

        Args:
            path: a run folder (its ``checkpoints/best.ckpt`` is used), a checkpoint inside a
                run folder, or a model file from :meth:`save` / ``bockparse-export``.
            device: where the scorer runs.
            precision: ``None`` to predict as the run evaluated (its ``trainer.precision``:
                a ``bf16-mixed`` run predicts under bf16 autocast, which reproduces its
                ``metrics.json``), a Lightning precision (``"32-true"`` for fp32), or
                ``"auto"``: bf16-mixed where this device computes bf16 natively, else fp32.

        Raises:
            ModelError: the path is none of these, or the file is refused (see the module doc).
            DataError: the saved vocabularies are unusable.
        """
        path = Path(path)
        if path.is_dir():
            if not rundir.is_run_dir(path):
                raise ModelError(f"{path}: not a run folder (no {rundir.CONFIG})")
            parser = cls._load_checkpoint(path / rundir.BEST, path, device)
        else:
            content = load_tensors(path)
            if content.get("format") == FORMAT:
                parser = cls._load_exported(path, content, device)
            elif "state_dict" in content:
                try:
                    run_dir = rundir.run_dir_of(path)
                except FileNotFoundError as e:
                    raise ModelError(str(e)) from None
                parser = cls._load_checkpoint(path, run_dir, device, content)
            else:
                raise ModelError(
                    f"{path}: neither a bockparse model file nor a Lightning checkpoint"
                )
        if precision == AUTO:
            precision = resolve_precision(AUTO, parser.device.type)[0]
        if precision is not None:
            parser.precision = precision
        return parser

    @classmethod
    def _load_checkpoint(
        cls,
        path: Path,
        run_dir: Path,
        device: torch.device | str,
        content: dict[str, Any] | None = None,
    ) -> Parser:
        from omegaconf import OmegaConf

        from .model.encoder import load_encoder_tokenizer

        if content is None:
            content = load_tensors(path)
        config = run_dir / rundir.CONFIG
        try:
            settings = run_settings(OmegaConf.load(config), str(config))
        except ModelError:
            raise
        except Exception as e:  # a damaged YAML file: OmegaConf/yaml raise many types
            raise ModelError(f"{config}: not a readable run config ({type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''})") from None  # fmt: skip
        if settings.precision == AUTO:
            settings = replace(settings, precision=_run_precision(run_dir, device))
        vocabs = _vocabs_of_checkpoint(path, content)
        wordpieces = transformer = None
        encoder = settings.model["encoder"]
        if encoder is not None:
            tokenizer = load_encoder_tokenizer(encoder["tokenizer"], local_files_only=True)
            wordpieces = WordPieces(tokenizer, encoder["max_length"])
            transformer = build_transformer(encoder)
        metadata = {
            "condition": settings.condition,
            "decoder": settings.decoder,
            "seed": settings.seed,
            "experiment": settings.experiment,
            "checkpoint": path.name,
            "step": content.get("global_step"),
        }
        metrics = run_dir / rundir.METRICS
        if metrics.is_file():
            metadata["metrics"] = rundir.read_json(metrics)
        scorer = build_scorer(settings.model, vocabs, transformer)
        cls._load_weights(path, scorer, _scorer_state(path, content["state_dict"]))
        return cls(scorer, vocabs, wordpieces, settings, metadata, device)

    @classmethod
    def _load_exported(
        cls, path: Path, content: dict[str, Any], device: torch.device | str
    ) -> Parser:
        from transformers import AutoTokenizer

        version = content.get("version")
        if version not in (1, FORMAT_VERSION):
            raise ModelError(
                f"{path}: model file version {version!r}; this bockparse reads versions 1 and "
                f"{FORMAT_VERSION}"
            )
        try:
            meta = json.loads(content["config"])
            values = dict(meta["settings"])
            metadata = meta["metadata"]
            if version == 1:  # the Hydra nodes, through the same closed lookup
                encoder = values.pop("encoder")
                values["model"] = spec_from_config(values["model"], encoder, str(path))
            settings = checked_settings(values, str(path))
            vocabs = Vocabs.from_dict(meta["vocabs"])
            state = content["state_dict"]
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ModelError(f"{path}: damaged model file ({e!r})") from None
        if not isinstance(metadata, dict) or not isinstance(state, dict):
            raise ModelError(f"{path}: damaged model file (metadata or weights not a mapping)")
        wordpieces = transformer = None
        encoder = settings.model["encoder"]
        if encoder is not None:
            with tempfile.TemporaryDirectory(prefix="bockparse-encoder-") as tmp:
                _files_from_tensors(content.get("encoder_files", {}), Path(tmp))
                tokenizer = AutoTokenizer.from_pretrained(tmp, local_files_only=True)
                transformer = _transformer_from_files(Path(tmp))
            wordpieces = WordPieces(tokenizer, encoder["max_length"])
        scorer = build_scorer(settings.model, vocabs, transformer)
        cls._load_weights(path, scorer, state)
        return cls(scorer, vocabs, wordpieces, settings, metadata, device)

    @staticmethod
    def _load_weights(path: Path, scorer: nn.Module, state: Mapping[str, torch.Tensor]) -> None:
        try:
            scorer.load_state_dict(state)
        except RuntimeError as e:
            raise ModelError(
                f"{path}: the weights do not fit the model its config describes ({e})"
            ) from None

    def save(self, path: str | os.PathLike) -> int:
        """Write the model file (``bockparse-export``), atomically.

        It holds the scorer's weights, the vocabularies, the settings and the metadata, and the
        transformer's configuration and tokenizer files (so that it loads anywhere, offline); no
        optimiser state. It loads with ``torch.load(weights_only=True)``.

        Returns:
            The bytes written.
        """
        meta = {
            "settings": asdict(self.settings),
            "vocabs": self.vocabs.to_dict(),
            "metadata": self.metadata,
        }
        content: dict[str, Any] = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "config": json.dumps(meta, ensure_ascii=False),
            "state_dict": {k: v.detach().cpu() for k, v in self.scorer.state_dict().items()},
        }
        if self.wordpieces is not None:
            with tempfile.TemporaryDirectory(prefix="bockparse-encoder-") as tmp:
                self.wordpieces.tokenizer.save_pretrained(tmp)
                self.scorer.encoder.transformer.config.save_pretrained(tmp)
                content["encoder_files"] = _tensors_from_folder(Path(tmp))
        target = Path(path)
        with rundir.atomic_path(target) as tmp:
            torch.save(content, tmp)
        return target.stat().st_size

    # -- input ------------------------------------------------------------------------------

    def sentences(self, data: str | os.PathLike | Sequence[Any]) -> list[Sentence]:
        """The sentences of an input: a CoNLL-U file (HEAD and DEPREL ignored), ``Sentence``
        objects, or pre-tokenized sentences (lists of words, or dicts with ``forms`` and
        optionally ``upos``, ``xpos``, ``feats``).

        Raises:
            DataError: a malformed file (``FILE:LINE: reason``) or sentence, or a tag input the
                model uses and the input lacks.
        """
        if isinstance(data, str | os.PathLike):
            sentences = read_conllu(
                data, single_root=True, on_malformed="error", trees=False, skip_option=None
            )
            source = str(data)
        else:
            sentences = [s if isinstance(s, Sentence) else _words(i, s) for i, s in enumerate(data)]
            source = "the input"
        self._check_tags(sentences, source)
        self._warn_long(sentences, source)
        return sentences

    def _warn_long(self, sentences: Sequence[Sentence], source: str) -> None:
        """Warn once when sentences exceed :attr:`long_sentence_words` (parsed all the same)."""
        limit = self.long_sentence_words
        long = [s for s in sentences if limit is not None and len(s) > limit]
        if long:
            longest = max(long, key=len)
            log.warning("%s: %d sentence(s) longer than %d words (the longest, %d words, at line "
                        "%d): each takes memory quadratic in its length (its N x N arc scores "
                        "and the decoder's matrices) and more time; they are parsed whole, never "
                        "truncated",
                        source, len(long), limit, len(longest), longest.line)  # fmt: skip

    def _check_tags(self, sentences: Sequence[Sentence], source: str) -> None:
        """A tag input the model uses must be in the input: not ``_`` on every word, unless
        ``_`` was all the training data had."""
        if not sentences:
            return
        for field, (switch, column) in TAG_INPUTS.items():
            if not self.settings.model["params"].get(switch):
                continue
            trained = set(getattr(self.vocabs, field).itos) - set(SPECIALS) - {"_"}
            given = {v for s in sentences for v in getattr(s, field)}
            if trained and given == {"_"}:
                raise DataError(
                    f"{source}: the model uses {column} (model.{switch}: true) but the input has "
                    f"none ({column} is _ on every word): give {column} (CoNLL-U column "
                    f"{COLUMNS.index(column) + 1}, or '{field}' in each pre-tokenized sentence), "
                    "or use a model that does not need it, trained with model=biaffine-notags "
                    "(bockparse-train model=biaffine-notags ...)"
                )

    def _dataset(self, sentences: Sequence[Sentence], exclude_punct: str | None) -> ParserDataset:
        field, tags = self.settings.punct_field, self.settings.punct_tags
        if exclude_punct is not None:
            if exclude_punct not in PUNCT_EXCLUSIONS:
                known = ", ".join(PUNCT_EXCLUSIONS)
                raise ValueError(f"unknown punctuation exclusion {exclude_punct!r}; known: {known}")
            field, tag_set = PUNCT_EXCLUSIONS[exclude_punct]
            tags = sorted(tag_set)
        return ParserDataset(
            sentences,
            self.vocabs,
            max_word_chars=self.settings.max_word_chars,
            punct_field=field,
            punct_tags=tags,
            wordpieces=self.wordpieces,
        )

    def batches(
        self,
        sentences: Sequence[Sentence],
        batch_size: int | None = None,
        *,
        exclude_punct: str | None = None,
    ) -> Iterator[Batch]:
        """Batches of at most ``batch_size`` words (the run's when ``None``), sorted by length
        as in development evaluation, on the parser's device; ``Batch.sentence_ids`` index
        ``sentences``. ``exclude_punct`` sets ``Batch.punct`` to that exclusion's marks."""
        if not sentences:
            return
        dataset = self._dataset(sentences, exclude_punct)
        size = self.settings.batch_size if batch_size is None else batch_size
        collate = Collator(dataset)
        for indices in TokenBudgetSampler(dataset.lengths, size, shuffle=False, seed=0):
            yield collate(indices).to(self.device)

    # -- prediction -------------------------------------------------------------------------

    def autocast(self) -> contextlib.AbstractContextManager:
        """``torch.autocast`` of :attr:`precision` on the parser's device (a no-op for fp32);
        the decoders and the losses' terms cast up themselves, as in training."""
        dtype = AUTOCAST.get(self.precision)
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
        self, batch: Batch, decoder: str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Labelled single-root trees of a batch (:func:`bockparse.predict.predict_trees`).

        Returns:
            ``(heads, rels)``, int64 ``[B, N]``, ``-1`` at ROOT and padding.
        """
        name = self._decoder_name(decoder)
        with torch.inference_mode(), self.autocast():
            if name is None:
                return self.scorer.predict(batch)
            return predict_trees(self.scorer(batch), batch.lengths, name)

    def _trees(
        self,
        sentences: Sequence[Sentence],
        decoder: str | None,
        batch_size: int | None,
        progress: Progress | None,
        exclude_punct: str | None = None,
    ) -> Iterator[tuple[Batch, torch.Tensor, torch.Tensor]]:
        name = self._decoder_name(decoder)
        done = 0
        for batch in self.batches(sentences, batch_size, exclude_punct=exclude_punct):
            heads, rels = self.predict_batch(batch, name)
            yield batch, heads, rels
            done += len(batch)
            if progress is not None:
                progress(done, len(sentences))

    def predict(
        self,
        data: str | os.PathLike | Sequence[Any],
        decoder: str | None = None,
        batch_size: int | None = None,
        *,
        progress: Progress | None = None,
    ) -> list[Sentence]:
        """Parse sentences.

        Args:
            data: a CoNLL-U file (HEAD and DEPREL may be ``_``; filled ones are ignored), a list
                of ``Sentence``, or pre-tokenized sentences: lists of words, or dicts with
                ``forms`` and optionally ``upos``, ``xpos``, ``feats``.
            decoder: a registry decoder name; ``None`` for the run's.
            batch_size: words per batch; ``None`` for the run's.
            progress: called after each batch with the sentences done and the total.

        Returns:
            The sentences in input order, each a copy with ``heads`` (1-based, 0 for ROOT,
            exactly one word on ROOT) and ``rels`` filled, and the same in its ``lines``: write
            them with :func:`bockparse.data.write_conllu` to get the input file with only HEAD
            and DEPREL replaced (comments, multiword tokens, empty nodes kept byte for byte).

        Raises:
            DataError: as :meth:`sentences`.
            ValueError: an unknown decoder name.
        """
        sentences = self.sentences(data)
        out: list[Sentence | None] = [None] * len(sentences)
        itos = self.relations
        for batch, heads, rels in self._trees(sentences, decoder, batch_size, progress):
            heads, rels = heads.cpu().tolist(), rels.cpu().tolist()
            for b, (sid, n) in enumerate(
                zip(batch.sentence_ids.tolist(), batch.lengths.tolist(), strict=True)
            ):
                labels = [itos[r] for r in rels[b][1 : n + 1]]
                out[sid] = _parsed(sentences[sid], heads[b][1 : n + 1], labels)
        return out

    def evaluate(
        self,
        path: str | os.PathLike,
        decoder: str | None = None,
        exclude_punct: str | None = None,
        batch_size: int | None = None,
    ) -> dict[str, Any]:
        """UAS, LAS and LCM on a gold CoNLL-U file, with the training conventions.

        Punctuation included unless ``exclude_punct`` names one of
        :data:`bockparse.metrics.PUNCT_EXCLUSIONS`, ROOT excluded, LAS on base relations,
        counts by :func:`bockparse.metrics.batch_counts`: on a run's test file, with the run's
        decoder, batch size and exclusion, the scores of its ``metrics.json``.

        Returns:
            ``{"uas", "las", "lcm"}`` in percent and the integer counts ``words``, ``heads``,
            ``labels``, ``sentences``, ``complete``.

        Raises:
            DataError: a malformed gold file (``FILE:LINE: reason``).
            ValueError: an unknown decoder or exclusion.
        """
        gold = read_conllu(path, single_root=False, on_malformed="error", skip_option=None)
        self._check_tags(gold, str(path))
        total = torch.zeros(len(COUNTS), dtype=torch.long)
        base_of = self._base_of.to(self.device)
        exclude = exclude_punct is not None
        for batch, heads, rels in self._trees(gold, decoder, batch_size, None, exclude_punct):
            total += batch_counts(heads, rels, batch, base_of, exclude).cpu()
        return {**rates(total), **dict(zip(COUNTS, total.tolist(), strict=True))}
