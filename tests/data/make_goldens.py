#!/usr/bin/python3
"""Makes the numerical goldens of attnc from the D2L PyTorch code.

    /usr/bin/python3 tests/data/make_goldens.py [CASE...]

(with CASE names, only those cases are written; needs torch and numpy: Debian's python3-torch 1.13 / python3-numpy 1.24).

For each case it writes tests/data/goldens/<case>/:
  <case>.attn          the block in the attnc DSL (docs/spec.md section 2)
  <ARG>.npy            one file per DSL input/param, named like the argument
  expected_<OUT>.npy   the D2L output, float32
The bf16/f16 cases (<case>_bf16, <case>_f16) store their inputs in that
type, the float64 reference as expected_<OUT>.npy and PyTorch's own
low-precision output as torch_<OUT>.npy; they need torch >= 2 and
ml_dtypes (see save_low_precision_case and tests/data/README.md).
Some large weights are not stored but generated from a formula (see
formula_params.txt in the case folder and tests/data/README.md).

The model code below is the D2L book's (d2l.ai, chapter "Attention Mechanisms
and Transformers", PyTorch tab), with nn.LazyLinear replaced by nn.Linear
with explicit sizes so that weights can be set, everything in eval mode
(dropout is the identity) and float32. Deterministic: a rerun writes the same
bytes.
"""
import math
import os
import shutil
import sys

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "goldens")
# The v2 cases (docs/spec.md section 2, "Ops (v2)") were staged in goldens_v2/
# until attnc compiled them; they are written with the others now.
OUT_V2 = OUT

torch.set_num_threads(1)
torch.manual_seed(0)


# --------------------------------------------------------------------------
# D2L code (chapter 11).
# --------------------------------------------------------------------------

def sequence_mask(X, valid_len, value=0):
    """Mask irrelevant entries in sequences (d2l._sequence_mask)."""
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32,
                        device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""
    # X: 3D tensor, valid_lens: 1D or 2D tensor
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        # On the last axis, replace masked elements with a very large negative
        # value, whose exponentiation outputs 0
        X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    """Scaled dot product attention."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    # Shape of queries: (batch_size, no. of queries, d)
    # Shape of keys: (batch_size, no. of key-value pairs, d)
    # Shape of values: (batch_size, no. of key-value pairs, value dimension)
    # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        # Swap the last two dimensions of keys with keys.transpose(1, 2)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (nn.Linear with explicit input sizes instead of
    nn.LazyLinear; query_size etc. default to num_hiddens)."""

    def __init__(self, num_hiddens, num_heads, dropout, bias=False,
                 query_size=None, key_size=None, value_size=None):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(query_size or num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size or num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size or num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        # Shape of queries, keys, or values:
        # (batch_size, no. of queries or key-value pairs, num_hiddens)
        # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
        # After transposing, shape of output queries, keys, or values:
        # (batch_size * num_heads, no. of queries or key-value pairs,
        # num_hiddens / num_heads)
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))

        if valid_lens is not None:
            # On axis 0, copy the first item (scalar or vector) for num_heads
            # times, then copy the next item, and so on
            valid_lens = torch.repeat_interleave(
                valid_lens, repeats=self.num_heads, dim=0)

        # Shape of output: (batch_size * num_heads, no. of queries,
        # num_hiddens / num_heads)
        output = self.attention(queries, keys, values, valid_lens)
        # Shape of output_concat: (batch_size, no. of queries, num_hiddens)
        output_concat = self.transpose_output(output)
        return self.W_o(output_concat)

    def transpose_qkv(self, X):
        """Transposition for parallel computation of multiple attention
        heads."""
        # Shape of input X: (batch_size, no. of queries or key-value pairs,
        # num_hiddens). Shape of output X: (batch_size, no. of queries or
        # key-value pairs, num_heads, num_hiddens / num_heads)
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        # Shape of output X: (batch_size, num_heads, no. of queries or key-value
        # pairs, num_hiddens / num_heads)
        X = X.permute(0, 2, 1, 3)
        # Shape of output: (batch_size * num_heads, no. of queries or key-value
        # pairs, num_hiddens / num_heads)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X):
        """Reverse the operation of transpose_qkv."""
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)


class PositionalEncoding(nn.Module):
    """Positional encoding."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # Create a long enough P
        self.P = torch.zeros((1, max_len, num_hiddens))
        X = torch.arange(max_len, dtype=torch.float32).reshape(
            -1, 1) / torch.pow(10000, torch.arange(
            0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
        self.P[:, :, 0::2] = torch.sin(X)
        self.P[:, :, 1::2] = torch.cos(X)

    def forward(self, X):
        X = X + self.P[:, :X.shape[1], :].to(X.device)
        return self.dropout(X)


class PositionWiseFFN(nn.Module):
    """The positionwise feed-forward network."""

    def __init__(self, num_inputs, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.Linear(num_inputs, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class PositionWiseFFNGELU(nn.Module):
    """D2L's PositionWiseFFN with GELU in place of the ReLU: BERT's
    intermediate and output dense layers (BertIntermediate, BertOutput
    without its dropout and LayerNorm) with approximate='none', GPT-2's MLP
    (c_fc, gelu_new, c_proj) with approximate='tanh'."""

    def __init__(self, num_inputs, ffn_num_hiddens, ffn_num_outputs,
                 approximate="none"):
        super().__init__()
        self.dense1 = nn.Linear(num_inputs, ffn_num_hiddens)
        self.gelu = nn.GELU(approximate=approximate)
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.gelu(self.dense1(X)))


class AddNorm(nn.Module):
    """The residual connection followed by layer normalization."""

    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class TransformerEncoderBlock(nn.Module):
    """The Transformer encoder block."""

    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout,
                 use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads,
                                            dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class TransformerEncoder(nn.Module):
    """The Transformer encoder (D2L's, without d2l.Encoder's base class):
    token embedding scaled by sqrt(num_hiddens), positional encoding, then
    num_blks encoder blocks; keeps each block's attention weights."""

    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
                 num_blks, dropout, use_bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block" + str(i), TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))

    def forward(self, X, valid_lens):
        # Since positional encoding values are between -1 and 1, the
        # embedding values are multiplied by the square root of the
        # embedding dimension to rescale before they are summed up
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[
                i] = blk.attention.attention.attention_weights
        return X


# --------------------------------------------------------------------------
# v2 reference code (docs/spec.md section 2, "Ops (v2)"): the published formulas of
# Hugging Face transformers' Llama (modeling_llama: LlamaRMSNorm,
# LlamaRotaryEmbedding, rotate_half, apply_rotary_pos_emb, repeat_kv,
# LlamaAttention, LlamaMLP, LlamaDecoderLayer), BERT (modeling_bert:
# BertSelfAttention, BertSelfOutput, BertIntermediate, BertOutput,
# BertLayer) and GPT-2 (modeling_gpt2: Conv1D, GPT2Attention, GPT2MLP,
# GPT2Block), written out here (no model or weights are downloaded), and
# D2L's BERTEncoder embeddings. The one deliberate change everywhere: a
# masked score is REPLACED by -1e6 like D2L's masked_softmax (Hugging Face
# adds torch.finfo.min), so that a row with no visible key is uniform
# rather than NaN; where a row keeps a key the two give the same softmax.
# --------------------------------------------------------------------------

MASK_VALUE = -1e6


class LlamaRMSNorm(nn.Module):
    """x * rsqrt(mean(x^2, -1) + eps) * weight (HF LlamaRMSNorm)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance +
                                                    self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def rope_cos_sin(seq_len, dim, base=10000.0):
    """HF LlamaRotaryEmbedding (rope_type 'default', attention_scaling 1)
    for position_ids = arange(seq_len): inv_freq[j] = 1 / base^(2j / dim),
    freqs = position * inv_freq, emb = cat(freqs, freqs). Returns cos(emb)
    and sin(emb), float32 [seq_len, dim]."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64)
                               .float() / dim))
    position_ids = torch.arange(seq_len, dtype=torch.int64)[None, :]
    inv_freq_expanded = inv_freq[None, :, None].float().expand(
        position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @
             position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[0], emb.sin()[0]


def rotate_half(x):
    """Rotates half the hidden dims of the input (HF)."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(x, cos, sin):
    """HF apply_rotary_pos_emb for one of q or k: x [B, heads, T, d], cos and
    sin [T, d], float32, taken in x's dtype (as HF's LlamaRotaryEmbedding
    returns them)."""
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return (x * cos) + (rotate_half(x) * sin)


def repeat_kv(hidden_states, n_rep):
    """HF repeat_kv: [B, kv_heads, T, d] -> [B, kv_heads * n_rep, T, d];
    query head h uses kv head h // n_rep."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen,
                                 head_dim)


def visible_keys(B, Tq, Tk, valid_lens=None, causal=False, window=None):
    """[B, Tq, Tk] bool, True where key j is visible from query i of batch
    entry b: j < valid_lens[b] (1-D) or j < valid_lens[b, i] (2-D), as D2L's
    masked_softmax; with causal also j <= i; with a window W (causal) also
    j > i - W (Mistral's sliding window). The visible set is the
    intersection of all of them."""
    i = torch.arange(Tq)[None, :, None]
    j = torch.arange(Tk)[None, None, :]
    vis = torch.ones((B, Tq, Tk), dtype=torch.bool)
    if valid_lens is not None:
        vl = valid_lens.long()
        vl = vl[:, None, None] if vl.dim() == 1 else vl[:, :, None]
        vis = vis & (j < vl)
    if causal:
        vis = vis & (j <= i)
    if window is not None:
        assert causal
        vis = vis & (j > i - window)
    return vis


class MultiHeadAttentionV2(nn.Module):
    """D2L's MultiHeadAttention with the v2 keywords, computed the way HF's
    LlamaAttention / eager_attention_forward does: projections (optional
    biases b_q, b_k, b_v, b_o: D2L bias=True, Qwen2), heads [B, H, T, d];
    rope: apply_rotary_pos_emb on q and k, position = row index; kv_heads=G:
    k and v have G heads, repeat_kv'd to H; scores q k^T / sqrt(d); the
    scores of invisible keys (visible_keys: valid_lens, causal, window)
    replaced by -1e6; softmax; @ v; heads merged; output projection.
    attention_weights: [B * H, Tq, Tk], row b * H + h (as D2L's)."""

    def __init__(self, num_hiddens, num_heads, kv_heads=None,
                 query_size=None, key_size=None, value_size=None,
                 bias=(False, False, False, False), rope=False,
                 rope_base=10000.0, causal=False, window=None):
        super().__init__()
        self.num_heads = num_heads
        self.kv_heads = kv_heads or num_heads
        assert num_hiddens % num_heads == 0
        assert num_heads % self.kv_heads == 0
        self.head_dim = num_hiddens // num_heads
        kv_hidden = self.kv_heads * self.head_dim
        self.W_q = nn.Linear(query_size or num_hiddens, num_hiddens,
                             bias=bias[0])
        self.W_k = nn.Linear(key_size or num_hiddens, kv_hidden, bias=bias[1])
        self.W_v = nn.Linear(value_size or num_hiddens, kv_hidden,
                             bias=bias[2])
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias[3])
        self.rope, self.rope_base = rope, rope_base
        self.causal, self.window = causal, window

    def forward(self, queries, keys, values, valid_lens=None):
        B, Tq, Tk = queries.shape[0], queries.shape[1], keys.shape[1]
        H, G, d = self.num_heads, self.kv_heads, self.head_dim
        q = self.W_q(queries).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(keys).view(B, Tk, G, d).transpose(1, 2)
        v = self.W_v(values).view(B, Tk, G, d).transpose(1, 2)
        if self.rope:
            q = apply_rotary_pos_emb(q, *rope_cos_sin(Tq, d, self.rope_base))
            k = apply_rotary_pos_emb(k, *rope_cos_sin(Tk, d, self.rope_base))
        k = repeat_kv(k, H // G)
        v = repeat_kv(v, H // G)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
        vis = visible_keys(B, Tq, Tk, valid_lens, self.causal, self.window)
        scores = torch.where(vis[:, None], scores,
                             torch.tensor(MASK_VALUE, dtype=scores.dtype))
        weights = nn.functional.softmax(scores, dim=-1)
        self.attention_weights = weights.reshape(B * H, Tq, Tk)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(B, Tq, H * d)
        return self.W_o(out)


class LlamaAttention(nn.Module):
    """HF LlamaAttention (attention_bias=False) with eager_attention_forward
    and a causal mask (-1e6, see above)."""

    def __init__(self, hidden_size, num_attention_heads, num_key_value_heads,
                 rope_theta=10000.0):
        super().__init__()
        self.head_dim = hidden_size // num_attention_heads
        self.num_heads = num_attention_heads
        self.num_key_value_groups = num_attention_heads // num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.rope_theta = rope_theta
        self.q_proj = nn.Linear(hidden_size,
                                num_attention_heads * self.head_dim,
                                bias=False)
        self.k_proj = nn.Linear(hidden_size,
                                num_key_value_heads * self.head_dim,
                                bias=False)
        self.v_proj = nn.Linear(hidden_size,
                                num_key_value_heads * self.head_dim,
                                bias=False)
        self.o_proj = nn.Linear(num_attention_heads * self.head_dim,
                                hidden_size, bias=False)

    def forward(self, hidden_states):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        T = input_shape[-1]
        query_states = self.q_proj(hidden_states).view(hidden_shape)\
            .transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape)\
            .transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape)\
            .transpose(1, 2)
        cos, sin = rope_cos_sin(T, self.head_dim, self.rope_theta)
        query_states = apply_rotary_pos_emb(query_states, cos, sin)
        key_states = apply_rotary_pos_emb(key_states, cos, sin)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states,
                                    key_states.transpose(2, 3)) * self.scaling
        causal_mask = torch.tril(torch.ones((T, T), dtype=torch.bool))
        attn_weights = torch.where(causal_mask, attn_weights,
                                   torch.tensor(MASK_VALUE))
        # HF: softmax in float32, then back to the query's dtype (float64
        # for the float64 reference, which is never narrowed).
        attn_weights = nn.functional.softmax(
            attn_weights, dim=-1,
            dtype=torch.promote_types(attn_weights.dtype, torch.float32)
        ).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    """down_proj(silu(gate_proj(x)) * up_proj(x)) (HF LlamaMLP)."""

    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    """HF LlamaDecoderLayer: x + attn(rms_norm(x)), then h + mlp(rms_norm(h))
    (pre-norm, no biases)."""

    def __init__(self, hidden_size, num_heads, kv_heads, intermediate_size,
                 rms_norm_eps=1e-6):
        super().__init__()
        self.self_attn = LlamaAttention(hidden_size, num_heads, kv_heads)
        self.mlp = LlamaMLP(hidden_size, intermediate_size)
        self.input_layernorm = LlamaRMSNorm(hidden_size, eps=rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(hidden_size,
                                                     eps=rms_norm_eps)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class BertSelfAttention(nn.Module):
    """HF BertSelfAttention (absolute positions, eval), with D2L's
    masked_softmax on 1-D valid_lens instead of HF's additive mask."""

    def __init__(self, hidden_size, num_attention_heads):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads,
                                       self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, valid_lens):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer,
                                        key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(
            self.attention_head_size)
        B, H, T, _ = attention_scores.shape
        attention_probs = masked_softmax(
            attention_scores.reshape(B * H, T, T),
            torch.repeat_interleave(valid_lens, H, dim=0)).reshape(B, H, T, T)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (
            self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class BertSelfOutput(nn.Module):
    """LayerNorm(dense(h) + input) (HF BertSelfOutput, eval)."""

    def __init__(self, hidden_size, layer_norm_eps=1e-12):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dense(hidden_states) + input_tensor)


class BertIntermediate(nn.Module):
    """gelu(dense(h)), hidden_act 'gelu' (erf) (HF BertIntermediate)."""

    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    """LayerNorm(dense(h) + input) (HF BertOutput, eval)."""

    def __init__(self, intermediate_size, hidden_size, layer_norm_eps=1e-12):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dense(hidden_states) + input_tensor)


class BertLayer(nn.Module):
    """HF BertLayer (BertAttention = BertSelfAttention + BertSelfOutput,
    then BertIntermediate, BertOutput), post-norm, eval."""

    def __init__(self, hidden_size, num_attention_heads, intermediate_size):
        super().__init__()
        self.self_attention = BertSelfAttention(hidden_size,
                                                num_attention_heads)
        self.self_output = BertSelfOutput(hidden_size)
        self.intermediate = BertIntermediate(hidden_size, intermediate_size)
        self.output = BertOutput(intermediate_size, hidden_size)

    def forward(self, hidden_states, valid_lens):
        attention_output = self.self_output(
            self.self_attention(hidden_states, valid_lens), hidden_states)
        intermediate_output = self.intermediate(attention_output)
        return self.output(intermediate_output, attention_output)


class Conv1D(nn.Module):
    """HF's Conv1D (GPT-2): a linear layer with the weight stored
    transposed, [nx, nf]: y = x @ weight + bias."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    """HF GPT2Attention (eager, scale_attn_weights, causal, eval)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.split_size = embed_dim
        self.c_attn = Conv1D(3 * embed_dim, embed_dim)
        self.c_proj = Conv1D(embed_dim, embed_dim)

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = torch.tril(torch.ones((key_length, key_length),
                                            dtype=torch.bool))[
            None, None, key_length - query_length:key_length, :key_length]
        mask_value = torch.full([], MASK_VALUE, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.split_size,
                                                             dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        attn_output = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output, self.num_heads,
                                        self.head_dim)
        return self.c_proj(attn_output)


class GPT2MLP(nn.Module):
    """c_proj(gelu_new(c_fc(x))) (HF GPT2MLP); gelu_new is
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), i.e. F.gelu with
    approximate='tanh'."""

    def __init__(self, intermediate_size, embed_dim):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, hidden_states):
        return self.c_proj(self.act(self.c_fc(hidden_states)))


class GPT2Block(nn.Module):
    """HF GPT2Block (pre-norm): x + attn(ln_1(x)), then h + mlp(ln_2(h))."""

    def __init__(self, hidden_size, num_heads, inner_dim,
                 layer_norm_epsilon=1e-5):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden_size, eps=layer_norm_epsilon)
        self.attn = GPT2Attention(hidden_size, num_heads)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=layer_norm_epsilon)
        self.mlp = GPT2MLP(inner_dim, hidden_size)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.attn(self.ln_1(hidden_states))
        hidden_states = hidden_states + residual
        residual = hidden_states
        feed_forward_hidden_states = self.mlp(self.ln_2(hidden_states))
        return residual + feed_forward_hidden_states


class BERTEmbeddings(nn.Module):
    """The input embedding of D2L's BERTEncoder (chapter "Bidirectional
    Encoder Representations from Transformers"): token embedding + segment
    embedding + a learnable positional embedding [1, max_len, D] sliced to
    T and broadcast over the batch."""

    def __init__(self, vocab_size, num_hiddens, max_len=1000):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.segment_embedding = nn.Embedding(2, num_hiddens)
        self.pos_embedding = nn.Parameter(torch.randn(1, max_len,
                                                      num_hiddens))

    def forward(self, tokens, segments):
        X = self.token_embedding(tokens) + self.segment_embedding(segments)
        X = X + self.pos_embedding[:, :X.shape[1], :]
        return X


# --------------------------------------------------------------------------
# Data generation.
# --------------------------------------------------------------------------

def uniform(rng, shape, lo=-1.0, hi=1.0):
    """float32 uniform in [lo, hi) from a numpy Generator."""
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def linear_weight(rng, out_features, in_features):
    """Like torch's nn.Linear init range: U(-1/sqrt(in), 1/sqrt(in))."""
    bound = 1.0 / math.sqrt(in_features)
    return uniform(rng, (out_features, in_features), -bound, bound)


def formula_values(shape, salt, scale, offset=0.0):
    """Weights reproducible in any language without storing them.

    For the flat C-order index i (0-based):
        x = (i + salt * 0x9E3779B9) mod 2^32
        h = fmix32(x)            (MurmurHash3's finalizer, all mod 2^32:
                                  h ^= h >> 16; h *= 0x85EBCA6B;
                                  h ^= h >> 13; h *= 0xC2B2AE35;
                                  h ^= h >> 16)
        w = offset + (h / 2^32 - 0.5) * scale   computed in float64,
                                               then rounded to float32.
    """
    n = int(np.prod(shape, dtype=np.int64))
    m = np.uint64(0xFFFFFFFF)
    x = (np.arange(n, dtype=np.uint64) +
         np.uint64((salt * 0x9E3779B9) & 0xFFFFFFFF)) & m
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x85EBCA6B)) & m
    x ^= x >> np.uint64(13)
    x = (x * np.uint64(0xC2B2AE35)) & m
    x ^= x >> np.uint64(16)
    w = offset + (x.astype(np.float64) / 4294967296.0 - 0.5) * scale
    return w.astype(np.float32).reshape(shape)


def set_param(p, value):
    with torch.no_grad():
        p.copy_(torch.from_numpy(np.ascontiguousarray(value)))


def save_case(name, spec, arrays, outputs, formula=None, out=OUT,
              tolerance=None):
    """Writes one case folder under `out` (goldens/).
    arrays: {dsl_name: ndarray} (stored); outputs: {dsl_output_name:
    ndarray}; formula: list of (name, shape, salt, scale, offset) not stored
    but documented; tolerance: the case's tolerance.txt (a string), if any."""
    d = os.path.join(out, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, name + ".attn"), "w") as f:
        f.write(spec)
    for arg, a in arrays.items():
        assert a.dtype in (np.float32, np.int32, np.float16) or \
            a.dtype.name == "bfloat16", (arg, a.dtype)
        np.save(os.path.join(d, arg + ".npy"), np.ascontiguousarray(a))
    for out, a in outputs.items():
        assert a.dtype == np.float32
        np.save(os.path.join(d, "expected_" + out + ".npy"),
                np.ascontiguousarray(a))
    if formula:
        with open(os.path.join(d, "formula_params.txt"), "w") as f:
            f.write("# Params not stored as .npy: generated by the formula in "
                    "tests/data/README.md.\n"
                    "# name salt scale offset dims...\n")
            for (arg, shape, salt, scale, offset) in formula:
                f.write("%s %d %r %r %s\n" % (arg, salt, scale, offset,
                                              " ".join(str(s) for s in shape)))
    if tolerance is not None:
        with open(os.path.join(d, "tolerance.txt"), "w") as f:
            f.write(tolerance + "\n")


def mha_module(rng, num_hiddens, num_heads, dq=None, dk=None, dv=None):
    m = MultiHeadAttention(num_hiddens, num_heads, 0.5, bias=False,
                           query_size=dq, key_size=dk, value_size=dv)
    w = {"W_q": linear_weight(rng, num_hiddens, dq or num_hiddens),
         "W_k": linear_weight(rng, num_hiddens, dk or num_hiddens),
         "W_v": linear_weight(rng, num_hiddens, dv or num_hiddens),
         "W_o": linear_weight(rng, num_hiddens, num_hiddens)}
    for k, v in w.items():
        set_param(getattr(m, k).weight, v)
    return m.eval(), w


def run(module, *args):
    with torch.no_grad():
        return module(*args).numpy().astype(np.float32)


# --------------------------------------------------------------------------
# Low-precision cases (docs/spec.md section 2 "Types (v3)", section 7's bar):
# a family's case with every float tensor in bf16 or f16. Inputs and params
# are the f32 case's, rounded to the type (to nearest even); the same
# PyTorch code then runs twice on those values: in float64 (the reference,
# expected_<OUT>.npy, '<f8') and in the type itself, eager on the CPU
# (PyTorch's own low-precision result, torch_<OUT>.npy). The kernel's
# largest error against the reference must not exceed PyTorch's, nor one
# ulp of the type at the reference's largest magnitude (tests/e2e/
# GoldenCase.cpp). These need torch >= 2 (float16 matmuls on the CPU) and
# ml_dtypes (bfloat16 .npy files): the bench venv has both.
# --------------------------------------------------------------------------

LOW_PRECISION_TYPES = ("bf16", "f16")


def torch_type(type_name):
    return {"bf16": torch.bfloat16, "f16": torch.float16}[type_name]


def rounded(type_name, arrays):
    """The float32 arrays of `arrays` rounded to `type_name`, kept as
    float32 (exactly); other arrays unchanged."""
    return {k: (torch.from_numpy(a).to(torch_type(type_name)).float().numpy()
                if a.dtype == np.float32 else a)
            for k, a in arrays.items()}


def stored_as(type_name, a):
    """A float32 array of values of `type_name` as that type's .npy array:
    ml_dtypes.bfloat16 ('<V2') or numpy float16 ('<f2'); others as they
    are."""
    if a.dtype != np.float32:
        return a
    import ml_dtypes
    t = ml_dtypes.bfloat16 if type_name == "bf16" else np.float16
    b = a.astype(t)
    assert np.array_equal(b.astype(np.float32), a), "not rounded"
    return b


def cast_args(args, dtype):
    return [a.to(dtype) if a.is_floating_point() else a for a in args]


def ulp_at(type_name, magnitude):
    """One unit in the last place of `type_name` at `magnitude` (normal)."""
    mantissa = {"bf16": 7, "f16": 10}[type_name]
    return 2.0 ** (math.floor(math.log2(magnitude)) - mantissa)


def save_low_precision_case(name, type_name, spec, arrays, module, args,
                            output, out=OUT):
    """Writes the case `name` in `type_name` (see above): `spec` is the f32
    case's text, `arrays` its rounded inputs and params, `module(*args)` its
    one output `output`."""
    import copy
    dtype = torch_type(type_name)
    with torch.no_grad():
        reference = copy.deepcopy(module).double()(
            *cast_args(args, torch.float64)).numpy()
    lines = ["# %s: the f32 case's inputs and params rounded to %s; the"
             % (name, type_name),
             "# reference is the same PyTorch code in float64 on them."]
    own = None
    try:
        with torch.no_grad():
            low = copy.deepcopy(module).to(dtype)(*cast_args(args, dtype))
        assert low.dtype == dtype, (name, low.dtype)
        low = low.float().numpy()
        if np.isfinite(low).all():
            own = low
            why = "its output is torch_%s.npy" % output
        else:
            why = "it gives NaN or inf: no torch_%s.npy" % output
    except RuntimeError as e:
        why = "it fails (%s): no torch_%s.npy" % (str(e).split("\n")[0],
                                                 output)
    lines.append("# PyTorch %s in %s: %s." % (torch.__version__, dtype, why))
    low_spec = "\n".join(lines) + "\n" + spec.replace("f32[",
                                                        type_name + "[")
    save_case(name, low_spec,
              {k: stored_as(type_name, a) for k, a in arrays.items()},
              {}, out=out)
    d = os.path.join(out, name)
    np.save(os.path.join(d, "expected_%s.npy" % output), reference)
    ulp = ulp_at(type_name, np.abs(reference).max())
    if own is not None:
        np.save(os.path.join(d, "torch_%s.npy" % output),
                stored_as(type_name, own))
        torch_error = np.abs(own - reference).max()
    else:
        torch_error = 0.0
    print("%s: PyTorch's error %.3g, one ulp %.3g" % (name, torch_error, ulp))


def finish_case(name, spec, arrays, module, args, output, type_name=None,
                out=OUT):
    """Runs `module(*args)` and writes the case: in f32 (`type_name` None,
    `arrays` as generated) or in bf16/f16 (`arrays` already rounded, see
    save_low_precision_case)."""
    if type_name is None:
        save_case(name, spec, arrays, {output: run(module, *args)}, out=out)
    else:
        save_low_precision_case(name, type_name, spec, arrays, module, args,
                                output, out=out)


MHA_PARAMS = """\
  param  W_q: f32[D, D]
  param  W_k: f32[D, D]
  param  W_v: f32[D, D]
  param  W_o: f32[D, D]
"""


def attention_weights_of(mha):
    """D2L's MultiHeadAttention.attention.attention_weights after a forward
    call: [B * heads, Tq, Tk], row b * heads + h for head h of entry b."""
    return mha.attention.attention_weights.numpy().astype(np.float32)


def case_mha_book(name, seed, B, T, D, H, valid_lens, header, weights=False):
    """positional_encoding then self multi-head attention (docs/spec.md section 2's
    example block). valid_lens 1-D [B] or 2-D [B, T]. With weights, the
    block also returns the attention weights (return_weights=true)."""
    rng = np.random.default_rng(seed)
    X = uniform(rng, (B, T, D))
    vl = np.asarray(valid_lens, dtype=np.int32)
    mha, w = mha_module(rng, D, H)
    pe = PositionalEncoding(D, 0.5, max_len=1000).eval()
    with torch.no_grad():
        P = pe(torch.from_numpy(X))
        Y = mha(P, P, P, torch.from_numpy(vl)).numpy()
    vl_type = "i32[B]" if vl.ndim == 1 else "i32[B, T]"
    outputs = {"Y": Y}
    if weights:
        outputs["A"] = attention_weights_of(mha)
        call = f"""  Y, A = multihead_attention(P, P, P, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v,
                             w_o=W_o, valid_lens=valid_lens, return_weights=true)
  output Y, A"""
    else:
        call = f"""  Y = multihead_attention(P, P, P, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o,
                          valid_lens=valid_lens)
  output Y"""
    spec = f"""{header}block {name} {{
  dim B = {B}, T = {T}, D = {D}
  input  X: f32[B, T, D]
  input  valid_lens: {vl_type}
{MHA_PARAMS}
  P = positional_encoding(X, max_len=1000)
{call}
}}
"""
    save_case(name, spec, {"X": X, "valid_lens": vl, **w}, outputs)


def case_mha_self(name, seed, B, T, D, H, valid_lens, header, causal=False,
                  weights=False, type_name=None):
    """Self multi-head attention on X (no positional encoding). With
    weights, the block also returns the attention weights. With type_name
    (bf16, f16), the low-precision case (finish_case)."""
    rng = np.random.default_rng(seed)
    X = uniform(rng, (B, T, D))
    vl = np.asarray(valid_lens, dtype=np.int32)
    mha, w = mha_module(rng, D, H)
    if type_name:
        assert not weights
        X, w = rounded(type_name, {"X": X})["X"], rounded(type_name, w)
        for k, v in w.items():
            set_param(getattr(mha, k).weight, v)
    if causal:
        # D2L TransformerDecoderBlock: dec_valid_lens = arange(1, T + 1) per
        # row (query i sees keys 0..i), here combined with the padding
        # lengths: the 2-D valid_lens min(valid_lens[b], i + 1).
        dec = np.minimum(vl[:, None], np.arange(1, T + 1)[None, :])
        torch_vl = torch.from_numpy(dec.astype(np.int32))
    else:
        torch_vl = torch.from_numpy(vl)
    args = (t(X), t(X), t(X), torch_vl)
    extra = ", causal=true" if causal else ""
    if weights:
        outputs = {"Y": run(mha, *args), "A": attention_weights_of(mha)}
        call = f"""  Y, A = multihead_attention(X, X, X, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v,
                             w_o=W_o, valid_lens=valid_lens{extra},
                             return_weights=true)
  output Y, A"""
    else:
        call = f"""  Y = multihead_attention(X, X, X, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o,
                          valid_lens=valid_lens{extra})
  output Y"""
    spec = f"""{header}block {name} {{
  dim B = {B}, T = {T}, D = {D}
  input  X: f32[B, T, D]
  input  valid_lens: i32[B]
{MHA_PARAMS}
{call}
}}
"""
    if weights:
        save_case(name, spec, {"X": X, "valid_lens": vl, **w}, outputs)
    else:
        finish_case(name, spec, {"X": X, "valid_lens": vl, **w}, mha, args,
                    "Y", type_name)


def case_attention_weights():
    """D2L DotProductAttention with the book's shapes (queries [2, 1, 2],
    keys [2, 10, 2], values [2, 10, 4], valid_lens [2, 6]), returning its
    attention_weights too."""
    name = "attention_weights_book"
    N, Tq, Tk, d, dv = 2, 1, 10, 2, 4
    rng = np.random.default_rng(10)
    Q = uniform(rng, (N, Tq, d))
    K = uniform(rng, (N, Tk, d))
    V = uniform(rng, (N, Tk, dv))
    vl = np.array([2, 6], dtype=np.int32)
    attention = DotProductAttention(0.5).eval()
    Y = run(attention, torch.from_numpy(Q), torch.from_numpy(K),
            torch.from_numpy(V), torch.from_numpy(vl))
    A = attention.attention_weights.numpy().astype(np.float32)
    spec = f"""# D2L DotProductAttention with the book's shapes and valid_lens [2, 6],
# returning its attention_weights as well.
block {name} {{
  dim N = {N}, Tq = {Tq}, Tk = {Tk}, d = {d}, dv = {dv}
  input  Q: f32[N, Tq, d]
  input  K: f32[N, Tk, d]
  input  V: f32[N, Tk, dv]
  input  valid_lens: i32[N]

  Y, A = attention(Q, K, V, valid_lens=valid_lens, return_weights=true)
  output Y, A
}}
"""
    save_case(name, spec, {"Q": Q, "K": K, "V": V, "valid_lens": vl},
              {"Y": Y, "A": A})


def case_mha_cross():
    name = "mha_cross"
    B, Tq, Tk, Dq, Dk, Dv, Hd, H = 2, 3, 7, 12, 10, 14, 16, 4
    rng = np.random.default_rng(5)
    Q = uniform(rng, (B, Tq, Dq))
    K = uniform(rng, (B, Tk, Dk))
    V = uniform(rng, (B, Tk, Dv))
    vl = np.array([5, 7], dtype=np.int32)
    mha, w = mha_module(rng, Hd, H, dq=Dq, dk=Dk, dv=Dv)
    Y = run(mha, torch.from_numpy(Q), torch.from_numpy(K), torch.from_numpy(V),
            torch.from_numpy(vl))
    spec = f"""# Cross-attention: Tq != Tk and different query/key/value feature sizes.
# D2L MultiHeadAttention(num_hiddens=16, num_heads=4, bias=False) with
# queries [2, 3, 12], keys [2, 7, 10], values [2, 7, 14], valid_lens [5, 7].
block {name} {{
  dim B = {B}, Tq = {Tq}, Tk = {Tk}, Dq = {Dq}, Dk = {Dk}, Dv = {Dv}, Hd = {Hd}
  input  Q: f32[B, Tq, Dq]
  input  K: f32[B, Tk, Dk]
  input  V: f32[B, Tk, Dv]
  input  valid_lens: i32[B]
  param  W_q: f32[Hd, Dq]
  param  W_k: f32[Hd, Dk]
  param  W_v: f32[Hd, Dv]
  param  W_o: f32[Hd, Hd]

  Y = multihead_attention(Q, K, V, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o,
                          valid_lens=valid_lens)
  output Y
}}
"""
    save_case(name, spec, {"Q": Q, "K": K, "V": V, "valid_lens": vl, **w},
              {"Y": Y})


def case_positional_encoding():
    name = "positional_encoding_1000"
    B, T, D = 1, 1000, 32
    rng = np.random.default_rng(7)
    X = uniform(rng, (B, T, D))
    pe = PositionalEncoding(D, 0.5, max_len=1000).eval()
    Y = run(pe, torch.from_numpy(X))
    spec = f"""# D2L PositionalEncoding(num_hiddens=32, dropout, max_len=1000) alone,
# over the whole table (T = max_len = 1000).
block {name} {{
  dim B = {B}, T = {T}, D = {D}
  input  X: f32[B, T, D]

  Y = positional_encoding(X, max_len=1000)
  output Y
}}
"""
    save_case(name, spec, {"X": X}, {"Y": Y})


ENCODER_SPEC = """{header}block {name} {{
  dim B = {B}, T = {T}, D = {D}, F = {F}
  input  X: f32[B, T, D]
  input  valid_lens: i32[B]
  param  W_q: f32[D, D]
  param  W_k: f32[D, D]
  param  W_v: f32[D, D]
  param  W_o: f32[D, D]
  param  ln1_gamma: f32[D]
  param  ln1_beta: f32[D]
  param  ffn_w1: f32[F, D]
  param  ffn_b1: f32[F]
  param  ffn_w2: f32[D, F]
  param  ffn_b2: f32[D]
  param  ln2_gamma: f32[D]
  param  ln2_beta: f32[D]

  A = multihead_attention(X, X, X, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o,
                          valid_lens=valid_lens)
  Y = add_norm(X, A, ln1_gamma, ln1_beta)
  Z = add_norm(Y, ffn(Y, ffn_w1, ffn_b1, ffn_w2, ffn_b2), ln2_gamma, ln2_beta)
  output Z
}}
"""


def encoder_module(D, F, H, w):
    blk = TransformerEncoderBlock(D, F, H, 0.5, use_bias=False)
    set_param(blk.attention.W_q.weight, w["W_q"])
    set_param(blk.attention.W_k.weight, w["W_k"])
    set_param(blk.attention.W_v.weight, w["W_v"])
    set_param(blk.attention.W_o.weight, w["W_o"])
    set_param(blk.addnorm1.ln.weight, w["ln1_gamma"])
    set_param(blk.addnorm1.ln.bias, w["ln1_beta"])
    set_param(blk.ffn.dense1.weight, w["ffn_w1"])
    set_param(blk.ffn.dense1.bias, w["ffn_b1"])
    set_param(blk.ffn.dense2.weight, w["ffn_w2"])
    set_param(blk.ffn.dense2.bias, w["ffn_b2"])
    set_param(blk.addnorm2.ln.weight, w["ln2_gamma"])
    set_param(blk.addnorm2.ln.bias, w["ln2_beta"])
    return blk.eval()


def case_encoder_block(name="encoder_block", type_name=None):
    B, T, D, F, H = 2, 4, 24, 48, 8
    rng = np.random.default_rng(8)
    X = uniform(rng, (B, T, D))
    vl = np.array([3, 2], dtype=np.int32)
    w = {"W_q": linear_weight(rng, D, D), "W_k": linear_weight(rng, D, D),
         "W_v": linear_weight(rng, D, D), "W_o": linear_weight(rng, D, D),
         "ln1_gamma": uniform(rng, (D,), 0.8, 1.2),
         "ln1_beta": uniform(rng, (D,), -0.2, 0.2),
         "ffn_w1": linear_weight(rng, F, D),
         "ffn_b1": uniform(rng, (F,), -1 / math.sqrt(D), 1 / math.sqrt(D)),
         "ffn_w2": linear_weight(rng, D, F),
         "ffn_b2": uniform(rng, (D,), -1 / math.sqrt(F), 1 / math.sqrt(F)),
         "ln2_gamma": uniform(rng, (D,), 0.8, 1.2),
         "ln2_beta": uniform(rng, (D,), -0.2, 0.2)}
    if type_name:
        X, w = rounded(type_name, {"X": X})["X"], rounded(type_name, w)
    blk = encoder_module(D, F, H, w)
    header = ("# D2L TransformerEncoderBlock(num_hiddens=24, ffn_num_hiddens=48,"
              " num_heads=8,\n# use_bias=False), eval mode, B=2, T=4, "
              "valid_lens [3, 2].\n")
    spec = ENCODER_SPEC.format(header=header, name=name, B=B, T=T, D=D, F=F,
                               H=H)
    finish_case(name, spec, {"X": X, "valid_lens": vl, **w}, blk,
                (t(X), t(vl)), "Z", type_name)


def case_bert_base_layer():
    """BERT-base sized encoder block. Weights would be 28 MB, so they are
    generated by formula_values() (listed in formula_params.txt) and only X,
    valid_lens and the output are stored."""
    name = "bert_base_layer"
    B, T, D, F, H = 1, 128, 768, 3072, 12
    rng = np.random.default_rng(9)
    X = uniform(rng, (B, T, D))
    vl = np.array([100], dtype=np.int32)
    sd, sf = 2.0 / math.sqrt(D), 2.0 / math.sqrt(F)
    formula = [  # name, shape, salt, scale, offset
        ("W_q", (D, D), 1, sd, 0.0), ("W_k", (D, D), 2, sd, 0.0),
        ("W_v", (D, D), 3, sd, 0.0), ("W_o", (D, D), 4, sd, 0.0),
        ("ln1_gamma", (D,), 5, 0.4, 1.0), ("ln1_beta", (D,), 6, 0.4, 0.0),
        ("ffn_w1", (F, D), 7, sd, 0.0), ("ffn_b1", (F,), 8, sd, 0.0),
        ("ffn_w2", (D, F), 9, sf, 0.0), ("ffn_b2", (D,), 10, sf, 0.0),
        ("ln2_gamma", (D,), 11, 0.4, 1.0), ("ln2_beta", (D,), 12, 0.4, 0.0)]
    w = {n: formula_values(s, salt, scale, off)
         for (n, s, salt, scale, off) in formula}
    blk = encoder_module(D, F, H, w)
    Z = run(blk, torch.from_numpy(X), torch.from_numpy(vl))
    header = ("# A BERT-base sized D2L TransformerEncoderBlock (num_hiddens=768,"
              " ffn 3072,\n# 12 heads, ReLU, no attention bias, LayerNorm eps "
              "1e-5), B=1, T=128,\n# valid_lens [100]. The params are not "
              "stored: see formula_params.txt.\n")
    spec = ENCODER_SPEC.format(header=header, name=name, B=B, T=T, D=D, F=F,
                               H=H)
    save_case(name, spec, {"X": X, "valid_lens": vl}, {"Z": Z},
              formula=formula)


def case_ffn_gelu(name, seed, B, T, D, F, approximate, header):
    """linear -> gelu -> linear (PositionWiseFFNGELU). X is uniform in
    [-3, 3) so that the hidden layer reaches GELU's curved part."""
    rng = np.random.default_rng(seed)
    X = uniform(rng, (B, T, D), -3.0, 3.0)
    w = {"W1": linear_weight(rng, F, D),
         "b1": uniform(rng, (F,), -1 / math.sqrt(D), 1 / math.sqrt(D)),
         "W2": linear_weight(rng, D, F),
         "b2": uniform(rng, (D,), -1 / math.sqrt(F), 1 / math.sqrt(F))}
    ffn = PositionWiseFFNGELU(D, F, D, approximate)
    set_param(ffn.dense1.weight, w["W1"])
    set_param(ffn.dense1.bias, w["b1"])
    set_param(ffn.dense2.weight, w["W2"])
    set_param(ffn.dense2.bias, w["b2"])
    Y = run(ffn.eval(), torch.from_numpy(X))
    flag = ", approximate=true" if approximate == "tanh" else ""
    spec = f"""{header}block {name} {{
  dim B = {B}, T = {T}, D = {D}, F = {F}
  input  X: f32[B, T, D]
  param  W1: f32[F, D]
  param  b1: f32[F]
  param  W2: f32[D, F]
  param  b2: f32[D]

  Y = linear(gelu(linear(X, W1, b1){flag}), W2, b2)
  output Y
}}
"""
    save_case(name, spec, {"X": X, **w}, {"Y": Y})


def case_gelu_values():
    """torch.nn.functional.gelu, both forms, on [-10, 10] in steps of
    0.0025, then 0, -0, tiny and large magnitudes. Checked to 1e-6 (its
    tolerance.txt), not docs/spec.md's 1e-4: the point is the accuracy of the erf
    and exp approximations."""
    name = "gelu_values"
    sweep = np.arange(-4000, 4001, dtype=np.float64) * 0.0025
    special = np.array([0.0, -0.0, 1e-3, -1e-3, 1e-6, -1e-6, 1e-30, -1e-30,
                        20.0, -20.0, 100.0, -100.0, 1e4, -1e4])
    X = np.concatenate([sweep, special]).astype(np.float32)
    x = torch.from_numpy(X)
    with torch.no_grad():
        Y = nn.functional.gelu(x).numpy().astype(np.float32)
        Z = nn.functional.gelu(x, approximate="tanh").numpy().astype(np.float32)
    spec = f"""# torch.nn.functional.gelu(X) and gelu(X, approximate='tanh') on [-10, 10]
# (step 0.0025), 0, -0, tiny and large magnitudes; checked to 1e-6.
block {name} {{
  input  X: f32[{X.size}]

  Y = gelu(X)
  Z = gelu(X, approximate=true)
  output Y, Z
}}
"""
    save_case(name, spec, {"X": X}, {"Y": Y, "Z": Z})
    with open(os.path.join(OUT, name, "tolerance.txt"), "w") as f:
        f.write("1e-6\n")


# --------------------------------------------------------------------------
# v2 cases (docs/spec.md section 2, "Ops (v2)").
# --------------------------------------------------------------------------

def linear_bias(rng, out_features, in_features):
    """Like torch's nn.Linear bias init: U(-1/sqrt(in), 1/sqrt(in))."""
    bound = 1.0 / math.sqrt(in_features)
    return uniform(rng, (out_features,), -bound, bound)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def f32(a):
    return a.detach().numpy().astype(np.float32)


def call_lines(lhs, op, positional, keywords, width=80):
    """`lhs = op(args...)` wrapped at `width` columns, continuation lines
    aligned after the `(`, two-space indent."""
    head = "  %s = %s(" % (lhs, op)
    args = list(positional) + ["%s=%s" % kv for kv in keywords]
    lines, cur = [], head
    for i, a in enumerate(args):
        piece = a + ("," if i + 1 < len(args) else ")")
        if cur != head and not cur.endswith(" ") and \
                len(cur) + 1 + len(piece) > width:
            lines.append(cur)
            cur = " " * len(head) + piece
        else:
            cur += ("" if cur == head else " ") + piece
    lines.append(cur)
    return "\n".join(lines)


def case_silu_tanh_sigmoid_values(name):
    """torch's F.silu, torch.tanh and torch.sigmoid on [-10, 10] in steps of
    0.0025, then 0, -0, tiny, moderate and large magnitudes (where a naive
    exp overflows); checked to 1e-6 (tolerance.txt)."""
    sweep = np.arange(-4000, 4001, dtype=np.float64) * 0.0025
    special = np.array([0.0, -0.0, 1e-3, -1e-3, 1e-6, -1e-6, 1e-30, -1e-30,
                        20.0, -20.0, 30.0, -30.0, 88.0, -88.0, 100.0, -100.0,
                        1e4, -1e4])
    X = np.concatenate([sweep, special]).astype(np.float32)
    x = t(X)
    with torch.no_grad():
        Y = f32(nn.functional.silu(x))
        Z = f32(torch.tanh(x))
        S = f32(torch.sigmoid(x))
    spec = f"""# torch's F.silu(X), torch.tanh(X) and torch.sigmoid(X) on [-10, 10]
# (step 0.0025), 0, -0, tiny, moderate and large magnitudes (+-20, +-30,
# +-88, +-100, +-1e4); checked to 1e-6.
block {name} {{
  input  X: f32[{X.size}]

  Y = silu(X)
  Z = tanh(X)
  S = sigmoid(X)
  output Y, Z, S
}}
"""
    save_case(name, spec, {"X": X}, {"Y": Y, "Z": Z, "S": S}, out=OUT_V2,
              tolerance="1e-6")


def case_broadcast_add_mul_sub(name):
    """add, mul and sub with NumPy broadcasting (torch's operators). No two
    names differ only in case: the C header's macros upper-case them."""
    B, T, D = 2, 3, 5
    rng = np.random.default_rng(101)
    a = {"X": uniform(rng, (B, T, D)), "X2": uniform(rng, (B, T, D)),
         "P": uniform(rng, (1, T, D)), "g": uniform(rng, (D,)),
         "U": uniform(rng, (B, 1, D)), "V": uniform(rng, (B, T, 1)),
         "k": uniform(rng, (1,))}
    X, X2, P, g, U, V, k = (t(a[n]) for n in
                            ("X", "X2", "P", "g", "U", "V", "k"))
    with torch.no_grad():
        outputs = {"A": f32(P + X), "M": f32(g * X), "S": f32(U - V),
                   "C": f32(X * k - (g + k)), "F": f32(X * X2 - X2)}
    for o in outputs.values():
        assert o.shape == (B, T, D), o.shape
    spec = f"""# add, mul and sub with NumPy broadcasting: shapes are aligned on their
# trailing axes and a size-1 or missing axis stretches.
block {name} {{
  dim B = {B}, T = {T}, D = {D}
  input  X: f32[B, T, D]
  input  X2: f32[B, T, D]
  input  P: f32[1, T, D]
  input  g: f32[D]
  input  U: f32[B, 1, D]
  input  V: f32[B, T, 1]
  input  k: f32[1]

  A = add(P, X)                   # [1, T, D] + [B, T, D]
  M = mul(g, X)                   # [D] * [B, T, D]
  S = sub(U, V)                   # [B, 1, D] - [B, T, 1]: both stretch
  C = sub(mul(X, k), add(g, k))   # [B, T, D] * [1]; [D] + [1]; then - [D]
  F = sub(mul(X, X2), X2)         # one shape
  output A, M, S, C, F
}}
"""
    save_case(name, spec, a, outputs, out=OUT_V2)


def case_rms_norm(name):
    """Llama's RMSNorm with the default eps (1e-6) and eps=1e-5. The rows
    have magnitudes from 3 down to 3e-4 and one is zero, so that eps
    matters (far beyond the tolerance) on the small rows."""
    B, T, D = 2, 4, 24
    rng = np.random.default_rng(102)
    row_scale = np.array([1.0, 3.0, 0.1, 0.01, 1e-3, 3e-4, 0.0, 1.0])
    X = (uniform(rng, (B * T, D)).astype(np.float64) *
         row_scale[:, None]).astype(np.float32).reshape(B, T, D)
    gamma = uniform(rng, (D,), 0.8, 1.2)
    outputs = {}
    for out, eps in (("Y", 1e-6), ("Z", 1e-5)):
        norm = LlamaRMSNorm(D, eps=eps)
        set_param(norm.weight, gamma)
        outputs[out] = run(norm.eval(), t(X))
    spec = f"""# Llama's RMSNorm, x * rsqrt(mean(x^2, -1) + eps) * gamma, with the default
# eps (1e-6) and eps=1e-5. Rows of magnitude 3 ... 3e-4 and a zero row: on the
# small rows eps matters.
block {name} {{
  dim B = {B}, T = {T}, D = {D}
  input  X: f32[B, T, D]
  param  gamma: f32[D]

  Y = rms_norm(X, gamma)
  Z = rms_norm(X, gamma, eps=1e-5)
  output Y, Z
}}
"""
    save_case(name, spec, {"X": X, "gamma": gamma}, outputs, out=OUT_V2)


def case_mha_v2(name, seed, header, B, Tq, Tk, Dq, Dk, Dv, Hd, H,
                cross=False, kv_heads=None, biases=(), rope=False,
                rope_base=None, causal=False, window=None, valid_lens=None,
                weights=False):
    """multihead_attention with the v2 keywords (MultiHeadAttentionV2).
    biases: the subset of ("b_q", "b_k", "b_v", "b_o") given. Cases with
    biases but no other v2 keyword are D2L's MultiHeadAttention(bias=True)
    itself, the missing biases zero (and MultiHeadAttentionV2 must agree)."""
    rng = np.random.default_rng(seed)
    G = kv_heads or H
    Dkv = G * (Hd // H)
    if cross:
        data = {"Q": uniform(rng, (B, Tq, Dq)), "K": uniform(rng, (B, Tk, Dk)),
                "V": uniform(rng, (B, Tk, Dv))}
        operands = ("Q", "K", "V")
    else:
        assert Tq == Tk and Dq == Dk == Dv == Hd
        data = {"X": uniform(rng, (B, Tq, Dq))}
        operands = ("X", "X", "X")
    w = {"W_q": linear_weight(rng, Hd, Dq), "W_k": linear_weight(rng, Dkv, Dk),
         "W_v": linear_weight(rng, Dkv, Dv), "W_o": linear_weight(rng, Hd, Hd)}
    bias_in = {"b_q": Dq, "b_k": Dk, "b_v": Dv, "b_o": Hd}
    bias_out = {"b_q": Hd, "b_k": Dkv, "b_v": Dkv, "b_o": Hd}
    for b in ("b_q", "b_k", "b_v", "b_o"):
        if b in biases:
            w[b] = linear_bias(rng, bias_out[b], bias_in[b])
    vl = None if valid_lens is None else np.asarray(valid_lens, np.int32)
    mha = MultiHeadAttentionV2(
        Hd, H, kv_heads=kv_heads, query_size=Dq, key_size=Dk, value_size=Dv,
        bias=tuple(b in biases for b in ("b_q", "b_k", "b_v", "b_o")),
        rope=rope, rope_base=10000.0 if rope_base is None else rope_base,
        causal=causal, window=window).eval()
    for p in ("q", "k", "v", "o"):
        set_param(getattr(mha, "W_" + p).weight, w["W_" + p])
        if "b_" + p in w:
            set_param(getattr(mha, "W_" + p).bias, w["b_" + p])
    args = [t(data[o]) for o in operands]
    tvl = None if vl is None else t(vl)
    with torch.no_grad():
        Y = f32(mha(*args, tvl))
    A = f32(mha.attention_weights)
    if biases and not (kv_heads or rope or causal or window):
        d2l = MultiHeadAttention(Hd, H, 0.5, bias=True, query_size=Dq,
                                 key_size=Dk, value_size=Dv).eval()
        for p in ("q", "k", "v", "o"):
            lin = getattr(d2l, "W_" + p)
            set_param(lin.weight, w["W_" + p])
            set_param(lin.bias, w.get("b_" + p,
                                      np.zeros(lin.out_features, np.float32)))
        with torch.no_grad():
            Yd = f32(d2l(*args, tvl))
        assert np.abs(Yd - Y).max() < 1e-6, np.abs(Yd - Y).max()
        Y, A = Yd, f32(d2l.attention.attention_weights)
    if cross:
        dims = (f"B = {B}, Tq = {Tq}, Tk = {Tk}, Dq = {Dq}, Dk = {Dk}, "
                f"Dv = {Dv}, Hd = {Hd}")
        decls = ["input  Q: f32[B, Tq, Dq]", "input  K: f32[B, Tk, Dk]",
                 "input  V: f32[B, Tk, Dv]"]
        names = {"Hd": "Hd", "Dq": "Dq", "Dk": "Dk", "Dv": "Dv", "Tq": "Tq"}
    else:
        dims = f"B = {B}, T = {Tq}, D = {Hd}"
        decls = ["input  X: f32[B, T, D]"]
        names = {"Hd": "D", "Dq": "D", "Dk": "D", "Dv": "D", "Tq": "T"}
    kv = names["Hd"]
    if Dkv != Hd:
        dims += f", Dkv = {Dkv}"
        kv = "Dkv"
    if vl is not None:
        decls.append("input  valid_lens: i32[B%s]" %
                     ("" if vl.ndim == 1 else ", " + names["Tq"]))
    decls += [f"param  W_q: f32[{names['Hd']}, {names['Dq']}]",
              f"param  W_k: f32[{kv}, {names['Dk']}]",
              f"param  W_v: f32[{kv}, {names['Dv']}]",
              f"param  W_o: f32[{names['Hd']}, {names['Hd']}]"]
    bias_dims = {"b_q": names["Hd"], "b_k": kv, "b_v": kv, "b_o": names["Hd"]}
    for b in ("b_q", "b_k", "b_v", "b_o"):
        if b in biases:
            decls.append(f"param  {b}: f32[{bias_dims[b]}]")
    kw = [("heads", H), ("w_q", "W_q"), ("w_k", "W_k"), ("w_v", "W_v"),
          ("w_o", "W_o")]
    kw += [(b, b) for b in ("b_q", "b_k", "b_v", "b_o") if b in biases]
    if kv_heads:
        kw.append(("kv_heads", kv_heads))
    if rope:
        kw.append(("rope", "true"))
        if rope_base is not None:
            kw.append(("rope_base", repr(float(rope_base))))
    if causal:
        kw.append(("causal", "true"))
    if window is not None:
        kw.append(("window", window))
    if vl is not None:
        kw.append(("valid_lens", "valid_lens"))
    outputs = {"Y": Y}
    if weights:
        kw.append(("return_weights", "true"))
        outputs["A"] = A
    call = call_lines("Y, A" if weights else "Y", "multihead_attention",
                      operands, kw)
    body = "\n".join("  " + d for d in decls)
    spec = f"""{header}block {name} {{
  dim {dims}
{body}

{call}
  output {", ".join(outputs)}
}}
"""
    arrays = dict(data)
    if vl is not None:
        arrays["valid_lens"] = vl
    arrays.update(w)
    save_case(name, spec, arrays, outputs, out=OUT_V2)


def case_bert_layer(name, type_name=None):
    """A Hugging Face BertLayer (BertSelfAttention with biases,
    BertSelfOutput's add & LayerNorm, BertIntermediate's gelu, BertOutput),
    LayerNorm eps 1e-12 (BERT's), masks as D2L's with 1-D valid_lens."""
    B, T, D, H, F = 2, 6, 32, 4, 64
    rng = np.random.default_rng(112)
    X = uniform(rng, (B, T, D))
    vl = np.array([6, 3], dtype=np.int32)
    w = {}
    for p in ("q", "k", "v", "o"):
        w["W_" + p] = linear_weight(rng, D, D)
        w["b_" + p] = linear_bias(rng, D, D)
    w["ln1_gamma"] = uniform(rng, (D,), 0.8, 1.2)
    w["ln1_beta"] = uniform(rng, (D,), -0.2, 0.2)
    w["W_i"] = linear_weight(rng, F, D)
    w["b_i"] = linear_bias(rng, F, D)
    w["W_out"] = linear_weight(rng, D, F)
    w["b_out"] = linear_bias(rng, D, F)
    w["ln2_gamma"] = uniform(rng, (D,), 0.8, 1.2)
    w["ln2_beta"] = uniform(rng, (D,), -0.2, 0.2)
    if type_name:
        X, w = rounded(type_name, {"X": X})["X"], rounded(type_name, w)
    layer = BertLayer(D, H, F)
    for p, m in (("q", "query"), ("k", "key"), ("v", "value")):
        set_param(getattr(layer.self_attention, m).weight, w["W_" + p])
        set_param(getattr(layer.self_attention, m).bias, w["b_" + p])
    set_param(layer.self_output.dense.weight, w["W_o"])
    set_param(layer.self_output.dense.bias, w["b_o"])
    set_param(layer.self_output.LayerNorm.weight, w["ln1_gamma"])
    set_param(layer.self_output.LayerNorm.bias, w["ln1_beta"])
    set_param(layer.intermediate.dense.weight, w["W_i"])
    set_param(layer.intermediate.dense.bias, w["b_i"])
    set_param(layer.output.dense.weight, w["W_out"])
    set_param(layer.output.dense.bias, w["b_out"])
    set_param(layer.output.LayerNorm.weight, w["ln2_gamma"])
    set_param(layer.output.LayerNorm.bias, w["ln2_beta"])
    decls = "\n".join(f"  param  {k}: f32[{', '.join(dims)}]" for k, dims in (
        ("W_q", "DD"), ("b_q", "D"), ("W_k", "DD"), ("b_k", "D"),
        ("W_v", "DD"), ("b_v", "D"), ("W_o", "DD"), ("b_o", "D"),
        ("ln1_gamma", "D"), ("ln1_beta", "D"), ("W_i", "FD"), ("b_i", "F"),
        ("W_out", "DF"), ("b_out", "D"), ("ln2_gamma", "D"),
        ("ln2_beta", "D")))
    spec = f"""# A Hugging Face BertLayer, eval: BertSelfAttention (q/k/v with biases),
# BertSelfOutput (dense + LayerNorm(. + X)), BertIntermediate (gelu, erf),
# BertOutput (dense + LayerNorm(. + Y)); LayerNorm eps 1e-12 (BERT's); the
# padding mask is D2L's (1-D valid_lens [6, 3], masked scores -> -1e6).
block {name} {{
  dim B = {B}, T = {T}, D = {D}, F = {F}
  input  X: f32[B, T, D]
  input  valid_lens: i32[B]
{decls}

  A = multihead_attention(X, X, X, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o,
                          b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                          valid_lens=valid_lens)
  Y = add_norm(X, A, ln1_gamma, ln1_beta, eps=1e-12)
  Hi = gelu(linear(Y, W_i, b_i))
  Z = add_norm(Y, linear(Hi, W_out, b_out), ln2_gamma, ln2_beta, eps=1e-12)
  output Z
}}
"""
    finish_case(name, spec, {"X": X, "valid_lens": vl, **w}, layer.eval(),
                (t(X), t(vl)), "Z", type_name, out=OUT_V2)


def case_bert_embeddings(name):
    """D2L BERTEncoder's input embedding: token + segment embeddings plus
    the learnable pos_embedding [1, T, D] (max_len = T here), which add
    broadcasts over the batch."""
    B, T, D, V = 2, 8, 16, 30
    rng = np.random.default_rng(113)
    tokens = rng.integers(0, V, size=(B, T)).astype(np.int32)
    tokens[0, 0], tokens[1, -1] = 0, V - 1  # both ends of the table
    segments = np.array([[0, 0, 0, 0, 1, 1, 1, 1],
                         [0, 0, 0, 0, 0, 0, 1, 1]], dtype=np.int32)
    w = {"token_table": uniform(rng, (V, D)),
         "segment_table": uniform(rng, (2, D)),
         "pos_embedding": uniform(rng, (1, T, D))}
    emb = BERTEmbeddings(V, D, max_len=T)
    set_param(emb.token_embedding.weight, w["token_table"])
    set_param(emb.segment_embedding.weight, w["segment_table"])
    set_param(emb.pos_embedding, w["pos_embedding"])
    Y = run(emb.eval(), t(tokens.astype(np.int64)), t(segments.astype(np.int64)))
    spec = f"""# D2L BERTEncoder's input embedding: token_embedding(tokens) +
# segment_embedding(segments) + pos_embedding, a learnable [1, T, D] param
# that add broadcasts over the batch (max_len = T = {T}).
block {name} {{
  dim B = {B}, T = {T}, D = {D}, V = {V}
  input  tokens: i32[B, T]
  input  segments: i32[B, T]
  param  token_table: f32[V, D]
  param  segment_table: f32[2, D]
  param  pos_embedding: f32[1, T, D]

  E = add(embedding(tokens, token_table), embedding(segments, segment_table))
  Y = add(E, pos_embedding)
  output Y
}}
"""
    save_case(name, spec, {"tokens": tokens, "segments": segments, **w},
              {"Y": Y}, out=OUT_V2)


def case_gpt2_block(name, type_name=None):
    """A Hugging Face GPT2Block (pre-norm, causal, biases, gelu_new). The
    Conv1D weights [in, out] are stored transposed, in the DSL's (nn.Linear)
    layout [out, in]; c_attn's q, k, v thirds are W_q, W_k, W_v."""
    B, T, D, H = 2, 7, 32, 4
    F = 4 * D
    rng = np.random.default_rng(114)
    X = uniform(rng, (B, T, D))
    bound_d, bound_f = 1 / math.sqrt(D), 1 / math.sqrt(F)
    c_attn_w = uniform(rng, (D, 3 * D), -bound_d, bound_d)
    c_attn_b = uniform(rng, (3 * D,), -bound_d, bound_d)
    c_proj_w = uniform(rng, (D, D), -bound_d, bound_d)
    c_proj_b = uniform(rng, (D,), -bound_d, bound_d)
    c_fc_w = uniform(rng, (D, F), -bound_d, bound_d)
    c_fc_b = uniform(rng, (F,), -bound_d, bound_d)
    mlp_proj_w = uniform(rng, (F, D), -bound_f, bound_f)
    mlp_proj_b = uniform(rng, (D,), -bound_f, bound_f)
    ln = {"ln1_gamma": uniform(rng, (D,), 0.8, 1.2),
          "ln1_beta": uniform(rng, (D,), -0.2, 0.2),
          "ln2_gamma": uniform(rng, (D,), 0.8, 1.2),
          "ln2_beta": uniform(rng, (D,), -0.2, 0.2)}
    if type_name:
        r = rounded(type_name, {
            "X": X, "c_attn_w": c_attn_w, "c_attn_b": c_attn_b,
            "c_proj_w": c_proj_w, "c_proj_b": c_proj_b, "c_fc_w": c_fc_w,
            "c_fc_b": c_fc_b, "mlp_proj_w": mlp_proj_w,
            "mlp_proj_b": mlp_proj_b})
        X, c_attn_w, c_attn_b = r["X"], r["c_attn_w"], r["c_attn_b"]
        c_proj_w, c_proj_b = r["c_proj_w"], r["c_proj_b"]
        c_fc_w, c_fc_b = r["c_fc_w"], r["c_fc_b"]
        mlp_proj_w, mlp_proj_b = r["mlp_proj_w"], r["mlp_proj_b"]
        ln = rounded(type_name, ln)
    blk = GPT2Block(D, H, F)
    set_param(blk.attn.c_attn.weight, c_attn_w)
    set_param(blk.attn.c_attn.bias, c_attn_b)
    set_param(blk.attn.c_proj.weight, c_proj_w)
    set_param(blk.attn.c_proj.bias, c_proj_b)
    set_param(blk.mlp.c_fc.weight, c_fc_w)
    set_param(blk.mlp.c_fc.bias, c_fc_b)
    set_param(blk.mlp.c_proj.weight, mlp_proj_w)
    set_param(blk.mlp.c_proj.bias, mlp_proj_b)
    set_param(blk.ln_1.weight, ln["ln1_gamma"])
    set_param(blk.ln_1.bias, ln["ln1_beta"])
    set_param(blk.ln_2.weight, ln["ln2_gamma"])
    set_param(blk.ln_2.bias, ln["ln2_beta"])
    w = {}
    for i, p in enumerate(("q", "k", "v")):
        w["W_" + p] = np.ascontiguousarray(c_attn_w[:, i * D:(i + 1) * D].T)
        w["b_" + p] = c_attn_b[i * D:(i + 1) * D].copy()
    w["W_o"] = np.ascontiguousarray(c_proj_w.T)
    w["b_o"] = c_proj_b
    w.update(ln)
    w["W_fc"] = np.ascontiguousarray(c_fc_w.T)
    w["b_fc"] = c_fc_b
    w["W_proj"] = np.ascontiguousarray(mlp_proj_w.T)
    w["b_proj"] = mlp_proj_b
    decls = "\n".join(f"  param  {k}: f32[{', '.join(dims)}]" for k, dims in (
        ("ln1_gamma", "D"), ("ln1_beta", "D"),
        ("W_q", "DD"), ("b_q", "D"), ("W_k", "DD"), ("b_k", "D"),
        ("W_v", "DD"), ("b_v", "D"), ("W_o", "DD"), ("b_o", "D"),
        ("ln2_gamma", "D"), ("ln2_beta", "D"), ("W_fc", "FD"), ("b_fc", "F"),
        ("W_proj", "DF"), ("b_proj", "D")))
    spec = f"""# A Hugging Face GPT2Block, eval (pre-norm): R = X + attn(ln_1(X)) with causal,
# biased attention, then Y = R + mlp(ln_2(R)), mlp = c_proj(gelu_new(c_fc(.))),
# gelu_new being gelu(approximate='tanh'). GPT-2's Conv1D weights [in, out]
# are stored transposed, [out, in]; c_attn's thirds are W_q, W_k, W_v.
block {name} {{
  dim B = {B}, T = {T}, D = {D}, F = {F}
  input  X: f32[B, T, D]
{decls}

  H1 = layer_norm(X, ln1_gamma, ln1_beta)
  A = multihead_attention(H1, H1, H1, heads={H}, w_q=W_q, w_k=W_k, w_v=W_v,
                          w_o=W_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                          causal=true)
  R = add(X, A)
  H2 = layer_norm(R, ln2_gamma, ln2_beta)
  M = linear(gelu(linear(H2, W_fc, b_fc), approximate=true), W_proj, b_proj)
  Y = add(R, M)
  output Y
}}
"""
    finish_case(name, spec, {"X": X, **w}, blk.eval(), (t(X),), "Y",
                type_name, out=OUT_V2)


def case_llama_block(name, type_name=None):
    """A Hugging Face LlamaDecoderLayer: RMSNorm (eps 1e-6), attention with
    RoPE (theta 10000), GQA (4 query heads, 2 kv heads) and the causal mask,
    no biases, then the SwiGLU MLP."""
    B, T, D, H, G, F = 1, 8, 64, 4, 2, 96
    Dkv = G * (D // H)
    rng = np.random.default_rng(115)
    X = uniform(rng, (B, T, D))
    w = {"attn_norm": uniform(rng, (D,), 0.8, 1.2),
         "W_q": linear_weight(rng, D, D), "W_k": linear_weight(rng, Dkv, D),
         "W_v": linear_weight(rng, Dkv, D), "W_o": linear_weight(rng, D, D),
         "ffn_norm": uniform(rng, (D,), 0.8, 1.2),
         "W_gate": linear_weight(rng, F, D), "W_up": linear_weight(rng, F, D),
         "W_down": linear_weight(rng, D, F)}
    if type_name:
        X, w = rounded(type_name, {"X": X})["X"], rounded(type_name, w)
    layer = LlamaDecoderLayer(D, H, G, F)
    set_param(layer.input_layernorm.weight, w["attn_norm"])
    set_param(layer.self_attn.q_proj.weight, w["W_q"])
    set_param(layer.self_attn.k_proj.weight, w["W_k"])
    set_param(layer.self_attn.v_proj.weight, w["W_v"])
    set_param(layer.self_attn.o_proj.weight, w["W_o"])
    set_param(layer.post_attention_layernorm.weight, w["ffn_norm"])
    set_param(layer.mlp.gate_proj.weight, w["W_gate"])
    set_param(layer.mlp.up_proj.weight, w["W_up"])
    set_param(layer.mlp.down_proj.weight, w["W_down"])
    # MultiHeadAttentionV2 (the mha_* cases' code) is the same attention.
    mha = MultiHeadAttentionV2(D, H, kv_heads=G, rope=True,
                               causal=True).eval()
    for p in ("q", "k", "v", "o"):
        set_param(getattr(mha, "W_" + p).weight, w["W_" + p])
    with torch.no_grad():
        h = layer.input_layernorm(t(X))
        diff = (mha(h, h, h) - layer.self_attn(h)).abs().max().item()
    assert diff < 1e-6, diff
    spec = f"""# A Hugging Face LlamaDecoderLayer, eval: R = X + attn(rms_norm(X)) with RoPE
# (theta 10000), grouped-query attention (4 heads, 2 kv heads), the causal
# mask and no biases; then Y = R + down(silu(gate(N2)) * up(N2)), N2 =
# rms_norm(R). RMSNorm eps 1e-6.
block {name} {{
  dim B = {B}, T = {T}, D = {D}, Dkv = {Dkv}, F = {F}
  input  X: f32[B, T, D]
  param  attn_norm: f32[D]
  param  W_q: f32[D, D]
  param  W_k: f32[Dkv, D]
  param  W_v: f32[Dkv, D]
  param  W_o: f32[D, D]
  param  ffn_norm: f32[D]
  param  W_gate: f32[F, D]
  param  W_up: f32[F, D]
  param  W_down: f32[D, F]

  N1 = rms_norm(X, attn_norm)
  A = multihead_attention(N1, N1, N1, heads={H}, kv_heads={G}, w_q=W_q, w_k=W_k,
                          w_v=W_v, w_o=W_o, rope=true, causal=true)
  R = add(X, A)
  N2 = rms_norm(R, ffn_norm)
  Y = add(R, linear(mul(silu(linear(N2, W_gate)), linear(N2, W_up)), W_down))
  output Y
}}
"""
    finish_case(name, spec, {"X": X, **w}, layer.eval(), (t(X),), "Y",
                type_name, out=OUT_V2)


def main(selected):
    """Writes every case, or only those named in `selected`."""
    known = set()

    def case(name, make, *args, **kwargs):
        known.add(name)
        if not selected or name in selected:
            make(name, *args, **kwargs)

    def fixed(name, make):
        known.add(name)
        if not selected or name in selected:
            make()

    case(
        "mha_book_1d", case_mha_book, 1, 2, 4, 100, 5, [3, 2],
        "# docs/spec.md section 2's example block: D2L PositionalEncoding then\n"
        "# MultiHeadAttention(100, 5, bias=False), valid_lens [3, 2].\n")
    case(
        "mha_book_2d", case_mha_book, 2, 2, 4, 100, 5,
        [[1, 2, 3, 4], [2, 2, 1, 3]],
        "# As mha_book_1d with 2-D valid_lens [B, T] (one length per query).\n")
    case(
        "mha_zero_and_long", case_mha_self, 3, 3, 5, 20, 4, [0, 9, 2],
        "# valid_len 0 (the row is uniform over all keys, never NaN) and\n"
        "# valid_len 9 > T = 5 (nothing is masked).\n")
    case(
        "mha_causal", case_mha_self, 4, 2, 6, 16, 2, [6, 4],
        "# Causal self-attention with padding lengths [6, 4]. The golden is D2L's\n"
        "# decoder masking: 2-D valid_lens min(valid_lens[b], i + 1) for query i.\n",
        causal=True)
    fixed("mha_cross", case_mha_cross)
    case(
        "mha_odd_prime", case_mha_self, 6, 3, 13, 36, 4, [13, 7, 1],
        "# Odd and prime sizes: B = 3, T = 13, D = 36, 4 heads (head dim 9).\n")
    fixed("positional_encoding_1000", case_positional_encoding)
    case("encoder_block", case_encoder_block)
    fixed("bert_base_layer", case_bert_base_layer)
    # return_weights=true: the attention weights as a second output.
    case(
        "mha_book_weights", case_mha_book, 11, 2, 4, 100, 5, [3, 2],
        "# The book's MultiHeadAttention(100, 5, bias=False) after positional\n"
        "# encoding, valid_lens [3, 2], returning D2L's\n"
        "# attention.attention_weights ([B*heads, T, T]) as well.\n",
        weights=True)
    case(
        "mha_weights_zero_len", case_mha_self, 12, 3, 5, 20, 4, [0, 9, 2],
        "# Attention weights with valid_len 0 (every row of batch entry 0's\n"
        "# heads is uniform, 1/T) and 9 > T = 5 (nothing masked).\n",
        weights=True)
    case(
        "mha_weights_causal", case_mha_self, 13, 2, 6, 16, 2, [6, 0],
        "# Causal attention weights with padding lengths [6, 0] (D2L's decoder\n"
        "# masking: 2-D valid_lens min(valid_lens[b], i + 1)); entry 1 is\n"
        "# uniform.\n",
        causal=True, weights=True)
    fixed("attention_weights_book", case_attention_weights)
    # gelu (docs/spec.md section 2, v2).
    case(
        "ffn_gelu", case_ffn_gelu, 14, 2, 7, 24, 96, "none",
        "# A BERT-style FFN: linear -> gelu (torch's default, erf) -> linear,\n"
        "# D = 24, F = 4 D, B = 2, T = 7.\n")
    case(
        "ffn_gelu_tanh", case_ffn_gelu, 15, 1, 13, 32, 128, "tanh",
        "# A GPT-2-style MLP: linear -> gelu(approximate='tanh') -> linear,\n"
        "# D = 32, F = 4 D, B = 1, T = 13.\n")
    fixed("gelu_values", case_gelu_values)
    # The v2 ops (docs/spec.md section 2, "Ops (v2)").
    case("silu_tanh_sigmoid_values", case_silu_tanh_sigmoid_values)
    case("broadcast_add_mul_sub", case_broadcast_add_mul_sub)
    case("rms_norm_eps", case_rms_norm)
    # name, seed, header, B, Tq, Tk, Dq, Dk, Dv, Hd, H, keywords...
    case(
        "mha_biases", case_mha_v2, 103,
        "# Cross-attention with all four projection biases (D2L\n"
        "# MultiHeadAttention(16, 4, bias=True)), Tq != Tk, different query,\n"
        "# key and value sizes, valid_lens [4, 6].\n",
        2, 3, 6, 12, 10, 14, 16, 4, cross=True,
        biases=("b_q", "b_k", "b_v", "b_o"), valid_lens=[4, 6])
    case(
        "mha_biases_subset", case_mha_v2, 104,
        "# Self-attention with only b_q and b_o (D2L bias=True with b_k = b_v =\n"
        "# 0), 2-D valid_lens with a 0 and a 9 > T.\n",
        2, 5, 5, 12, 12, 12, 12, 3, biases=("b_q", "b_o"),
        valid_lens=[[1, 2, 3, 4, 5], [5, 0, 2, 9, 3]])
    case(
        "mha_gqa", case_mha_v2, 105,
        "# Grouped-query attention: 4 query heads, kv_heads=2 (HF repeat_kv:\n"
        "# query head h uses kv head h / 2), head dim 8, valid_lens [6, 4].\n",
        2, 6, 6, 32, 32, 32, 32, 4, kv_heads=2, valid_lens=[6, 4])
    case(
        "mha_mqa", case_mha_v2, 106,
        "# Multi-query attention: 4 query heads share kv_heads=1, head dim 8,\n"
        "# 2-D valid_lens with a 0.\n",
        2, 5, 5, 32, 32, 32, 32, 4, kv_heads=1,
        valid_lens=[[1, 2, 3, 4, 5], [5, 5, 2, 0, 3]])
    case(
        "mha_rope", case_mha_v2, 107,
        "# RoPE (HF Llama rotate_half, base 10000) on every head of q and k,\n"
        "# position = row index; head dim 16, valid_lens [7, 5].\n",
        2, 7, 7, 32, 32, 32, 32, 2, rope=True, valid_lens=[7, 5])
    case(
        "mha_rope_base", case_mha_v2, 108,
        "# RoPE with rope_base=500000.0 (Llama 3's theta), causal, head dim 8.\n",
        1, 10, 10, 24, 24, 24, 24, 3, rope=True, rope_base=500000.0,
        causal=True)
    case(
        "mha_window", case_mha_v2, 109,
        "# Sliding-window causal attention, window=3 (key j visible from query i\n"
        "# iff i - 3 < j <= i), intersected with valid_lens [0, 5, 12]: entry 0\n"
        "# and entry 1's queries i >= 7 see no key and are uniform.\n",
        3, 9, 9, 16, 16, 16, 16, 2, causal=True, window=3,
        valid_lens=[0, 5, 12])
    case(
        "mha_window_weights", case_mha_v2, 110,
        "# Sliding-window causal attention, window=2, valid_lens [9, 4], with\n"
        "# return_weights=true: A pins the mask (entry 1's queries i >= 5 see no\n"
        "# key: uniform rows).\n",
        2, 9, 9, 16, 16, 16, 16, 2, causal=True, window=2,
        valid_lens=[9, 4], weights=True)
    case("bert_layer", case_bert_layer)
    case("bert_embeddings", case_bert_embeddings)
    case("gpt2_block", case_gpt2_block)
    case("llama_block", case_llama_block)
    # The low-precision cases (docs/spec.md section 2, "Types (v3)"): one of
    # each family, in bf16 and in f16.
    for type_name in LOW_PRECISION_TYPES:
        case("mha_zero_and_long_" + type_name, case_mha_self, 3, 3, 5, 20, 4,
             [0, 9, 2],
             "# valid_len 0 (the row is uniform over all keys, never NaN) and\n"
             "# valid_len 9 > T = 5 (nothing is masked).\n",
             type_name=type_name)
        case("encoder_block_" + type_name, case_encoder_block,
             type_name=type_name)
        for family, make in (("bert_layer", case_bert_layer),
                             ("gpt2_block", case_gpt2_block),
                             ("llama_block", case_llama_block)):
            case(family + "_" + type_name, make, type_name=type_name)
    unknown = set(selected) - known
    if unknown:
        sys.exit("unknown case(s): " + ", ".join(sorted(unknown)))


if __name__ == "__main__":
    main(sys.argv[1:])
