"""``benchmarks/utilisation.py``: its FLOP counts against hand-computed small cases and torch's
own counter, its batch shapes, and a report from tiny sizes (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from bockparse.model.biaffine import DeepBiaffine

ROOT = Path(__file__).resolve().parents[3]
PATH = ROOT / "benchmarks" / "utilisation.py"
spec = importlib.util.spec_from_file_location("utilisation", PATH)
utilisation = importlib.util.module_from_spec(spec)
sys.modules["utilisation"] = utilisation  # its dataclasses look their module up
spec.loader.exec_module(utilisation)

Biaffine, Count, Shapes, Sizes = (utilisation.Biaffine, utilisation.Count, utilisation.Shapes,
                                  utilisation.Sizes)  # fmt: skip

# Two sentences of 1 and 2 words (B = 2, N = 3: 6 padded positions, 5 real, 3 words, 8
# candidate arcs, 18 pairs); distinct words of 1, 2 and 1 characters; 3 distinct heads.
SHAPES = Shapes(lengths=(1, 2), char_lengths=(1, 2, 1), heads=3)
SIZES = Sizes(char_dim=2, char_hidden=1, word_dim=3, lstm_input=4, lstm_hidden=1, lstm_layers=2,
              biaffines=(Biaffine("arc", 2, 1, 1), Biaffine("rel", 2, 1, 2)),
              parameters=10)  # fmt: skip


def test_one_lstm_step_by_hand():
    # 4 gates x 1 unit x (2 inputs + 1 state) multiply-adds, 2 FLOPs each, and the cell's 17
    assert utilisation.lstm_flops(steps=3, input_size=2, hidden=1) == 3 * (2 * 4 * 3 + 17)


def test_a_training_update_by_hand():
    counts = utilisation.update_flops(SIZES, SHAPES)
    # character model: both directions over the 4 characters (no padding), 2 x 41 FLOPs a
    # step, then the projection of 3 final states (2 x 3 x 2 x 3 FLOPs); forward + backward = 3x
    assert counts["character model"] == Count(3 * (2 * 4 * 41 + 36), 3 * (2 * 4 * 41 + 36))
    # layer 1 (input 4): 57 FLOPs a step over 6 padded positions, 5 real; layer 2 (input 2): 41
    assert counts["BiLSTM layer 1, forward"] == Count(3 * 6 * 57, 3 * 5 * 57)
    assert counts["BiLSTM layer 2, reverse"] == Count(3 * 6 * 41, 3 * 5 * 41)
    # arc MLPs: two of them, each 2 x D x K + 2 K per position
    assert counts["arc MLPs"] == Count(3 * 2 * 6 * 6, 3 * 2 * 5 * 6)
    # arc: [u; 1] W (2 x 2 x 2 FLOPs a head position), then 2 x 2 per pair (18 padded, 8 arcs)
    assert counts["arc biaffine"] == Count(3 * (6 * 8 + 18 * 4), 3 * (5 * 8 + 8 * 4))
    # relations (O = 2): [u; 1] W at the 3 distinct gold heads, then each word's gold pair (3);
    # as run on [v; 1] zero-padded from K + 1 = 2 to 8 (2 x 2 x 8 x 2 FLOPs a head, 2 x 8 x 2 a
    # pair), needed on K + 1 (2 x 2 x 2 x 2 and 2 x 2 x 2)
    assert counts["rel at the gold heads"] == Count(3 * (3 * 64 + 3 * 32), 3 * (3 * 16 + 3 * 8))
    assert "rel biaffine" not in counts
    # loss: log-softmax over the pairs, and over the 2 relations of each of the 3 words
    assert counts["loss"] == Count(3 * (5 * 18 + 5 * 2 * 3), 3 * (5 * 8 + 5 * 2 * 3))
    assert counts["gradient clipping"] == Count(30, 30)
    assert counts["optimiser step (Adadelta)"] == Count(180, 180)
    assert counts["embeddings"] == Count(0, 0) and "auxiliary terms of the arc scores" not in counts


def test_a_prediction_batch_by_hand():
    counts = utilisation.prediction_flops(SIZES, SHAPES)
    assert counts["BiLSTM layer 1, forward"] == Count(6 * 57, 5 * 57)  # forward only
    # relations at the predicted heads: [u; 1] W at the 3 distinct heads, then the 3 words' pairs
    assert counts["rel at the predicted heads"] == Count(3 * 64 + 3 * 32, 3 * 16 + 3 * 8)
    assert "rel biaffine" not in counts and counts["decoding and best relations"] == Count(0, 0)


def test_the_biaffine_counts_equal_torch_flop_counter():
    torch.manual_seed(0)
    D, K, O, B, N = 5, 3, 4, 2, 6
    m = DeepBiaffine(D, K, O, dropout=0.0, init_std=0.1)
    x = torch.randn(B, N, D, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        out = m(x)
    forward = counter.get_total_flops()
    b = Biaffine("rel", D, K, O)
    products = (utilisation.mlp_flops(B * N, b) - 2 * B * N * utilisation.MLP_UNIT * K
                + utilisation.bilinear_flops(B * N, B * N * N, b))  # fmt: skip
    assert forward == products
    with FlopCounterMode(display=False) as counter:
        out.sum().backward()
    assert counter.get_total_flops() == utilisation.BACKWARD * forward  # the convention holds
    # relations at the heads: [u; 1] W at the 4 distinct heads (0 and 2 in each sentence),
    # then the 7 words' pairs; K + 1 = 4 zero-padded to 8 as run
    heads = torch.tensor([[-1, 0, 0, 2, 2, 0], [-1, 2, 0, -1, -1, -1]])
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        m.at(x, heads)
    assert utilisation.padded_width(b) == 8
    at = utilisation.bilinear_flops(4, 7, b, width=8)
    all_pairs = utilisation.bilinear_flops(B * N, B * N * N, b)
    assert counter.get_total_flops() == products - all_pairs + at


def test_shapes_count_each_distinct_character_sequence_once():
    chars = torch.tensor([[[2, 0, 0], [5, 6, 0], [5, 6, 0], [7, 0, 0]],
                          [[2, 0, 0], [7, 0, 0], [0, 0, 0], [0, 0, 0]]])  # fmt: skip
    heads = torch.tensor([[-1, 0, 1, 1], [-1, 0, -1, -1]])
    batch = types.SimpleNamespace(chars=chars, lengths=torch.tensor([3, 1]), heads=heads)
    shapes = Shapes.of(batch)
    assert sorted(shapes.char_lengths) == [1, 1, 2] and shapes.heads == 3
    assert Shapes.of(batch, torch.tensor([[-1, 0, 0, 0], [-1, 0, -1, -1]])).heads == 2
    assert (shapes.B, shapes.N, shapes.words, shapes.positions, shapes.arcs) == (2, 4, 4, 6, 14)


def test_a_report_from_tiny_sizes(tmp_path, capsys):
    out = tmp_path / "utilisation.md"
    tiny = ["data=ewt-sample", "data.batch_size=150", "model.context.lstm_hidden=8",
            "model.context.char_hidden=4", "model.arc_hidden=4", "model.rel_hidden=4",
            "model.aux_hidden=4"]  # fmt: skip
    argv = ["--data", str(ROOT / "data" / "ud-english-ewt-sample"), "--threads", "1",
            "--batches", "1", "--repeats", "1", "--seconds", "0.01", "--output", str(out),
            "--", *tiny]  # fmt: skip
    assert utilisation.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert text == capsys.readouterr().out
    for heading in ("## The machine (same run)", "## One training update, per component",
                    "## Memory-bound parts of the update", "## Where the update's time goes",
                    "## One prediction batch, per component"):  # fmt: skip
        assert heading in text
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    for name in ("character model", "BiLSTM layer 3, reverse", "rel at the gold heads", "loss",
                 "optimiser step (Adadelta)", "rel at the predicted heads",
                 "**whole update (zero_grad, forward, loss, backward, clipping, Adadelta)**",
                 "**whole prediction (scorer, `predict_trees`)**"):  # fmt: skip
        assert name in rows
    assert "python benchmarks/utilisation.py --data" in text and "torch " in text
