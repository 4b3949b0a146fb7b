"""Root-constraint study: violations of 1-best and K-best trees against brute force."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from omegaconf import OmegaConf

from bockparse.cli.experiments import rootstudy
from bockparse.experiments import loading
from bockparse.experiments import rootstudy as study
from bockparse.experiments.rootstudy import root_children, study_matrices


def _all_trees(N):
    """Every spanning arborescence rooted at 0 of N nodes, as heads arrays."""
    for tail in itertools.product(range(N), repeat=N - 1):
        heads = np.array([-1, *tail])
        if any(heads[d] == d for d in range(1, N)):
            continue
        ok = True
        for d in range(1, N):
            seen, h = set(), d
            while h != 0 and ok:
                if h in seen:
                    ok = False
                seen.add(h)
                h = heads[h]
        if ok:
            yield heads


def _oracle(S, k, single_root):
    N = S.shape[0]
    trees = [h for h in _all_trees(N) if not single_root or root_children(h) == 1]
    trees.sort(key=lambda h: -S[h[1:], np.arange(1, N)].sum())
    return trees[:k]


def test_root_children():
    assert root_children(np.array([-1, 0, 1, 0])) == 2
    assert root_children(np.array([-1, 0, 1, 1])) == 1


def test_violations_match_brute_force():
    rng = np.random.default_rng(7)
    mats = []
    for n in (1, 2, 3, 4, 4):
        S = rng.normal(size=(n + 1, n + 1))
        S[0, 1:] += 1.5  # root arcs attractive: unconstrained trees often have several
        mats.append(S)
    rows = study_matrices(mats, ks=(5, 10), decoder="cle")
    assert [r["decoding"] for r in rows] == ["1-best", "5-best", "10-best"]
    for row in rows:
        k = row["k"]
        free = [_oracle(S, k, False) for S in mats]
        trees = sum(len(t) for t in free)
        bad = sum(root_children(h) > 1 for t in free for h in t)
        assert (row["trees"], row["violating"]) == (trees, bad)
        assert row["unconstrained_pct"] == pytest.approx(100 * bad / trees)
        assert row["constrained_trees"] == sum(len(_oracle(S, k, True)) for S in mats)
        assert row["constrained_violating"] == 0 and row["constrained_pct"] == 0.0
    assert rows[0]["violating"] > 0  # the case the study is about


def test_bad_k():
    with pytest.raises(ValueError, match="K must be"):
        study_matrices([np.zeros((3, 3))], ks=(0,))


def test_command_studies_the_first_sentences_in_file_order(tmp_path, monkeypatch, capsys):
    """``bockparse-rootstudy``: the run's sentences sorted into file order before
    ``--max-sentences`` cuts them; the report printed and written with its rows and plot."""
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(5)
    matrices = {i: rng.normal(size=(4, 4)).astype(np.float32) for i in range(4)}
    cfg = OmegaConf.create({"decoder": "cle", "name": "local-ce-cle", "seed": 1})
    run = loading.LoadedRun(tmp_path / "run", cfg, parser=None)
    monkeypatch.setattr(loading, "load_run", lambda path: run)
    shuffled = [loading.ScoredSentence(index=i, arc=matrices[i]) for i in (3, 0, 2, 1)]
    monkeypatch.setattr(study, "scored_sentences", lambda run, stage: iter(shuffled))
    out = tmp_path / "out"
    argv = [str(tmp_path / "run"), "--k", "2", "--max-sentences", "2", "--out", str(out)]
    assert rootstudy(argv) == 0
    expected = study_matrices([matrices[0], matrices[1]], (2,), "cle")
    assert json.loads((out / "rootstudy.json").read_text(encoding="utf-8")) == expected
    printed = capsys.readouterr().out
    assert "2 sentences; 1-best by cle" in printed
    assert (out / "rootstudy.md").read_text(encoding="utf-8") == printed
    assert (out / "rootstudy.csv").is_file() and (out / "rootstudy.png").is_file()


@pytest.mark.parametrize("option", [["--max-sentences", "-1"], ["--max-sentences", "0"],
                                    ["--k", "5", "0"]])  # fmt: skip
def test_counts_below_one_are_refused_before_any_work(option, tmp_path, capsys, monkeypatch):
    """``--max-sentences -1`` used to drop the last sentence silently (a slice ``[:-1]``)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the run was loaded before the arguments were checked")

    monkeypatch.setattr(loading, "load_run", refuse)
    with pytest.raises(SystemExit) as exit_:
        rootstudy([str(tmp_path), *option])
    assert exit_.value.code == 2
    assert f"argument {option[0]}: " in capsys.readouterr().err


def test_a_split_that_cannot_be_read_is_one_line(tmp_path, capsys, monkeypatch):
    """The run's development file missing or malformed (read when the scores are computed) is
    one line, not a traceback."""
    run = type("Run", (), {"cfg": OmegaConf.create({"decoder": "cle", "name": "x", "seed": 1})})
    monkeypatch.setattr(loading, "load_run", lambda path: run)

    def unreadable(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "dev.conllu")

    monkeypatch.setattr(study, "run_matrices", unreadable)
    assert rootstudy([str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("bockparse-rootstudy: ") and "dev.conllu" in err[0]
