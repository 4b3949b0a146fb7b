"""Checks run by Hydra before any training job starts (``hydra.callbacks`` in ``conf/train.yaml``).

:func:`setting_problems` refuses every setting that cannot work before anything is built or
created, one line per problem, all listed: the type and range of each setting in
:data:`SETTINGS` (a declarative table: sizes at least 1, dropouts in [0, 1), rates above 0,
patiences at least 1, resources within stated caps such as :data:`MAX_BATCH_WORDS` and
:func:`max_threads`), names that must exist (the decoder, the loss, the precision, the
punctuation exclusion, the encoder offline), the model's parameters through the closed model
schema (:func:`bockparse.modelfile.spec_from_config`) and the combinations that cannot train
(:func:`combination_problems`).

Most treebanks are not shipped: the licensed ones (``data=ptb``, ``ctb``) have their files as
required settings (``???``), and the full UD ones (``data=ud-english-ewt``, ``ud-chinese-gsd``)
live under the folder named by the environment variable :data:`DATA_ENV`. The shipped sample
(``data=ewt-sample``) is found inside the installed package, wherever the run starts
(:data:`SAMPLE_ENV`). :class:`RequireData` stops the run or the whole sweep at start, before a
single model is built, naming every missing setting or file and how to give it, and logs the
estimated CPU time of a budget above an hour (:func:`budget_estimate`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError, OmegaConfBaseException

from ..metrics import PUNCT_EXCLUSIONS

log = logging.getLogger("bockparse.training.checks")

SPLITS = ("train", "val", "test")
DATA_ENV = "BOCKPARSE_DATA"  # the folder holding the UD treebank folders (conf/data/ud-*.yaml)
# The shipped sample's folder (conf/data/ewt-sample.yaml reads it, falling back to the
# repository's data/ud-english-ewt-sample relative to the start folder): set by RequireData to
# :func:`sample_dir` unless the user set it.
SAMPLE_ENV = "BOCKPARSE_SAMPLE"


def sample_dir() -> Path:
    """The shipped UD English-EWT sample: ``bockparse/sample`` in an installed wheel (setup.py
    ships ``data/ud-english-ewt-sample`` there), the repository's ``data/ud-english-ewt-sample``
    in a checkout (editable install or ``PYTHONPATH=src``)."""
    packaged = Path(__file__).resolve().parents[1] / "sample"
    return packaged if packaged.is_dir() else packaged.parents[2] / "data/ud-english-ewt-sample"


def root_problem(data: DictConfig) -> str | None:
    """Why ``data.root`` cannot be resolved (the data folder's environment variable is not
    set), with how to give it; ``None`` when it resolves or is missing."""
    try:
        if not OmegaConf.is_missing(data, "root"):
            data.get("root")  # resolves ${oc.env:...}
    except InterpolationResolutionError as err:
        return (
            f"data.root cannot be resolved ({str(err).splitlines()[0]}); export {DATA_ENV}=DIR "
            "(the folder holding the treebank folders, e.g. ud-english-ewt/) or give "
            "data.root=DIR (the treebank's own folder)"
        )
    return None


def data_problems(data: DictConfig, skip: Iterable[str] = ()) -> list[str]:
    """What is wrong with the data files of a config, one line per problem (empty when fine).

    Args:
        data: the ``data`` node of a training config (``root``, ``train``, ``val``, ``test``);
            relative paths start from ``root``, itself relative to the directory the program
            started in, as in :class:`bockparse.data.datamodule.ParserDataModule`.
        skip: splits not to check (set per job by a sweep).

    Returns:
        Messages such as ``"data.train is not set"`` or ``"data.val: /x/dev.conllu does not
        exist"``.
    """
    problems: list[str] = []
    skip = set(skip)
    problem = root_problem(data)
    if problem is not None:
        return [problem]
    root = None if OmegaConf.is_missing(data, "root") else data.get("root")
    base = Path(to_absolute_path(root if root is not None else "."))
    for split in SPLITS:
        if split in skip:
            continue
        if OmegaConf.is_missing(data, split):
            problems.append(f"data.{split} is not set")
            continue
        value = data.get(split)
        if value is None:
            problems.append(f"data.{split} is null")
            continue
        path = base / Path(str(value)).expanduser()
        if not path.is_file():
            problems.append(f"data.{split}: {path} does not exist")
    return problems


# -- settings: types and ranges ----------------------------------------------------------------

MAX_BATCH_WORDS = 100_000  # words per batch (or per rank): 20x the paper's 5,000
MAX_UPDATES = 10_000_000  # 200x the paper's 50,000
MAX_WORD_CHARS = 1_000  # characters per word seen by the character model
MAX_WINDOW = 65_536  # wordpieces per encoder window


def max_threads() -> int:
    """The most threads or processes a setting may ask for: 4 per CPU of this machine
    (``torch_threads=1000000`` made torch segfault and starved every other process)."""
    return 4 * (os.cpu_count() or 1)


@dataclass(frozen=True)
class Setting:
    """What one setting must be.

    Attributes:
        kind: ``"int"``, ``"real"`` (an int or a finite float), ``"flag"`` (true or false) or
            ``"choice"`` (one of ``choices``).
        meaning: what the setting is, for the message.
        least, most: the range's bounds (``None``: unbounded); ``above``/``below`` exclude them.
        choices: the values a ``choice`` takes.
        null: ``null`` is allowed.
        length: a list of this many values, each as above (``None``: a single value).
    """

    kind: str
    meaning: str
    least: float | None = None
    most: float | None = None
    above: bool = False
    below: bool = False
    choices: tuple[Any, ...] = ()
    null: bool = False
    length: int | None = None

    def problem(self, key: str, value: Any) -> str | None:
        """Why ``value`` cannot be ``key`` (one line), or ``None`` when it can."""
        if value is None and self.null:
            return None
        if self.length is not None:
            if not isinstance(value, list | tuple) or len(value) != self.length:
                return f"{key}={value!r}: must be a list of {self.length} ({self.meaning})"
            single = Setting(self.kind, self.meaning, self.least, self.most, self.above,
                             self.below, self.choices)  # fmt: skip
            if any(single.problem(key, v) for v in value):
                return f"{key}={value!r}: each must be {single._expected()} ({self.meaning})"
            return None
        expected = self._type_problem(value)
        if expected:
            return f"{key}={value!r}: must be {expected} ({self.meaning})"
        if self.kind in ("int", "real") and not self._in_range(value):
            return f"{key}={value!r}: must be {self._range()} ({self.meaning})"
        return None

    def _type_problem(self, value: Any) -> str | None:
        nullable = " or null" if self.null else ""
        if self.kind == "flag":
            return None if isinstance(value, bool) else f"true or false{nullable}"
        if self.kind == "choice":
            if any(type(value) is type(c) and value == c for c in self.choices):
                return None
            return f"one of {', '.join(dict.fromkeys(map(str, self.choices)))}{nullable}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{'an integer' if self.kind == 'int' else 'a number'}{nullable}"
        if self.kind == "int" and not isinstance(value, int):
            return f"an integer{nullable}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"a finite number{nullable}"
        return None

    def _in_range(self, value: float) -> bool:
        if self.least is not None and (value <= self.least if self.above else value < self.least):
            return False
        return self.most is None or (value < self.most if self.below else value <= self.most)

    def _expected(self) -> str:
        kind = "an integer" if self.kind == "int" else "a number"
        return f"{kind} {self._range()}"

    def _range(self) -> str:
        low, high = _number(self.least), _number(self.most)
        lower = f"above {low}" if self.above else f"at least {low}"
        upper = f"below {high}" if self.below else f"at most {high}"
        if self.least is not None and self.most is not None:
            return f"{lower} and {upper}"
        return lower if self.least is not None else upper


def _number(value: float | None) -> str:
    return str(value) if isinstance(value, int | None) else f"{value:g}"


def integer(meaning: str, least: int, most: int | None = None, *, null: bool = False) -> Setting:
    return Setting("int", meaning, least, most, null=null)


def real(meaning: str, least: float | None = None, most: float | None = None, *,
         above: bool = False, below: bool = False, null: bool = False,
         length: int | None = None) -> Setting:  # fmt: skip
    return Setting("real", meaning, least, most, above, below, null=null, length=length)


def flag(meaning: str) -> Setting:
    return Setting("flag", meaning)


def choice(meaning: str, *choices: Any, null: bool = False) -> Setting:
    return Setting("choice", meaning, choices=choices, null=null)


# Lightning's precisions (lightning.fabric.connector's _PRECISION_INPUT) and bockparse's auto.
PRECISIONS = ("auto", "transformer-engine", "transformer-engine-float16", "16-true", "16-mixed",
              "bf16-true", "bf16-mixed", "32-true", "64-true", "64", "32", "16", "bf16", 64, 32,
              16)  # fmt: skip

# Every plain setting of conf/ a run reads, with what it must be. A key absent from the
# composed config (``loss.margin`` under loss=crf) is not checked; the model's sizes and
# dropouts are the closed model schema's (bockparse.modelfile.spec_from_config).
SETTINGS: dict[str, Setting] = {
    "seed": integer("the run seed", 0, 2**32 - 1),
    "resume": flag("continue from last.ckpt"),
    "exclude_punct": choice("punctuation left out of the scores", *PUNCT_EXCLUSIONS, null=True),
    "torch_threads": integer("torch's CPU threads, at most 4 per CPU", 1, max_threads(), null=True),
    "data.batch_size": integer("words per batch", 1, MAX_BATCH_WORDS),
    "data.batch_budget": choice("what batch_size counts under DDP", "per_rank", "total"),
    "data.min_word_freq": integer("the rarest training word kept", 1),
    "data.lowercase_words": flag("words looked up lower-cased"),
    "data.augment_nopunct": real("the chance a sentence's final punctuation is dropped", 0, 1),
    "data.max_word_chars": integer("characters per word", 1, MAX_WORD_CHARS),
    "data.on_malformed": choice("what a malformed sentence does", "error", "skip"),
    "data.single_root": flag("every gold tree has one word on ROOT"),
    "data.punct_field": choice("the column marking punctuation", "upos", "xpos"),
    "data.num_workers": integer("data loader processes, at most 4 per CPU", 0, max_threads()),
    "encoder.max_length": integer("wordpieces per window", 3, MAX_WINDOW, null=True),
    "encoder.layers": integer("transformer layers mixed", 1),
    "encoder.pooling": choice("a word's vector from its pieces", "first", "mean"),
    "encoder.lr_scale": real("the transformer's rate relative to the parser's", 0, null=True),
    "encoder.local_files_only": flag("never download the encoder"),
    "optim.stage1.lr": real("stage 1's learning rate", 0, above=True),
    "optim.stage1.weight_decay": real("stage 1's weight decay", 0),
    "optim.stage2.lr": real("stage 2's learning rate", 0, above=True),
    "optim.stage2.betas": real("Adam's betas", 0, 1, below=True, length=2),
    "optim.stage2.eps": real("Adam's epsilon", 0, above=True),
    "optim.stage2_warmup": integer("updates of stage 2's warm-up", 0),
    "optim.transformer_warmup": integer("updates of the transformer's warm-up", 0),
    "optim.max_grad_norm": real("the gradient norm clipped to", 0, above=True, null=True),
    "optim.max_steps": integer("the most updates", 1, MAX_UPDATES),
    "optim.eval_every": integer("updates between dev evaluations", 1),
    "optim.schedule.plateau_patience": integer("updates without improvement before a decay", 1),
    "optim.schedule.plateau_decay": real(
        "the plateau's decay factor", 0, 1, above=True, below=True
    ),
    "optim.schedule.plateau_threshold": real("the relative improvement that counts", 0),
    "optim.schedule.switch_patience": integer("updates without improvement before stage 2", 1),
    "optim.schedule.switch_step": integer("the update where stage 2 starts", 1),
    "optim.schedule.stop_patience": integer("stage-2 updates without improvement", 1),
    "optim.schedule.transformer_freeze": integer("updates with the transformer frozen", 0),
    "optim.schedule.stage2_transformer_lr_scale": real("stage 2's transformer rate scale", 0),
    "optim.schedule.transformer_weight_decay": real("the transformer's weight decay", 0),
    "optim.last_checkpoint.every_evaluations": integer(
        "evaluations between last.ckpt writes", 1, null=True
    ),
    "optim.last_checkpoint.every_minutes": real("minutes between last.ckpt writes", 0, above=True),
    "loss.margin": real("the hinge's cost per wrong head", 0),
    "loss.single_root": flag("the oracle's trees have one root word"),
    "loss.workers": integer("decoder threads, at most 4 per CPU", 1, max_threads(), null=True),
    "loss.canonical_ties": flag("the canonical optimum under ties"),
    "loss.value_tol": real("the tolerance on the two optima", 0),
    "trainer.precision": choice("Lightning's precision", *PRECISIONS),
    "trainer.log_every_n_steps": integer("updates between logged rows", 1),
    "trace.enabled": flag("the per-update trace"),
    "trace.ties": flag("count tied optima"),
    "trace.tol": real("the ties' tolerance", 0),
}

_ABSENT = object()


def _value(config: DictConfig, key: str) -> Any:
    """The setting ``key`` as a plain value (lists as lists), or ``_ABSENT``."""
    value = OmegaConf.select(config, key, default=_ABSENT, throw_on_missing=True)
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def _plain(config: DictConfig, key: str, default: Any = None) -> Any:
    """``key`` as a plain value, ``default`` when absent or unresolvable (reported elsewhere)."""
    try:
        value = _value(config, key)
    except OmegaConfBaseException:
        return default
    return default if value is _ABSENT else value


def range_problems(config: DictConfig) -> list[str]:
    """One line per setting of :data:`SETTINGS` of the wrong type or outside its range."""
    problems = []
    for key, setting in SETTINGS.items():
        try:
            value = _value(config, key)
        except OmegaConfBaseException as err:
            problems.append(f"{key}: {str(err).splitlines()[0]}")
            continue
        if value is not _ABSENT and (problem := setting.problem(key, value)):
            problems.append(problem)
    return problems


# -- names that must exist, the model, and combinations ------------------------------------------

# The loss classes of conf/loss/ (the transition parser's last).
LOSSES = ("bockparse.losses.StructuredHinge", "bockparse.losses.TreeCRF",
          "bockparse.losses.LocalCrossEntropy",
          "bockparse.losses.transition.TransitionLoss")  # fmt: skip
TRANSITION_LOSS = LOSSES[-1]


def decoder_problems(config: DictConfig) -> list[str]:
    """The run's decoder and the trace's shadow oracle: registered exact decoders that take
    sentences of any length (``brute`` and ``stanza-cle`` are for tests and studies)."""
    from ..decoders import DECODERS, get_decoder

    usable = [n for n in DECODERS if get_decoder(n).max_words is None]
    problems = []
    for key in ("decoder", "trace.shadow"):
        name = _plain(config, key)
        if name is None or (isinstance(name, str) and name in usable):
            continue
        why = "an unknown decoder"
        if isinstance(name, str) and name in DECODERS:
            why = f"decodes at most {get_decoder(name).max_words} words (a test oracle)"
        elif name == "stanza-cle":
            why = "Stanza's CL/E needs log-probabilities under the root constraint (studies only)"
        problems.append(f"{key}={name!r}: {why}; a run decodes with one of {', '.join(usable)}")
    return problems


def combination_problems(config: DictConfig) -> list[str]:
    """Model x loss, model x decoder, the punctuation exclusion x the data's punctuation, and
    a parser with no input at all."""
    from ..metrics import check_punct_exclusion

    problems = []
    model = str(_plain(config, "model._target_", ""))
    loss = str(_plain(config, "loss._target_", ""))
    decoder = _plain(config, "decoder")
    transition = model.endswith(".TransitionParser")
    if loss not in LOSSES:
        problems.append(f"loss {loss!r}: unknown; the losses are conf/loss/'s (loss=hinge, "
                        "crf, local-ce or transition)")  # fmt: skip
    elif transition != (loss == TRANSITION_LOSS):
        problems.append(
            f"model {model.rsplit('.', 1)[-1] or None} with loss {loss.rsplit('.', 1)[-1]}: "
            "the transition parser (model=transition) trains with loss=transition and only "
            "with it (condition=arc-standard or arc-eager chooses both)"
        )
    paired = not problems  # else which decoder fits is moot
    if paired and transition and decoder is not None:
        problems.append(f"decoder={decoder!r} with model=transition: the transition parser "
                        "decodes itself (loss=transition sets decoder=null)")  # fmt: skip
    elif paired and not transition and model and decoder is None:
        problems.append("decoder=null: a graph parser needs a decoder (e.g. decoder=bock)")
    exclude = _plain(config, "exclude_punct")
    if isinstance(exclude, str) and exclude in PUNCT_EXCLUSIONS:
        try:
            check_punct_exclusion(exclude, _plain(config, "data.punct_field"),
                                  _plain(config, "data.punct_tags") or ())  # fmt: skip
        except (TypeError, ValueError) as err:
            problems.append(str(err))
    context = _plain(config, "model.context") or {}
    inputs = ("use_words", "use_chars", "use_upos", "use_xpos", "use_feats")
    if isinstance(context, dict) and not any(context.get(k) for k in inputs):
        if _plain(config, "encoder.model") is None:
            problems.append("every input is off (model.context.use_words, use_chars, use_upos, "
                            "use_xpos and use_feats false, encoder=none): the parser reads "
                            "nothing")  # fmt: skip
    return problems


def model_problem(config: DictConfig) -> str | None:
    """The model's parameters (kinds, sizes, dropouts) as the closed model schema checks them
    (:func:`bockparse.modelfile.spec_from_config`), so that every trained run can be loaded."""
    from ..modelfile import ModelError, spec_from_config

    try:
        model = OmegaConf.to_container(config.model, resolve=True)
        encoder = OmegaConf.to_container(config.encoder, resolve=True)
        spec_from_config(model, encoder, "the config")
    except ModelError as err:
        return str(err)
    except OmegaConfBaseException as err:
        return f"model: {str(err).splitlines()[0]}"
    return None


def encoder_problem(config: DictConfig) -> str | None:
    """``encoder.name_or_path`` must be a folder, an embedded name whose wheel is installed, or
    (downloads off, ``encoder.local_files_only``) a hub name in the local Hugging Face cache."""
    name = _plain(config, "encoder.name_or_path")
    if name is None:
        return None
    where = f"encoder.name_or_path={name!r}"
    if not isinstance(name, str) or not name:
        return f"{where}: must be a folder or a model name"
    from ..untrusted import resolve_encoder_path

    try:
        source = resolve_encoder_path(name)
    except OSError as err:
        return f"{where}: {err}"
    if Path(source).is_dir() or _plain(config, "encoder.local_files_only", True) is False:
        return None
    if _cached_file(source, "config.json") is not None:
        return None
    return (f"{where}: no such folder, and not in the local Hugging Face cache while downloads "
            f"are off (encoder.local_files_only=true): give a folder (encoder.name_or_path=DIR), "
            f"fetch it once (huggingface-cli download {name}) or allow downloads "
            "(encoder.local_files_only=false)")  # fmt: skip


def _cached_file(repo: str, filename: str) -> str | None:
    """``filename`` of the hub model ``repo`` in the local Hugging Face cache, or ``None``."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo, filename)
    except ValueError:  # not a valid hub name (HFValidationError)
        return None
    return found if isinstance(found, str) else None


def trace_file_problem(config: DictConfig) -> str | None:
    """``trace.file`` must be a plain file name: the trace is written inside the run folder,
    next to (never over) the run's own files."""
    from .. import rundir

    name = _plain(config, "trace.file")
    own = {rundir.TRAIN_LOG, rundir.ENVIRONMENT, rundir.TIMING, rundir.METRICS, rundir.LOCK,
           rundir.CHECKPOINTS, rundir.PREDICTIONS, rundir.CSV.parts[0],
           rundir.CONFIG.parts[0]}  # fmt: skip
    if isinstance(name, str) and name == Path(name).name and "\\" not in name:
        if name not in own and name.strip(".") and not name.startswith("."):
            return None
    return (
        f"trace.file={name!r}: must be a plain file name inside the run folder (not a "
        "path, a hidden name or one of the run's own files), e.g. trace.csv"
    )


def setting_problems(config: DictConfig) -> list[str]:
    """Everything wrong with the settings of a training config, one line per problem, all
    listed (empty when all is well): :func:`range_problems`, :func:`decoder_problems`,
    :func:`combination_problems`, :func:`trace_file_problem`, :func:`encoder_problem` and
    :func:`model_problem`. Nothing is built, downloaded or created."""
    problems = range_problems(config) + decoder_problems(config)
    problems += combination_problems(config)
    problems += [p for p in (trace_file_problem(config), encoder_problem(config),
                             model_problem(config)) if p]  # fmt: skip
    return problems


# -- the budget ----------------------------------------------------------------------------------

# The basis of budget_estimate: the paper's parser (conf/model/biaffine.yaml, 3 x 400) with
# MiniLM trains about 500 words/s in fp32 on 2 CPU cores (benchmarks/results/training_step.md),
# and costs about REFERENCE_WEIGHTS multiply-adds per word by parameters_per_word (which gives
# the forward GFLOP table of that file within 10 %). Other models scale by their own count.
REFERENCE_WORDS_PER_SECOND = 500.0
REFERENCE_CORES = 2
REFERENCE_WEIGHTS = 47.3e6
RELATIONS = 50  # relation labels assumed (UD: 37 base relations, more with subtypes)
CHARS_PER_WORD = 7  # characters the character model runs per word, padding included
PIECES_PER_WORD = 1.4  # wordpieces per word (English, MiniLM's vocabulary)
LONG_BUDGET_SECONDS = 3600.0


def _encoder_size(config: DictConfig) -> tuple[int, float] | None:
    """(width, multiply-adds per word) of the run's transformer; (0, 0) without one, ``None``
    when its configuration cannot be read offline."""
    if _plain(config, "encoder.model") is None:
        return 0, 0.0
    node = _plain(config, "encoder.model.transformer") or {}
    if str(node.get("_target_", "")).endswith(".random_bert"):
        sizes = {
            "hidden_size": node.get("hidden_size"),
            "num_hidden_layers": node.get("num_layers"),
            "intermediate_size": node.get("intermediate_size"),
        }
    else:
        from ..untrusted import resolve_encoder_path

        try:
            source = Path(resolve_encoder_path(str(_plain(config, "encoder.name_or_path"))))
            name = "config.json"
            path = source / name if source.is_dir() else _cached_file(str(source), name)
            sizes = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
        except (OSError, ValueError):
            return None
    hidden, layers = sizes.get("hidden_size"), sizes.get("num_hidden_layers")
    inner = sizes.get("intermediate_size", 4 * hidden if isinstance(hidden, int) else None)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (hidden, layers, inner)):
        return None
    return hidden, layers * (4 * hidden * hidden + 2 * hidden * inner) * PIECES_PER_WORD


def parameters_per_word(config: DictConfig) -> float | None:
    """Multiply-adds per word of a forward pass, from the model's sizes: the transformer, the
    BiLSTM stack (twice for a joint tagger whose tags the model reads), the character model and
    the heads' and tagger's MLPs and biaffines (embedding lookups cost nothing); ``None`` when a
    size is not a number or the encoder cannot be read."""
    encoder = _encoder_size(config)
    ctx = _plain(config, "model.context") or {}
    model = {k: _plain(config, f"model.{k}") for k in ("arc_hidden", "rel_hidden", "aux_hidden")}
    sizes = {**ctx, **model}
    names = ("word_dim", "tag_dim", "char_dim", "char_hidden", "lstm_hidden", "lstm_layers",
             "arc_hidden", "rel_hidden", "aux_hidden")  # fmt: skip
    if encoder is None or not all(isinstance(sizes.get(n), int) for n in names):
        return None
    width, cost = encoder
    tags = sum(bool(ctx.get(k)) for k in ("use_upos", "use_xpos", "use_feats"))
    words = sizes["word_dim"] * (bool(ctx.get("use_words")) + bool(ctx.get("use_chars")))
    hidden, inputs = sizes["lstm_hidden"], words + sizes["tag_dim"] * tags + width
    tagger = _plain(config, "model.tagger")
    passes = 2 if isinstance(tagger, dict) and tags else 1  # ContextHead.contextualize
    for _ in range(sizes["lstm_layers"]):
        cost += passes * 2 * 4 * (inputs + hidden) * hidden
        inputs = 2 * hidden
    if isinstance(tagger, dict) and isinstance(tagger.get("hidden"), int):
        columns = sum(bool(tagger.get(c)) for c in ("upos", "xpos", "feats"))
        cost += columns * 2 * hidden * tagger["hidden"]
    if ctx.get("use_chars"):
        char_dim, char_hidden = sizes["char_dim"], sizes["char_hidden"]
        cost += 2 * 4 * (char_dim + char_hidden) * char_hidden * CHARS_PER_WORD
    arc, rel = sizes["arc_hidden"], sizes["rel_hidden"]
    cost += 2 * hidden * 2 * (arc + rel + sizes["aux_hidden"]) + arc * arc + RELATIONS * rel * rel
    return float(cost)


def budget_estimate(config: DictConfig) -> str | None:
    """One line giving the estimated training time of a CPU run whose budget (``optim.max_steps``
    updates of ``data.batch_size`` words) takes more than :data:`LONG_BUDGET_SECONDS`, with
    its basis; ``None`` for a shorter budget, a GPU run, or a model whose size is unknown."""
    if str(_plain(config, "trainer.accelerator", "cpu")) != "cpu":
        return None
    weights = parameters_per_word(config)
    steps, batch = _plain(config, "optim.max_steps"), _plain(config, "data.batch_size")
    if weights is None or not isinstance(steps, int) or not isinstance(batch, int):
        return None
    threads = _plain(config, "torch_threads")
    cores = threads if isinstance(threads, int) else len(os.sched_getaffinity(0))
    rate = REFERENCE_WORDS_PER_SECOND * REFERENCE_WEIGHTS / weights * cores / REFERENCE_CORES
    seconds = steps * batch / rate
    if seconds <= LONG_BUDGET_SECONDS:
        return None
    return (
        f"this budget is long on a CPU: at most {steps:,} updates of {batch:,} words, about "
        f"{seconds / 3600:,.0f} h at ~{rate:,.0f} words/s (a rough estimate: the paper's "
        f"parser with MiniLM trains ~{REFERENCE_WORDS_PER_SECOND:.0f} words/s in fp32 on "
        f"{REFERENCE_CORES} cores, benchmarks/results/training_step.md, scaled by this "
        f"model's size and {cores} cores; dev evaluations not counted, early stopping may "
        "end it sooner). experiment=ewt-sample-cpu (make train) trains in minutes, "
        "experiment=smoke in seconds"
    )


# -- the Hydra callback --------------------------------------------------------------------------


def swept_keys(config: DictConfig) -> set[str]:
    """Keys that a multirun sets per job: ``hydra.sweeper.params`` and sweep overrides."""
    keys = set((OmegaConf.select(config, "hydra.sweeper.params") or {}).keys())
    task = list(OmegaConf.select(config, "hydra.overrides.task") or [])
    for override in OverridesParser.create().parse_overrides(task):
        if override.is_sweep_override():
            keys.add(override.get_key_element())
    return {k.lstrip("+~") for k in keys}


def _skipped_splits(keys: set[str]) -> set[str] | None:
    """Splits whose files a sweep sets per job; ``None`` when it may set all of them."""
    if keys & {"data", "experiment", "data.root"}:
        return None
    return {k.split(".", 1)[1] for k in keys if k.startswith("data.") and k.count(".") == 1}


def _stop(config: DictConfig, problems: list[str]) -> None:
    name = OmegaConf.select(config, "experiment_name", default="?")
    lines = "\n".join(f"  - {p}" for p in problems)
    sys.exit(
        f"bockparse-train: experiment {name!r} needs its treebank files:\n{lines}\n"
        "Give data.train=... data.val=... data.test=... (paths, or file names in a folder "
        "given as data.root=DIR), or put them in the git-ignored conf/local/default.yaml."
    )


def _stop_if(config: DictConfig, settings: list[str], data: list[str]) -> None:
    """Exit 1 naming every problem: the settings' (one line each), then the data files'."""
    for problem in settings:
        print(f"bockparse-train: {problem}", file=sys.stderr)
    if data:
        _stop(config, data)
    if settings:
        sys.exit(1)


class RequireData(Callback):
    """Stop before training when a setting is invalid (:func:`setting_problems`) or a data
    file is not given or does not exist; log the estimate of a long CPU budget.

    Runs once per ``bockparse-train`` call: at the start of a single run, or of a multirun
    before any job is launched (settings and splits set per job by the sweep are left to the
    jobs). Each job
    also checks that its data root resolves (a sweep over experiments, ``sweep=table1-ud``,
    learns its treebanks only there): an unset data folder would fail every job alike, so the
    sweep stops at the first. Made before anything else, it points :data:`SAMPLE_ENV` at the
    shipped sample (:func:`sample_dir`) unless the user set it.
    """

    def __init__(self) -> None:
        os.environ.setdefault(SAMPLE_ENV, str(sample_dir()))

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _stop_if(config, setting_problems(config), data_problems(config.data))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        swept = swept_keys(config)  # their problems, if any, are the jobs'
        problems = [p for p in setting_problems(config) if not p.startswith(tuple(swept))]
        skip = _skipped_splits(swept)
        _stop_if(config, problems, [] if skip is None else data_problems(config.data, skip))

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        problem = root_problem(config.data)
        _stop_if(config, setting_problems(config), [] if problem is None else [problem])
        if estimate := budget_estimate(config):
            log.warning("%s", estimate)
