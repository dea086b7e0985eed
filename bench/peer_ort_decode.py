"""ONNX Runtime's decode step, for bench/decode.py: the same layer as its
attnc spec (q, k, v projections, GroupQueryAttention with a KV cache, the
output projection; rope for GQA models), run in the bench venv
(bench/setup.sh: onnxruntime, onnx, numpy from PyPI).

    build/bench-venv/bin/python bench/peer_ort_decode.py --model gpt2 \
        --length 1024 --layers 40 --threads 1 [--check]

GroupQueryAttention (com.microsoft) takes past_key/past_value
[B, kv_heads, L, d] and returns present_key/present_value; bound to the
same buffers (IOBinding), it writes the new row in place (ORT's shared
past/present buffer), as a static cache does. Each entry's cache holds
L - 1 tokens (seqlens_k = L - 1). Prints one line: the median ms of one
layer's step, the layers called in turn (weights and caches of their own).
With --check, first compares one step with a NumPy reference and exits 1
on a mismatch. Only f32: ORT's CPU GroupQueryAttention has float32 and
float16 kernels, no bfloat16.
"""

import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from decode_shapes import MODELS, peer_arguments


def graph(D, heads, kv, L, rope):
    d = D // heads
    kv_dim = kv * d
    f32 = TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("X", f32, [1, 1, D]),
        helper.make_tensor_value_info("past_key", f32, [1, kv, L, d]),
        helper.make_tensor_value_info("past_value", f32, [1, kv, L, d]),
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
        helper.make_tensor_value_info("total_length", TensorProto.INT32, []),
        helper.make_tensor_value_info("Wq", f32, [D, D]),
        helper.make_tensor_value_info("Wk", f32, [D, kv_dim]),
        helper.make_tensor_value_info("Wv", f32, [D, kv_dim]),
        helper.make_tensor_value_info("Wo", f32, [D, D]),
    ]
    gqa_inputs = ["q", "k", "v", "past_key", "past_value", "seqlens_k",
                  "total_length"]
    if rope:
        inputs += [helper.make_tensor_value_info("cos", f32, [L, d // 2]),
                   helper.make_tensor_value_info("sin", f32, [L, d // 2])]
        gqa_inputs += ["cos", "sin"]
    nodes = [
        helper.make_node("MatMul", ["X", "Wq"], ["q"]),
        helper.make_node("MatMul", ["X", "Wk"], ["k"]),
        helper.make_node("MatMul", ["X", "Wv"], ["v"]),
        helper.make_node("GroupQueryAttention", gqa_inputs,
                         ["attn", "present_key", "present_value"],
                         domain="com.microsoft", num_heads=heads,
                         kv_num_heads=kv, do_rotary=int(rope)),
        helper.make_node("MatMul", ["attn", "Wo"], ["Y"]),
    ]
    outputs = [
        helper.make_tensor_value_info("Y", f32, [1, 1, D]),
        helper.make_tensor_value_info("present_key", f32, [1, kv, L, d]),
        helper.make_tensor_value_info("present_value", f32, [1, kv, L, d]),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "decode_step", inputs, outputs),
        opset_imports=[helper.make_opsetid("", 17),
                       helper.make_opsetid("com.microsoft", 1)])
    return model.SerializeToString()


def rope_tables(L, d, base=10000.0):
    inv = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float32) / d)
    angles = np.outer(np.arange(L, dtype=np.float32), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


class Layer:
    """One layer's weights, cache and IOBinding."""

    def __init__(self, session, D, heads, kv, L, rope, rng):
        d = D // heads
        self.names = {}
        scale = float(1.0 / np.sqrt(D))
        self.weights = {
            "Wq": rng.standard_normal((D, D), dtype=np.float32) * scale,
            "Wk": rng.standard_normal((D, kv * d), dtype=np.float32) * scale,
            "Wv": rng.standard_normal((D, kv * d), dtype=np.float32) * scale,
            "Wo": rng.standard_normal((D, D), dtype=np.float32) * scale,
        }
        self.cache_k = rng.standard_normal((1, kv, L, d), dtype=np.float32)
        self.cache_v = rng.standard_normal((1, kv, L, d), dtype=np.float32)
        self.x = rng.standard_normal((1, 1, D), dtype=np.float32)
        self.y = np.empty((1, 1, D), np.float32)
        binding = session.io_binding()
        arrays = dict(self.weights, X=self.x,
                      seqlens_k=np.array([L - 1], np.int32),
                      total_length=np.array(L, np.int32))
        if rope:
            arrays["cos"], arrays["sin"] = rope_tables(L, d)
        self.values = {n: ort.OrtValue.ortvalue_from_numpy(a)
                       for n, a in arrays.items()}
        k = ort.OrtValue.ortvalue_from_numpy(self.cache_k)
        v = ort.OrtValue.ortvalue_from_numpy(self.cache_v)
        y = ort.OrtValue.ortvalue_from_numpy(self.y)
        self.values.update(past_key=k, past_value=v, Y=y)
        for name, value in self.values.items():
            if name != "Y":
                binding.bind_ortvalue_input(name, value)
        binding.bind_ortvalue_output("Y", y)
        binding.bind_ortvalue_output("present_key", k)
        binding.bind_ortvalue_output("present_value", v)
        self.binding = binding

    def run(self, session):
        session.run_with_iobinding(self.binding)


def reference(layer, D, heads, kv, L, rope):
    """A NumPy decode step (before the run): the new token's k, v at row
    L - 1 (rotated at position L - 1), attention over rows 0 .. L - 1."""
    d = D // heads
    w = layer.weights
    x = layer.x[0]
    q = (x @ w["Wq"]).reshape(heads, d)
    k_new = (x @ w["Wk"]).reshape(kv, d)
    v_new = (x @ w["Wv"]).reshape(kv, d)
    if rope:
        cos, sin = rope_tables(L, d)
        c, s = cos[L - 1], sin[L - 1]

        def rotate(t):
            a, b = t[..., :d // 2], t[..., d // 2:]
            return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)
        q, k_new = rotate(q), rotate(k_new)
    K = layer.cache_k[0].copy()
    V = layer.cache_v[0].copy()
    K[:, L - 1] = k_new
    V[:, L - 1] = v_new
    out = np.empty((heads, d), np.float32)
    for h in range(heads):
        g = h // (heads // kv)
        scores = K[g] @ q[h] / np.sqrt(d)
        p = np.exp(scores - scores.max())
        out[h] = (p / p.sum()) @ V[g]
    return out.reshape(1, 1, D) @ w["Wo"], K, V


def main():
    p = peer_arguments(steps=30)
    args = p.parse_args()
    D, heads, kv = MODELS[args.model]
    rope = kv != heads
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(graph(D, heads, kv, args.length, rope),
                                   options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    layers = [Layer(session, D, heads, kv, args.length, rope, rng)
              for _ in range(args.layers)]
    if args.check:
        layer = layers[0]
        expected, K, V = reference(layer, D, heads, kv, args.length, rope)
        layer.run(session)
        if not (np.allclose(layer.y, expected, rtol=1e-4, atol=1e-4) and
                np.allclose(layer.cache_k[0], K, atol=1e-5) and
                np.allclose(layer.cache_v[0], V, atol=1e-5)):
            print("ort decode: the step differs from the NumPy reference "
                  f"(max |dY| {np.abs(layer.y - expected).max():.2e})")
            return 1
    for layer in layers:
        layer.run(session)
    times = []  # each layer's step, as bench/decode.py times attnc's
    for _ in range(args.steps):
        for layer in layers:
            start = time.perf_counter()
            layer.run(session)
            times.append(time.perf_counter() - start)
    print(f"ort {ort.__version__} {statistics.median(times) * 1e3:.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
