"""A real smoke run of ``bockparse-train``, loaded from its folder, its checkpoint and its
exported model file: the same scores as its ``metrics.json``, the same predictions as its
``predictions/test.conllu``, byte for byte, and model files that cannot run code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bockparse.cli.parser import evaluate as evaluate_cli
from bockparse.cli.parser import export as export_cli
from bockparse.cli.parser import predict as predict_cli
from bockparse.data import read_conllu, write_conllu
from bockparse.metrics import evaluate_files
from bockparse.parser import ModelError, Parser

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"
TEST = SAMPLE / "en_ewt-ud-test.conllu"


@pytest.fixture(scope="module")
def exported(smoke_run, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("export") / "model.pt"
    assert export_cli([str(smoke_run), "--out", str(path)]) == 0
    return path


def test_evaluate_equals_metrics_json_from_folder_checkpoint_and_model_file(
    smoke_run, exported, capsys
):
    metrics = json.loads((smoke_run / "metrics.json").read_text())
    expected = {name: metrics[f"test/{name}"] for name in ("uas", "las", "lcm")}
    for source in (smoke_run, smoke_run / "checkpoints" / "best.ckpt", exported):
        result = Parser.load(source).evaluate(TEST)
        assert {name: result[name] for name in expected} == expected, source
        assert result["sentences"] == 400 and result["words"] == 6305
    capsys.readouterr()
    assert evaluate_cli([str(exported), str(TEST)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert (
        first == f"UAS {expected['uas']:.2f}  LAS {expected['las']:.2f}  LCM {expected['lcm']:.2f}"
    )


@pytest.mark.parametrize("run", ["smoke_run", "smoke_run_bf16"])
def test_tag_and_parse_scores_of_trained_runs_equal_the_conll_2018_evaluator(
    run, request, tmp_path, conll2018, perturb_tags
):
    """On each trained run's test predictions, and on a copy whose tags differ from the gold
    ones: bockparse-eval's counts are the evaluator's, with and without punctuation; the
    parser's own tag scores are 100 %, as it reads the gold file's tags."""
    run_dir = request.getfixturevalue(run)
    pred = run_dir / "predictions" / "test.conllu"
    retagged = tmp_path / "retagged.conllu"
    perturb_tags(pred, retagged, 11)
    parser = Parser.load(run_dir)
    for exclude in (None, "upos"):
        for path in (pred, retagged):
            ours = evaluate_files(str(TEST), str(path), exclude)
            theirs = conll2018(TEST, path, exclude)
            assert {name: ours[name] for name in theirs} == theirs, (path, exclude)
        assert evaluate_files(str(TEST), str(pred), exclude)["alltags"] == 100.0
        assert evaluate_files(str(TEST), str(retagged), exclude)["alltags"] < 95.0
        evaluated = parser.evaluate(TEST, exclude_punct=exclude)
        assert evaluated == evaluate_files(str(TEST), str(pred), exclude)
        assert [evaluated[n] for n in ("upos", "xpos", "ufeats", "alltags")] == [100.0] * 4


def test_a_bf16_run_predicts_in_bf16_and_reproduces_its_metrics(smoke_run_bf16, tmp_path):
    metrics = json.loads((smoke_run_bf16 / "metrics.json").read_text())
    expected = {name: metrics[f"test/{name}"] for name in ("uas", "las", "lcm")}
    path = tmp_path / "model.pt"
    assert export_cli([str(smoke_run_bf16), "--out", str(path)]) == 0
    for source in (smoke_run_bf16, path):
        parser = Parser.load(source)
        assert parser.precision == "bf16-mixed"
        result = parser.evaluate(TEST)
        assert {name: result[name] for name in expected} == expected, source
    batch = next(parser.batches(parser.sentences(TEST)))
    with torch.inference_mode(), parser.autocast():
        assert (
            parser.scorer.rel(torch.randn(2, 3, parser.scorer.context.width)).dtype
            == torch.bfloat16
        )
    parsed = parser.predict(TEST)
    out = tmp_path / "test.conllu"
    write_conllu(out, parsed)
    assert out.read_bytes() == (smoke_run_bf16 / "predictions" / "test.conllu").read_bytes()
    fp32 = Parser.load(smoke_run_bf16, precision="32-true")
    assert fp32.precision == "32-true" and len(fp32.predict_batch(batch)[0]) == len(batch)
    with fp32.autocast():
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.float32


def test_model_file_is_slim_and_predicts_exactly_as_the_checkpoint(smoke_run, exported, tmp_path):
    content = torch.load(exported, map_location="cpu", weights_only=True)
    assert set(content) == {"format", "version", "config", "state_dict", "encoder_files"}
    meta = json.loads(content["config"])
    run = meta["metadata"]
    assert (run["condition"], run["decoder"], run["seed"]) == ("hinge-bock", "bock", 1111)
    assert run["metrics"]["best_step"] == 2 and "test/las" in run["metrics"]
    assert meta["settings"]["model"]["kind"] == "biaffine" and content["version"] == 3
    assert meta["settings"]["model"]["params"]["context"]["use_upos"] is False
    assert "_target_" not in json.dumps(meta)  # data: no class or function names
    assert all(isinstance(v, torch.Tensor) for v in content["state_dict"].values())

    from_ckpt = Parser.load(smoke_run / "checkpoints" / "best.ckpt").predict(TEST)
    from_file = Parser.load(exported).predict(TEST)
    assert [(s.heads, s.rels) for s in from_file] == [(s.heads, s.rels) for s in from_ckpt]
    out = tmp_path / "test.conllu"
    write_conllu(out, from_file)
    assert out.read_bytes() == (smoke_run / "predictions" / "test.conllu").read_bytes()


def test_a_version_2_model_file_loads_to_the_same_parser(smoke_run, exported, tmp_path):
    # Version 2 (before model.context): the contextualiser's parameters beside the head's, and
    # its modules at the top of the biaffine scorer's state dict.
    content = torch.load(exported, map_location="cpu", weights_only=True)
    meta = json.loads(content["config"])
    params = meta["settings"]["model"]["params"]
    params.update(params.pop("context"))
    old = {**content, "version": 2, "config": json.dumps(meta)}
    old["state_dict"] = {k.removeprefix("context."): v for k, v in content["state_dict"].items()}
    assert "lstm.weight_ih_l0" in old["state_dict"] and "lstm_hidden" in params
    path = tmp_path / "v2.pt"
    torch.save(old, path)
    loaded = Parser.load(path)
    assert loaded.settings.model == Parser.load(exported).settings.model  # nested on reading
    out = tmp_path / "test.conllu"
    write_conllu(out, loaded.predict(TEST))
    assert out.read_bytes() == (smoke_run / "predictions" / "test.conllu").read_bytes()


def test_cli_predicts_the_run_predictions_and_reports_speed(smoke_run, exported, tmp_path, capsys):
    out = tmp_path / "pred.conllu"
    assert predict_cli([str(exported), str(TEST), "--out", str(out), "--decoder", "cle"]) == 0
    captured = capsys.readouterr()
    assert "400 sentences, 6,305 words in" in captured.out and "sentences/s" in captured.out
    assert "parsed 400 / 400 sentences" in captured.err
    # CL/E and Bock are both exact: the same trees as the run's (Bock) predictions
    assert out.read_bytes() == (smoke_run / "predictions" / "test.conllu").read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["pred.conllu"]  # no temporary left
    # punctuation left out: the same counts as bockparse-eval on the written file
    on_file = evaluate_files(str(TEST), str(out), "upos")
    assert Parser.load(exported).evaluate(TEST, decoder="cle", exclude_punct="upos") == on_file
    assert on_file["words"] < 6305


def test_plain_token_lists_parse_as_the_same_words_in_conllu(exported):
    parser = Parser.load(exported)
    gold = read_conllu(TEST, single_root=True, on_malformed="error")[:60]
    from_words = parser.predict([s.forms for s in gold])
    from_conllu = parser.predict(gold)  # tags present but unused by the tag-free model
    assert [(s.heads, s.rels) for s in from_words] == [(s.heads, s.rels) for s in from_conllu]
    assert all(s.heads.count(0) == 1 for s in from_words)


class Payload:
    """Unpickling it creates a file: a stand-in for code a malicious model file would run."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_file_carrying_a_pickle_payload_is_refused_without_running_it(smoke_run, tmp_path):
    marker = tmp_path / "payload-ran"
    evil = tmp_path / "model.pt"
    torch.save({"format": "bockparse-model", "state_dict": {}, "x": Payload(marker)}, evil)
    with pytest.raises(ModelError, match=r"model.pt: refused: .*could run code"):
        Parser.load(evil)
    assert not marker.exists()
    torch.load(evil, weights_only=False)  # what loading without weights_only would have done
    assert marker.exists()


def test_bad_model_paths_are_clear_errors(smoke_run, tmp_path):
    with pytest.raises(ModelError, match="not found"):
        Parser.load(tmp_path / "missing.pt")
    with pytest.raises(ModelError, match="not a run folder"):
        Parser.load(tmp_path)
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(ModelError, match=r"text\.pt: not a model file"):
        Parser.load(tmp_path / "text.pt")
    lone = tmp_path / "lone.ckpt"  # a checkpoint outside its run folder
    lone.write_bytes((smoke_run / "checkpoints" / "best.ckpt").read_bytes())
    with pytest.raises(ModelError, match=r"not in a run folder's checkpoints/"):
        Parser.load(lone)


def test_run_settings_read_every_config_layout(smoke_run):
    from omegaconf import OmegaConf

    from bockparse.compat import current_keys
    from bockparse.parser import run_settings

    saved = OmegaConf.to_container(OmegaConf.load(smoke_run / ".hydra" / "config.yaml"))
    flat = {k: v for k, v in saved.items() if k != "condition"}
    flat.update({k: saved.get("condition", {}).get(k, flat.get(k)) for k in ("name", "decoder")})
    flat["name"] = "hinge-bock"  # what the saved "hinge-${decoder}" resolves to
    grouped = {k: v for k, v in flat.items() if k not in ("name", "decoder", "loss")}
    grouped["condition"] = {"name": flat["name"], "decoder": flat["decoder"], "loss": flat["loss"]}
    settings = run_settings(OmegaConf.create(flat))
    assert run_settings(current_keys(OmegaConf.create(grouped))) == settings  # (RunDir.config)
    assert (settings.condition, settings.decoder, settings.seed) == ("hinge-bock", "bock", 1111)
    assert settings.model["encoder"]["max_length"] == 32
    assert settings.model["params"]["context"]["use_upos"] is False
    before_context = {**flat, "model": {**flat["model"], **flat["model"]["context"]}}
    del before_context["model"]["context"]  # a run composed before model.context
    assert run_settings(OmegaConf.create(before_context)) == settings
    assert settings.batch_size == 400 and settings.punct_tags == ["PUNCT"]


def test_the_experiment_loader_scores_through_the_parser(smoke_run, tmp_path, monkeypatch):
    from bockparse.experiments.loading import load_run
    from bockparse.experiments.substitute import compare

    monkeypatch.chdir(tmp_path)  # data paths come from the run's config, not the current folder
    run = load_run(smoke_run)
    result = compare(run, "test", ["bock", "tarjan"])
    assert result["sentences"] == 400
    assert result["reproduced"]["identical"] == 400  # the run's own predictions/test.conllu
    metrics = json.loads((smoke_run / "metrics.json").read_text())
    assert result["scores"]["bock"]["las"] == metrics["test/las"]


def test_an_auto_run_predicts_in_the_precision_it_used(smoke_run, tmp_path, monkeypatch):
    """A run composed with ``trainer.precision: auto`` predicts under what it resolved to (its
    ``environment.json``), not what this machine would choose; without the record, ``auto``
    resolves here."""
    import shutil

    from omegaconf import OmegaConf

    from bockparse import hardware

    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    config = OmegaConf.load(run / ".hydra" / "config.yaml")
    config.trainer.precision = "auto"
    OmegaConf.save(config, run / ".hydra" / "config.yaml")
    monkeypatch.setenv(hardware.FORCE_ENV, "0")  # this machine: fp32
    (run / "environment.json").write_text(json.dumps({"precision": "bf16-mixed"}))
    assert Parser.load(run).precision == "bf16-mixed"
    (run / "environment.json").unlink()
    assert Parser.load(run).precision == "32-true"
    assert Parser.load(run, precision="auto").precision == "32-true"
    (run / "environment.json").write_text("{")
    with pytest.raises(ModelError, match=r"environment\.json: damaged"):
        Parser.load(run)
    (run / "environment.json").write_text(json.dumps({"precision": "bf15"}))
    with pytest.raises(ModelError, match=r"config\.yaml: setting precision = 'bf15' must be one"):
        Parser.load(run)


@pytest.mark.parametrize("precision", ["32-true", "auto"])
def test_a_run_folders_model_is_validated_once(smoke_run, tmp_path, monkeypatch, precision):
    """Loading a run folder checks its model spec against the schema once (also where the
    run was saved with ``auto``: only the precision it used is checked then)."""
    import shutil

    from bockparse import modelfile
    from bockparse.parser import settings

    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    config = run / ".hydra" / "config.yaml"
    config.write_text(config.read_text().replace("precision: 32-true", f"precision: {precision}"))
    calls = []

    def counted(spec, source):
        calls.append(source)
        return validate(spec, source)

    validate = modelfile.validate_spec
    monkeypatch.setattr(modelfile, "validate_spec", counted)
    monkeypatch.setattr(settings, "validate_spec", counted)
    assert Parser.load(run).precision == "32-true"
    assert calls == [str(config)]
