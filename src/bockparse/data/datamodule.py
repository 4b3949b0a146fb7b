"""``ParserDataModule``: CoNLL-U train/val/test files to token-budget ``Batch`` loaders."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import lightning.pytorch as pl
from hydra.utils import to_absolute_path
from lightning.fabric.utilities.distributed import DistributedSamplerWrapper
from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSamplerWrapper
from torch.utils.data import DataLoader, Sampler
from transformers import PreTrainedTokenizerBase

from .batch import Collator, TokenBudgetSampler
from .conllu import DataError, OnMalformed, Sentence, read_conllu
from .dataset import ParserDataset, PunctField
from .subwords import WordPieces, load_tokenizer
from .vocab import Vocabs

SPLITS = ("train", "val", "test", "predict")
_STAGE_SPLITS = {
    "fit": ("train", "val"),
    "validate": ("val",),
    "test": ("test",),
    "predict": ("predict",),
}
BatchBudget = Literal["per_rank", "total"]


def split_batches(batches: list[list[int]], parts: int) -> list[list[int]]:
    """At least ``parts`` batches (when there are that many sentences): the batch with the most
    sentences is halved until there are enough. Batches that already suffice are returned as
    they are, so evaluation under DDP scores exactly the batches one process would."""
    batches = [list(b) for b in batches]
    while len(batches) < parts:
        k = max(range(len(batches)), key=lambda i: len(batches[i]))
        if len(batches[k]) < 2:
            raise DataError(f"{sum(map(len, batches))} sentences cannot be shared among {parts} "
                            "processes: use fewer devices")  # fmt: skip
        half = len(batches[k]) // 2
        batches[k : k + 1] = [batches[k][:half], batches[k][half:]]
    return batches


class TrainLoader(DataLoader):
    """The training ``DataLoader``, resumable inside an epoch.

    Lightning keeps :meth:`state_dict` in every full checkpoint (``last.ckpt``) and gives it to
    :meth:`load_state_dict` when a run resumes, before it iterates the loader again. The
    resumed epoch then has the same shuffle (the sampler's ``(seed, epoch)``) and skips the
    batches already trained on, so that training continues with the batch an uninterrupted
    run takes next. The skipped batches are collated and dropped (milliseconds each), which
    keeps the skip right with worker processes and under DDP, where the sampler is wrapped.

    Lightning's fetcher draws batches one at a time when the loader has a length, so the count
    of batches served is the count trained on.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._served = 0  # batches the current pass has served (skipped ones included)
        self._skip = 0  # batches the next pass skips (a resumed epoch)

    def __iter__(self) -> Iterator[Any]:
        # DataLoader's iterator is made here, as without the skip: it draws its base seed
        # from torch's generator now, and reads the sampler's epoch at the first batch.
        batches = super().__iter__()
        skip, self._skip, self._served = self._skip, 0, 0
        return self._serve(batches, skip)

    def _serve(self, batches: Iterator[Any], skip: int) -> Iterator[Any]:
        for batch in batches:
            self._served += 1
            if self._served > skip:
                yield batch

    def state_dict(self) -> dict[str, int]:
        """``{"epoch": the sampler's epoch, "batches": batches served in it}``."""
        return {"epoch": int(getattr(self.sampler, "epoch", 0)), "batches": self._served}

    def load_state_dict(self, state_dict: dict[str, int]) -> None:
        """The next pass gives the rest of the saved epoch."""
        if hasattr(self.sampler, "set_epoch"):  # worker processes read it before Lightning sets it
            self.sampler.set_epoch(state_dict["epoch"])
        self._skip = state_dict["batches"]


class ParserDataModule(pl.LightningDataModule):
    """Train/val/test (and predict) data of a parser, configured from ``conf/data/*.yaml``.

    Vocabularies come from the training file only, unless given (prediction with a trained
    model); they are part of ``state_dict``, so Lightning checkpoints carry them. Training
    batches are shuffled per epoch from ``seed``; evaluation batches are sorted by length, and
    ``Batch.sentence_ids`` restores file order (see ``write_predictions``).

    Args:
        root: folder that relative file paths are resolved against (itself resolved against
            the directory the program started in, as Hydra's ``to_absolute_path``), or
            ``None`` for that directory.
        train, val, test: CoNLL-U files; ``None`` for a split not used.
        batch_size: word budget per batch (per update, see ``batch_budget``).
        min_word_freq: words seen fewer times in training become ``<unk>`` (Stanza's
            ``word_cutoff``).
        lowercase_words: the word vocabulary counts and looks up lower-cased forms (Stanza
            1.15's; :meth:`Vocabs.build`); characters keep their case. The saved vocabulary
            carries it, so a trained model looks words up the same way.
        augment_nopunct: the probability that a training sentence ending in punctuation is
            shown without it, each epoch (Stanza 1.15's ``augment_nopunct``;
            :class:`TokenBudgetSampler`); 0 for never.
        max_word_chars: characters kept per word for the character model.
        on_malformed: ``"error"`` or ``"skip"`` (see ``read_conllu``).
        single_root: require exactly one word on ROOT in every file.
        punct_field: ``"upos"`` or ``"xpos"``, the column marking punctuation.
        punct_tags: the punctuation tags of that column.
        seed: the run seed, for the training shuffle.
        num_workers: ``DataLoader`` worker processes.
        predict: the file to predict on; ``None`` uses ``test``.
        tokenizer: a Hugging Face tokenizer, a local folder holding one, or ``None`` for no
            transformer input.
        max_length: the encoder's longest input in pieces, specials included; ``None`` takes
            the tokenizer's ``model_max_length``.
        vocabs: saved vocabularies (object or JSON file from ``Vocabs.save``), or ``None`` to
            build them from ``train``.
        batch_budget: how ``batch_size`` is read when training on several processes (Lightning
            DDP, ``world_size`` ranks): ``"per_rank"``, each rank packs its own batches of
            ``batch_size`` words, so one update sees about ``world_size * batch_size`` words;
            ``"total"``, ``batch_size`` is the update's budget over all ranks and each rank
            packs ``batch_size // world_size`` words (the Bock paper's 5,000-word update at
            any scale). One process: both are the same.

    Under DDP, every rank builds the same training batches for the epoch and takes every
    ``world_size``-th one (Lightning's ``DistributedSamplerWrapper``: the same number of batches
    on every rank, the first ones repeated to even out, deterministic per seed and epoch).
    Evaluation batches are the single-process batches dealt out the same way without padding
    (Lightning's ``UnrepeatedDistributedSamplerWrapper``), so every sentence is scored exactly
    once, by the same batch as in one process.

    Raises:
        DataError: a bad setting, tokenizer or vocabulary file.
    """

    def __init__(
        self,
        *,
        root: str | None,
        train: str | None,
        val: str | None,
        test: str | None,
        batch_size: int,
        min_word_freq: int,
        max_word_chars: int,
        on_malformed: OnMalformed,
        single_root: bool,
        punct_field: PunctField,
        punct_tags: Sequence[str],
        seed: int,
        num_workers: int,
        predict: str | None = None,
        tokenizer: PreTrainedTokenizerBase | str | None = None,
        max_length: int | None = None,
        vocabs: Vocabs | str | os.PathLike | None = None,
        batch_budget: BatchBudget = "per_rank",
        lowercase_words: bool = False,
        augment_nopunct: float = 0.0,
    ):
        super().__init__()
        if on_malformed not in ("error", "skip"):
            raise DataError(f"on_malformed must be 'error' or 'skip', got {on_malformed!r}")
        base = Path(to_absolute_path(root if root is not None else "."))
        self.paths = {
            split: None if p is None else Path(os.path.normpath(base / Path(p).expanduser()))
            for split, p in zip(SPLITS, (train, val, test, predict or test), strict=True)
        }
        if batch_budget not in ("per_rank", "total"):
            raise DataError(f"batch_budget must be 'per_rank' or 'total', got {batch_budget!r}")
        self.batch_size = batch_size
        self.batch_budget = batch_budget
        if not 0.0 <= augment_nopunct <= 1.0:
            raise DataError(f"augment_nopunct must be a probability in [0, 1], got "
                            f"{augment_nopunct}")  # fmt: skip
        self.min_word_freq = min_word_freq
        self.lowercase_words = lowercase_words
        self.augment_nopunct = augment_nopunct
        self.max_word_chars = max_word_chars
        self.on_malformed = on_malformed
        self.single_root = single_root
        self.punct_field = punct_field
        self.punct_tags = list(punct_tags)
        self.seed = seed
        self.num_workers = num_workers
        self.wordpieces = (
            None if tokenizer is None else WordPieces(load_tokenizer(tokenizer), max_length)
        )
        self.vocabs = (
            vocabs if vocabs is None or isinstance(vocabs, Vocabs) else Vocabs.load(vocabs)
        )
        self._sentences: dict[str, list[Sentence]] = {}
        self._datasets: dict[str, ParserDataset] = {}

    def sentences(self, split: str) -> list[Sentence]:
        """The valid sentences of a split, read (and validated) on first use."""
        if split not in SPLITS:
            raise DataError(f"unknown split {split!r}; splits: {', '.join(SPLITS)}")
        if split not in self._sentences:
            path = self.paths[split]
            if path is None:
                raise DataError(f"no {split} file configured (set data.{split})")
            self._sentences[split] = read_conllu(
                path, single_root=self.single_root, on_malformed=self.on_malformed
            )
        return self._sentences[split]

    def setup(self, stage: str | None = None) -> None:
        """Read the splits of ``stage`` (all configured ones for ``None``) and, without given
        vocabularies, build them from the training file if there is one (when testing from a
        checkpoint, Lightning calls ``setup`` before ``load_state_dict``)."""
        splits = _STAGE_SPLITS.get(stage, [s for s in SPLITS if self.paths[s] is not None])
        for split in splits:
            self.sentences(split)
        if self.vocabs is None and self.paths["train"] is not None:
            self.vocabs = Vocabs.build(
                self.sentences("train"),
                min_word_freq=self.min_word_freq,
                lowercase_words=self.lowercase_words,
            )

    def dataset(self, split: str) -> ParserDataset:
        """The tensorised dataset of a split (built on first use, with the current vocabs)."""
        if split not in self._datasets:
            if self.vocabs is None:
                raise DataError("no vocabularies: call setup() with a train file, or pass vocabs")
            self._datasets[split] = ParserDataset(
                self.sentences(split),
                self.vocabs,
                max_word_chars=self.max_word_chars,
                punct_field=self.punct_field,
                punct_tags=self.punct_tags,
                wordpieces=self.wordpieces,
            )
        return self._datasets[split]

    def _ranks(self) -> tuple[int, int]:
        """``(world_size, global_rank)`` of the attached trainer (one process without one)."""
        trainer = getattr(self, "trainer", None)
        return (1, 0) if trainer is None else (trainer.world_size, trainer.global_rank)

    def rank_batch_size(self, world_size: int) -> int:
        """Each rank's word budget per training batch (see ``batch_budget``)."""
        if self.batch_budget == "per_rank" or world_size == 1:
            return self.batch_size
        if self.batch_size < world_size:
            raise DataError(f"batch_size {self.batch_size} cannot be split among {world_size} "
                            "processes (batch_budget: total)")  # fmt: skip
        return self.batch_size // world_size

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        dataset = self.dataset(split)
        world, rank = self._ranks()
        budget = self.rank_batch_size(world) if shuffle else self.batch_size
        augment = self.augment_nopunct if shuffle else 0.0
        sampler: Sampler = TokenBudgetSampler(
            dataset.lengths,
            budget,
            shuffle=shuffle,
            seed=self.seed,
            augment_nopunct=augment,
            droppable=dataset.final_punct_droppable() if augment else None,
        )
        # Under DDP the samplers are Lightning's distributed wrappers already, which it leaves as
        # they are (it would otherwise pad evaluation shards with repeated batches).
        if world > 1 and shuffle:
            sampler = DistributedSamplerWrapper(sampler, num_replicas=world, rank=rank,
                                                shuffle=False)  # fmt: skip
        elif world > 1:
            sampler = UnrepeatedDistributedSamplerWrapper(
                split_batches(list(sampler), world), num_replicas=world, rank=rank, shuffle=False
            )
        # The sampler yields whole batches (batch_size=None): Lightning then finds it as
        # ``loader.sampler`` and calls its ``set_epoch``, which it does not on a batch_sampler.
        return (TrainLoader if shuffle else DataLoader)(
            dataset,
            sampler=sampler,
            batch_size=None,
            collate_fn=Collator(dataset),
            num_workers=self.num_workers,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader("predict", shuffle=False)

    def state_dict(self) -> dict[str, Any]:
        """``{"vocabs": ...}`` once vocabularies exist (saved in Lightning checkpoints)."""
        return {} if self.vocabs is None else {"vocabs": self.vocabs.to_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Adopt saved vocabularies; datasets built with other ones are rebuilt on next use."""
        if "vocabs" in state_dict:
            vocabs = Vocabs.from_dict(state_dict["vocabs"])
            if vocabs != self.vocabs:
                self.vocabs = vocabs
                self._datasets.clear()
