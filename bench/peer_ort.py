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

Every session: intra_op_num_threads = threads, inter_op_num_threads = 1,
sequential execution, ORT_ENABLE_ALL graph optimizations.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import measure  # noqa: E402

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


def run_style(case, style, threads, protocol):
    try:
        model, xshape = model_for(case, style)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = \
            ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        X = rng.standard_normal(xshape).astype(np.float32)
        feed = {"X": X}
        return measure(lambda: sess.run(None, feed), protocol)
    except Exception as e:  # reported, never dropped
        return {"error": "%s: %s" % (type(e).__name__,
                                     str(e).strip().splitlines()[0][:300])}


def main():
    with open(sys.argv[1]) as f:
        config = json.load(f)
    threads, protocol = config["threads"], config["protocol"]
    results = {}
    for case in config["cases"]:
        if case["kind"] == "sgemm":
            results[case["id"]] = {
                "matmul": run_style(case, "plain", threads, protocol)}
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
