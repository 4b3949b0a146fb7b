"""``resume=true`` explains itself: a damaged ``last.ckpt``, a changed config and a finished run;
a crafted ``last.ckpt`` never changes a resumed run (every leaf of its saved config and state,
the training loader's place and the vocabularies included)."""

from __future__ import annotations

import copy
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from bockparse.data.vocab import Vocabs
from bockparse.hardware import resolve_run_precision
from bockparse.training.callbacks import run_callbacks
from bockparse.training.clock import RunClock
from bockparse.training.resume import (
    CONFIG_KEY,
    DATA_KEY,
    LOADER_PATH,
    ResumeError,
    check_checkpoint,
    config_differences,
    read_finished,
)
from bockparse.training.train import CONF_DIR, build, run

REPO = Path(CONF_DIR).parent


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=["experiment=smoke", *overrides])


def write_last(run_dir: Path, config: dict | None) -> Path:
    """A stand-in ``last.ckpt`` with the keys of a full training checkpoint."""
    last = run_dir / "checkpoints" / "last.ckpt"
    last.parent.mkdir(parents=True)
    checkpoint = {"state_dict": {}, "optimizer_states": [], "bockparse": {}}
    if config is not None:
        checkpoint[CONFIG_KEY] = config
    torch.save(checkpoint, last)
    return last


def test_a_truncated_last_checkpoint_names_the_file_the_problem_and_the_options(tmp_path):
    cfg = composed("resume=true")
    last = write_last(tmp_path, OmegaConf.to_container(cfg, resolve=True))
    last.write_bytes(last.read_bytes()[:100])
    with pytest.raises(ResumeError) as err:
        run(cfg, tmp_path)
    message = str(err.value)
    assert str(last) in message and "damaged or unreadable" in message
    assert "resume=false" in message and f"delete {tmp_path}" in message


def test_a_checkpoint_without_training_state_is_refused(tmp_path):
    cfg = composed("resume=true")
    last = tmp_path / "checkpoints" / "last.ckpt"
    last.parent.mkdir(parents=True)
    torch.save({"state_dict": {}}, last)  # a weights-only file copied over last.ckpt
    with pytest.raises(ResumeError, match="lacks optimizer_states, bockparse"):
        run(cfg, tmp_path)


def test_a_changed_model_data_or_condition_is_refused_with_every_key(tmp_path):
    trained = OmegaConf.to_container(composed(), resolve=True)
    write_last(tmp_path, trained)
    cfg = composed("resume=true", "model.context.lstm_hidden=48", "data.batch_size=500",
                   "condition=local-ce", "data.num_workers=2", "optim.max_steps=9")  # fmt: skip
    with pytest.raises(ResumeError) as err:
        run(cfg, tmp_path)
    message = str(err.value)
    assert "model.context.lstm_hidden: 32 -> 48" in message
    assert "data.batch_size: 400 -> 500" in message
    assert "name: 'hinge-bock' -> 'local-ce-cle'" in message
    assert "decoder: 'bock' -> 'cle'" in message
    # the number of workers and the update budget may change
    assert "num_workers" not in message and "max_steps" not in message


def test_config_differences_lists_only_what_differs():
    saved = {"model": {"a": 1, "b": {"c": 2}}, "data": {"num_workers": 0}, "trainer": {"x": 1}}
    now = {"model": {"a": 1, "b": {"c": 3}, "d": 4}, "data": {"num_workers": 4}, "trainer": {}}
    assert config_differences(saved, now) == ["model.b.c: 2 -> 3", "model.d: '<absent>' -> 4"]
    assert config_differences(saved, saved) == []


def test_a_finished_run_is_not_trained_again(tmp_path, caplog):
    done = {"test/las": 12.5, "best_step": 3}
    (tmp_path / "metrics.json").write_text(json.dumps(done), encoding="utf-8")
    with caplog.at_level("INFO", logger="bockparse.training"):
        assert run(composed("resume=true"), tmp_path) == done
    assert "is finished" in caplog.text
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.slow
def test_the_command_line_exits_0_when_finished_and_1_on_a_damaged_checkpoint(tmp_path):
    def train(run_dir: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "bockparse.training.train", "experiment=smoke", "resume=true",
             f"hydra.run.dir={run_dir}"],
            cwd=REPO, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    finished = tmp_path / "finished"
    finished.mkdir()
    (finished / "metrics.json").write_text('{"test/las": 1.0}', encoding="utf-8")
    proc = train(finished)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "is finished" in proc.stderr + proc.stdout
    assert not (finished / "checkpoints").exists()

    damaged = tmp_path / "damaged"
    last = write_last(damaged, None)
    last.write_bytes(b"\0" * 10)
    proc = train(damaged)
    assert proc.returncode == 1
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("bockparse-train:")]
    assert str(last) in line and "damaged or unreadable" in line and "resume=false" in line


# -- a resumed run continues bit for bit ------------------------------------------------------

# Big batches make short epochs (the sample's train set, 40,220 words, packs into 4), so
# that 8 updates cross an epoch boundary; dropout and word dropout draw at every update.
BIT_EXACT = ("optim.max_steps=8", "optim.eval_every=1", "data.batch_size=10000",
             "optim.last_checkpoint.every_evaluations=1", "torch_threads=1", "trace.enabled=true",
             "trace.shadow=null", "trace.ties=false")  # fmt: skip


def trace_rows(run_dir: Path) -> list[tuple[str, str, str]]:
    """(update, loss, parameter hash) of every update of a run's trace."""
    with open(run_dir / "trace.csv", encoding="utf-8") as f:
        return [(r["update"], r["loss"], r["param_hash"]) for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Path, int]:
    """The 8-update run in one go, and the number of batches in its epochs."""
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    cfg = composed(*BIT_EXACT)
    run(cfg, run_dir)
    datamodule, _ = build(cfg)
    return run_dir, len(datamodule.train_dataloader())


@pytest.mark.parametrize("where", ["inside an epoch", "at the end of an epoch"])
def test_a_resumed_run_continues_bit_for_bit(tmp_path, uninterrupted, where):
    """Stopped after k updates and resumed, a run takes the same batches, dropout and word
    dropout masks as the uninterrupted run: the same loss and parameters at every update."""
    whole, epoch = uninterrupted
    assert 2 < epoch < 8, "the settings must put an epoch boundary inside the 8 updates"
    k = epoch if where == "at the end of an epoch" else epoch - 2
    run(composed(*BIT_EXACT, f"optim.max_steps={k}"), tmp_path)
    first = torch.load(tmp_path / "checkpoints/last.ckpt", weights_only=True)
    assert first["global_step"] == k
    (tmp_path / "metrics.json").unlink()  # as if stopped by a kill after last.ckpt
    run(composed(*BIT_EXACT, "resume=true"), tmp_path)
    expected = trace_rows(whole)
    assert [row[0] for row in expected] == [str(i) for i in range(9)]  # 0: before training
    resumed_rows = trace_rows(tmp_path)
    assert resumed_rows.pop(k + 1) == (str(k), "", expected[k][2])  # the trace's resume mark
    assert resumed_rows == expected
    resumed, once = (json.loads((d / "metrics.json").read_text()) for d in (tmp_path, whole))
    for key in ("val/las", "test/las", "best_step"):
        assert resumed[key] == once[key]
    # the training time counts the process before the resume, up to its last.ckpt
    assert resumed["train_seconds"] > first["callbacks"]["RunClock"]["fit_seconds"] > 0


# -- a crafted last.ckpt ------------------------------------------------------------------------

# What a crafted last.ckpt plants at a leaf: every wrong type, and a line break for the logs.
WRONG = {"a mapping": {"k": 1}, "a list": [1, 2], "a string": "x\n$(touch pwned)\n",
         "None": None, "NaN": math.nan, "a huge int": 2**70}  # fmt: skip


def leaves(tree, path=()):
    """Paths to every leaf of a checkpoint part: mappings and short sequences are walked;
    tensors, long sequences (a generator's 625 words) and empty containers are leaves."""
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from leaves(value, (*path, key))
    elif isinstance(tree, list | tuple) and 0 < len(tree) <= 8:
        for i, value in enumerate(tree):
            yield from leaves(value, (*path, i))
    else:
        yield path


def planted(tree, path, value):
    """``tree`` with ``value`` at ``path`` (copied along the path only)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: planted(tree[head], rest, value)}
    items = list(tree)
    items[head] = planted(items[head], rest, value)
    return type(tree)(items)


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def applied(cfg, checkpoint, last: Path):
    """What a resumed run takes from ``checkpoint`` (check_resume, then every load the resume
    makes: the precision, the schedule, the module's decoding time, the callbacks' state, the
    training loader's place and the vocabularies)."""
    saved, step = check_checkpoint(cfg, checkpoint, last)
    precision = resolve_run_precision(copy.deepcopy(cfg), saved)
    schedule = instantiate(cfg.optim.schedule)
    schedule.load_state_dict(checkpoint["bockparse"]["schedule"])
    checkpoints = run_callbacks(cfg, last.parent.parent).checkpoints
    checkpoints.load_state_dict(checkpoint["callbacks"][checkpoints.state_key])
    clock = RunClock()
    clock.load_state_dict(checkpoint["callbacks"]["RunClock"])
    vocabs = Vocabs.from_dict(checkpoint[DATA_KEY]["vocabs"]).to_dict()
    return (step, precision, schedule.state_dict(), checkpoint["bockparse"]["decode_seconds"],
            checkpoints.saved_rng, clock.resumed_seconds, _at(checkpoint, LOADER_PATH),
            vocabs)  # fmt: skip


@pytest.mark.parametrize("part", [("bockparse",), ("callbacks",), ("global_step",), (CONFIG_KEY,),
                                  LOADER_PATH, (DATA_KEY,)], ids=".".join)  # fmt: skip
def test_a_crafted_last_checkpoint_is_refused_in_one_line_or_changes_nothing(
    uninterrupted, part, tmp_path
):
    """Every wrong type at every leaf of a real last.ckpt's saved config, schedule state,
    callback states, update count, training loader's place and vocabularies (and an unknown
    key in every mapping of the state): a one-line ResumeError naming the file, or exactly what
    the untouched file gives."""
    whole, _ = uninterrupted
    last = tmp_path / "checkpoints" / "last.ckpt"
    cfg = composed(*BIT_EXACT, "resume=true", "trace.enabled=false")
    checkpoint = torch.load(whole / "checkpoints/last.ckpt", weights_only=True)
    expected = applied(cfg, checkpoint, last)
    paths = [(*part, *p) for p in leaves(_at(checkpoint, part))]
    crafted = [(path, name, planted(checkpoint, path, value))
               for path in paths for name, value in WRONG.items()]  # fmt: skip
    if part != (CONFIG_KEY,):  # Lightning hands over the state whole: no key may ride along
        mappings = {p[:i] for p in paths for i in range(len(part), len(p))}
        crafted += [(path, "an unknown key", planted(checkpoint, path, {**_at(checkpoint, path),
                     "decay": 1000})) for path in mappings if isinstance(_at(checkpoint, path),
                     dict)]  # fmt: skip
    refused = 0
    for path, name, candidate in crafted:
        try:
            result = applied(cfg, candidate, last)
        except ResumeError as err:
            message = str(err)
            assert "\n" not in message, (path, name)
            assert message.startswith(f"refusing to resume from {last}"), (path, name)
            refused += 1
            continue
        assert same(result, expected), (path, name)
    assert refused >= len(paths) * 3  # most plants are refused; the others change nothing


def _at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def test_the_issues_schedule_repro_is_refused_naming_the_key(uninterrupted, tmp_path):
    """decay=1000 in a group's state passed both checks and decayed the rate to 1e+09."""
    whole, _ = uninterrupted
    checkpoint = torch.load(whole / "checkpoints/last.ckpt", weights_only=True)
    groups = checkpoint["bockparse"]["schedule"]["groups"]
    groups["parser"]["decay"] = 1000
    with pytest.raises(ResumeError, match=r"groups\.parser: unknown keys 'decay'"):
        check_checkpoint(composed(*BIT_EXACT, "resume=true"), checkpoint, tmp_path / "last.ckpt")
    del groups["parser"]["decay"]
    groups["parser"]["multiplier"] = 1e9
    with pytest.raises(ResumeError, match=r"groups\.parser: multiplier=1000000000\.0"):
        check_checkpoint(composed(*BIT_EXACT, "resume=true"), checkpoint, tmp_path / "last.ckpt")


def test_a_key_from_last_checkpoint_never_starts_a_log_line(tmp_path):
    trained = OmegaConf.to_container(composed(), resolve=True)
    trained["model"]["x\necho pwned >> ~/.bashrc\n"] = 1
    write_last(tmp_path, trained)
    with pytest.raises(ResumeError) as err:
        run(composed("resume=true"), tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert "'model.x\\necho pwned >> ~/.bashrc\\n': 1 -> '<absent>'" in message


@pytest.mark.parametrize("content", ["not json {", "[1, 2]", "\xff\xfe"])
def test_a_finished_run_whose_metrics_are_not_json_is_one_line(tmp_path, content):
    done = tmp_path / "metrics.json"
    done.write_bytes(content.encode("latin-1"))
    with pytest.raises(ResumeError) as err:
        read_finished(done)
    assert "\n" not in str(err.value) and str(done) in str(err.value)
    done.write_text('{"test/las": 1.0}', encoding="utf-8")
    assert read_finished(done) == {"test/las": 1.0}


def test_a_checkpoint_saved_before_the_heads_moved_still_resumes():
    # last.ckpt of a run trained before issue 51 names the heads and the transition loss by
    # their old class paths, and a transition parser's linearization and distance (false);
    # resume compares its model as it reads today (bockparse.compat.current_model).
    context = {"word_dim": 8}
    saved = {"model": {"_target_": "bockparse.model.scorer.BiaffineScorer", "context": context},
             "loss": {"_target_": "bockparse.transition.TransitionLoss"}}  # fmt: skip
    now = {"model": {"_target_": "bockparse.heads.biaffine.BiaffineScorer", "context": context},
           "loss": {"_target_": "bockparse.losses.transition.TransitionLoss"}}  # fmt: skip
    assert config_differences(saved, now) == []
    now["model"]["_target_"] = "bockparse.heads.transition.parser.TransitionParser"
    assert len(config_differences(saved, now)) == 1
    saved["model"] = {"_target_": "bockparse.transition.TransitionParser", "context": context,
                      "linearization": False, "distance": False}  # fmt: skip
    assert config_differences(saved, now) == []
