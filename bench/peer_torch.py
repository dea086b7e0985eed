"""PyTorch peer of the benchmark: run by bench/harness.py under one torch
interpreter (Debian's /usr/bin/python3 or the PyPI torch of the bench venv).

    python peer_torch.py CONFIG.json   ->  one JSON object on stdout

CONFIG: {"threads": n, "protocol": {...}, "cases": [...]}.  For each case it
times, in inference mode (torch.inference_mode(), modules in eval()):

  mha cases (self-attention, q = k = v = X, valid_lens=None: nothing masked)
    d2l     the D2L MultiHeadAttention(bias=False) / DotProductAttention code
    nn      torch.nn.MultiheadAttention(bias=False, batch_first=True),
            need_weights=False (its inference fast path)
    F       F.multi_head_attention_forward(bias=False, need_weights=False),
            input given in its native (T, B, D) layout
  bert case (post-LayerNorm encoder layer, FFN with ReLU and biases)
    d2l     D2L TransformerEncoderBlock (MultiHeadAttention(bias=False),
            AddNorm, PositionWiseFFN)
    nn      torch.nn.TransformerEncoderLayer(norm_first=False, relu,
            dropout=0, batch_first=True); its attention has biases
            (nn cannot drop only those)
    F       the same layer written with torch.nn.functional
  sgemm case
    mm      torch.mm(A, B), N x N x N
  gpt2, llama, window cases (bench/blocks.py; the weights of blocks.arrays)
    eager   written as Hugging Face transformers computes it with
            attn_implementation="eager" (modeling_gpt2 / modeling_llama /
            modeling_mistral): eager_attention_forward with its additive
            4-D mask (0 / finfo.min, built once, as the model shares it
            across layers), repeat_kv, rotate_half RoPE (cos/sin built once),
            LlamaRMSNorm, GPT-2's Conv1D (addmm) and gelu_new written out
    sdpa    the same block with F.scaled_dot_product_attention: is_causal=
            True (gpt2), is_causal=True and enable_gqa=True, no repeat_kv
            (llama), a boolean [T, T] sliding-window mask (window); gpt2's
            GELU as F.gelu(approximate="tanh")
    flex    (window) torch.compile(flex_attention) with a sliding-window
            BlockMask, which skips the key blocks outside the window; the
            first (warm-up) call compiles

A variant that fails is reported with its error, never dropped; one whose
score tensors would not fit in the memory available is reported as skipped.

With "check_dir" in CONFIG (bench/check_peers.py) the model-block cases are
not timed: each variant runs once on CHECK_DIR/ID/inputs/NAME.npy and its
output is written to CHECK_DIR/ID/TAG_VARIANT.npy (TAG = config "tag").
"""

import json
import math
import re
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import measure, memory_available  # noqa: E402
import blocks  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


# --- D2L code (chapter "Attention Mechanisms and Transformers"), eval mode ---
def masked_softmax(X, valid_lens):
    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32,
                            device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_hiddens, num_heads, dropout, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(
                valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)
        output_concat = self.transpose_output(output)
        return self.W_o(output_concat)

    def transpose_qkv(self, X):
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        X = X.permute(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X):
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)


class PositionWiseFFN(nn.Module):
    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.LazyLinear(ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.LazyLinear(ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    def __init__(self, norm_shape, dropout, eps):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape, eps=eps)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout,
                 use_bias=False, eps=1e-12):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout,
                                            use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, eps)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout, eps)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))
# --- end of D2L code ---


def weights(*shape):
    return torch.randn(*shape) * 0.02


def dtype_of(case):
    """The case's torch dtype (float32 unless it names bf16 or f16)."""
    return {"bf16": torch.bfloat16, "f16": torch.float16}.get(
        case.get("dtype"), torch.float32)


def error_of(e):
    return "%s: %s" % (type(e).__name__, str(e).splitlines()[0]
                       if str(e) else "")


def run_variant(fn, protocol):
    try:
        with torch.inference_mode():
            return measure(fn, protocol)
    except Exception as e:  # reported, never dropped
        return {"error": error_of(e)}


def mha_variants(case, protocol):
    B, T, D, H = case["B"], case["T"], case["D"], case["H"]
    dtype = dtype_of(case)
    X = torch.randn(B, T, D)
    Wq, Wk, Wv, Wo = (weights(D, D) for _ in range(4))
    out = {}

    d2l = MultiHeadAttention(D, H, 0.0, bias=False)
    with torch.no_grad():
        d2l(X, X, X, None)  # materialize the lazy layers
        d2l.W_q.weight.copy_(Wq)
        d2l.W_k.weight.copy_(Wk)
        d2l.W_v.weight.copy_(Wv)
        d2l.W_o.weight.copy_(Wo)
    d2l.eval()
    X, Wq, Wk, Wv, Wo = (t.to(dtype) for t in (X, Wq, Wk, Wv, Wo))
    d2l.to(dtype)
    out["d2l"] = run_variant(lambda: d2l(X, X, X, None), protocol)

    mha = nn.MultiheadAttention(D, H, dropout=0.0, bias=False,
                                batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([Wq, Wk, Wv]))
        mha.out_proj.weight.copy_(Wo)
    mha.eval().to(dtype)
    out["nn"] = run_variant(
        lambda: mha(X, X, X, need_weights=False), protocol)

    Xt = X.transpose(0, 1).contiguous()  # F's native (T, B, D) layout
    in_proj = torch.cat([Wq, Wk, Wv])

    def functional():
        return F.multi_head_attention_forward(
            Xt, Xt, Xt, D, H, in_proj, None, None, None, False, 0.0, Wo,
            None, training=False, need_weights=False)
    out["F"] = run_variant(functional, protocol)
    return out


def bert_variants(case, protocol):
    B, T, D, H, Fh = case["B"], case["T"], case["D"], case["H"], case["F"]
    dtype = dtype_of(case)
    eps = 1e-12
    X = torch.randn(B, T, D)
    Wq, Wk, Wv, Wo = (weights(D, D) for _ in range(4))
    W1, b1, W2, b2 = weights(Fh, D), weights(Fh), weights(D, Fh), weights(D)
    g1, be1, g2, be2 = (torch.ones(D), torch.zeros(D), torch.ones(D),
                        torch.zeros(D))
    out = {}

    d2l = TransformerEncoderBlock(D, Fh, H, 0.0, use_bias=False, eps=eps)
    with torch.no_grad():
        d2l(X, None)
        a = d2l.attention
        a.W_q.weight.copy_(Wq)
        a.W_k.weight.copy_(Wk)
        a.W_v.weight.copy_(Wv)
        a.W_o.weight.copy_(Wo)
        d2l.ffn.dense1.weight.copy_(W1)
        d2l.ffn.dense1.bias.copy_(b1)
        d2l.ffn.dense2.weight.copy_(W2)
        d2l.ffn.dense2.bias.copy_(b2)
    d2l.eval().to(dtype)
    X, Wq, Wk, Wv, Wo, W1, b1, W2, b2, g1, be1, g2, be2 = (
        t.to(dtype) for t in (X, Wq, Wk, Wv, Wo, W1, b1, W2, b2, g1, be1, g2,
                              be2))
    out["d2l"] = run_variant(lambda: d2l(X, None), protocol)

    try:
        layer = nn.TransformerEncoderLayer(
            D, H, dim_feedforward=Fh, dropout=0.0, activation="relu",
            layer_norm_eps=eps, batch_first=True, norm_first=False)
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.cat([Wq, Wk, Wv]))
            layer.self_attn.out_proj.weight.copy_(Wo)
            layer.linear1.weight.copy_(W1)
            layer.linear1.bias.copy_(b1)
            layer.linear2.weight.copy_(W2)
            layer.linear2.bias.copy_(b2)
        layer.eval().to(dtype)
        out["nn"] = run_variant(lambda: layer(X), protocol)
    except Exception as e:
        out["nn"] = {"error": "%s: %s" % (type(e).__name__, e)}

    Xt = X.transpose(0, 1).contiguous()
    in_proj = torch.cat([Wq, Wk, Wv])

    def functional():
        A, _ = F.multi_head_attention_forward(
            Xt, Xt, Xt, D, H, in_proj, None, None, None, False, 0.0, Wo,
            None, training=False, need_weights=False)
        Y = F.layer_norm(Xt + A, (D,), g1, be1, eps)
        Z = F.linear(F.relu(F.linear(Y, W1, b1)), W2, b2)
        return F.layer_norm(Y + Z, (D,), g2, be2, eps)
    out["F"] = run_variant(functional, protocol)
    return out


# --- Hugging Face formulas (transformers' modeling_gpt2, modeling_llama,
# modeling_mistral; eval, eager or SDPA attention) ---
def hf_mask(T, window=None):
    """HF's eager 4-D mask [1, 1, T, T]: 0 where key j is visible from query
    i (j <= i, and i - j < window for a sliding window), finfo.min
    elsewhere."""
    vis = visible(T, window)
    mask = torch.zeros(T, T).masked_fill(~vis, torch.finfo(torch.float32).min)
    return mask[None, None]


def visible(T, window=None):
    """[T, T] bool, True where key j is visible from query i."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    vis = j <= i
    if window is not None:
        vis = vis & (i - j < window)
    return vis


def repeat_kv(hidden_states, n_rep):
    """[B, kv_heads, T, d] -> [B, kv_heads * n_rep, T, d] (HF repeat_kv)."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen,
                                 head_dim)


def eager_attention(query, key, value, mask, n_rep=1):
    """HF eager_attention_forward (dropout 0): [B, H, T, d] in, [B, T, H, d]
    out."""
    key_states = repeat_kv(key, n_rep)
    value_states = repeat_kv(value, n_rep)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * \
        query.shape[-1] ** -0.5
    attn_weights = attn_weights + mask
    attn_weights = F.softmax(attn_weights, dim=-1,
                             dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous()


def sdpa_attention(**kwargs):
    def attend(query, key, value):
        return F.scaled_dot_product_attention(
            query, key, value, **kwargs).transpose(1, 2).contiguous()
    return attend


def rope_cos_sin(T, dim, base=10000.0):
    """HF LlamaRotaryEmbedding (rope_type "default") at positions 0..T-1:
    cos(emb), sin(emb), emb = cat(freqs, freqs), [T, dim]."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64)
                               .float() / dim))
    freqs = torch.arange(T, dtype=torch.int64).float()[:, None] * \
        inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return (q * cos) + (rotate_half(q) * sin), \
        (k * cos) + (rotate_half(k) * sin)


def rms_norm(hidden_states, weight, eps):
    """LlamaRMSNorm."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + eps)
    return weight * hidden_states


def gelu_new(x):
    """HF NewGELUActivation (GPT-2's "gelu_new"), written out."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (
        x + 0.044715 * torch.pow(x, 3.0))))


def gpt2_block(a, case, attend, gelu):
    """HF GPT2Block: Conv1D weights are [in, out] (ours transposed)."""
    B, T, D, H = case["B"], case["T"], case["D"], case["H"]
    d = D // H
    c_attn_w = torch.cat([a["W_q"], a["W_k"], a["W_v"]]).t().contiguous()
    c_attn_b = torch.cat([a["b_q"], a["b_k"], a["b_v"]])
    c_proj_w = a["W_o"].t().contiguous()
    c_fc_w = a["W_fc"].t().contiguous()
    mlp_proj_w = a["W_proj"].t().contiguous()

    def conv1d(x, weight, bias):
        size_out = x.size()[:-1] + (weight.shape[1],)
        return torch.addmm(bias, x.view(-1, x.size(-1)), weight).view(
            size_out)

    def forward():
        X = a["X"]
        h = F.layer_norm(X, (D,), a["ln1_gamma"], a["ln1_beta"], 1e-5)
        query, key, value = conv1d(h, c_attn_w, c_attn_b).split(D, dim=2)
        shape = (B, T, H, d)
        query = query.view(shape).transpose(1, 2)
        key = key.view(shape).transpose(1, 2)
        value = value.view(shape).transpose(1, 2)
        attn = attend(query, key, value).reshape(B, T, D).contiguous()
        Y = conv1d(attn, c_proj_w, a["b_o"]) + X
        h = F.layer_norm(Y, (D,), a["ln2_gamma"], a["ln2_beta"], 1e-5)
        m = conv1d(gelu(conv1d(h, c_fc_w, a["b_fc"])), mlp_proj_w,
                   a["b_proj"])
        return Y + m
    return forward


def llama_block(a, case, attend):
    """HF LlamaDecoderLayer (attention_bias=False, mlp_bias=False)."""
    B, T, D, H, G = case["B"], case["T"], case["D"], case["H"], case["KV"]
    d = D // H
    cos, sin = rope_cos_sin(T, d)

    def forward():
        X = a["X"]
        h = rms_norm(X, a["attn_norm"], 1e-6)
        q = F.linear(h, a["W_q"]).view(B, T, H, d).transpose(1, 2)
        k = F.linear(h, a["W_k"]).view(B, T, G, d).transpose(1, 2)
        v = F.linear(h, a["W_v"]).view(B, T, G, d).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        attn = attend(q, k, v).reshape(B, T, D).contiguous()
        Y = X + F.linear(attn, a["W_o"])
        h = rms_norm(Y, a["ffn_norm"], 1e-6)
        return Y + F.linear(F.silu(F.linear(h, a["W_gate"])) *
                            F.linear(h, a["W_up"]), a["W_down"])
    return forward


def window_attention(a, case, attend):
    """MistralAttention without RoPE and without biases: projections,
    heads, sliding-window causal attention, output projection."""
    B, T, D, H = case["B"], case["T"], case["D"], case["H"]
    d = D // H

    def forward():
        X = a["X"]
        q = F.linear(X, a["W_q"]).view(B, T, H, d).transpose(1, 2)
        k = F.linear(X, a["W_k"]).view(B, T, H, d).transpose(1, 2)
        v = F.linear(X, a["W_v"]).view(B, T, H, d).transpose(1, 2)
        return F.linear(attend(q, k, v).reshape(B, T, D), a["W_o"])
    return forward


def flex_window(T, window):
    """torch.compile(flex_attention) with a sliding-window BlockMask."""
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)

    def sliding_window_causal(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < window)
    block_mask = create_block_mask(sliding_window_causal, None, None, T, T,
                                   device="cpu")
    compiled = torch.compile(flex_attention)

    def attend(query, key, value):
        return compiled(query, key, value, block_mask=block_mask)\
            .transpose(1, 2).contiguous()
    return attend


def flash_takes_masks():
    """Whether SDPA's CPU flash kernel accepts an attn_mask (then a boolean
    [T, T] mask costs T^2 bytes, not [B, H, T, T] floats)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        q = torch.randn(1, 1, 8, 16)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            F.scaled_dot_product_attention(q, q, q, attn_mask=visible(8))
        return True
    except Exception:
        return False


def model_variants(case, a):
    """name -> (forward, bytes its attention scores need at the peak, or 0);
    a variant that cannot be built is an exception in place of forward."""
    kind, B, T, H = case["kind"], case["B"], case["T"], case["H"]
    scores = 4 * B * H * T * T  # one [B, H, T, T] float32 tensor
    if kind in ("gpt2", "llama"):
        mask = hf_mask(T)
    if kind == "gpt2":
        return {
            "eager": (gpt2_block(a, case, lambda q, k, v: eager_attention(
                q, k, v, mask), gelu_new), 2 * scores),
            "sdpa": (gpt2_block(a, case, sdpa_attention(is_causal=True),
                                lambda x: F.gelu(x, approximate="tanh")), 0),
        }
    if kind == "llama":
        n_rep = H // case["KV"]
        return {
            "eager": (llama_block(a, case, lambda q, k, v: eager_attention(
                q, k, v, mask, n_rep)), 2 * scores),
            "sdpa": (llama_block(a, case, sdpa_attention(
                is_causal=True, enable_gqa=True)), 0),
        }
    W = case["W"]
    mask, vis = hf_mask(T, W), visible(T, W)
    out = {
        "eager": (window_attention(a, case, lambda q, k, v: eager_attention(
            q, k, v, mask)), 2 * scores + 4 * T * T),
        "sdpa": (window_attention(a, case, sdpa_attention(attn_mask=vis)),
                 T * T if flash_takes_masks() or not hasattr(
                     F, "scaled_dot_product_attention")
                 else 2 * scores + 4 * T * T),
    }
    try:
        out["flex"] = (window_attention(a, case, flex_window(T, W)), 0)
    except Exception as e:
        out["flex"] = (e, 0)
    return out


def model_results(case, arrays, protocol):
    out = {}
    avail = memory_available()
    for name, (fn, need) in model_variants(case, arrays).items():
        if isinstance(fn, Exception):
            out[name] = {"error": error_of(fn)}
        elif avail is not None and need > 0.8 * avail:
            out[name] = {"error": "skipped: its scores need ~%.1f GiB, "
                         "%.1f GiB available" % (need / 2 ** 30,
                                                 avail / 2 ** 30)}
        else:
            out[name] = run_variant(fn, protocol)
    return out


def check_outputs(case, check_dir, tag):
    """Runs each variant once on the check's inputs and saves its output."""
    import numpy as np
    folder = os.path.join(check_dir, case["id"])
    arrays = {n: torch.from_numpy(np.load(os.path.join(folder, "inputs",
                                                      n + ".npy")))
              for n, role, _ in blocks.signature(case) if role != "output"}
    out = {}
    for name, (fn, _) in model_variants(case, arrays).items():
        try:
            if isinstance(fn, Exception):
                raise fn
            with torch.inference_mode():
                y = fn()
            path = os.path.join(folder, "%s_%s.npy" % (tag, name))
            np.save(path, y.numpy())
            out[name] = {"saved": path}
        except Exception as e:
            out[name] = {"error": error_of(e)}
    return out


def model_arrays(case):
    return {n: torch.from_numpy(v) for n, v in blocks.arrays(case).items()}


def sgemm_variants(case, protocol):
    n = case["N"]
    A, Bm = (torch.randn(n, n).to(dtype_of(case)) for _ in range(2))
    return {"mm": run_variant(lambda: torch.mm(A, Bm), protocol)}


def blas_info():
    """What torch says it was built with, and the BLAS/MKL libraries this
    process actually loaded (after a torch.mm ran)."""
    parts = []
    try:
        cfg = torch.__config__.show()
        for pattern in (r"BLAS_INFO=([^,\s]+)", r"(MKL-DNN v[0-9.]+)",
                        r"(Intel\(R\) oneAPI Math Kernel Library [^\n]*)"):
            m = re.search(pattern, cfg)
            if m:
                parts.append(m.group(1).strip())
    except Exception as e:
        parts.append("config unknown (%s)" % e)
    try:
        loaded = set()
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                name = os.path.basename(path)
                if re.search(r"blas|mkl|lapack|gomp|iomp", name):
                    loaded.add(os.path.realpath(path))
        parts.append("loaded: " + ", ".join(sorted(loaded)))
    except Exception:
        pass
    return "; ".join(parts)


def main():
    with open(sys.argv[1]) as f:
        config = json.load(f)
    threads = config["threads"]
    torch.set_num_threads(threads)
    protocol = config["protocol"]
    results = {}
    for case in config["cases"]:
        if case["kind"] == "mha":
            results[case["id"]] = mha_variants(case, protocol)
        elif case["kind"] == "bert":
            results[case["id"]] = bert_variants(case, protocol)
        elif case["kind"] == "sgemm":
            results[case["id"]] = sgemm_variants(case, protocol)
        elif case["kind"] in blocks.KINDS:
            if "check_dir" in config:
                results[case["id"]] = check_outputs(
                    case, config["check_dir"], config.get("tag", "torch"))
            else:
                results[case["id"]] = model_results(
                    case, model_arrays(case), protocol)
    print(json.dumps({
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "blas": blas_info(),
        "results": results,
    }))


if __name__ == "__main__":
    main()
