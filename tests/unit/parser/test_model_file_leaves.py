"""A wrong value at every leaf of an exported model file's non-tensor content (its settings and
model spec, vocabularies, metadata, and the embedded encoder's JSON files) is refused in one line
naming the file, or loads to a parser that predicts exactly as the original; never a raw
exception (issue 50). The full sweep is slow; a sample of it runs in the fast suite."""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from bockparse.modelfile import ModelError
from bockparse.parser import Parser

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"
TEST = SAMPLE / "en_ewt-ud-test.conllu"
# The wrong values planted at each leaf: a mapping, a list, a string with a newline, null, NaN,
# a huge and a negative integer.
WRONG: dict[str, Any] = {"mapping": {"x": 1}, "list": [1, [2]], "string": "x\n\ty", "null": None,
                         "nan": float("nan"), "huge": 2**70, "negative": -7}  # fmt: skip
ENCODER_JSON = ("config.json", "tokenizer_config.json")
SAMPLED_LEAVES = 20  # leaves of the fast sample (all of them: the slow sweep)


def leaves(node: Any, at: tuple = ()) -> Iterator[tuple]:
    """Paths to every leaf of a JSON value (lists: their first and last item), the empty
    containers included."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from leaves(value, (*at, key))
    elif isinstance(node, list) and node:
        for index in sorted({0, len(node) - 1}):
            yield from leaves(node[index], (*at, index))
    else:
        yield at


@pytest.fixture(scope="module")
def original(smoke_run, tmp_path_factory):
    """The exported model file's content, its JSON parts decoded, a few test sentences and the
    original's predictions of them."""
    path = tmp_path_factory.mktemp("leaves") / "model.pt"
    parser = Parser.load(smoke_run)
    parser.save(path)
    content = torch.load(path, weights_only=True)
    parts = {"config": json.loads(content["config"])}
    for name in ENCODER_JSON:
        parts[name] = json.loads(bytes(content["encoder_files"][name].numpy()))
    sentences = parser.sentences(TEST)[:12]
    expected = [(s.heads, s.rels) for s in Parser.load(path).predict(sentences)]
    return content, parts, sentences, expected


def all_leaves(parts: dict[str, Any]) -> list[tuple]:
    return [(part, *leaf) for part, tree in parts.items() for leaf in leaves(tree)]


def plant(original, leaf: tuple, value: Any, path: Path) -> Path:
    content, parts, _, _ = original
    content, parts = dict(content), copy.deepcopy(parts)
    node = parts
    for key in leaf[:-1]:
        node = node[key]
    node[leaf[-1]] = value
    content["config"] = json.dumps(parts["config"])
    content["encoder_files"] = dict(content["encoder_files"])
    for name in ENCODER_JSON:
        encoded = json.dumps(parts[name]).encode()
        content["encoder_files"][name] = torch.frombuffer(bytearray(encoded), dtype=torch.uint8)
    torch.save(content, path)
    return path


def check(original, leaf: tuple, tmp_path: Path) -> dict[str, int]:
    """Plant each wrong value at ``leaf``; a refusal must be one line naming the file, an
    accepted file must predict as the original. Returns the outcome counts."""
    _, _, sentences, expected = original
    outcome = {"refused": 0, "identical": 0}
    for kind, value in WRONG.items():
        path = plant(original, leaf, value, tmp_path / "planted.pt")
        try:
            parser = Parser.load(path)
        except ModelError as e:
            message = str(e)
            assert len(message.splitlines()) == 1, (leaf, kind, message)
            assert str(path) in message, (leaf, kind, message)
            outcome["refused"] += 1
            continue
        got = [(s.heads, s.rels) for s in parser.predict(sentences)]
        assert got == expected, (leaf, kind, "loaded but predicts differently")
        outcome["identical"] += 1
    return outcome


def test_the_sweep_reaches_every_part(original):
    found = all_leaves(original[1])
    assert {leaf[:2] for leaf in found} >= {("config", "settings"), ("config", "vocabs"),
                                            ("config", "metadata")}  # fmt: skip
    assert {leaf[0] for leaf in found} == {"config", *ENCODER_JSON}
    assert ("config", "settings", "model", "params", "context", "word_dim") in found
    assert math.isnan(json.loads(json.dumps(WRONG["nan"])))  # planted as a real NaN


def test_a_wrong_value_at_sampled_leaves_is_refused_or_harmless(original, tmp_path):
    found = all_leaves(original[1])
    spec = [leaf for leaf in found if leaf[:3] == ("config", "settings", "model")]
    rest = [leaf for leaf in found if leaf not in spec]
    sample = spec[::3] + random.Random(0).sample(rest, SAMPLED_LEAVES - len(spec[::3]))
    for leaf in sample:
        check(original, leaf, tmp_path)


@pytest.mark.slow
def test_a_wrong_value_at_every_leaf_is_refused_or_harmless(original, tmp_path):
    totals = {"refused": 0, "identical": 0}
    for leaf in all_leaves(original[1]):
        for key, count in check(original, leaf, tmp_path).items():
            totals[key] += count
    assert totals["refused"] > 0 and totals["identical"] > 0, totals
