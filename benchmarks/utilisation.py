"""Arithmetic utilisation of the Table 1 GSD parser on the CPU: FLOPs counted, time measured.

For the ``table1-ud-gsd`` preset's parser (Stanza 1.15's sizes: 3 x 400 BiLSTM, character
BiLSTM 400, biaffines 400, no transformer; fp32, the preset's ``32-true``), composed through
Hydra's compose API and built as ``bockparse-train`` builds it
(:func:`bockparse.training.train.build`), on real batches of the GSD training file (1,000 words,
the preset's), the script, in one process:

- **counts** the FLOPs of one training update and of one prediction batch from the batch's
  shapes, per component (:func:`update_flops`, :func:`prediction_flops`): as the code runs them
  (padded positions and character steps, every head-dependent pair of the arc and auxiliary
  biaffines; the relations at the gold heads alone in training, all that a loss reads, and at
  the predicted ones in prediction) and as needed (real positions and characters only);
- **times** each component on the same batches, forward and backward apart, each on its own
  with the inputs it gets in the step (character model; embeddings; each BiLSTM layer's two
  directions; the arc, relation and auxiliary biaffines and their MLPs; the loss; gradient
  clipping; the optimiser's step, also with torch's ``foreach`` and ``fused`` variants where
  they exist), the whole update as ``ParserModule.training_step`` makes it
  without Lightning (zero_grad, forward, loss, backward, clipping, Adadelta's step; also the
  first time a batch's shapes are seen, which pays oneDNN's kernel set-up) and the whole
  prediction of development batches (scorer and ``predict_trees`` under inference mode);
- **measures the machine**: its fp32 matrix-product rate at a large square product and at the
  step's own shapes (and bf16's, where the CPU computes bf16 natively), and its memory bandwidth;
- **reports** each component's GFLOP/s and its share of the best fp32 rate (the arithmetic
  limit), and where the rest of the update goes: padding, the work between the components
  (autograd, glue), the memory-bound optimiser, collation, first-seen shapes, and a
  ``torch.profiler`` split of one update into matrix products, dropout's random numbers, copies
  and indexing, allocation and fills, other operators, the autograd engine's per-node work and
  the time outside every operator (Python, dispatch).

FLOP conventions (:data:`BACKWARD` and the per-element constants below): 2 per multiply-add;
elementwise work at the per-element counts given with each constant; the backward of a counted
component is twice its forward (every operand of every product gets a gradient: all of the
parser's inputs are trained). Benchmark numbers belong to a quiet machine (no training or test
run beside it); the report records the machine, torch, the thread counts and the command.

    OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 python benchmarks/utilisation.py \\
        --data DIR/ud-chinese-gsd --threads 2 --output benchmarks/results/utilisation.md

Further config overrides follow ``--`` (the unit test runs tiny sizes on the shipped sample).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
EXPERIMENT = "table1-ud-gsd"

# -- FLOP conventions --------------------------------------------------------------------------
BACKWARD = 2  # backward FLOPs per forward FLOP of a counted component
# LSTM cell, per hidden unit and step: the two bias adds of 4 gates (8), 3 sigmoids and 2 tanh
# (5), c = f c + i g (3), h = o tanh(c) (1)
LSTM_CELL = 17
MLP_UNIT = 2  # per MLP output: bias add, ReLU
LOG_SOFTMAX = 5  # per element: max, subtract, exp, sum, log
AUX_PAIR = 16  # per pair, the arc scores' auxiliary terms: sign, product, logsigmoid (3 with
# the add), softplus + 1 (3), |h - d| - predicted, square, / 2, log1p, subtract (6), ...
AUX_WORD = 20  # per word, the auxiliary loss terms at the gold heads (gathers excluded)
# Optimiser steps and clipping, per parameter (torch's single-tensor code, weight decay on):
ADADELTA = 18  # decay (2), square_avg (4), std (2), delta (4), acc_delta (4), update (2)
ADAM = 13  # exp_avg (3), exp_avg_sq (4), denominator (3), update (3)
CLIP = 3  # the norm (2), the scaling (1)
# Bytes per parameter: what torch's single-tensor Adadelta reads and writes op by op (10 passes
# of 3 tensors and 5 of 2 ... counted below), and the least any Adadelta or Adam moves (read
# parameter, gradient and two states; write parameter and two states), and clipping's.
ADADELTA_BYTES_RUN = 4 * 30  # add 3, mul_ 2, addcmul_ 3, add 2, sqrt_ 2, add 2, sqrt_ 2,
# div_ 3, mul_ 3, mul_ 2, addcmul_ 3, add_ 3 tensors read or written
OPTIMISER_BYTES_MIN = 4 * 7
CLIP_BYTES = 4 * 3  # read for the norm; read and write for the scaling


@dataclass(frozen=True)
class Count:
    """FLOPs of a component as the code runs it and as needed (no padding, no unused pair)."""

    run: float
    needed: float

    def __add__(self, other: Count) -> Count:
        return Count(self.run + other.run, self.needed + other.needed)

    def __mul__(self, k: float) -> Count:
        return Count(self.run * k, self.needed * k)


@dataclass(frozen=True)
class Biaffine:
    """One deep biaffine scorer's sizes: ``input`` width ``D``, MLP width ``K``, ``outputs``
    per pair ``O`` (:class:`bockparse.model.biaffine.DeepBiaffine`)."""

    name: str
    input: int
    hidden: int
    outputs: int


@dataclass(frozen=True)
class Sizes:
    """The parser's sizes that its FLOPs depend on (:meth:`of` reads them from a scorer)."""

    char_dim: int
    char_hidden: int
    word_dim: int
    lstm_input: int
    lstm_hidden: int
    lstm_layers: int
    biaffines: tuple[Biaffine, ...]
    parameters: int

    @classmethod
    def of(cls, scorer) -> Sizes:
        context = scorer.context
        chars, lstm = context.char_model, context.lstm
        biaffines = tuple(
            Biaffine(name, m.head_mlp.in_features, m.head_mlp.out_features, m.weight.shape[0])
            for name in ("arc", "rel", "linearization", "distance")
            if (m := getattr(scorer, name, None)) is not None
        )
        return cls(
            char_dim=chars.lstm.input_size if chars is not None else 0,
            char_hidden=chars.lstm.hidden_size if chars is not None else 0,
            word_dim=chars.output_size if chars is not None else 0,
            lstm_input=lstm.input_size,
            lstm_hidden=lstm.hidden_size,
            lstm_layers=lstm.num_layers,
            biaffines=biaffines,
            parameters=sum(p.numel() for p in scorer.parameters()),
        )


@dataclass(frozen=True)
class Shapes:
    """What a batch's FLOPs depend on.

    Attributes:
        lengths: words per sentence.
        char_lengths: characters of each word the character model runs (each distinct
            character sequence of the batch once, ROOT's included, over its own characters:
            :meth:`bockparse.model.context.CharacterModel.final_states`).
        heads: distinct heads of the words (each sentence's ROOT or words that head another),
            of the gold trees in training and of the predicted ones in prediction.
    """

    lengths: tuple[int, ...]
    char_lengths: tuple[int, ...]
    heads: int

    @property
    def B(self) -> int:
        return len(self.lengths)

    @property
    def N(self) -> int:
        return max(self.lengths) + 1

    @property
    def words(self) -> int:
        return sum(self.lengths)

    @property
    def positions(self) -> int:
        """ROOT and the words of every sentence (the real positions)."""
        return self.words + self.B

    @property
    def arcs(self) -> int:
        """Candidate arcs of every sentence: a head (ROOT or a word) for each word."""
        return sum((n + 1) * n for n in self.lengths)

    @classmethod
    def of(cls, batch, heads: torch.Tensor | None = None) -> Shapes:
        """The shapes of ``batch`` with its gold ``heads``, or the given ones (``[B, N]``)."""
        from bockparse.data.vocab import PAD_INDEX

        chars = batch.chars[(batch.chars != PAD_INDEX).any(-1)]
        distinct = torch.unique(chars, dim=0)  # as CharacterModel.forward
        lengths = (distinct != PAD_INDEX).sum(-1)
        heads = batch.heads if heads is None else heads
        B, N = heads.shape
        rows = (heads + N * torch.arange(B)[:, None])[heads >= 0]  # as DeepBiaffine.pairs_at
        return cls(tuple(batch.lengths.tolist()), tuple(lengths.tolist()), len(rows.unique()))


# -- counting ----------------------------------------------------------------------------------


def lstm_flops(steps: int, input_size: int, hidden: int) -> int:
    """Forward FLOPs of one direction of one LSTM layer over ``steps`` steps (all rows): the
    two products ``W_ih x`` and ``W_hh h`` into 4 gates, and the cell (:data:`LSTM_CELL`)."""
    return steps * (2 * 4 * hidden * (input_size + hidden) + LSTM_CELL * hidden)


def mlp_flops(rows: int, b: Biaffine) -> int:
    """Forward FLOPs of a biaffine's two MLPs (head and dependent) over ``rows`` positions."""
    return 2 * rows * (2 * b.input * b.hidden + MLP_UNIT * b.hidden)


def bilinear_flops(rows: int, pairs: int, b: Biaffine, width: int | None = None) -> int:
    """Forward FLOPs of ``[u_h; 1]^T W_o [v_d; 1]``: ``[u; 1] W`` for ``rows`` head positions,
    then the product with ``[v_d; 1]`` for ``pairs`` head-dependent pairs; ``width``: the
    length of ``[v_d; 1]`` as run (``K + 1``, or zero-padded: :func:`padded_width`)."""
    k1 = b.hidden + 1
    width = k1 if width is None else width
    return 2 * rows * k1 * width * b.outputs + 2 * pairs * width * b.outputs


def padded_width(b: Biaffine) -> int:
    """``K + 1`` zero-padded as :meth:`bockparse.model.biaffine.DeepBiaffine.pairs_at` runs its
    products (:func:`bockparse.model.biaffine.aligned`)."""
    from bockparse.model.biaffine import aligned

    return aligned(b.hidden + 1)


def character_flops(sizes: Sizes, shapes: Shapes) -> Count:
    """Forward FLOPs of the character model: both directions over each distinct word's own
    characters (no padding step as run), the projection of the final states."""
    if sizes.char_hidden == 0:
        return Count(0, 0)
    steps = sum(shapes.char_lengths)
    projection = 2 * len(shapes.char_lengths) * 2 * sizes.char_hidden * sizes.word_dim
    flops = 2 * lstm_flops(steps, sizes.char_dim, sizes.char_hidden) + projection
    return Count(flops, flops)


def lstm_layer_inputs(sizes: Sizes) -> list[int]:
    """Each BiLSTM layer's input width."""
    return [sizes.lstm_input] + [2 * sizes.lstm_hidden] * (sizes.lstm_layers - 1)


def encoder_flops(sizes: Sizes, shapes: Shapes) -> dict[str, Count]:
    """Forward FLOPs of the parts before the biaffines: character model, embeddings (lookups:
    none), each BiLSTM layer's two directions (over every padded position as run)."""
    counts = {"character model": character_flops(sizes, shapes), "embeddings": Count(0, 0)}
    padded = shapes.B * shapes.N
    for layer, width in enumerate(lstm_layer_inputs(sizes), start=1):
        for direction in ("forward", "reverse"):
            counts[f"BiLSTM layer {layer}, {direction}"] = Count(
                lstm_flops(padded, width, sizes.lstm_hidden),
                lstm_flops(shapes.positions, width, sizes.lstm_hidden),
            )
    return counts


def update_flops(sizes: Sizes, shapes: Shapes, optimiser: str = "Adadelta") -> dict[str, Count]:
    """FLOPs of one training update, forward and backward, per component (module doc).

    As run: every padded position, all ``B N^2`` pairs of the arc and auxiliary biaffines;
    the relations at the gold heads alone (:meth:`bockparse.model.biaffine.DeepBiaffine.pairs_at`:
    ``[u_h; 1] W`` at the distinct gold heads, then one pair per word, both on ``K + 1``
    zero-padded: :func:`padded_width`). Needed: real positions and characters; candidate arcs
    for the arc and auxiliary biaffines; the relations on ``K + 1``.
    """
    counts = {name: c * (1 + BACKWARD) for name, c in encoder_flops(sizes, shapes).items()}
    padded, pairs = shapes.B * shapes.N, shapes.B * shapes.N * shapes.N
    for b in sizes.biaffines:
        counts[f"{b.name} MLPs"] = Count(mlp_flops(padded, b), mlp_flops(shapes.positions, b)) * (
            1 + BACKWARD
        )
        if b.name == "rel":
            at = Count(bilinear_flops(shapes.heads, shapes.words, b, padded_width(b)),
                       bilinear_flops(shapes.heads, shapes.words, b))  # fmt: skip
            counts["rel at the gold heads"] = at * (1 + BACKWARD)
        else:
            counts[f"{b.name} biaffine"] = Count(
                bilinear_flops(padded, pairs, b), bilinear_flops(shapes.positions, shapes.arcs, b)
            ) * (1 + BACKWARD)
    aux = sum(b.name in ("linearization", "distance") for b in sizes.biaffines)
    if aux:
        counts["auxiliary terms of the arc scores"] = Count(
            AUX_PAIR * pairs, AUX_PAIR * shapes.arcs
        ) * (1 + BACKWARD)
    rels = next((b.outputs for b in sizes.biaffines if b.name == "rel"), 0)
    per_word = LOG_SOFTMAX * rels + AUX_WORD * (aux > 0)
    counts["loss"] = Count(
        LOG_SOFTMAX * pairs + per_word * shapes.words,
        LOG_SOFTMAX * shapes.arcs + per_word * shapes.words,
    ) * (1 + BACKWARD)
    counts["gradient clipping"] = Count(CLIP * sizes.parameters, CLIP * sizes.parameters)
    per_parameter = {"Adadelta": ADADELTA, "Adam": ADAM}[optimiser]
    counts[f"optimiser step ({optimiser})"] = Count(
        per_parameter * sizes.parameters, per_parameter * sizes.parameters
    )
    return counts


def prediction_flops(sizes: Sizes, shapes: Shapes) -> dict[str, Count]:
    """FLOPs of predicting one batch (forward only): the parts before the biaffines, the arc
    and auxiliary biaffines over all pairs, the relation scores at the predicted heads alone
    (:meth:`bockparse.model.biaffine.DeepBiaffine.pairs_at`: at each distinct head, then each
    word's pair, on ``K + 1`` zero-padded); decoding is combinatorial and not counted."""
    counts = dict(encoder_flops(sizes, shapes))
    padded, pairs = shapes.B * shapes.N, shapes.B * shapes.N * shapes.N
    for b in sizes.biaffines:
        counts[f"{b.name} MLPs"] = Count(mlp_flops(padded, b), mlp_flops(shapes.positions, b))
        if b.name == "rel":
            counts["rel at the predicted heads"] = Count(
                bilinear_flops(shapes.heads, shapes.words, b, padded_width(b)),
                bilinear_flops(shapes.heads, shapes.words, b),
            )
        else:
            counts[f"{b.name} biaffine"] = Count(
                bilinear_flops(padded, pairs, b), bilinear_flops(shapes.positions, shapes.arcs, b)
            )
    if any(b.name in ("linearization", "distance") for b in sizes.biaffines):
        counts["auxiliary terms of the arc scores"] = Count(
            AUX_PAIR * pairs, AUX_PAIR * shapes.arcs
        )
    counts["decoding and best relations"] = Count(0, 0)
    return counts


# -- the machine -------------------------------------------------------------------------------


def rate(fn: Callable[[], object], work: float, seconds: float) -> float:
    """``work`` per second of ``fn``, its best of repeated calls for about ``seconds``."""
    fn()
    best, spent = float("inf"), 0.0
    while spent < seconds:
        start = time.perf_counter()
        fn()
        took = time.perf_counter() - start
        best, spent = min(best, took), spent + took
    return work / best


def matmul_rate(m: int, k: int, n: int, dtype: torch.dtype, seconds: float) -> float:
    """GFLOP/s of ``[m, k] @ [k, n]`` in ``dtype``."""
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    out = torch.empty(m, n, dtype=dtype)
    return rate(lambda: torch.mm(a, b, out=out), 2 * m * k * n, seconds) / 1e9


def bandwidth(seconds: float, elements: int = 1 << 25) -> float:
    """GB/s of ``c = a + s b`` over float32 arrays of ``elements`` (128 MiB each by default)."""
    a, b, c = torch.rand(elements), torch.rand(elements), torch.empty(elements)
    return rate(lambda: torch.add(a, b, alpha=0.5, out=c), 12 * elements, seconds) / 1e9


def machine(sizes: Sizes, positions: int, seconds: float) -> list[tuple[str, str, float]]:
    """``(measurement, dtype, rate)``: matrix products (GFLOP/s) at a large square and at the
    step's shapes, in fp32 and, where the CPU computes it natively, bf16; memory (GB/s)."""
    from bockparse.hardware import native_bf16

    rel = next((b for b in sizes.biaffines if b.name == "rel"), None)
    shapes = [("2048 x 2048 x 2048", 2048, 2048, 2048),
              (f"BiLSTM inputs, {positions} x {2 * sizes.lstm_hidden} x "
               f"{4 * sizes.lstm_hidden}", positions, 2 * sizes.lstm_hidden,
               4 * sizes.lstm_hidden)]  # fmt: skip
    if rel is not None:  # as pairs_at runs it (columns padded) and unpadded
        k1, padded = rel.hidden + 1, padded_width(rel)
        shapes += [(f"relation biaffine, {positions} x {k1} x {padded * rel.outputs} (as run)",
                    positions, k1, padded * rel.outputs),
                   (f"relation biaffine unpadded, {positions} x {k1} x {k1 * rel.outputs}",
                    positions, k1, k1 * rel.outputs)]  # fmt: skip
    dtypes = [("fp32", torch.float32)] + ([("bf16", torch.bfloat16)] if native_bf16("cpu") else [])
    rows = [(f"matrix product {name}", label, matmul_rate(m, k, n, dtype, seconds))
            for label, dtype in dtypes for name, m, k, n in shapes]  # fmt: skip
    rows.append(("memory: c = a + s b, 128 MiB arrays (GB/s)", "fp32", bandwidth(seconds)))
    return rows


# -- timing ------------------------------------------------------------------------------------


@contextlib.contextmanager
def replaced(obj: object, name: str, value: object) -> Iterator[None]:
    """``obj.name`` is ``value`` inside (an instance attribute over the class's method)."""
    setattr(obj, name, value)
    try:
        yield
    finally:
        delattr(obj, name)


def leaf(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a new leaf of the autograd graph (its storage shared, nothing copied)."""
    return t.detach().requires_grad_()


def forward_backward(fn: Callable[[], object]) -> tuple[float, float]:
    """Seconds of ``fn()`` and of the backward of everything it returns (gradients of ones,
    made outside the timing)."""
    start = time.perf_counter()
    out = fn()
    middle = time.perf_counter()
    outs = [o for o in (out if isinstance(out, tuple | list) else [out])
            if isinstance(o, torch.Tensor) and o.requires_grad]  # fmt: skip
    grads = [torch.ones_like(o) for o in outs]
    begin = time.perf_counter()
    torch.autograd.backward(outs, grads)
    return middle - start, time.perf_counter() - begin


def forward_only(fn: Callable[[], object]) -> tuple[float, float]:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start, 0.0


def layer_inputs(lstm, x: torch.Tensor, lengths: torch.Tensor) -> list[list[torch.Tensor]]:
    """Each layer's two direction inputs as :func:`bockparse.model.lstm.bilstm` builds them
    (the reverse one reversed within each length), from its own run of the layers."""
    from bockparse.model.lstm import _gather_steps, direction_weights, reverse_index

    reverse = reverse_index(lengths, x.shape[1])
    zeros = x.new_zeros(1, x.shape[0], lstm.hidden_size)
    out, inputs = [], x
    for layer in range(lstm.num_layers):
        if layer > 0 and lstm.dropout > 0:
            inputs = torch.nn.functional.dropout(inputs, lstm.dropout, lstm.training)
        seqs = [inputs, _gather_steps(inputs, reverse)]
        out.append(seqs)
        states = [torch.lstm(seq, (zeros, zeros), direction_weights(lstm, layer, suffix), True,
                             1, 0.0, False, False, True)[0]
                  for seq, suffix in zip(seqs, ("", "_reverse"), strict=True)]  # fmt: skip
        inputs = torch.cat([states[0], _gather_steps(states[1], reverse)], dim=-1)
    return out


WHOLE_BILSTM = "BiLSTM, whole (with its dropout and gathers)"


def component_fns(scorer, loss, batch, training: bool, decoder: str):
    """``name -> fn`` for every timed component of an update (``training``) or a prediction,
    each on the inputs it gets there (computed here, untimed), names as the counts'."""
    from bockparse.model.lstm import bilstm, direction_weights
    from bockparse.model.outputs import ParserScores
    from bockparse.predict import best_relations, decode_heads

    context = scorer.context
    lengths = batch.lengths + 1
    with torch.no_grad():
        chars = context.char_model(batch.chars) if context.char_model is not None else None
        x = context.dropout(context.inputs(batch))
        directions = layer_inputs(context.lstm, x, lengths)
        states = context.contextualize(batch)
        scores = scorer(batch)
        heads = None if training else decode_heads(scores.arc, batch.lengths, decoder)
    grad = leaf if training else (lambda t: t)
    fns: dict[str, Callable[[], object]] = {}
    if chars is not None:
        fns["character model"] = lambda: context.char_model(batch.chars)

        def embeddings():
            with replaced(context.char_model, "forward", lambda _: grad(chars)):
                return context.inputs(batch)

        fns["embeddings"] = embeddings
    else:
        fns["embeddings"] = lambda: context.inputs(batch)
    zeros = x.new_zeros(1, x.shape[0], context.lstm.hidden_size)
    for layer, seqs in enumerate(directions):
        for seq, suffix, direction in zip(seqs, ("", "_reverse"), ("forward", "reverse"),
                                          strict=True):  # fmt: skip
            weights = direction_weights(context.lstm, layer, suffix)
            fns[f"BiLSTM layer {layer + 1}, {direction}"] = (
                lambda s=seq, w=weights: torch.lstm(grad(s), (zeros, zeros), w, True, 1, 0.0,
                                                    training, False, True)[0]
            )  # fmt: skip
    fns[WHOLE_BILSTM] = lambda: bilstm(context.lstm, grad(x), lengths)[0]
    for name in ("arc", "rel", "linearization", "distance"):
        m = getattr(scorer, name, None)
        if m is None:
            continue
        fns[f"{name} MLPs"] = lambda m=m: m.project(grad(states))
        with torch.no_grad():
            u, v = m.project(states)
        if name != "rel":
            fns[f"{name} biaffine"] = lambda m=m, u=u, v=v: m.pairs(grad(u), grad(v))
        else:  # at the gold heads in training, at the predicted ones in prediction
            at = batch.heads if training else heads
            fns[f"rel at the {'gold' if training else 'predicted'} heads"] = (
                lambda m=m, u=u, v=v, at=at: m.pairs_at(grad(u), grad(v), at)
            )
    if training:
        at_gold = scores.rel_at_heads(batch.heads)  # [B, N, R], timed above
        parts = {"arc": scores.arc, "linearization": scores.linearization,
                 "distance": scores.distance}  # fmt: skip

        def loss_terms():
            rel = leaf(at_gold)
            leaves = {k: None if v is None else leaf(v) for k, v in parts.items()}
            return loss(ParserScores(**leaves, rel_fn=lambda: scores.rel,
                                     rel_at_fn=lambda _: rel), batch).loss  # fmt: skip

        fns["loss"] = loss_terms
    else:
        at_heads = scores.rel_at_heads(heads)  # timed above, as "rel at the predicted heads"

        def decoding():
            h = decode_heads(scores.arc, batch.lengths, decoder)
            return best_relations(at_heads, h)

        fns["decoding and best relations"] = decoding
    return fns


def update(scorer, loss, optimizer, batch, max_norm: float) -> None:
    """One training update as ``ParserModule.training_step`` makes it (without Lightning)."""
    optimizer.zero_grad()
    out = loss(scorer(batch), batch)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(list(scorer.parameters()), max_norm)
    optimizer.step()


def prediction(scorer, batch, decoder: str) -> None:
    from bockparse.predict import predict_trees

    predict_trees(scorer(batch), batch.lengths, decoder)


def optimisers(module) -> dict[str, torch.optim.Optimizer]:
    """The run's two optimisers as ``ParserModule.configure_optimizers`` builds them (torch's
    per-parameter loop on the CPU), and the same with ``foreach=True`` and, for a stage whose
    optimiser has one on this device, ``fused=True``: ``"optimiser step (<class>[, variant])"``
    -> optimiser, the run's own first."""
    out = {}
    for factory in (module.stage1, module.stage2):
        for variant in ({}, {"foreach": True}, {"fused": True}):
            try:
                optimizer = factory(module._groups(), **variant)
            except (RuntimeError, TypeError, ValueError):  # no such variant here
                continue
            label = ", ".join([type(optimizer).__name__, *variant])
            out[f"optimiser step ({label})"] = optimizer
    return out


def memory_bound(scorer, loss, optimizers, batch, max_norm: float) -> dict[str, float]:
    """Seconds of gradient clipping, of each optimiser's step and of zero_grad, on a batch's
    gradients (every step on the same gradients: the weights move, the timing holds)."""
    params = list(scorer.parameters())
    scorer.zero_grad(set_to_none=True)
    loss(scorer(batch), batch).loss.backward()
    start = time.perf_counter()
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    out = {"gradient clipping": time.perf_counter() - start}
    for name, optimizer in optimizers.items():
        start = time.perf_counter()
        optimizer.step()
        out[name] = time.perf_counter() - start
    start = time.perf_counter()
    scorer.zero_grad(set_to_none=True)
    out["zero_grad"] = time.perf_counter() - start
    return out


MATRIX = frozenset({"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm",
                    "aten::mv", "aten::dot", "aten::mkldnn_rnn_layer",
                    "aten::mkldnn_rnn_layer_backward"})  # fmt: skip
RANDOM = frozenset({"aten::bernoulli_", "aten::bernoulli", "aten::rand", "aten::uniform_"})
COPIES = frozenset({"aten::copy_", "aten::cat", "aten::gather", "aten::scatter",
                    "aten::scatter_", "aten::scatter_add_", "aten::index", "aten::index_select",
                    "aten::index_put_", "aten::_index_put_impl_", "aten::index_add_",
                    "aten::embedding_dense_backward", "aten::masked_fill_",
                    "aten::masked_fill", "aten::masked_select", "aten::clone",
                    "aten::contiguous", "aten::flip", "aten::_to_copy"})  # fmt: skip
ALLOCATION = frozenset({"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::zeros",
                        "aten::zeros_like", "aten::zero_", "aten::fill_", "aten::ones",
                        "aten::ones_like", "aten::full", "aten::new_zeros", "aten::new_empty",
                        "aten::new_ones", "aten::new_full", "aten::resize_"})  # fmt: skip
CATEGORIES = (
    "matrix products (mm, bmm, addmm, oneDNN LSTM)",
    "dropout's random numbers",
    "copies and indexing (cat, gather, scatter, index, masked_fill, copy_)",
    "allocation and fills",
    "other operators (elementwise, reductions, sort)",
    "autograd engine per node, and Python inside annotated regions",
    "outside every operator (Python, dispatch, profiler)",
)


def category(name: str) -> str:
    """The :data:`CATEGORIES` entry of a profiler event name."""
    for names, label in ((MATRIX, 0), (RANDOM, 1), (COPIES, 2), (ALLOCATION, 3)):
        if name in names:
            return CATEGORIES[label]
    return CATEGORIES[4] if name.startswith("aten::") else CATEGORIES[5]


def profile_split(fn: Callable[[], object]) -> tuple[dict[str, float], float]:
    """Seconds of one call of ``fn`` per :data:`CATEGORIES` entry (operators' self time on
    this thread; the rest of the wall time is outside every operator), and its wall time."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        fn()
        wall = time.perf_counter() - start
    split = dict.fromkeys(CATEGORIES, 0.0)
    for event in prof.key_averages():
        split[category(event.key)] += event.self_cpu_time_total / 1e6
    split[CATEGORIES[-1]] = max(wall - sum(split.values()), 0.0)
    return split, wall


# -- the run -----------------------------------------------------------------------------------


def compose_config(data: Path, seed: int, overrides: Sequence[str]):
    """The preset's config, composed as ``bockparse-train`` composes it, on ``data``."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("train", overrides=[f"experiment={EXPERIMENT}", f"data.root={data}",
                                           f"seed={seed}", *overrides])  # fmt: skip


def pick(loader, count: int) -> list:
    """``count`` batches spread evenly over a loader's order (the first, the last, between)."""
    batches = list(loader)
    if count >= len(batches):
        return batches
    return [batches[round(i * (len(batches) - 1) / max(count - 1, 1))] for i in range(count)]


@dataclass
class Timed:
    """Per component, seconds of forward and backward summed over the timed batches (each the
    median of its repeats), and the FLOPs of those batches."""

    forward: dict[str, float]
    backward: dict[str, float]
    flops: dict[str, Count]


def time_components(scorer, loss, batches, training, decoder, repeats, counts_of) -> Timed:
    timed = Timed(defaultdict(float), defaultdict(float), defaultdict(lambda: Count(0, 0)))
    run = forward_backward if training else forward_only
    mode = contextlib.nullcontext() if training else torch.inference_mode()
    for batch in batches:
        with mode:
            fns = component_fns(scorer, loss, batch, training, decoder)
            for name, fn in fns.items():
                samples = []
                for _ in range(repeats + 1):  # the first: oneDNN's set-up for these shapes
                    scorer.zero_grad(set_to_none=True)
                    samples.append(run(fn))
                timed.forward[name] += statistics.median(s[0] for s in samples[1:])
                timed.backward[name] += statistics.median(s[1] for s in samples[1:])
        for name, c in counts_of(batch).items():
            timed.flops[name] += c
    return timed


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(args: argparse.Namespace) -> dict:
    """Everything the report shows (module doc)."""
    from hydra.utils import instantiate

    from bockparse.data.batch import Collator
    from bockparse.predict import decode_heads
    from bockparse.training.train import build

    torch.set_num_threads(args.threads)
    cfg = compose_config(args.data, args.seed, args.overrides)
    torch.manual_seed(args.seed)
    datamodule, module = build(cfg)
    scorer, loss = module.scorer.train(), instantiate(cfg.loss)
    variants = optimisers(module)
    stage1 = next(iter(variants.values()))  # the run's stage 1, as configured
    result: dict = {"optimisers": list(variants)}
    max_norm = cfg.optim.max_grad_norm
    loader = datamodule.train_dataloader()
    indices = list(loader.sampler)[: args.batches + 1]
    collate = Collator(datamodule.dataset("train"))
    train = [collate(i) for i in indices]
    warm, timed_batches = train[0], train[1:]
    sizes = Sizes.of(scorer)
    shapes = [Shapes.of(b) for b in timed_batches]
    words = sum(s.words for s in shapes)

    result.update(sizes=sizes, cfg=cfg, shapes=shapes, words=words)
    positions = round(statistics.mean(s.B * s.N for s in shapes))
    result["machine"] = machine(sizes, positions, args.seconds)

    memory_bound(scorer, loss, variants, warm, max_norm)  # every optimiser's state
    update(scorer, loss, stage1, warm, max_norm)  # the first kernels
    cold, warm_update, collation = [], [], []
    for idx, batch in zip(indices[1:], timed_batches, strict=True):
        cold.append(median_seconds(lambda b=batch: update(scorer, loss, stage1, b, max_norm), 1))
        warm_update.append(median_seconds(
            lambda b=batch: update(scorer, loss, stage1, b, max_norm), args.repeats))  # fmt: skip
        collation.append(median_seconds(lambda i=idx: collate(i), args.repeats))
    result["update"] = sum(warm_update)
    result["update cold"] = sum(cold)
    result["collation"] = sum(collation)
    result["training"] = time_components(
        scorer, loss, timed_batches, True, cfg.decoder, args.repeats,
        lambda b: update_flops(sizes, Shapes.of(b), type(stage1).__name__),
    )  # fmt: skip
    bound = defaultdict(float)
    for batch in timed_batches:
        for name, seconds in memory_bound(scorer, loss, variants, batch, max_norm).items():
            bound[name] += seconds
    result["memory bound"] = dict(bound)
    for name in ("gradient clipping", result["optimisers"][0], "zero_grad"):
        result["training"].forward[name], result["training"].backward[name] = bound[name], 0.0
    split, wall = profile_split(lambda: update(scorer, loss, stage1, timed_batches[0], max_norm))
    result["profile"], result["profile wall"] = split, wall
    result["profile words"] = timed_batches[0].mask.sum().item()

    scorer.eval()
    dev = pick(datamodule.val_dataloader(), args.batches)
    with torch.inference_mode():  # the shapes with the trees the parser predicts
        predicted = [decode_heads(scorer(b).arc, b.lengths, cfg.decoder) for b in dev]
    result["dev shapes"] = [Shapes.of(b, h) for b, h in zip(dev, predicted, strict=True)]
    shapes_of = {id(b): s for b, s in zip(dev, result["dev shapes"], strict=True)}
    with torch.inference_mode():
        for batch in dev:
            prediction(scorer, batch, cfg.decoder)  # oneDNN's set-up for these shapes
        result["prediction"] = sum(
            median_seconds(lambda b=b: prediction(scorer, b, cfg.decoder), args.repeats)
            for b in dev
        )
    result["predicting"] = time_components(
        scorer, loss, dev, False, cfg.decoder, args.repeats,
        lambda b: prediction_flops(sizes, shapes_of[id(b)]),
    )  # fmt: skip
    return result


# -- the report --------------------------------------------------------------------------------


def share(gflops_per_s: float, limit: float) -> str:
    return f"{100 * gflops_per_s / limit:.1f} %"


def component_rows(timed: Timed, limit: float, training: bool, batches: int) -> list[str]:
    """One row per component: counted GFLOP (as run, needed), ms, GFLOP/s and share of the
    limit, per batch; components counted but not timed alone show no time."""
    rows = []
    names = list(timed.flops)
    for name in timed.forward:
        if name not in names:
            lstm = [i for i, k in enumerate(names) if k.startswith("BiLSTM layer")]
            names.insert(lstm[-1] + 1 if name == WHOLE_BILSTM and lstm else len(names), name)
    for name in names:
        c = timed.flops.get(name)
        if name == WHOLE_BILSTM:
            c = sum(
                (v for k, v in timed.flops.items() if k.startswith("BiLSTM layer")), Count(0, 0)
            )
        run, needed = (
            (None, None) if c is None else (c.run / batches / 1e9, c.needed / batches / 1e9)
        )
        cells = [name, "–" if c is None else f"{run:.3f}", "–" if c is None else f"{needed:.3f}"]
        if name not in timed.forward:
            cells += ["–"] * (4 if training else 3)
            rows.append("| " + " | ".join(cells) + " |")
            continue
        f, b = timed.forward[name] / batches, timed.backward[name] / batches
        speed = run / (f + b) if run else None
        cells.append(f"{1e3 * f:.1f}")
        if training:
            cells.append(f"{1e3 * b:.1f}" if b else "–")
        cells += ["–" if not speed else f"{speed:.1f}", "–" if not speed else share(speed, limit)]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def total_row(label: str, flops: Count, seconds: float, limit: float, training: bool) -> str:
    speed = flops.run / 1e9 / seconds
    cells = [f"**{label}**", f"{flops.run / 1e9:.3f}", f"{flops.needed / 1e9:.3f}",
             f"{1e3 * seconds:.1f}", *([""] if training else []), f"{speed:.1f}",
             share(speed, limit)]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def report(result: dict, command: str) -> str:
    from bockparse.hardware import cpu_info

    sizes, cfg, shapes = result["sizes"], result["cfg"], result["shapes"]
    n = len(shapes)
    limit = max(r[2] for r in result["machine"] if r[1] == "fp32" and "matrix" in r[0])
    bandwidth_gbs = result["machine"][-1][2]
    training, predicting, bound = result["training"], result["predicting"], result["memory bound"]
    stage1 = result["optimisers"][0]
    total = sum(training.flops.values(), Count(0, 0))
    per_update, cold = result["update"] / n, result["update cold"] / n
    env = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in ("OMP_NUM_THREADS",
                                                                  "MKL_NUM_THREADS"))  # fmt: skip
    lines = [
        "# Arithmetic utilisation of the Table 1 GSD parser (CPU)",
        "",
        f"`{command}`",
        "",
        f"{date.today().isoformat()}; {cpu_info()[0]}, {os.cpu_count()} CPUs; torch "
        f"{torch.__version__}, {torch.get_num_threads()} threads ({env}); precision "
        f"{cfg.trainer.precision}. `experiment={EXPERIMENT}`: BiLSTM {sizes.lstm_layers} x "
        f"{sizes.lstm_hidden}, character BiLSTM {sizes.char_hidden}, biaffines "
        f"{', '.join(f'{b.name} {b.hidden}' for b in sizes.biaffines)}; "
        f"{sizes.parameters / 1e6:.2f} M parameters. {n} training batches of the "
        f"{cfg.data.batch_size:,}-word budget ({result['words'] / n:,.0f} words on average; "
        f"B x N = {', '.join(f'{s.B} x {s.N}' for s in shapes)}); medians of "
        f"{result['repeats']} repeats after one untimed call; decoder `{cfg.decoder}`.",
        "",
        "## The machine (same run)",
        "",
        "| measurement | dtype | rate |",
        "| --- | --- | ---: |",
        *[
            f"| {name} | {dtype} | {value:,.1f}{' GB/s' if 'memory' in name else ' GFLOP/s'} |"
            for name, dtype, value in result["machine"]
        ],
        "",
        f"The arithmetic limit below is the best fp32 rate, {limit:,.1f} GFLOP/s.",
        "",
        "## One training update, per component",
        "",
        "GFLOP of forward and backward per update (as run: padding and every pair of the arc "
        "and auxiliary biaffines, the relations at the gold heads alone on zero-padded vectors; "
        "needed: real positions and characters, the relations unpadded); ms per update, each "
        "component timed on its own with the inputs it gets in the step.",
        "",
        "| component | GFLOP as run | GFLOP needed | forward ms | backward ms | GFLOP/s "
        "| share of the limit |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *component_rows(training, limit, True, n),
        total_row(
            "whole update (zero_grad, forward, loss, backward, clipping, Adadelta)",
            total * (1 / n),
            per_update,
            limit,
            True,
        ),
        total_row(
            "whole update, the first time its shapes are seen", total * (1 / n), cold, limit, True
        ),
        "",
        f"Training words/s at these update times: {result['words'] / result['update']:,.0f} "
        f"(warm), {result['words'] / result['update cold']:,.0f} (first time on its shapes).",
        "",
        "## Memory-bound parts of the update",
        "",
        "| part | MB moved as run | least MB | ms | GB/s as run | share of the bandwidth |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    p = sizes.parameters
    for name, run_bytes, least in (
        ("gradient clipping", CLIP_BYTES, CLIP_BYTES),
        (stage1, ADADELTA_BYTES_RUN, OPTIMISER_BYTES_MIN),
        *((name, None, OPTIMISER_BYTES_MIN) for name in result["optimisers"][1:]),
    ):
        seconds = bound[name] / n
        moved = gbs = shown = "–"
        if run_bytes is not None:
            moved = f"{run_bytes * p / 1e6:,.0f}"
            rate_gbs = run_bytes * p / seconds / 1e9
            gbs, shown = f"{rate_gbs:.1f}", f"{100 * rate_gbs / bandwidth_gbs:.0f} %"
        lines.append(f"| {name} | {moved} | {least * p / 1e6:,.0f} | {1e3 * seconds:.1f} | "
                     f"{gbs} | {shown} |")  # fmt: skip
    padding = 0.0
    for name, c in training.flops.items():
        seconds = training.forward.get(name, 0.0) + training.backward.get(name, 0.0)
        if c.run > 0 and seconds > 0:
            padding += seconds * (c.run - c.needed) / c.run
    parts = sum(v for k, v in training.forward.items() if not k.startswith("BiLSTM layer"))
    parts += sum(v for k, v in training.backward.items() if not k.startswith("BiLSTM layer"))
    memory = sum(bound[k] for k in ("gradient clipping", stage1, "zero_grad"))
    rest = [
        ("the needed FLOPs at the arithmetic limit", total.needed / n / 1e9 / limit),
        ("padding and unused pairs (each component's time x its share of FLOPs not needed)",
         padding / n),
        ("between the components (whole update − the sum of the timed parts: the autograd "
         "graph, glue, the arc scores' auxiliary terms; below 0 where the parts cost more alone)",
         per_update - parts / n),
        ("clipping, optimiser step and zero_grad (memory-bound)", memory / n),
        ("first time on a batch's shapes (cold − warm update; every batch of the first epoch)",
         cold - per_update),
        ("collation of the batch (before the update, not in its time)", result["collation"] / n),
    ]  # fmt: skip
    lines += [
        "",
        "## Where the update's time goes",
        "",
        f"Per update; shares of the warm update ({1e3 * per_update:.1f} ms). The rows overlap "
        "(padding is inside the components' time).",
        "",
        "| part | ms | share |",
        "| --- | ---: | ---: |",
        *[f"| {name} | {1e3 * s:.1f} | {100 * s / per_update:.0f} % |" for name, s in rest],
        "",
        f"`torch.profiler`, one update of {result['profile words']:,} words "
        f"({1e3 * result['profile wall']:.1f} ms under the profiler), operators' self time:",
        "",
        "| category | ms | share |",
        "| --- | ---: | ---: |",
        *[
            f"| {k} | {1e3 * v:.1f} | {100 * v / result['profile wall']:.0f} % |"
            for k, v in result["profile"].items()
        ],
    ]
    dev = result["dev shapes"]
    d = len(dev)
    lines += [
        "",
        "## One prediction batch, per component",
        "",
        f"{d} development batches spread over the file's length order (B x N = "
        f"{', '.join(f'{s.B} x {s.N}' for s in dev)}), inference mode, forward only; the "
        "relations scored at the predicted heads alone.",
        "",
        "| component | GFLOP as run | GFLOP needed | ms | GFLOP/s | share of the limit |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *component_rows(predicting, limit, False, d),
        total_row(
            "whole prediction (scorer, `predict_trees`)",
            sum(predicting.flops.values(), Count(0, 0)) * (1 / d),
            result["prediction"] / d,
            limit,
            False,
        ),
        "",
        f"Prediction words/s at this batch time: "
        f"{sum(s.words for s in dev) / result['prediction']:,.0f}.",
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="the UD Chinese-GSD v1.3 folder")
    p.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch threads")
    p.add_argument("--batches", type=int, default=3, help="timed batches (train and dev each)")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per batch and component")
    p.add_argument("--seconds", type=float, default=1.0, help="per machine-rate measurement")
    p.add_argument("--seed", type=int, default=1111)
    p.add_argument("--output", type=Path, help="also write the report to this file")
    p.add_argument("overrides", nargs="*", help="further config overrides (after --)")
    args = p.parse_args(argv)
    if min(args.threads, args.batches, args.repeats) < 1 or args.seconds <= 0:
        p.error("--threads, --batches, --repeats and --seconds: positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = measure(args)
    result["repeats"] = args.repeats
    given = sys.argv[1:] if argv is None else argv
    command = "python benchmarks/utilisation.py " + " ".join(shlex.quote(a) for a in given)
    text = report(result, command)
    print(text, end="")
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
