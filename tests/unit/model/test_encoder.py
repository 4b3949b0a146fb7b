"""The transformer feature extractor and the encoder configs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from bockparse.data.subwords import length_chunks, pool_pieces
from bockparse.model.encoder import (
    TransformerEncoder,
    load_encoder_tokenizer,
    load_pretrained,
    random_bert,
)
from bockparse.untrusted import resolve_encoder_path

CONF = Path(__file__).resolve().parents[3] / "conf"
ENCODERS = sorted(p.stem for p in (CONF / "encoder").glob("*.yaml"))


def test_the_shipped_encoder_configs():
    assert {"minilm", "bert-base-cased", "bert-base-chinese", "none", "tiny-random"} <= set(
        ENCODERS
    )


@pytest.mark.parametrize("name", ENCODERS)
def test_every_encoder_config_gives_what_data_and_model_read(name, encoder_config):
    cfg = encoder_config(name)
    if OmegaConf.is_missing(cfg, "name_or_path"):  # a base (transformer, pretrained): give it
        cfg = encoder_config(name, "encoder.name_or_path=minilm")
    assert {"name_or_path", "max_length", "lr_scale", "tokenizer", "model"} <= set(cfg)
    if name == "none":
        assert instantiate(cfg.model) is None and instantiate(cfg.tokenizer) is None
        return
    assert cfg.tokenizer.name_or_path == cfg.name_or_path  # interpolations resolve
    assert cfg.model.layers == cfg.layers and cfg.pooling in ("first", "mean")
    assert cfg.tokenizer.local_files_only is True


def test_the_data_module_gets_the_tokenizer_by_interpolation(encoder_config):
    """The training config's wiring: data.tokenizer=${encoder.tokenizer} instantiates the
    encoder's tokenizer inside the data node."""
    root = OmegaConf.create(
        {
            "encoder": encoder_config("tiny-random"),
            "data": {
                "_target_": "builtins.dict",
                "tokenizer": "${encoder.tokenizer}",
                "max_length": "${encoder.max_length}",
            },
        }
    )
    data = instantiate(root.data)
    assert data["tokenizer"].cls_token_id is not None and data["max_length"] == 32


def test_minilm_resolves_to_the_embedded_weights():
    folder = Path(resolve_encoder_path("minilm"))
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert resolve_encoder_path("bert-base-cased") == "bert-base-cased"
    assert resolve_encoder_path("~/models/x") == str(Path.home() / "models" / "x")


def test_minilm_config_loads_offline(encoder_config):
    cfg = encoder_config("minilm")
    tokenizer = instantiate(cfg.tokenizer)
    encoder = instantiate(cfg.model)
    assert isinstance(encoder, TransformerEncoder)
    assert encoder.hidden_size == 384 and encoder.transformer.config.num_hidden_layers == 6
    assert len(tokenizer) == encoder.transformer.config.vocab_size
    assert cfg.max_length <= encoder.transformer.config.max_position_embeddings
    assert all(p.requires_grad for p in encoder.parameters())  # fine-tuned


def test_missing_encoder_fails_with_advice():
    with pytest.raises(OSError, match="offline"):
        load_pretrained("bockparse-tests/no-such-model", local_files_only=True)
    with pytest.raises(OSError, match="huggingface-cli download"):
        load_encoder_tokenizer("bockparse-tests/no-such-model", local_files_only=True)


def test_tiny_random_sizes(make_encoder, tiny_config):
    encoder = make_encoder()
    config = encoder.transformer.config
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (2, 32, 2)
    assert config.max_position_embeddings == tiny_config.max_length
    assert config.vocab_size == len(load_encoder_tokenizer("minilm", local_files_only=True))


def test_layer_and_pooling_checks():
    bert = random_bert("minilm", 2, 8, 2, 16, 16)
    with pytest.raises(ValueError, match="layers"):
        TransformerEncoder(bert, 4, "first")
    with pytest.raises(ValueError, match="pooling"):
        TransformerEncoder(bert, 2, "max")


def test_output_shape_and_root(make_encoder, collate):
    batch = collate([0, 3])
    encoder = make_encoder().eval()
    with torch.no_grad():
        out = encoder(batch.subwords)
    assert out.shape == (*batch.words.shape, encoder.hidden_size)
    assert torch.isfinite(out[batch.mask]).all()


def test_long_sentences_go_through_windows(make_encoder, tiny_config, collate, dataset):
    """A sentence longer than max_length is encoded in windows; each word reads the window the
    data layer chose for it, and only that one."""
    longest = int(dataset.lengths.argmax())
    batch = collate([longest])
    sw = batch.subwords
    W, T = sw.input_ids.shape
    assert W >= 3 and T == tiny_config.max_length
    encoder = make_encoder().eval()
    window = (sw.piece_index[0] // T)[sw.first_piece[0]]  # [N]: the window of each position
    changed = sw.input_ids.clone()
    inside = sw.attention_mask[1].bool() & (sw.input_ids[1] > 999)
    changed[1, inside] = 1000 + (sw.input_ids[1, inside] * 7919) % 20000
    with torch.no_grad():
        before = encoder(sw)
        after = encoder(replace(sw, input_ids=changed))
    words = batch.mask[0]
    moved = (before[0] - after[0]).abs().amax(-1)  # [N]
    assert (moved[words & (window == 1)] > 1e-3).all()
    assert (moved[words & (window != 1)] < 1e-6).all()
    assert ((window == 0) & words).any() and ((window == 2) & words).any()


def test_pooling_first_or_mean(make_encoder, collate):
    batch = collate([0, 3])
    outputs = {}
    for pooling in ("first", "mean"):
        outputs[pooling] = make_encoder(pooling=pooling).eval()(batch.subwords).detach()
    pieces = torch.zeros(batch.words.shape, dtype=torch.long).scatter_add_(
        1, batch.subwords.piece_word, batch.subwords.piece_mask.long()
    )  # [B, N] pieces per position
    single, several = batch.mask & (pieces == 1), batch.mask & (pieces > 1)
    assert single.any() and several.any()
    diff = (outputs["first"] - outputs["mean"]).abs().amax(-1)
    assert (diff[single] < 1e-6).all() and (diff[several] > 1e-4).all()


def test_layer_mix(make_encoder, collate):
    """The mix is a softmax-weighted sum with a scale: all weight on the top layer is the
    transformer's last hidden state, pooled."""
    batch = collate([0, 3])
    encoder = make_encoder().eval()
    with torch.no_grad():
        encoder.layer_weights.copy_(torch.tensor([-1e4, 0.0]))
        encoder.scale.fill_(2.0)
        mixed = encoder(batch.subwords)
        top = encoder.transformer(
            input_ids=batch.subwords.input_ids, attention_mask=batch.subwords.attention_mask
        ).last_hidden_state
    first = batch.subwords.piece_index.gather(1, batch.subwords.first_piece)  # [B, N]
    expected = 2.0 * top.reshape(-1, top.shape[-1])[first]
    torch.testing.assert_close(mixed[batch.mask], expected[batch.mask])


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_chunked_windows_equal_one_padded_block(make_encoder, collate, dataset, pooling):
    """The encoder's length-sorted chunks give the outputs and gradients of the former path,
    all ``[W, T]`` windows in one padded call, on the same weights."""
    longest = int(dataset.lengths.argmax())
    batch = collate([longest, 0, 3, 5, 9, 17, 20, 40])  # windows of very different lengths
    sw = batch.subwords
    encoder = make_encoder(pooling=pooling, model={"chunk_pieces": 64, "max_padding": 1.1}).eval()
    lengths = sw.attention_mask.sum(-1).numpy()
    assert len(length_chunks(lengths, 64, 1.1)) >= 3
    chunked = encoder(sw)
    block = pool_pieces(encoder._mix(sw.input_ids, sw.attention_mask), sw, pooling)
    torch.testing.assert_close(chunked[batch.mask], block[batch.mask], rtol=1e-4, atol=1e-5)
    root = chunked[:, 0]
    torch.testing.assert_close(root, block[:, 0], rtol=1e-4, atol=1e-5)
    # Gradients in float64: the layer-weight gradient cancels, float32 rounding would dominate.
    encoder.double()
    chunked = encoder(sw)
    block = pool_pieces(encoder._mix(sw.input_ids, sw.attention_mask), sw, pooling)
    params = list(encoder.parameters())
    grads = torch.autograd.grad((chunked[batch.mask] ** 2).sum(), params, allow_unused=True)
    ref = torch.autograd.grad((block[batch.mask] ** 2).sum(), params, allow_unused=True)
    for g, r in zip(grads, ref, strict=True):
        assert (g is None) == (r is None)
        if g is not None:
            torch.testing.assert_close(g, r, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("model", ["biaffine", "transition"])
def test_model_config_instantiates_in_full(vocabs, model):
    """conf/model/<model>.yaml, with its model.context (conf/model/context/), gives every
    constructor argument but the vocabs and encoder."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(overrides=[f"+model={model}"]).model
    scorer = instantiate(cfg)(vocabs=vocabs, encoder=None)
    assert type(scorer).__name__ == cfg._target_.rsplit(".", 1)[-1]
    context = scorer.context
    assert context.lstm.hidden_size == 400 and context.lstm.num_layers == 3
    assert context.word_embedding.embedding_dim == 75 and context.word_dropout == 0.33
    if model == "biaffine":
        assert scorer.linearization is not None and scorer.distance is not None
