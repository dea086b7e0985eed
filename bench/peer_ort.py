"""ONNX Runtime peer of the benchmark (CPU execution provider), run by
bench/harness.py in the bench venv (onnxruntime, onnx and numpy from PyPI).

    python peer_ort.py CONFIG.json   ->  one JSON object on stdout

Graphs, built with onnx.helper, all float32, batch-first [B, T, D]:

  mha   "attention": com.microsoft Attention (fused QKV weight [D, 3D], zero
        QKV bias, num_heads, no mask) followed by MatMul with W_oᵀ;
        "plain": MatMul x3, Reshape/Transpose to heads, MatMul, Mul by
        1/sqrt(d), Softmax, MatMul, Transpose/Reshape, MatMul (what a
        torch.onnx export of the D2L code gives, before ORT's own fusions).
  bert  the same attention, then Add + LayerNormalization (opset 17),
        MatMul + Add + Relu + MatMul + Add, Add + LayerNormalization.
  sgemm MatMul N x N x N.
  gpt2, llama, window (bench/blocks.py; the weights of blocks.arrays; the
        GELU, RMSNorm and SwiGLU as the ONNX ops Gelu(approximate="tanh"),
        RMSNormalization, Sigmoid * x; ONNX opset 23, 25 for the window's
        "onnx"):
        "attention" (gpt2): com.microsoft Attention (fused QKV weight and
        bias, unidirectional=1: causal), output MatMul + Add, FastGelu
        (com.microsoft, bias fused), what ORT's GPT-2 optimizer makes;
        "gqa" (llama, window): MatMul q/k/v, com.microsoft
        GroupQueryAttention (causal; llama: kv_num_heads, do_rotary with
        rotate_half cos/sin caches; window: local_window_size = W, which
        keeps the W keys i - W < j <= i), output MatMul;
        "onnx": the ONNX Attention op (opset 23: q_num_heads, kv_num_heads,
        is_causal; llama's RoPE by the ONNX RotaryEmbedding op; window:
        opset 25's left_window_size = W - 1);
        "plain" (gpt2): MatMul/Softmax with an additive causal mask.

Every session: intra_op_num_threads = threads, inter_op_num_threads = 1,
sequential execution, ORT_ENABLE_ALL graph optimizations.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import measure, memory_available  # noqa: E402
import blocks  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
import onnxruntime as ort  # noqa: E402

OPSET = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
rng = np.random.default_rng(0)


def w(*shape):
    return (rng.standard_normal(shape) * 0.02).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.ascontiguousarray(array), name)


def const_i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def attention_nodes(style, B, T, D, H, x, out, inits):
    """Nodes computing D2L MHA(bias=False) of x into `out`."""
    Wq, Wk, Wv, Wo = w(D, D), w(D, D), w(D, D), w(D, D)
    inits.append(init("WoT", Wo.T))
    nodes = []
    if style == "attention":
        inits.append(init("Wqkv", np.concatenate([Wq.T, Wk.T, Wv.T], axis=1)))
        inits.append(init("bqkv", np.zeros(3 * D, np.float32)))
        nodes.append(helper.make_node(
            "Attention", [x, "Wqkv", "bqkv"], ["heads_merged"],
            domain="com.microsoft", num_heads=H))
    else:
        d = D // H
        inits += [init("WqT", Wq.T), init("WkT", Wk.T), init("WvT", Wv.T),
                  const_i64("split_shape", [B, T, H, d]),
                  const_i64("merge_shape", [B, T, D]),
                  init("inv_sqrt_d", np.array(1.0 / np.sqrt(d), np.float32))]
        for n in ("q", "k", "v"):
            nodes += [
                helper.make_node("MatMul", [x, "W%sT" % n], [n + "_p"]),
                helper.make_node("Reshape", [n + "_p", "split_shape"],
                                 [n + "_r"]),
            ]
        nodes += [
            helper.make_node("Transpose", ["q_r"], ["q_h"], perm=[0, 2, 1, 3]),
            helper.make_node("Transpose", ["k_r"], ["k_h"], perm=[0, 2, 3, 1]),
            helper.make_node("Transpose", ["v_r"], ["v_h"], perm=[0, 2, 1, 3]),
            helper.make_node("MatMul", ["q_h", "k_h"], ["s_raw"]),
            helper.make_node("Mul", ["s_raw", "inv_sqrt_d"], ["s"]),
            helper.make_node("Softmax", ["s"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v_h"], ["o_h"]),
            helper.make_node("Transpose", ["o_h"], ["o_t"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", ["o_t", "merge_shape"],
                             ["heads_merged"]),
        ]
    nodes.append(helper.make_node("MatMul", ["heads_merged", "WoT"], [out]))
    return nodes


def model_for(case, style):
    inits = []
    if case["kind"] == "sgemm":
        n = case["N"]
        inits.append(init("Bm", w(n, n)))
        nodes = [helper.make_node("MatMul", ["X", "Bm"], ["Y"])]
        xshape = yshape = [n, n]
    else:
        B, T, D, H = case["B"], case["T"], case["D"], case["H"]
        xshape = yshape = [B, T, D]
        if case["kind"] == "mha":
            nodes = attention_nodes(style, B, T, D, H, "X", "Y", inits)
        else:
            Fh, eps = case["F"], 1e-12
            nodes = attention_nodes(style, B, T, D, H, "X", "A", inits)
            inits += [init("g1", np.ones(D, np.float32)),
                      init("be1", np.zeros(D, np.float32)),
                      init("g2", np.ones(D, np.float32)),
                      init("be2", np.zeros(D, np.float32)),
                      init("W1T", w(Fh, D).T), init("b1", w(Fh)),
                      init("W2T", w(D, Fh).T), init("b2", w(D))]
            nodes += [
                helper.make_node("Add", ["X", "A"], ["r1"]),
                helper.make_node("LayerNormalization", ["r1", "g1", "be1"],
                                 ["Y1"], axis=-1, epsilon=eps),
                helper.make_node("MatMul", ["Y1", "W1T"], ["h0"]),
                helper.make_node("Add", ["h0", "b1"], ["h1"]),
                helper.make_node("Relu", ["h1"], ["h2"]),
                helper.make_node("MatMul", ["h2", "W2T"], ["f0"]),
                helper.make_node("Add", ["f0", "b2"], ["f1"]),
                helper.make_node("Add", ["Y1", "f1"], ["r2"]),
                helper.make_node("LayerNormalization", ["r2", "g2", "be2"],
                                 ["Y"], axis=-1, epsilon=eps),
            ]
    graph = helper.make_graph(
        nodes, "bench",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, xshape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, yshape)],
        inits)
    model = helper.make_model(graph, opset_imports=OPSET)
    model.ir_version = min(model.ir_version, 9)
    return model, xshape


def linear_nodes(x, weight, b, out, inits, name):
    """x @ weightᵀ (+ b) into `out`."""
    inits.append(init(name + "_wT", weight.T))
    if b is None:
        return [helper.make_node("MatMul", [x, name + "_wT"], [out])]
    inits.append(init(name + "_b", b))
    return [helper.make_node("MatMul", [x, name + "_wT"], [out + "_mm"]),
            helper.make_node("Add", [out + "_mm", name + "_b"], [out])]


def plain_attention_nodes(B, T, H, d, q, k, v, out, mask, inits):
    """Heads, q kᵀ / sqrt(d) + mask, Softmax, @ v, heads merged."""
    inits += [const_i64("split_shape", [B, T, H, d]),
              const_i64("merge_shape", [B, T, H * d]),
              init("inv_sqrt_d", np.array(1.0 / np.sqrt(d), np.float32)),
              init("mask", mask)]
    nodes = []
    for n, perm in ((q, [0, 2, 1, 3]), (k, [0, 2, 3, 1]), (v, [0, 2, 1, 3])):
        nodes += [helper.make_node("Reshape", [n, "split_shape"], [n + "_r"]),
                  helper.make_node("Transpose", [n + "_r"], [n + "_h"],
                                   perm=perm)]
    return nodes + [
        helper.make_node("MatMul", [q + "_h", k + "_h"], ["s_raw"]),
        helper.make_node("Mul", ["s_raw", "inv_sqrt_d"], ["s_scaled"]),
        helper.make_node("Add", ["s_scaled", "mask"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", v + "_h"], ["o_h"]),
        helper.make_node("Transpose", ["o_h"], ["o_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["o_t", "merge_shape"], [out])]


def gqa_node(B, T, q, k, v, out, inits, **attrs):
    """com.microsoft GroupQueryAttention on a whole prompt (no past): total
    length T, seqlens_k = T - 1."""
    inits += [init("seqlens_k", np.full(B, T - 1, np.int32)),
              init("total_len", np.array(T, np.int32))]
    ins = [q, k, v, "", "", "seqlens_k", "total_len"]
    if attrs.get("do_rotary"):
        ins += ["cos_cache", "sin_cache"]
    return helper.make_node("GroupQueryAttention", ins, [out],
                            domain="com.microsoft", **attrs)


def rope_caches(T, d, base=10000.0):
    """cos, sin of HF's LlamaRotaryEmbedding, the half [T, d/2] that the
    rotate_half (non-interleaved) convention repeats."""
    inv_freq = (1.0 / (base ** (np.arange(0, d, 2, dtype=np.int64)
                                .astype(np.float32) / d))).astype(np.float32)
    freqs = np.arange(T, dtype=np.float32)[:, None] * inv_freq[None, :]
    return np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)


def causal_mask(T, window=None):
    """Additive [T, T]: 0 where key j is visible from query i, finfo.min
    elsewhere (as Hugging Face's exported graphs)."""
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    vis = j <= i
    if window is not None:
        vis &= i - j < window
    return np.where(vis, 0.0, np.finfo(np.float32).min).astype(np.float32)


def model_block_graph(case, style, a):
    """(nodes, inits, opset) of a model-block case (bench/blocks.py)."""
    kind, B, T, D, H = case["kind"], case["B"], case["T"], case["D"], case["H"]
    d = D // H
    inits, nodes = [], []
    if kind == "gpt2":
        inits += [init(n, a[n]) for n in ("ln1_gamma", "ln1_beta",
                                          "ln2_gamma", "ln2_beta")]
        nodes.append(helper.make_node(
            "LayerNormalization", ["X", "ln1_gamma", "ln1_beta"], ["h1"],
            axis=-1, epsilon=1e-5))
        if style == "attention":
            inits += [init("Wqkv", np.concatenate(
                [a["W_q"].T, a["W_k"].T, a["W_v"].T], axis=1)),
                init("bqkv", np.concatenate([a["b_q"], a["b_k"], a["b_v"]]))]
            nodes.append(helper.make_node(
                "Attention", ["h1", "Wqkv", "bqkv"], ["heads_merged"],
                domain="com.microsoft", num_heads=H, unidirectional=1))
        else:
            for n in "qkv":
                nodes += linear_nodes("h1", a["W_" + n], a["b_" + n], n,
                                      inits, "W_" + n)
            if style == "onnx":
                nodes.append(helper.make_node(
                    "Attention", ["q", "k", "v"], ["heads_merged"],
                    q_num_heads=H, kv_num_heads=H, is_causal=1))
            else:
                nodes += plain_attention_nodes(B, T, H, d, "q", "k", "v",
                                               "heads_merged", causal_mask(T),
                                               inits)
        nodes += linear_nodes("heads_merged", a["W_o"], a["b_o"], "A", inits,
                              "W_o")
        nodes += [
            helper.make_node("Add", ["X", "A"], ["Y1"]),
            helper.make_node("LayerNormalization",
                             ["Y1", "ln2_gamma", "ln2_beta"], ["h2"], axis=-1,
                             epsilon=1e-5)]
        if style == "attention":
            inits += [init("W_fc_wT", a["W_fc"].T), init("b_fc", a["b_fc"])]
            nodes += [helper.make_node("MatMul", ["h2", "W_fc_wT"], ["f0"]),
                      helper.make_node("FastGelu", ["f0", "b_fc"], ["f1"],
                                       domain="com.microsoft")]
        else:
            nodes += linear_nodes("h2", a["W_fc"], a["b_fc"], "f0", inits,
                                  "W_fc")
            nodes.append(helper.make_node("Gelu", ["f0"], ["f1"],
                                          approximate="tanh"))
        nodes += linear_nodes("f1", a["W_proj"], a["b_proj"], "M", inits,
                              "W_proj")
        nodes.append(helper.make_node("Add", ["Y1", "M"], ["Y"]))
        return nodes, inits, 23
    if kind == "llama":
        G = case["KV"]
        inits += [init("attn_norm", a["attn_norm"]),
                  init("ffn_norm", a["ffn_norm"])]
        nodes.append(helper.make_node("RMSNormalization", ["X", "attn_norm"],
                                      ["h1"], axis=-1, epsilon=1e-6))
        for n in "qkv":
            nodes += linear_nodes("h1", a["W_" + n], None, n, inits, "W_" + n)
        cos, sin = rope_caches(T, d)
        inits += [init("cos_cache", cos), init("sin_cache", sin)]
        if style == "gqa":
            nodes.append(gqa_node(B, T, "q", "k", "v", "heads_merged", inits,
                                  num_heads=H, kv_num_heads=G, do_rotary=1,
                                  rotary_interleaved=0))
        else:
            inits.append(init("position_ids", np.tile(
                np.arange(T, dtype=np.int64), (B, 1))))
            for n, heads in (("q", H), ("k", G)):
                nodes.append(helper.make_node(
                    "RotaryEmbedding",
                    [n, "cos_cache", "sin_cache", "position_ids"],
                    [n + "_rot"], num_heads=heads, interleaved=0))
            nodes.append(helper.make_node(
                "Attention", ["q_rot", "k_rot", "v"], ["heads_merged"],
                q_num_heads=H, kv_num_heads=G, is_causal=1))
        nodes += linear_nodes("heads_merged", a["W_o"], None, "A", inits,
                              "W_o")
        nodes += [helper.make_node("Add", ["X", "A"], ["Y1"]),
                  helper.make_node("RMSNormalization", ["Y1", "ffn_norm"],
                                   ["h2"], axis=-1, epsilon=1e-6)]
        nodes += linear_nodes("h2", a["W_gate"], None, "g", inits, "W_gate")
        nodes += linear_nodes("h2", a["W_up"], None, "u", inits, "W_up")
        nodes += [helper.make_node("Sigmoid", ["g"], ["g_sig"]),
                  helper.make_node("Mul", ["g", "g_sig"], ["g_silu"]),
                  helper.make_node("Mul", ["g_silu", "u"], ["gu"])]
        nodes += linear_nodes("gu", a["W_down"], None, "M", inits, "W_down")
        nodes.append(helper.make_node("Add", ["Y1", "M"], ["Y"]))
        return nodes, inits, 23
    W = case["W"]
    for n in "qkv":
        nodes += linear_nodes("X", a["W_" + n], None, n, inits, "W_" + n)
    if style == "gqa":
        nodes.append(gqa_node(B, T, "q", "k", "v", "heads_merged", inits,
                              num_heads=H, kv_num_heads=H,
                              local_window_size=W))
        opset = 23
    else:
        nodes.append(helper.make_node(
            "Attention", ["q", "k", "v"], ["heads_merged"], q_num_heads=H,
            kv_num_heads=H, is_causal=1, left_window_size=W - 1,
            right_window_size=0))
        opset = 25
    nodes += linear_nodes("heads_merged", a["W_o"], None, "Y", inits, "W_o")
    return nodes, inits, opset


MODEL_STYLES = {"gpt2": ("attention", "onnx", "plain"),
                "llama": ("gqa", "onnx"), "window": ("gqa", "onnx")}


def model_block_model(case, style, a):
    nodes, inits, opset = model_block_graph(case, style, a)
    shape = [case["B"], case["T"], case["D"]]
    graph = helper.make_graph(
        nodes, "bench",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape)],
        inits)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft",
                                                            1)])
    model.ir_version = min(model.ir_version, 10)
    return model


def session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def error_of(e):
    text = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, text[0][:300] if text else "")


def model_block_results(case, threads, protocol):
    a = blocks.arrays(case)
    # ORT's CPU attention kernels hold [B, H, T, T] float scores; "plain"
    # a few of them.
    scores = 4 * case["B"] * case["H"] * case["T"] ** 2
    avail = memory_available()
    out = {}
    for style in MODEL_STYLES[case["kind"]]:
        need = (3 if style == "plain" else 2) * scores
        if avail is not None and need > 0.8 * avail:
            out[style] = {"error": "skipped: its scores need ~%.1f GiB, "
                          "%.1f GiB available" % (need / 2 ** 30,
                                                  avail / 2 ** 30)}
            continue
        try:
            sess = session(model_block_model(case, style, a), threads)
            feed = {"X": a["X"]}
            out[style] = measure(lambda: sess.run(None, feed), protocol)
        except Exception as e:  # reported, never dropped
            out[style] = {"error": error_of(e)}
    return out


def model_block_check(case, check_dir, tag):
    """Runs each style once on CHECK_DIR/ID/inputs and saves its output as
    CHECK_DIR/ID/TAG_STYLE.npy."""
    folder = os.path.join(check_dir, case["id"])
    a = {n: np.load(os.path.join(folder, "inputs", n + ".npy"))
         for n, role, _ in blocks.signature(case) if role != "output"}
    out = {}
    for style in MODEL_STYLES[case["kind"]]:
        try:
            sess = session(model_block_model(case, style, a), 1)
            y = sess.run(None, {"X": a["X"]})[0]
            path = os.path.join(folder, "%s_%s.npy" % (tag, style))
            np.save(path, y)
            out[style] = {"saved": path}
        except Exception as e:
            out[style] = {"error": error_of(e)}
    return out


def run_style(case, style, threads, protocol):
    try:
        model, xshape = model_for(case, style)
        sess = session(model, threads)
        X = rng.standard_normal(xshape).astype(np.float32)
        feed = {"X": X}
        return measure(lambda: sess.run(None, feed), protocol)
    except Exception as e:  # reported, never dropped
        return {"error": error_of(e)}


def main():
    with open(sys.argv[1]) as f:
        config = json.load(f)
    threads, protocol = config["threads"], config["protocol"]
    results = {}
    for case in config["cases"]:
        if case.get("dtype"):
            # Its CPU provider has no bf16 kernels (it inserts casts for
            # f16): reported, not timed.
            results[case["id"]] = {"plain": {
                "error": "no %s kernels in the CPU provider" % case["dtype"]}}
        elif case["kind"] == "sgemm":
            results[case["id"]] = {
                "matmul": run_style(case, "plain", threads, protocol)}
        elif case["kind"] in blocks.KINDS:
            if "check_dir" in config:
                results[case["id"]] = model_block_check(
                    case, config["check_dir"], config.get("tag", "ort"))
            else:
                results[case["id"]] = model_block_results(case, threads,
                                                          protocol)
        else:
            results[case["id"]] = {
                style: run_style(case, style, threads, protocol)
                for style in ("attention", "plain")}
    print(json.dumps({
        "version": ort.__version__,
        "onnx": onnx.__version__,
        "providers": ort.get_available_providers(),
        "results": results,
    }))


if __name__ == "__main__":
    main()
