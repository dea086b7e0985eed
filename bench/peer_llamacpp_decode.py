"""llama.cpp's decode step, for bench/decode.py: a GGUF of random weights
written by the `gguf` package, run through llama-cpp-python, in the bench
venv (bench/setup.sh installs both from PyPI; llama-cpp-python builds
llama.cpp from source, about 6 minutes on a 2-core VM).

    build/bench-venv/bin/python bench/peer_llamacpp_decode.py --model gpt2 \
        --length 1024 --layers 12 --threads 1 [--dtype f32|bf16] [--check]

llama.cpp runs whole models, not one layer: the GGUF is a `llama`
architecture model of `--layers` layers of the block's shape (D, heads,
kv heads; its rope costs nothing measurable in a one-token step), with a
feed-forward of 64 columns and a vocabulary of 259 tokens, so that the
attention layers are nearly all of a step. The figure is the median
time of one whole-model step over `--layers` (its norms, tiny
feed-forwards, embedding and output head included: a slight handicap).
The cache is llama.cpp's own (fixed capacity `--length`, new rows written
in place, `n_kv` cells read), of the weights' type (f32 or bf16), after a
prefill of `L - 1` tokens; each timed step decodes the token at position
`L - 1`, then drops it from the cache again. Flash attention is on (its
CPU kernel is llama.cpp's fastest attention), unless `--no-flash`.

With --check, first compares the logits of a short prompt through a
2-layer model with a NumPy forward pass and exits 1 on a mismatch (the
rope, GQA and cache wiring of this GGUF). Prints one line: `llamacpp
VERSION MS ms`.
"""

import os
import statistics
import sys
import tempfile
import time

import numpy as np

import gguf
import llama_cpp

from decode_shapes import MODELS, peer_arguments
FFN = 64
# An SPM vocabulary: <unk>, <s>, </s> and the 256 byte tokens.
VOCAB = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
# llama.cpp's ggml_type values for the cache (ggml.h).
GGML_TYPE = {"f32": 0, "bf16": 30}


def weights(D, heads, kv, layers, rng):
    """The model's tensors, float32, in GGUF's names and numpy's (out, in)
    shapes (ggml's ne are reversed)."""
    d = D // heads
    scale = D ** -0.5

    def mat(rows, cols, s=scale):
        return (rng.standard_normal((rows, cols), np.float32) * s)

    def norm():
        return (1.0 + 0.1 * rng.standard_normal(D, np.float32))

    t = {"token_embd.weight": mat(len(VOCAB), D, 1.0),
         "output_norm.weight": norm(),
         "output.weight": mat(len(VOCAB), D)}
    for i in range(layers):
        b = f"blk.{i}."
        t.update({b + "attn_norm.weight": norm(),
                  b + "attn_q.weight": mat(heads * d, D),
                  b + "attn_k.weight": mat(kv * d, D),
                  b + "attn_v.weight": mat(kv * d, D),
                  b + "attn_output.weight": mat(D, heads * d),
                  b + "ffn_norm.weight": norm(),
                  b + "ffn_gate.weight": mat(FFN, D),
                  b + "ffn_up.weight": mat(FFN, D),
                  b + "ffn_down.weight": mat(D, FFN, FFN ** -0.5)})
    return t


def write_gguf(path, tensors, D, heads, kv, layers, length, dtype):
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_context_length(length)
    writer.add_embedding_length(D)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_rope_dimension_count(D // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if dtype == "f32"
                         else gguf.LlamaFileType.MOSTLY_BF16)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(VOCAB)
    writer.add_token_scores([0.0] * len(VOCAB))
    writer.add_token_types([gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL,
                            gguf.TokenType.CONTROL] +
                           [gguf.TokenType.BYTE] * 256)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    for name, data in tensors.items():
        if dtype == "bf16" and data.ndim == 2:
            kind = gguf.GGMLQuantizationType.BF16
            writer.add_tensor(name, gguf.quants.quantize(data, kind),
                              raw_dtype=kind)
        else:
            writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def load(path, length, threads, dtype, flash):
    return llama_cpp.Llama(
        model_path=path, n_ctx=length, n_batch=512, n_threads=threads,
        # The prefill (untimed) on every CPU; a one-token step on `threads`.
        n_threads_batch=os.cpu_count(), type_k=GGML_TYPE[dtype],
        type_v=GGML_TYPE[dtype], flash_attn=flash, logits_all=False,
        verbose=False)


def rms_norm(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w


def rope(x, positions):
    """llama.cpp's LLAMA rope (mode 0): rotates each pair (2i, 2i + 1) by
    position * 10000^(-2i / d); x [T, heads, d]."""
    d = x.shape[-1]
    theta = positions[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def reference_logits(t, tokens, D, heads, kv, layers):
    """The last token's logits, in float64."""
    t = {k: v.astype(np.float64) for k, v in t.items()}
    d = D // heads
    T = len(tokens)
    positions = np.arange(T, dtype=np.float64)
    x = t["token_embd.weight"][tokens]
    causal = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(layers):
        b = f"blk.{i}."
        h = rms_norm(x, t[b + "attn_norm.weight"])
        q = rope((h @ t[b + "attn_q.weight"].T).reshape(T, heads, d),
                 positions)
        k = rope((h @ t[b + "attn_k.weight"].T).reshape(T, kv, d), positions)
        v = (h @ t[b + "attn_v.weight"].T).reshape(T, kv, d)
        out = np.empty((T, heads, d))
        for head in range(heads):
            g = head // (heads // kv)
            s = q[:, head] @ k[:, g].T / np.sqrt(d) + causal
            p = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, head] = (p / p.sum(axis=1, keepdims=True)) @ v[:, g]
        x = x + out.reshape(T, D) @ t[b + "attn_output.weight"].T
        h = rms_norm(x, t[b + "ffn_norm.weight"])
        gate = h @ t[b + "ffn_gate.weight"].T
        up = h @ t[b + "ffn_up.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ t[b + "ffn_down.weight"].T
    return rms_norm(x[-1], t["output_norm.weight"]) @ t["output.weight"].T


def check(D, heads, kv, threads, flash, directory):
    """llama.cpp's logits for a 9-token prompt against NumPy's, f32."""
    rng = np.random.default_rng(1)
    layers, tokens = 2, [1, 70, 3, 200, 15, 9, 250, 42, 7]
    tensors = weights(D, heads, kv, layers, rng)
    path = os.path.join(directory, "check.gguf")
    write_gguf(path, tensors, D, heads, kv, layers, 256, "f32")
    llm = load(path, 256, threads, "f32", flash)
    llm.eval(tokens)
    got = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                shape=(llm.n_vocab(),)).astype(np.float64)
    expected = reference_logits(tensors, tokens, D, heads, kv, layers)
    error = np.abs(got - expected).max() / np.abs(expected).max()
    del llm
    if not error < 1e-3:
        print(f"llama.cpp decode: the logits differ from the NumPy reference "
              f"(max relative difference {error:.2e})")
        return False
    return True


def main():
    p = peer_arguments(steps=20)
    p.add_argument("--dtype", choices=sorted(GGML_TYPE), default="f32")
    p.add_argument("--no-flash", dest="flash", action="store_false")
    args = p.parse_args()
    D, heads, kv = MODELS[args.model]
    L = args.length
    with tempfile.TemporaryDirectory(prefix="attnc-llamacpp-") as directory:
        if args.check and not check(D, heads, kv, args.threads, args.flash,
                                    directory):
            return 1
        rng = np.random.default_rng(0)
        path = os.path.join(directory, "model.gguf")
        write_gguf(path, weights(D, heads, kv, args.layers, rng), D, heads,
                   kv, args.layers, L, args.dtype)
        llm = load(path, L, args.threads, args.dtype, args.flash)
        prompt = [int(i) for i in rng.integers(3, len(VOCAB), L - 1)]
        llm.eval(prompt)  # the cache's L - 1 rows
        times = []
        for _ in range(args.steps + 1):  # the first step is a warm-up
            llm.n_tokens = L - 1  # eval drops the cells from here on
            start = time.perf_counter()
            llm.eval([5])
            times.append(time.perf_counter() - start)
        if llm.n_tokens != L:
            print(f"llama.cpp decode: {llm.n_tokens} tokens after a step, "
                  f"not {L}")
            return 1
        del llm
    per_layer = statistics.median(times[1:]) / args.layers
    print(f"llamacpp {llama_cpp.__version__} {per_layer * 1e3:.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
