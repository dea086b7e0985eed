#!/usr/bin/python3
"""Makes the numerical goldens of attnc from the D2L PyTorch code.

    /usr/bin/python3 tests/data/make_goldens.py [CASE...]

(with CASE names, only those cases are written; needs torch and numpy: Debian's python3-torch 1.13 / python3-numpy 1.24).

For each case it writes tests/data/goldens/<case>/:
  <case>.attn          the block in the attnc DSL (SPEC section 2)
  <ARG>.npy            one file per DSL input/param, named like the argument
  expected_<OUT>.npy   the D2L output, float32
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


def save_case(name, spec, arrays, outputs, formula=None):
    """Writes one case folder. arrays: {dsl_name: ndarray} (stored);
    outputs: {dsl_output_name: ndarray}; formula: list of
    (name, shape, salt, scale, offset) not stored but documented."""
    d = os.path.join(OUT, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, name + ".attn"), "w") as f:
        f.write(spec)
    for arg, a in arrays.items():
        assert a.dtype in (np.float32, np.int32), (arg, a.dtype)
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
    """positional_encoding then self multi-head attention (SPEC section 2's
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
                  weights=False):
    """Self multi-head attention on X (no positional encoding). With
    weights, the block also returns the attention weights."""
    rng = np.random.default_rng(seed)
    X = uniform(rng, (B, T, D))
    vl = np.asarray(valid_lens, dtype=np.int32)
    mha, w = mha_module(rng, D, H)
    if causal:
        # D2L TransformerDecoderBlock: dec_valid_lens = arange(1, T + 1) per
        # row (query i sees keys 0..i), here combined with the padding
        # lengths: the 2-D valid_lens min(valid_lens[b], i + 1).
        dec = np.minimum(vl[:, None], np.arange(1, T + 1)[None, :])
        torch_vl = torch.from_numpy(dec.astype(np.int32))
    else:
        torch_vl = torch.from_numpy(vl)
    Y = run(mha, torch.from_numpy(X), torch.from_numpy(X),
            torch.from_numpy(X), torch_vl)
    extra = ", causal=true" if causal else ""
    outputs = {"Y": Y}
    if weights:
        outputs["A"] = attention_weights_of(mha)
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
    save_case(name, spec, {"X": X, "valid_lens": vl, **w}, outputs)


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


def case_encoder_block():
    name = "encoder_block"
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
    blk = encoder_module(D, F, H, w)
    Z = run(blk, torch.from_numpy(X), torch.from_numpy(vl))
    header = ("# D2L TransformerEncoderBlock(num_hiddens=24, ffn_num_hiddens=48,"
              " num_heads=8,\n# use_bias=False), eval mode, B=2, T=4, "
              "valid_lens [3, 2].\n")
    spec = ENCODER_SPEC.format(header=header, name=name, B=B, T=T, D=D, F=F,
                               H=H)
    save_case(name, spec, {"X": X, "valid_lens": vl, **w}, {"Z": Z})


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
    tolerance.txt), not SPEC's 1e-4: the point is the accuracy of the erf
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
        "# SPEC section 2's example block: D2L PositionalEncoding then\n"
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
    fixed("encoder_block", case_encoder_block)
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
    # gelu (SPEC section 2, v2).
    case(
        "ffn_gelu", case_ffn_gelu, 14, 2, 7, 24, 96, "none",
        "# A BERT-style FFN: linear -> gelu (torch's default, erf) -> linear,\n"
        "# D = 24, F = 4 D, B = 2, T = 7.\n")
    case(
        "ffn_gelu_tanh", case_ffn_gelu, 15, 1, 13, 32, 128, "tanh",
        "# A GPT-2-style MLP: linear -> gelu(approximate='tanh') -> linear,\n"
        "# D = 32, F = 4 D, B = 1, T = 13.\n")
    fixed("gelu_values", case_gelu_values)
    unknown = set(selected) - known
    if unknown:
        sys.exit("unknown case(s): " + ", ".join(sorted(unknown)))


if __name__ == "__main__":
    main(sys.argv[1:])
