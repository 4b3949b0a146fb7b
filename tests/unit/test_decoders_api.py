"""The decoder API: worked examples, edge cases, errors, batch decoding, the trace CLI."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import torch

from bockparse.cli.decoders import trace_bock as trace_main
from bockparse.decoders import (
    DECODERS,
    NoTreeError,
    check_tree,
    decode,
    decode_batch,
    get_decoder,
    is_tree,
    tree_score,
)
from bockparse.decoders.pool import decode_padded
from bockparse.decoders.synthetic import integer_graph, parser_like
from bockparse.decoders.trees import OK, REWEIGHT, SINGLE_ROOT, UNCONSTRAINED

NEG = -np.inf
NONPROJECTIVE = tuple(m for m in DECODERS if m != "eisner")
ANY_LENGTH = tuple(m for m in DECODERS if get_decoder(m).max_words is None)


def paper_example() -> np.ndarray:
    """The Bock paper's §3.2 example as scores: costs 0->1 50, 0->2 60, 1->2 10, 2->1 20."""
    S = np.full((3, 3), NEG)
    S[0, 1], S[0, 2], S[1, 2], S[2, 1] = -50, -60, -10, -20
    return S


def she_read_books_today() -> np.ndarray:
    """The CL/E tutorial's example "ROOT she read books today"."""
    S = np.full((5, 5), NEG)
    arcs = {(0, 1): 4, (0, 2): 12, (0, 3): 2, (0, 4): 3, (1, 2): 14, (2, 1): 15, (2, 3): 18,
            (2, 4): 9, (3, 2): 6, (3, 4): 2, (4, 2): 1, (1, 3): 3, (3, 1): 2, (1, 4): 1,
            (4, 1): 1, (4, 3): 1}  # fmt: skip
    for (h, d), s in arcs.items():
        S[h, d] = s
    return S


def tutorial_single_root() -> np.ndarray:
    """The tutorial's single-root example: 27 unconstrained, 21 with one root child."""
    S = np.full((4, 4), -5.0)
    S[0, 1], S[0, 2], S[1, 2], S[1, 3] = 10, 9, 3, 8
    return S


@pytest.mark.parametrize("method", DECODERS)
def test_paper_example(method):
    heads = decode(paper_example(), method, single_root=False)
    assert heads.tolist() == [-1, 0, 1]
    assert tree_score(paper_example(), heads) == -60


@pytest.mark.parametrize("method", DECODERS)
def test_tutorial_examples(method):
    S = she_read_books_today()
    for single_root in (False, True):
        heads = decode(S, method, single_root=single_root)
        assert tree_score(S, heads) == 54
        assert heads.tolist() == [-1, 2, 0, 2, 2]
    T = tutorial_single_root()
    # The 27-point tree is not projective (0 -> 2 crosses 1 -> 3): Eisner's best is 21.
    unconstrained = 27 if method in NONPROJECTIVE else 21
    assert tree_score(T, decode(T, method, single_root=False)) == unconstrained
    assert tree_score(T, decode(T, method, single_root=True)) == 21
    assert tree_score(T, decode(T, method, root_strategy="reweight")) == 21


@pytest.mark.parametrize("method", DECODERS)
def test_one_word(method):
    S = np.array([[NEG, -2.5], [NEG, NEG]])
    assert decode(S, method).tolist() == [-1, 0]


@pytest.mark.parametrize("method", ANY_LENGTH)
def test_long_chain_has_no_recursion_limit(method):
    n = 500
    S = np.full((n + 1, n + 1), -10.0)
    S[np.arange(n), np.arange(1, n + 1)] = 0.0  # the chain 0 -> 1 -> ... -> n
    heads = decode(S, method)
    assert heads.tolist() == [-1, *range(n)]


@pytest.mark.parametrize("method", DECODERS)
def test_float32_and_input_unchanged(method):
    rng = np.random.default_rng(3)
    S64 = parser_like(7, rng)
    S32 = S64.astype(np.float32)
    before = S32.copy()
    h32 = decode(S32, method)
    assert np.array_equal(S32, before, equal_nan=True)
    assert S32.flags.writeable
    check_tree(h32, single_root=True)
    assert tree_score(S32, h32) == pytest.approx(
        tree_score(S32, decode(S32.astype(np.float64), method))
    )


@pytest.mark.parametrize("method", DECODERS)
def test_input_never_modified(method):
    rng = np.random.default_rng(5)
    for _ in range(20):
        S = integer_graph(6, rng, forbid=0.3)
        before = S.copy()
        for single_root in (False, True):
            try:
                decode(S, method, single_root=single_root)
            except NoTreeError:
                pass
            assert np.array_equal(S, before)


@pytest.mark.parametrize("method", DECODERS)
def test_nan_names_the_cell(method):
    S = parser_like(4, np.random.default_rng(0))
    S[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"scores\[2, 3\] is NaN"):
        decode(S, method)


@pytest.mark.parametrize("method", DECODERS)
def test_nan_on_the_diagonal_is_still_an_error(method):
    S = parser_like(4, np.random.default_rng(0))
    S[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"scores\[1, 1\] is NaN"):
        decode(S, method)


def test_plus_inf_is_rejected():
    S = parser_like(3, np.random.default_rng(0))
    S[0, 2] = np.inf
    with pytest.raises(ValueError, match=r"scores\[0, 2\] is \+inf"):
        decode(S)


@pytest.mark.parametrize("method", DECODERS)
def test_words_without_admissible_head(method):
    S = np.full((5, 5), NEG)
    S[0, 2] = 1.0  # only word 2 has a head
    with pytest.raises(NoTreeError, match=r"word\(s\) \[1, 3, 4\] have no admissible head"):
        decode(S, method)


@pytest.mark.parametrize("method", DECODERS)
def test_unreachable_words(method):
    S = np.full((4, 4), NEG)
    S[0, 1], S[2, 3], S[3, 2] = 1.0, 1.0, 1.0  # 2 and 3 only point at each other
    with pytest.raises(NoTreeError, match=r"\[2, 3\] cannot be reached from ROOT"):
        decode(S, method, single_root=False)


@pytest.mark.parametrize("method", DECODERS)
def test_no_single_root_tree(method):
    S = np.full((3, 3), NEG)
    S[0, 1], S[0, 2] = 1.0, 1.0  # both words can only attach to ROOT
    assert decode(S, method, single_root=False).tolist() == [-1, 0, 0]
    with pytest.raises(NoTreeError, match="no single-root tree"):
        decode(S, method)
    with pytest.raises(NoTreeError, match="no single-root tree"):
        decode(S, method, root_strategy="reweight")


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (np.zeros((3, 4)), "square"),
        (np.zeros((1, 1)), "empty"),
        (np.zeros(3), "square"),
        (np.array([["a", "b"], ["c", "d"]]), "float"),
    ],
)
def test_bad_shapes(scores, message):
    with pytest.raises(ValueError, match=message):
        decode(scores)


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"known decoders: .*bock-original"):
        decode(np.zeros((3, 3)), "prim")


def test_bad_root_strategy():
    with pytest.raises(ValueError, match="root_strategy"):
        decode(np.zeros((3, 3)), root_strategy="guess")


def test_brute_force_refuses_long_sentences():
    with pytest.raises(ValueError, match="at most 8 words"):
        decode(np.zeros((10, 10)), "brute")


def test_tensor_input():
    S = parser_like(6, np.random.default_rng(2))
    t = torch.tensor(S, dtype=torch.float32, requires_grad=True)
    assert np.array_equal(decode(t), decode(S.astype(np.float32)))
    assert np.array_equal(decode(t.to(torch.bfloat16)), decode(t.to(torch.bfloat16).float()))


def test_check_tree_reasons():
    check_tree(np.array([-1, 0, 1]), single_root=True)
    assert not is_tree(np.array([-1, 2, 1]))
    with pytest.raises(ValueError, match=r"cycle through words \[1, 2\]"):
        check_tree(np.array([-1, 2, 1, 0]))
    with pytest.raises(ValueError, match="2 words attached to ROOT"):
        check_tree(np.array([-1, 0, 0]), single_root=True)
    with pytest.raises(ValueError, match="self-loop"):
        check_tree(np.array([-1, 1]))
    with pytest.raises(ValueError, match="heads\\[0\\] must be -1"):
        check_tree(np.array([0, 0]))


@pytest.mark.parametrize("method", (*ANY_LENGTH, "stanza-cle"))
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_decode_batch_equals_decode(method, workers):
    rng = np.random.default_rng(13)
    lengths = rng.integers(1, 40, size=37)
    mats = [parser_like(int(n), rng, gold_bonus=1.0) for n in lengths]
    M = int(lengths.max()) + 1
    padded = np.full((len(mats), M, M), np.nan, dtype=np.float32)  # padding is never read
    for b, S in enumerate(mats):
        padded[b, : S.shape[0], : S.shape[0]] = S
    for single_root in (False, True):
        expected = [decode(S.astype(np.float32), method, single_root=single_root) for S in mats]
        from_list = decode_batch(
            [S.astype(np.float32) for S in mats],
            decoder=method,
            single_root=single_root,
            workers=workers,
        )
        from_padded = decode_batch(
            padded, lengths, decoder=method, single_root=single_root, workers=workers
        )
        from_tensor = decode_batch(
            torch.from_numpy(padded),
            torch.from_numpy(lengths),
            decoder=method,
            single_root=single_root,
            workers=workers,
        )
        for got in (from_list, from_padded, from_tensor):
            assert len(got) == len(expected)
            for a, b in zip(got, expected, strict=True):
                assert np.array_equal(a, b)
        as_array = decode_batch(
            padded, lengths, decoder=method, single_root=single_root, workers=workers, padded=True
        )
        assert as_array.shape == (len(mats), M) and as_array.dtype == np.int64
        for b, heads in enumerate(expected):
            assert np.array_equal(as_array[b, : len(heads)], heads)
            assert (as_array[b, len(heads) :] == -1).all()


@pytest.mark.parametrize("method", DECODERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_batch_loop_equals_the_python_loop(method, dtype):
    """Each method's cached ``batch`` gives what its kernel gives sentence by sentence."""
    rng = np.random.default_rng(23)
    lengths = rng.integers(1, get_decoder(method).max_words or 12, size=9, endpoint=True)
    M = int(lengths.max()) + 1
    S = np.full((len(lengths), M, M), np.nan, dtype=dtype)
    for b, n in enumerate(lengths):
        S[b, : n + 1, : n + 1] = integer_graph(int(n), rng, forbid=0.1)
    decoder = get_decoder(method)
    in_python = dataclasses.replace(decoder, batch=None)
    for root in (UNCONSTRAINED, SINGLE_ROOT, REWEIGHT):
        heads, status = decode_padded(decoder, S, lengths, root, 2)
        expected_heads, expected_status = decode_padded(in_python, S, lengths, root, 1)
        assert np.array_equal(status, expected_status)
        assert np.array_equal(heads, expected_heads)
        assert (status == OK).any()


def test_first_batch_of_a_process_loads_the_compiled_loop_from_the_cache():
    """No compilation at the first ``decode_batch`` of a process once the cache is warm."""
    script = (
        "import numpy as np\n"
        "from bockparse.decoders import DECODERS, decode_batch, get_decoder\n"
        "S = np.zeros((2, 4, 4), dtype=np.float32)\n"
        "misses = {}\n"
        "for m in DECODERS:\n"
        "    decode_batch(S, [3, 2], m, workers=1)\n"
        "    misses[m] = sum(get_decoder(m).batch.stats.cache_misses.values())\n"
        "print(misses)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        for _ in range(2)
    ]  # the first run may fill the cache; the second must only load
    assert runs[1].stdout.strip() == str(dict.fromkeys(DECODERS, 0)), runs[1].stdout


def test_decode_batch_mixed_sizes_and_dtypes():
    rng = np.random.default_rng(17)
    mats = [parser_like(3, rng), parser_like(9, rng).astype(np.float32), parser_like(1, rng)]
    got = decode_batch(mats, decoder="bock")
    assert [len(h) for h in got] == [4, 10, 2]
    assert decode_batch([]) == []


def test_decode_batch_errors_name_the_sentence():
    rng = np.random.default_rng(19)
    good = parser_like(4, rng)
    bad = good.copy()
    bad[0, :] = NEG
    with pytest.raises(NoTreeError, match="sentence 1 of the batch"):
        decode_batch([good, bad])
    nan = good.copy()
    nan[3, 4] = np.nan
    with pytest.raises(ValueError, match=r"sentence 2 of the batch: scores\[3, 4\] is NaN"):
        decode_batch([good, good, nan])
    with pytest.raises(ValueError, match="lengths must lie in"):
        decode_batch(np.zeros((2, 5, 5)), [4, 5])
    with pytest.raises(ValueError, match="lengths only with a padded"):
        decode_batch([good], [4])


def test_trace_prints_the_papers_worked_example(capsys):
    assert trace_main([]) == 0
    out = capsys.readouterr().out
    assert "U1 = (0, 20, 10)" in out
    assert "U1 = (0, 50, 40)" in out
    assert "TRACE = {1}" in out
    assert "comp = (0, 2, 2)" in out
    assert "candidate 0 -> 1, adjusted cost 30" in out
    assert out.rstrip().endswith("I* = (⊥, 0, 1), cost 60")


def test_trace_reads_a_cost_file(tmp_path, capsys):
    path = tmp_path / "costs.txt"
    path.write_text("# three words\nM 5 M M\nM M 1 M\nM M M 1\nM 2 M M\n", encoding="utf-8")
    assert trace_main([str(path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("I* = (⊥, 0, 1, 2), cost 7")
    path.write_text("M 1\nM\n", encoding="utf-8")
    assert trace_main([str(path)]) == 2
    assert f"{path}:2: row has 1 entries, expected 2" in capsys.readouterr().err
    assert trace_main([str(tmp_path / "missing.txt")]) == 2
    assert "cannot read" in capsys.readouterr().err
    path.write_text("M 1 M\nM M M\nM M M\n", encoding="utf-8")
    assert trace_main([str(path)]) == 1
    assert "No arborescence" in capsys.readouterr().out
