"""The model-block cases of the benchmark (issue 13, "Speed"): a GPT-2 block,
a Llama block and sliding-window attention. Their argument lists, the small
shapes bench/check_peers.py compares the peers at, and the values every peer
and the check use, shared by bench/harness.py (spec text, ABI order), the
peers (bench/peer_torch.py, bench/peer_ort.py) and bench/check_peers.py.

Standard library only; numpy is imported by arrays() alone.
"""

KINDS = ("gpt2", "llama", "window")


def head_dim(case):
    return case["D"] // case["H"]


def kv_width(case):
    """Width of the k / v projections: kv_heads * head_dim (GQA)."""
    return case.get("KV", case["H"]) * head_dim(case)


def dims(case):
    """[(name, value)] of the spec's `dim` line."""
    kind = case["kind"]
    out = [("B", case["B"]), ("T", case["T"]), ("D", case["D"])]
    if kind == "llama":
        out.append(("Dkv", kv_width(case)))
    if kind in ("gpt2", "llama"):
        out.append(("F", case["F"]))
    return out


def signature(case):
    """[(name, role, shape)] in declaration order, which is the ABI order
    (SPEC section 5); role is input, param or output, shape a list of dim
    names."""
    D, Dkv, Fh = ["D"], ["Dkv"], ["F"]
    X = ("X", "input", ["B", "T", "D"])
    kind = case["kind"]
    if kind == "gpt2":
        args = [X, ("ln1_gamma", "param", D), ("ln1_beta", "param", D)]
        for n in "qkvo":
            args += [("W_" + n, "param", ["D", "D"]), ("b_" + n, "param", D)]
        return args + [
            ("ln2_gamma", "param", D), ("ln2_beta", "param", D),
            ("W_fc", "param", Fh + D), ("b_fc", "param", Fh),
            ("W_proj", "param", D + Fh), ("b_proj", "param", D),
            ("Z", "output", ["B", "T", "D"])]
    if kind == "llama":
        return [X, ("attn_norm", "param", D), ("W_q", "param", D + D),
                ("W_k", "param", Dkv + D), ("W_v", "param", Dkv + D),
                ("W_o", "param", D + D), ("ffn_norm", "param", D),
                ("W_gate", "param", Fh + D), ("W_up", "param", Fh + D),
                ("W_down", "param", D + Fh),
                ("Z", "output", ["B", "T", "D"])]
    if kind == "window":
        return [X] + [("W_" + n, "param", D + D) for n in "qkvo"] + [
            ("Y", "output", ["B", "T", "D"])]
    raise ValueError("not a model-block kind: %s" % kind)


def shapes(case):
    """name -> shape (integers) of every argument, outputs included."""
    values = dict(dims(case))
    return {name: [values[d] for d in shape]
            for name, _, shape in signature(case)}


# Small shapes of the same structure (causal, GQA ratio, window < T, head
# dim a multiple of 16 as ORT's GroupQueryAttention needs) for the check.
CHECK = {
    "gpt2": {"B": 2, "T": 24, "D": 64, "H": 4, "F": 256},
    "llama": {"B": 2, "T": 24, "D": 128, "H": 8, "KV": 2, "F": 96},
    "window": {"B": 2, "T": 64, "D": 64, "H": 4, "W": 16},
}


def check_case(case):
    small = dict(case)
    small.update(CHECK[case["kind"]])
    small["id"] = case["id"] + "_check"
    return small


def arrays(case, seed=0):
    """name -> float32 array of every input and param. X ~ N(0, 1); each
    weight matrix N(0, 1/in_features), so that q, k and the scores are O(1)
    and a wrong mask, RoPE or head layout shows in the output; norm gains
    1 + N(0, 0.01), shifts and biases N(0, 0.01)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = {}
    for name, role, _ in signature(case):
        if role == "output":
            continue
        shape = shapes(case)[name]
        a = rng.standard_normal(shape)
        if name.startswith("W_"):
            a = a / np.sqrt(shape[-1])
        elif name.endswith("_gamma") or name.endswith("_norm"):
            a = 1.0 + 0.1 * a
        elif name != "X":
            a = 0.1 * a
        out[name] = a.astype(np.float32)
    return out
