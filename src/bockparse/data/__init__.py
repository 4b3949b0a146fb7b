"""CoNLL-U data layer: reading, validation, writing, vocabularies, batching, the data module.

Public API::

    read_conllu(path, single_root=, on_malformed=) -> [Sentence]; check_conllu, write_conllu
    Vocabs.build(train_sentences, min_word_freq=), Vocabs.save/load, base_relation
    ParserDataset, Batch, Collator, TokenBudgetSampler, write_predictions
    ParserDataModule (conf/data/*.yaml), pool_pieces (wordpieces -> words)

The torch, transformers and Lightning parts load on first use, so that ``bockparse-check``
starts in a fraction of a second.
"""

from importlib import import_module

from .conllu import (
    DataError,
    Problem,
    Sentence,
    check_conllu,
    parse_conllu,
    read_conllu,
    write_conllu,
)
from .vocab import PAD_INDEX, ROOT_INDEX, UNK_INDEX, UNKNOWN_REL, Vocab, Vocabs, base_relation

_LAZY = {
    "Batch": "batch",
    "Collator": "batch",
    "TokenBudgetSampler": "batch",
    "ParserDataModule": "datamodule",
    "ParserDataset": "dataset",
    "write_predictions": "dataset",
    "Subwords": "subwords",
    "WordPieces": "subwords",
    "load_tokenizer": "subwords",
    "pool_pieces": "subwords",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PAD_INDEX",
    "ROOT_INDEX",
    "UNKNOWN_REL",
    "UNK_INDEX",
    "DataError",
    "Problem",
    "Sentence",
    "Vocab",
    "Vocabs",
    "base_relation",
    "check_conllu",
    "parse_conllu",
    "read_conllu",
    "write_conllu",
    *_LAZY,
]
