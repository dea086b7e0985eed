"""attnc.from_torch of Hugging Face transformers blocks (GPT2Block,
LlamaDecoderLayer, BertLayer; python/attnc/_hf.py), built from small
configs with random weights, against the modules themselves: whole
sequences, decoding with a KV cache (prefill + steps against the whole
sequence and against the module with its own DynamicCache), and
samples/python/generate.py against model.generate."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from transformers import BertConfig, DynamicCache, GPT2Config, LlamaConfig
from transformers.models.bert.modeling_bert import BertLayer
from transformers.models.gpt2.modeling_gpt2 import GPT2Block
from transformers.models.llama.modeling_llama import (LlamaDecoderLayer,
                                                      LlamaRotaryEmbedding)

import attnc
from conftest import SAMPLES

# Outputs of a layer are O(1) (residual + LayerNorm'd MLP); f32 kernels
# differ from torch's by summation order only.
F32 = dict(rtol=1e-4, atol=1e-4)


def gpt2_block(activation="gelu_new", **config):
    torch.manual_seed(0)
    cfg = GPT2Config(n_embd=64, n_head=4, n_positions=64,
                     activation_function=activation, initializer_range=0.1,
                     attn_implementation="sdpa", **config)
    return GPT2Block(cfg, layer_idx=0).eval()


def llama_config(**config):
    defaults = dict(hidden_size=64, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=96,
                    num_hidden_layers=1, initializer_range=0.1,
                    rope_parameters={"rope_type": "default",
                                     "rope_theta": 500.0},
                    attn_implementation="sdpa")
    defaults.update(config)
    return LlamaConfig(**defaults)


def llama_layer(**config):
    torch.manual_seed(0)
    cfg = llama_config(**config)
    return LlamaDecoderLayer(cfg, 0).eval(), LlamaRotaryEmbedding(cfg)


def llama_reference(layer, rotary, x, start=0):
    positions = torch.arange(start, start + x.shape[1])
    positions = positions.unsqueeze(0).expand(x.shape[0], -1)
    with torch.no_grad():
        return layer(x, position_embeddings=rotary(x, positions))


def hidden(B, T, D=64, seed=1):
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(seed))


def decode_in_pieces(block, x, pieces):
    """The block's outputs for x [B, T, D] given in pieces of the lengths
    `pieces` (a prefill, then steps), each at the tokens already cached."""
    outputs, pos = [], 0
    for n in pieces:
        outputs.append(block(x[:, pos:pos + n], pos))
        pos += n
    return torch.cat(outputs, dim=1)


@pytest.mark.parametrize("activation", ["gelu_new", "gelu", "relu"])
def test_gpt2_block_is_the_module(activation):
    m = gpt2_block(activation)
    x = hidden(2, 7)
    with torch.no_grad():
        expected = m(x)
    torch.testing.assert_close(attnc.from_torch(m, (x,))(x), expected, **F32)


def test_gpt2_decoding_equals_the_whole_sequence():
    m = gpt2_block()
    x = hidden(2, 9)
    with torch.no_grad():
        expected = m(x)
    block = attnc.from_torch(m, (x[:, :4],), cache_length=12)
    assert isinstance(block, attnc.DecoderBlock)
    assert "state  cache_k: f32[2, 12, 64]" in block.spec
    got = decode_in_pieces(block, x, [4, 1, 1, 3])
    torch.testing.assert_close(got, expected, **F32)
    # Rows past the 9 tokens were never written.
    assert not block.cache_k[:, 9:].any() and not block.cache_v[:, 9:].any()


def test_sequences_of_a_batch_at_different_positions():
    # Entry 0 has 5 tokens cached, entry 1 has 2: one step of each equals
    # the module over its own sequence.
    m = gpt2_block()
    x = hidden(2, 6)
    block = attnc.from_torch(m, (x[:, :5],), cache_length=8)
    block(x[:, :5], 0)
    step = torch.stack([x[0, 5], x[1, 2]]).unsqueeze(1)
    got = block(step, torch.tensor([5, 2]))
    with torch.no_grad():
        torch.testing.assert_close(got[0], m(x[:1, :6])[0, 5:], **F32)
        torch.testing.assert_close(got[1], m(x[1:, :3])[0, 2:], **F32)


def test_gpt2_step_equals_the_module_with_its_dynamic_cache():
    m = gpt2_block()
    x = hidden(1, 6)
    cache = DynamicCache(config=m.attn.config)
    with torch.no_grad():
        hf = [m(x[:, :5], cache=cache, use_cache=True),
              m(x[:, 5:], cache=cache, use_cache=True)]
    block = attnc.from_torch(m, (x[:, :5],), cache_length=6)
    got = [block(x[:, :5], 0), block(x[:, 5:], 5)]
    for a, b in zip(got, hf):
        torch.testing.assert_close(a, b, **F32)
    torch.testing.assert_close(block.cache_k[0],
                               cache.layers[0].keys[0].transpose(0, 1)
                               .reshape(6, 64), **F32)


def test_llama_layer_is_the_module():
    layer, rotary = llama_layer()
    x = hidden(2, 7)
    got = attnc.from_torch(layer, (x,))(x)
    torch.testing.assert_close(got, llama_reference(layer, rotary, x), **F32)


def test_llama_decoding_rotates_at_the_cache_positions():
    # GQA (4 query heads, 2 kv heads), rope_theta 500: a prefill of 3
    # tokens and steps give the whole sequence's outputs.
    layer, rotary = llama_layer()
    x = hidden(2, 8)
    block = attnc.from_torch(layer, (x[:, :3],), cache_length=10)
    assert list(block.cache_k.shape) == [2, 10, 32]
    assert "rope_base=500.0" in block.spec and "kv_heads=2" in block.spec
    got = decode_in_pieces(block, x, [3, 1, 2, 1, 1])
    torch.testing.assert_close(got, llama_reference(layer, rotary, x), **F32)


def test_llama_step_equals_the_module_with_its_dynamic_cache():
    layer, rotary = llama_layer()
    x = hidden(1, 5)
    cache = DynamicCache(config=layer.self_attn.config)
    with torch.no_grad():
        hf = [layer(x[:, :4], cache=cache, use_cache=True,
                    position_embeddings=rotary(x, torch.arange(4)[None])),
              layer(x[:, 4:], cache=cache, use_cache=True,
                    position_embeddings=rotary(x, torch.arange(4, 5)[None]))]
    block = attnc.from_torch(layer, (x[:, :4],), cache_length=5)
    got = [block(x[:, :4], 0), block(x[:, 4:], 4)]
    for a, b in zip(got, hf):
        torch.testing.assert_close(a, b, **F32)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_low_precision_module_decodes_with_a_cache_of_its_dtype(dtype):
    # Against the f32 module: attnc's error is within twice torch's own
    # (the module run in dtype) plus one rounding of the output's size.
    m = gpt2_block()
    x = hidden(2, 6)
    with torch.no_grad():
        exact = m(x)
        low = m.to(dtype)
        theirs = low(x.to(dtype)).float()
    block = attnc.from_torch(low, (x[:, :4].to(dtype),), cache_length=6)
    assert block.cache_k.dtype == dtype
    got = decode_in_pieces(block, x.to(dtype), [4, 1, 1])
    assert got.dtype == dtype
    ours = (got.float() - exact).abs().max().item()
    bar = 2 * (theirs - exact).abs().max().item() + \
        exact.abs().max().item() * torch.finfo(dtype).eps
    assert ours <= bar, (ours, bar)


def test_a_position_out_of_range_is_an_error_that_writes_nothing():
    m = gpt2_block()
    x = hidden(2, 2)
    block = attnc.from_torch(m, (x,), cache_length=3)
    with pytest.raises(ValueError, match=r"position 2 at \[0\] is out of range"):
        block(x, 2)  # rows 2 and 3 of a 3-row cache
    with pytest.raises(ValueError, match=r"position -1 at \[1\]"):
        block(x[:, :1], torch.tensor([0, -1]))
    assert not block.cache_k.any() and not block.cache_v.any()


def test_a_decoder_blocks_arguments_are_checked():
    m = gpt2_block()
    x = hidden(2, 2)
    block = attnc.from_torch(m, (x,), cache_length=4)
    with pytest.raises(ValueError, match=r"hidden_states must be a tensor "
                       r"\[2, T, 64\], got \[3, 2, 64\]"):
        block(hidden(3, 2), 0)
    with pytest.raises(ValueError, match="computes in torch.float32"):
        block(x.double(), 0)
    with pytest.raises(ValueError, match=r"pos has shape \[3\]"):
        block(x, torch.tensor([0, 0, 0]))
    with pytest.raises(TypeError, match="pos must be integers"):
        block(x, torch.tensor([0.0, 1.0]))


@pytest.mark.parametrize("mask", [None, "keep", "additive"])
def test_bert_layer_is_the_module(mask):
    torch.manual_seed(0)
    m = BertLayer(BertConfig(hidden_size=64, num_attention_heads=4,
                             intermediate_size=128,
                             attn_implementation="sdpa")).eval()
    x = hidden(2, 7)
    keep = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    additive = (1.0 - keep[:, None, None, :].float()) * \
        torch.finfo(torch.float32).min
    with torch.no_grad():
        expected = m(x, attention_mask=None if mask is None else additive)
    given = {None: None, "keep": keep, "additive": additive}[mask]
    block = attnc.from_torch(m, (x,) if mask is None else (x, given))
    got = block(x) if mask is None else block(x, given)
    torch.testing.assert_close(got, expected, **F32)
    if mask is not None:
        with pytest.raises(NotImplementedError, match="not a prefix"):
            block(x, torch.tensor([[1] * 7, [0] + [1] * 6]))


def bert_layer(implementation):
    torch.manual_seed(0)
    return BertLayer(BertConfig(hidden_size=64, num_attention_heads=4,
                                intermediate_size=128,
                                attn_implementation=implementation)).eval()


@pytest.mark.parametrize("rows", [1, 7], ids=["1xT", "TxT"])
def test_bert_sdpa_takes_a_boolean_4d_mask_as_true_attends(rows):
    # Issue 52, item 7: with sdpa, BertModel passes its layers a boolean
    # [B, 1, T or 1, T] mask, True attending; it was added as if additive
    # (off by 0.02).
    m = bert_layer("sdpa")
    x = hidden(2, 7)
    keep = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    mask = keep[:, None, None, :].expand(2, 1, rows, 7)
    with torch.no_grad():
        expected = m(x, attention_mask=mask)
    block = attnc.from_torch(m, (x, mask))
    torch.testing.assert_close(block(x, mask), expected, **F32)


def test_bert_masks_in_every_form_hugging_face_passes():
    # An eager layer adds its mask: BertModel gives it an additive one; a
    # boolean one would add 1 and 0, which attnc cannot express.
    x = hidden(2, 7)
    keep = torch.tensor([[1] * 7, [1] * 5 + [0] * 2])
    additive = (1.0 - keep[:, None, None, :].float()) * \
        torch.finfo(torch.float32).min
    for implementation in ("eager", "sdpa"):
        m = bert_layer(implementation)
        with torch.no_grad():
            expected = m(x, attention_mask=additive)
        for mask in (keep, keep.bool(), additive, additive.expand(2, 1, 7, 7),
                     keep.bool()[:, None, None, :]):
            if mask.dtype == torch.bool and mask.dim() == 4 and \
                    implementation == "eager":
                with pytest.raises(NotImplementedError, match="a boolean "
                                   "4-D attention_mask for an eager "
                                   "BertLayer, which adds its mask"):
                    attnc.from_torch(m, (x, mask))
                continue
            block = attnc.from_torch(m, (x, mask))
            torch.testing.assert_close(block(x, mask), expected, **F32)
    with pytest.raises(NotImplementedError, match="a bias on the scores"):
        block(x, additive.clamp(min=-1.0))
    with pytest.raises(NotImplementedError, match="the tokenizer's"):
        block(x, additive[:, 0, 0])


def test_a_decode_position_is_never_wrapped():
    # Issue 52, item 8: 2**32 + 3 became 3 (.to(int32)) and overwrote the
    # cache's row 3. An int, an int64 tensor and NumPy int64 are refused,
    # naming the value, with nothing written.
    m = gpt2_block()
    x = hidden(2, 1)
    block = attnc.from_torch(m, (x,), cache_length=8)
    for pos in (torch.tensor([0, 2**32 + 3]),
                np.array([0, 2**32 + 3], dtype=np.int64)):
        with pytest.raises(ValueError, match=r"input 'pos': value 4294967299 "
                           r"at \[1\] does not fit in i32"):
            block(x, pos)
    with pytest.raises(ValueError, match="pos is 4294967299, which does not "
                       "fit in int32"):
        block(x, 2**32 + 3)
    assert not block.cache_k.any() and not block.cache_v.any()


def test_what_attnc_cannot_express_is_refused():
    with pytest.raises(NotImplementedError, match="rope_type 'linear'"):
        layer, _ = llama_layer(rope_parameters={
            "rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0})
        attnc.from_torch(layer, (hidden(1, 2),))
    with pytest.raises(NotImplementedError,
                       match="config.activation_function is 'quick_gelu'"):
        attnc.from_torch(gpt2_block("quick_gelu"), (hidden(1, 2),))
    with pytest.raises(NotImplementedError,
                       match="scale_attn_by_inverse_layer_idx"):
        attnc.from_torch(gpt2_block(scale_attn_by_inverse_layer_idx=True),
                         (hidden(1, 2),))
    bert = BertLayer(BertConfig(hidden_size=64, num_attention_heads=4,
                                intermediate_size=128)).eval()
    with pytest.raises(ValueError, match="BertLayer is an encoder layer"):
        attnc.from_torch(bert, (hidden(1, 2),), cache_length=4)
    with pytest.raises(ValueError, match="cache_length is for decoder "
                       "blocks .* not Linear"):
        attnc.from_torch(torch.nn.Linear(2, 2).eval(), (torch.zeros(1, 2),),
                         cache_length=4)
    with pytest.raises(ValueError, match="in training mode"):
        attnc.from_torch(gpt2_block().train(), (hidden(1, 2),))


def test_generate_prints_the_tokens_of_hugging_face_generate():
    script = os.path.join(SAMPLES, "python", "generate.py")
    run = subprocess.run(
        [sys.executable, script, "--layers", "2", "--hidden", "64",
         "--heads", "4", "--vocab", "128", "--prompt", "5", "--new", "12"],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "same tokens: yes" in run.stdout
    hf = [line.split(":", 1)[1] for line in run.stdout.splitlines()
          if line.startswith("hugging face [")]
    ours = [line.split(":", 1)[1] for line in run.stdout.splitlines()
            if line.startswith("attnc        [")]
    assert len(hf) == 2 and hf == ours
    assert "tokens/s: hugging face generate" in run.stdout
