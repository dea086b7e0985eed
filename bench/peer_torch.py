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

A variant that fails is reported with its error, never dropped.
"""

import json
import math
import re
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import measure  # noqa: E402

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


def run_variant(fn, protocol):
    try:
        with torch.inference_mode():
            return measure(fn, protocol)
    except Exception as e:  # reported, never dropped
        return {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0]
                                     if str(e) else "")}


def mha_variants(case, protocol):
    B, T, D, H = case["B"], case["T"], case["D"], case["H"]
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
    out["d2l"] = run_variant(lambda: d2l(X, X, X, None), protocol)

    mha = nn.MultiheadAttention(D, H, dropout=0.0, bias=False,
                                batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([Wq, Wk, Wv]))
        mha.out_proj.weight.copy_(Wo)
    mha.eval()
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
    d2l.eval()
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
        layer.eval()
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


def sgemm_variants(case, protocol):
    n = case["N"]
    A, Bm = torch.randn(n, n), torch.randn(n, n)
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
    print(json.dumps({
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "blas": blas_info(),
        "results": results,
    }))


if __name__ == "__main__":
    main()
