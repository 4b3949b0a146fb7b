"""Payloads in model files and run folders someone sends (issue 50), one class of defect each:
custom code through the embedded or a named encoder, hub kernels, the user's data pulled into an
export (an ``oc.env`` interpolation, a symlinked ``metrics.json``), allocations a few bytes ask
for (huge sizes, stride-0 tensors, a zip bomb, YAML aliases, batch sizes), a FIFO, missing or
malformed parts. Each is refused with one line naming the file and the problem, before anything
runs, is fetched or is allocated; legitimate files load as before."""

from __future__ import annotations

import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
import yaml

from bockparse.cli.parser import export as export_cli
from bockparse.modelfile import ModelError, UnsafeFileError
from bockparse.parser import Parser
from bockparse.untrusted import resolve_encoder_path

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "ud-english-ewt-sample"
TEST = SAMPLE / "en_ewt-ud-test.conllu"
SRC = Path(__file__).resolve().parents[3] / "src"
MARKER_CODE = "import pathlib\npathlib.Path({marker!r}).touch()\n"


@pytest.fixture(scope="module")
def model_file(smoke_run, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("payloads") / "model.pt"
    Parser.load(smoke_run).save(path)
    return path


def planted(source: Path, target: Path, change) -> Path:
    """A copy of the model file ``source`` at ``target`` after ``change(content, meta, files)``:
    the loaded content, its JSON config and its encoder files' JSON (by name) to edit in place."""
    content = torch.load(source, weights_only=True)
    meta = json.loads(content["config"])
    files = {
        name: json.loads(bytes(data.numpy()))
        for name, data in content["encoder_files"].items()
        if name.endswith(".json") and name != "tokenizer.json"
    }
    change(content, meta, files)
    content["config"] = json.dumps(meta)
    for name, data in files.items():
        encoded = json.dumps(data).encode()
        content["encoder_files"][name] = torch.frombuffer(bytearray(encoded), dtype=torch.uint8)
    torch.save(content, target)
    return target


def refused(path: Path, match: str, error: type[Exception] = ModelError) -> str:
    """The one-line message loading ``path`` is refused with (it names the file)."""
    with pytest.raises(error) as info:
        Parser.load(path)
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    assert str(path) in message or str(path.parent) in message, message
    assert re.search(match, message), message
    return message


def copied_run(smoke_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    return run


def edit_config(run: Path, change) -> Path:
    path = run / ".hydra" / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(config)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_every_parameter_a_file_may_give_has_a_stated_range():
    from bockparse.model.context import Contextualizer
    from bockparse.model.encoder import TransformerEncoder, random_bert
    from bockparse.model.tagger import Tagger
    from bockparse.modelfile import PARAMETERS, model_kinds

    callees = [*model_kinds().values(), Contextualizer, Tagger, TransformerEncoder, random_bert]
    taken = {name for c in callees for name in inspect.signature(c).parameters}
    built = {"self", "vocabs", "encoder", "transformer", "context", "tagger", "width"}  # by code
    assert taken - built == set(PARAMETERS)


# -- code and the hub ------------------------------------------------------------------------


def test_custom_code_in_a_model_files_encoder_is_refused(model_file, tmp_path):
    marker = tmp_path / "ran"

    def code_file(content, meta, files):
        code = MARKER_CODE.format(marker=str(marker)).encode()
        content["encoder_files"]["modeling_evil.py"] = torch.tensor(list(code), dtype=torch.uint8)
        files["config.json"]["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}

    def auto_map(content, meta, files):
        files["config.json"]["auto_map"] = {"AutoConfig": "evil/repo--configuration.Evil"}

    def tokenizer_auto_map(content, meta, files):
        files["tokenizer_config.json"]["auto_map"] = {"AutoTokenizer": ["evil.Tok", None]}

    evil = planted(model_file, tmp_path / "code.pt", code_file)
    refused(evil, "refused: encoder file 'modeling_evil.py'", UnsafeFileError)
    evil = planted(model_file, tmp_path / "auto_map.pt", auto_map)
    refused(evil, r"config.json: refused: auto_map = .* run code", UnsafeFileError)
    evil = planted(model_file, tmp_path / "tok.pt", tokenizer_auto_map)
    refused(evil, r"tokenizer_config.json: refused: auto_map", UnsafeFileError)
    assert not marker.exists()


def test_a_run_naming_an_encoder_folder_with_code_is_refused(smoke_run, tmp_path):
    marker = tmp_path / "ran"
    folder = tmp_path / "encoder"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(Path(resolve_encoder_path("minilm")) / name, folder / name)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "m.M"}}))
    run = copied_run(smoke_run, tmp_path)
    edit_config(run, lambda c: c["encoder"].update(name_or_path=str(folder)))
    with pytest.raises(UnsafeFileError, match=r"encoder/config.json: refused: auto_map"):
        Parser.load(run)
    (folder / "modeling_m.py").write_text(MARKER_CODE.format(marker=str(marker)))
    with pytest.raises(UnsafeFileError, match=r"modeling_m.py: refused: .* not code"):
        Parser.load(run)
    assert not marker.exists()


@pytest.mark.parametrize(
    "key", ["attn_implementation", "_attn_implementation", "experts_implementation"]
)
def test_an_attention_kernel_from_the_hub_is_refused(model_file, tmp_path, key):
    def kernel(content, meta, files):
        files["config.json"][key] = "kernels-community/flash-attn2"

    evil = planted(model_file, tmp_path / "kernel.pt", kernel)
    refused(evil, f"refused: {key} = 'kernels-community/flash-attn2'", UnsafeFileError)


def test_a_built_in_attention_loads_and_predicts_as_before(model_file, tmp_path):
    def sdpa(content, meta, files):
        files["config.json"]["attn_implementation"] = "sdpa"

    sentences = Parser.load(model_file).sentences(TEST)[:20]
    before = Parser.load(model_file).predict(sentences)
    after = Parser.load(planted(model_file, tmp_path / "sdpa.pt", sdpa)).predict(sentences)
    assert [(s.heads, s.rels) for s in after] == [(s.heads, s.rels) for s in before]


# -- the user's data -------------------------------------------------------------------------


def test_export_never_resolves_the_environment_from_a_run_config(
    smoke_run, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("BOCKPARSE_TEST_SECRET", "s3cret-token")
    run = copied_run(smoke_run, tmp_path)
    edit_config(run, lambda c: c.update(experiment_name="${oc.env:BOCKPARSE_TEST_SECRET}"))
    out = tmp_path / "model.pt"
    assert export_cli([str(run), "--out", str(out)]) == 0
    content = torch.load(out, weights_only=True)
    assert "s3cret" not in content["config"]
    assert Parser.load(out).settings.experiment == "${oc.env:BOCKPARSE_TEST_SECRET}"  # literal
    capsys.readouterr()
    # a resolver where a number is read is refused, not evaluated
    config = edit_config(run, lambda c: c["data"].update(batch_size="${oc.env:SIZE,400}"))
    with pytest.raises(ModelError, match=f"{config}: setting batch_size = "):
        Parser.load(run)
    # a folder named through the environment is looked for under its literal name
    edit_config(run, lambda c: c["data"].update(batch_size=400))
    edit_config(run, lambda c: c["encoder"].update(name_or_path="${oc.env:HOME}"))
    with pytest.raises(
        ModelError, match=r"cannot load the tokenizer of encoder '\$\{oc.env:HOME\}'"
    ):
        Parser.load(run)


@pytest.mark.parametrize("name", ["metrics.json", "environment.json", ".hydra/config.yaml"])
def test_a_symlink_in_a_run_folder_is_never_followed(smoke_run, tmp_path, capsys, name):
    secret = tmp_path / "docker-config.json"
    secret.write_text('{"auths": {"registry": {"auth": "c2VjcmV0"}}}')
    run = copied_run(smoke_run, tmp_path)
    edit_config(run, lambda c: c["trainer"].update(precision="auto"))  # environment.json read
    (run / name).unlink()
    (run / name).symlink_to(secret)
    out = tmp_path / "model.pt"
    assert export_cli([str(run), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{run / name}: refused: a symbolic link" in err[0], err
    assert not out.exists()


def test_a_symlinked_checkpoint_folder_is_refused(smoke_run, tmp_path):
    run = copied_run(smoke_run, tmp_path)
    shutil.move(run / "checkpoints", tmp_path / "elsewhere")
    (run / "checkpoints").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeFileError, match=f"{run / 'checkpoints'}: refused: a symbolic link"):
        Parser.load(run)


def test_a_fifo_in_a_run_folder_is_refused_without_blocking(smoke_run, tmp_path):
    run = copied_run(smoke_run, tmp_path)
    edit_config(run, lambda c: c["trainer"].update(precision="auto"))  # environment.json read
    for name in ("environment.json", "metrics.json"):
        (run / name).unlink()
        os.mkfifo(run / name)
        with pytest.raises(ModelError, match=f"{run / name}: not a regular file"):
            Parser.load(run)
        (run / name).unlink()
        shutil.copy(smoke_run / name, run / name)


# -- allocations -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "key", "value", "match"),
    [
        ("context", "lstm_hidden", 20000, "parameter 'lstm_hidden' = 20000 must be in 1..8192"),
        ("context", "lstm_hidden", 8000, "weights do not fit .*16000\\) in the model"),  # in range
        ("context", "word_dim", 4000, "weights do not fit"),
        ("random_bert", "hidden_size", 0, "parameter 'hidden_size' = 0 must be in 1..8192"),
        ("encoder", "max_length", 10**12, "'max_length' = 1000000000000 must be in 3..131072"),
        ("encoder", "max_length", 1e12, "'max_length' = 1000000000000.0 must be an integer"),
        ("encoder", "max_length", 64, "max_length 64 exceeds the transformer's 32 positions"),
    ],
)
def test_sizes_are_checked_before_anything_is_allocated(
    model_file, tmp_path, where, key, value, match
):
    def plant(content, meta, files):
        model = meta["settings"]["model"]
        node = {
            "context": model["params"]["context"],
            "random_bert": model["encoder"]["transformer"]["params"],
            "encoder": model["encoder"],
        }[where]
        node[key] = value

    refused(planted(model_file, tmp_path / "big.pt", plant), match)


@pytest.mark.parametrize("value", [400_000_000, 4e8, 0, "30522", None])
def test_an_encoder_vocabulary_beyond_the_limit_is_refused(model_file, tmp_path, value):
    def plant(content, meta, files):
        files["config.json"]["vocab_size"] = value

    refused(
        planted(model_file, tmp_path / "vocab.pt", plant), "config.json: vocab_size = .* must be"
    )


def test_a_stride_0_or_oversized_tensor_is_refused(model_file, tmp_path):
    def broadcast_file(content, meta, files):  # 10 GB when materialised, 1 byte stored
        content["encoder_files"]["vocab.txt"] = torch.zeros(1, dtype=torch.uint8).expand(10**10)

    def broadcast_weight(content, meta, files):
        name = "context.lstm.bias_hh_l0"
        content["state_dict"][name] = torch.zeros(1).expand(content["state_dict"][name].shape)

    def wrong_dtype(content, meta, files):
        name = "context.lstm.bias_hh_l0"
        content["state_dict"][name] = content["state_dict"][name].double()

    evil = planted(model_file, tmp_path / "stride.pt", broadcast_file)
    refused(evil, r"encoder files: tensor 'vocab.txt' is not contiguous \(strides \(0,\)")
    evil = planted(model_file, tmp_path / "weight.pt", broadcast_weight)
    refused(evil, r"weights: tensor 'context.lstm.bias_hh_l0' is not contiguous")
    evil = planted(model_file, tmp_path / "dtype.pt", wrong_dtype)
    refused(evil, r"'context.lstm.bias_hh_l0' is torch.float64 .* torch.float32")


def test_a_zip_bomb_and_unknown_keys_are_refused(model_file, tmp_path):
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(model_file) as source, zipfile.ZipFile(bomb, "w") as target:
        prefix = source.namelist()[0].split("/")[0]
        for item in source.infolist():
            target.writestr(item, source.read(item))
        target.writestr(f"{prefix}/data/999", bytes(64 * 2**20), zipfile.ZIP_DEFLATED)
    assert bomb.stat().st_size < model_file.stat().st_size + 2**20
    refused(bomb, r"refused: archive member '.*data/999' is compressed \(67,108,864 bytes")

    def extra_key(content, meta, files):
        content["payload"] = torch.zeros(3)

    refused(planted(model_file, tmp_path / "extra.pt", extra_key), "unknown keys .*'payload'")


def test_yaml_aliases_in_a_run_config_are_refused(smoke_run, tmp_path):
    run = copied_run(smoke_run, tmp_path)
    config = run / ".hydra" / "config.yaml"
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    config.write_text("\n".join(levels) + "\n" + config.read_text(encoding="utf-8"))
    with pytest.raises(ModelError, match=f"{config}: not a readable run config .*anchors"):
        Parser.load(run)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("batch_size", 10**9, "setting batch_size = 1000000000 must be in 1..1000000"),
        ("batch_size", 0, "setting batch_size = 0 must be in"),
        ("decoder", "bogus", "setting decoder = 'bogus' is not a decoder"),
        ("decoder", None, "setting decoder = None is not a decoder"),
        ("precision", "bf15", "setting precision = 'bf15' must be one of"),
        ("punct_tags", [["PUNCT"]], "punct_tags must be a list of tags"),
    ],
)
def test_settings_read_from_a_model_file_are_bounded(model_file, tmp_path, key, value, match):
    def plant(content, meta, files):
        meta["settings"][key] = value

    refused(planted(model_file, tmp_path / "settings.pt", plant), match)


@pytest.mark.parametrize(
    ("key", "value"), [("data.batch_size", 0), ("data.batch_size", 10**9), ("decoder", "bogus")]
)
def test_export_refuses_a_run_config_out_of_range(smoke_run, tmp_path, capsys, key, value):
    run = copied_run(smoke_run, tmp_path)
    parts = key.split(".")

    def change(config):
        node = config
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = value

    config = edit_config(run, change)
    assert export_cli([str(run), "--out", str(tmp_path / "m.pt")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{config}: setting" in err[0], err


# -- malformed parts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [(-5, "must be in 1..8192"), ("16", "must be an integer"), (16.5, "must be an integer"),
     ([16], "must be an integer"), (True, "must be an integer"), (1e30, "must be an integer")],
)  # fmt: skip
def test_a_model_parameter_of_the_wrong_type_or_range_is_refused(
    model_file, tmp_path, value, problem
):
    def plant(content, meta, files):
        meta["settings"]["model"]["params"]["context"]["word_dim"] = value

    refused(planted(model_file, tmp_path / "p.pt", plant), f"parameter 'word_dim' = .* {problem}")


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [("word_dropout", 2.0, r"must be in \[0.0, 1.0\)"), ("distance", "abc", "true or false"),
     ("arc_hidden", [[32]], "must be an integer"), ("dropout", float("nan"), "must be in")],
)  # fmt: skip
def test_rates_flags_and_lists_are_checked(model_file, tmp_path, key, value, problem):
    def plant(content, meta, files):
        params = meta["settings"]["model"]["params"]
        (params["context"] if key in params["context"] else params)[key] = value

    refused(planted(model_file, tmp_path / "p.pt", plant), f"parameter '{key}' = .* {problem}")


def test_malformed_vocabularies_and_weights_are_refused(model_file, tmp_path):
    cases = {
        "newline label": (
            lambda c, m, f: m["vocabs"]["rels"]["itos"].__setitem__(0, "nsubj\n1\tx"),
            r"relation label 'nsubj\\n1\\tx' is not one CoNLL-U field",
        ),
        "tab label": (
            lambda c, m, f: m["vocabs"]["rels"]["itos"].__setitem__(1, "ob\tj"),
            "relation label 'ob\\\\tj'",
        ),
        "unk_index": (
            lambda c, m, f: m["vocabs"]["words"].__setitem__("unk_index", 10**6),
            "saved vocabulary 'words': must start with",
        ),
        "negative unk_index": (
            lambda c, m, f: m["vocabs"]["chars"].__setitem__("unk_index", -(10**6)),
            "saved vocabulary 'chars'",
        ),
        "itos": (
            lambda c, m, f: m["vocabs"]["upos"].__setitem__("itos", "abc"),
            "itos must be a list of strings",
        ),
        "integer weight key": (
            lambda c, m, f: c["state_dict"].__setitem__(7, torch.zeros(1)),
            "tensor name 7 is not a string",
        ),
        "weight not a tensor": (
            lambda c, m, f: c["state_dict"].__setitem__("context.lstm.bias_hh_l0", [0.0]),
            "tensor 'context.lstm.bias_hh_l0' is a list",
        ),
        "missing weight": (
            lambda c, m, f: c["state_dict"].pop("context.lstm.bias_hh_l0"),
            "lacks the tensor 'context.lstm.bias_hh_l0'",
        ),
        "no tokenizer.json": (
            lambda c, m, f: c["encoder_files"].pop("tokenizer.json"),
            "carries no tokenizer.json",
        ),
        "encoder file name": (
            lambda c, m, f: c["encoder_files"].__setitem__(
                "../../x.json", torch.zeros(1, dtype=torch.uint8)
            ),
            "refused: encoder file '../../x.json'",
        ),
        "encoder file value": (
            lambda c, m, f: c["encoder_files"].__setitem__("vocab.txt", "abc"),
            "tensor 'vocab.txt' is a str",
        ),
    }
    for change, match in cases.values():
        refused(planted(model_file, tmp_path / "bad.pt", change), match)


def test_a_deeply_nested_config_is_refused(model_file, tmp_path):
    content = torch.load(model_file, weights_only=True)
    content["config"] = "[" * 100_000 + "]" * 100_000
    deep = tmp_path / "deep.pt"
    torch.save(content, deep)
    refused(deep, "its config is not JSON: RecursionError")


def test_relation_labels_are_refused_in_a_checkpoint_too(smoke_run, tmp_path):
    run = copied_run(smoke_run, tmp_path)
    checkpoint = run / "checkpoints" / "best.ckpt"
    content = torch.load(checkpoint, weights_only=True)
    for value in content.values():
        if isinstance(value, dict) and isinstance(value.get("vocabs"), dict):
            value["vocabs"]["rels"]["itos"][0] = "root\n# injected"
    buffer = io.BytesIO()
    torch.save(content, buffer)
    checkpoint.write_bytes(buffer.getvalue())
    with pytest.raises(ModelError, match=f"{checkpoint}: saved vocabulary 'rels': relation"):
        Parser.load(run)


# -- no network, no process ------------------------------------------------------------------

LOAD_AND_PREDICT = """
import sys
from bockparse.modelfile import ModelError
from bockparse.parser import Parser
try:
    Parser.load(sys.argv[1]).predict(sys.argv[2])
except ModelError as e:
    print(e)
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_loading_makes_no_network_request_and_starts_no_process(model_file, tmp_path):
    def kernel_and_code(content, meta, files):
        files["config.json"]["attn_implementation"] = "kernels-community/flash-attn2"
        files["config.json"]["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}

    payload = planted(model_file, tmp_path / "payload.pt", kernel_and_code)
    script = tmp_path / "load.py"
    script.write_text(LOAD_AND_PREDICT)
    for path in (model_file, payload):
        log = tmp_path / f"{path.stem}.strace"
        subprocess.run(
            ["strace", "-f", "-qq", "-e", "trace=network,execve", "-o", str(log),
             sys.executable, str(script), str(path), str(TEST)],
            check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(SRC)},
        )  # fmt: skip
        calls = log.read_text().splitlines()
        assert [c for c in calls if "execve(" in c and sys.executable not in c] == [], calls
        assert [c for c in calls if "AF_INET" in c] == [], calls  # only local (AF_UNIX) sockets
