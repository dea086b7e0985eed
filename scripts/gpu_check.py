#!/usr/bin/env python3
"""attnc's GPU objects against the D2L goldens and against PyTorch.

Run by scripts/gpu-check.sh on a machine with an NVIDIA GPU (no LLVM/MLIR
needed): every `golden_CASE.so` in --objects is called through its
host-pointer entry CASE (docs/spec.md §5) on the case's inputs and its outputs are
compared with the goldens' tolerance (tests/data/README.md); every
`bench_NAME.so` is timed through NAME_cuda on PyTorch's stream beside
PyTorch's scaled_dot_product_attention backends, torch.compile and eager
PyTorch (in f32, and the attention in bf16 too; decode steps beside
PyTorch with a static cache), and its output compared with PyTorch's.
Writes a Markdown report. bf16 and f16 goldens are held to docs/spec.md
§7's bar.

The golden half needs NumPy only, and takes CPU objects too (the same
host-pointer ABI): `--goldens-only` checks this script without a GPU.
"""

import argparse
import ctypes
import math
import pathlib
import re
import statistics
import sys

import numpy as np

# --------------------------------------------------------------------------
# Goldens


def spec_arguments(spec_text, block):
    """[(name, role, type)] of `block` in ABI order: inputs and params as
    declared (f32, bf16, f16, i32, ...), then outputs in `output` order,
    of the block's float type (the goldens' outputs have the type of their
    float inputs)."""
    match = re.search(r"block\s+" + re.escape(block) + r"\s*\{(.*?)\n\}",
                      spec_text, re.S)
    if not match:
        raise ValueError(f"no block {block}")
    body = match.group(1)
    arguments = [(m.group(2), m.group(1), m.group(3)) for m in re.finditer(
        r"^\s*(input|param)\s+(\w+)\s*:\s*(\w+)", body, re.M)]
    floats = [t for _, _, t in arguments if t in ("f32", "bf16", "f16")]
    output_type = floats[0] if floats else "f32"
    for line in re.finditer(r"^\s*output\s+(.+)$", body, re.M):
        for name in line.group(1).split("#")[0].split(","):
            arguments.append((name.strip(), "output", output_type))
    return arguments


def bf16_bits(array):
    """float values -> bf16 patterns (uint16), to nearest even; NaN quiet."""
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) &
                                           np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(np.asarray(array, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), rounded.astype(np.uint16))


def bf16_values(bits):
    """bf16 patterns (uint16) -> float32."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32)
            << np.uint32(16)).view(np.float32)


def buffer_of(array, kind):
    """`array` (a golden's .npy: bf16 ones are 2-byte voids) as the kernel's
    buffer of type `kind`."""
    if kind == "bf16":
        if array.dtype.kind == "V" and array.dtype.itemsize == 2:
            return np.ascontiguousarray(array).view(np.uint16)
        return bf16_bits(array)
    if kind == "f16":
        return np.ascontiguousarray(array, dtype=np.float16)
    if kind in ("i32", "i64"):
        return np.ascontiguousarray(array, dtype=np.int32)
    return np.ascontiguousarray(array, dtype=np.float32)


def widened(array, kind):
    """A bf16/f16/f32 buffer as float64."""
    if kind == "bf16":
        return bf16_values(array).astype(np.float64)
    return array.astype(np.float64)


def unit_at(magnitude, kind):
    """One unit in the last place of `kind` at `magnitude` (docs/spec.md
    §7's bar)."""
    mantissa = {"bf16": 7, "f16": 10}[kind]
    return 2.0 ** (math.floor(math.log2(max(magnitude, 2.0**-126))) - mantissa)


def formula_tensor(salt, scale, offset, dims):
    """tests/data/README.md, "Generated params"."""
    count = math.prod(dims)
    i = np.arange(count, dtype=np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    h = (i + np.uint64((salt * 0x9E3779B9) & 0xFFFFFFFF)) & mask
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & mask
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & mask
    h ^= h >> np.uint64(16)
    w = offset + (h.astype(np.float64) / 2.0**32 - 0.5) * scale
    return w.astype(np.float32).reshape(dims)


def golden_inputs(case_dir):
    """name -> array: the case's .npy files and its formula params."""
    arrays = {p.stem: np.load(p) for p in case_dir.glob("*.npy")}
    formula = case_dir / "formula_params.txt"
    if formula.exists():
        for line in formula.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, salt, scale, offset, *dims = line.split()
            arrays[name] = formula_tensor(int(salt), float(scale),
                                          float(offset), [int(d) for d in dims])
    return arrays


def load_kernel(path, name):
    library = ctypes.CDLL(str(path))
    entry = getattr(library, name)
    entry.restype = ctypes.c_int
    last_error = getattr(library, name + "_cuda_last_error", None)
    if last_error is not None:
        last_error.restype = ctypes.c_char_p
    return library, entry, last_error


def check_golden(objects, goldens, case):
    case_dir = goldens / case
    arguments = spec_arguments((case_dir / f"{case}.attn").read_text(), case)
    arrays = golden_inputs(case_dir)
    buffers, outputs = [], {}
    for name, role, kind in arguments:
        if role == "output":
            shape = arrays[f"expected_{name}"].shape
            outputs[name] = (buffer_of(np.full(shape, np.nan), kind), kind)
            buffers.append(outputs[name][0])
        else:
            buffers.append(buffer_of(arrays[name], kind))
    _, entry, last_error = load_kernel(objects / f"golden_{case}.so", case)
    status = entry(*[b.ctypes.data_as(ctypes.c_void_p) for b in buffers])
    if status != 0:
        message = last_error().decode() if last_error else ""
        return False, f"status {status}: {message}"
    worst, bar = 0.0, 0.0
    for name, (array, kind) in outputs.items():
        expected = arrays[f"expected_{name}"].astype(np.float64)
        error = np.abs(widened(array, kind) - expected)
        if np.isnan(error).any():
            return False, f"NaN in {name}"
        worst = max(worst, float(error.max()))
        if kind in ("bf16", "f16"):
            # §7: PyTorch's own error in that type, or one unit at the
            # largest |output|, whichever is larger.
            torch_out = widened(buffer_of(arrays[f"torch_{name}"], kind),
                                kind)
            bar = max(bar, float(np.abs(torch_out - expected).max()),
                      unit_at(float(np.abs(expected).max()), kind))
        else:
            bar = max(bar, 2e-4 if case == "bert_base_layer" else 1e-4)
    return worst <= bar, f"max |error| {worst:.2e} (bar {bar:.2e})"


# --------------------------------------------------------------------------
# Benchmarks (PyTorch on the GPU)


def time_cuda(torch, function, warmup=3, repeats=20):
    """Median milliseconds of one call, CUDA events around each."""
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def attnc_cuda_call(torch, objects, name, tensors):
    _, entry, last_error = load_kernel(objects / f"bench_{name}.so",
                                       name + "_cuda")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    pointers = [ctypes.c_void_p(t.data_ptr()) for t in tensors]

    def call():
        status = entry(stream, *pointers)
        if status != 0:
            raise RuntimeError(f"{name}_cuda: status {status}: "
                               f"{last_error().decode()}")
    return call


def bench_sdpa(torch, objects, shape, kind="f32"):
    """attnc's fused attention (`kind`: f32, or bf16 on the tensor cores)
    beside SDPA's backends and torch.compile in the same dtype."""
    import torch.nn.functional as F
    b, t, d, h = shape
    prefix = "sdpa" if kind == "f32" else f"sdpa_{kind}"
    name = f"{prefix}_{b}_{t}_{d}_{h}"
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[kind]
    dh = d // h
    generator = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = ((torch.rand(b * h, t, dh, device="cuda", generator=generator)
                * 2 - 1).to(dtype) for _ in range(3))
    y = torch.empty_like(q)
    flops = 4.0 * b * h * t * t * dh
    rows = []
    attnc = attnc_cuda_call(torch, objects, name, [q, k, v, y])
    ms = time_cuda(torch, attnc)
    q4, k4, v4 = (x.view(b, h, t, dh) for x in (q, k, v))
    reference = F.scaled_dot_product_attention(q4.double(), k4.double(),
                                               v4.double())
    error = (y.view(b, h, t, dh).double() - reference).abs().max().item()
    rows.append((f"attnc ({kind})", ms, flops / ms / 1e9, f"{error:.1e}"))
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for backend in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION",
                    "CUDNN_ATTENTION", "MATH"):
        try:
            with sdpa_kernel(getattr(SDPBackend, backend)):
                call = lambda: F.scaled_dot_product_attention(q4, k4, v4)
                ms = time_cuda(torch, call)
                out = call()
            error = (out.double() - reference).abs().max().item()
            rows.append((f"SDPA {backend.lower()} ({kind})", ms,
                         flops / ms / 1e9, f"{error:.1e}"))
        except Exception as failure:  # a backend without this dtype
            rows.append((f"SDPA {backend.lower()} ({kind})", None, None,
                         str(failure).splitlines()[0][:60]))
    scale = 1.0 / math.sqrt(dh)
    compiled = torch.compile(
        lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) * scale, -1) @ v)
    try:
        ms = time_cuda(torch, lambda: compiled(q, k, v))
        rows.append((f"torch.compile ({kind})", ms, flops / ms / 1e9, ""))
    except Exception as failure:
        rows.append((f"torch.compile ({kind})", None, None,
                     str(failure).splitlines()[0][:60]))
    return f"attention {shape} (B, T, D, H), {kind}", rows


def bench_bert_layer(torch, objects):
    b, t, d, f, h = 8, 128, 768, 3072, 12
    generator = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape, scale=1.0):
        return (torch.rand(*shape, device="cuda", generator=generator) * 2
                - 1) * scale

    x = rand(b, t, d)
    valid_lens = torch.randint(1, t + 1, (b,), device="cuda",
                               generator=generator, dtype=torch.int32)
    w = {n: rand(d, d, scale=d**-0.5) for n in ("W_q", "W_k", "W_v", "W_o")}
    w["ln1_gamma"], w["ln1_beta"] = 1 + rand(d, scale=0.2), rand(d, scale=0.2)
    w["W_1"], w["b_1"] = rand(f, d, scale=d**-0.5), rand(f, scale=d**-0.5)
    w["W_2"], w["b_2"] = rand(d, f, scale=f**-0.5), rand(d, scale=f**-0.5)
    w["ln2_gamma"], w["ln2_beta"] = 1 + rand(d, scale=0.2), rand(d, scale=0.2)
    z = torch.empty_like(x)
    order = ["W_q", "W_k", "W_v", "W_o", "ln1_gamma", "ln1_beta", "W_1", "b_1",
             "W_2", "b_2", "ln2_gamma", "ln2_beta"]
    attnc = attnc_cuda_call(torch, objects, "bert_base_layer",
                            [x, valid_lens] + [w[n] for n in order] + [z])

    def layer(x):
        """samples/bert_base_layer.attn in PyTorch (D2L's encoder block)."""
        def heads(y):
            return y.view(b, t, h, d // h).transpose(1, 2)
        q, k, v = (heads(x @ w[n].T) for n in ("W_q", "W_k", "W_v"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
        keys = torch.arange(t, device="cuda")
        masked = keys[None, :] >= valid_lens[:, None].long()
        scores = scores.masked_fill(masked[:, None, None, :], -1e6)
        a = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, d)
        y = torch.nn.functional.layer_norm(x + a @ w["W_o"].T, (d,),
                                           w["ln1_gamma"], w["ln1_beta"], 1e-12)
        hidden = torch.relu(y @ w["W_1"].T + w["b_1"]) @ w["W_2"].T + w["b_2"]
        return torch.nn.functional.layer_norm(y + hidden, (d,), w["ln2_gamma"],
                                              w["ln2_beta"], 1e-12)

    flops = 2.0 * b * t * (4 * d * d + 2 * d * f) + 4.0 * b * t * t * d
    rows = []
    ms = time_cuda(torch, attnc)
    error = (z - layer(x)).abs().max().item()
    rows.append(("attnc (f32)", ms, flops / ms / 1e9, f"{error:.1e}"))
    ms = time_cuda(torch, lambda: layer(x))
    rows.append(("PyTorch eager (f32)", ms, flops / ms / 1e9, ""))
    try:
        compiled = torch.compile(layer)
        ms = time_cuda(torch, lambda: compiled(x))
        rows.append(("torch.compile (f32)", ms, flops / ms / 1e9, ""))
    except Exception as failure:
        rows.append(("torch.compile (f32)", None, None,
                     str(failure).splitlines()[0][:60]))
    return "BERT-base layer (8, 128, 768, 12 heads, FFN 3072)", rows


# (D, heads, kv heads) of scripts/gpu-check.sh's decode specs.
DECODE_MODELS = {"gpt2": (768, 12, 12), "llama": (2048, 32, 8)}


def decode_reference(x, w, k_before, v_before, history, heads, kv_heads):
    """A decode step of batch 1 at position `history` in float64 (PyTorch
    tensors): the output, and the caches with the new rows written (rounded
    to the cache's type first); every row up to `history` seen."""
    import torch.nn.functional as F
    _, length, kv = k_before.shape
    d = x.shape[-1]
    dh = kv // kv_heads
    x64, w64 = x.double(), {n: t.double() for n, t in w.items()}
    keys, values = k_before.double(), v_before.double()
    keys[:, history] = (x64 @ w64["W_k"].T).to(k_before.dtype)[:, 0]
    values[:, history] = (x64 @ w64["W_v"].T).to(v_before.dtype)[:, 0]
    seen = history + 1
    q = (x64 @ w64["W_q"].T).view(1, 1, heads, dh).transpose(1, 2)
    o = F.scaled_dot_product_attention(
        q, keys[:, :seen].view(1, seen, kv_heads, dh).transpose(1, 2),
        values[:, :seen].view(1, seen, kv_heads, dh).transpose(1, 2),
        enable_gqa=kv_heads != heads)
    return o.transpose(1, 2).reshape(1, 1, d) @ w64["W_o"].T, keys, values


def bench_decode(torch, objects, model, length, kind):
    """One decode step of an attention layer (batch 1, the cache's first
    L - 1 rows written, the step writing row L - 1 and reading all L):
    attnc's split-KV kernel beside PyTorch with a static cache (gpt-fast's
    way: index_copy_ into the cache, SDPA with the cache's mask), as GB/s
    of the bytes a step must read (its weights and the cache's L rows)."""
    import torch.nn.functional as F
    d, h, g = DECODE_MODELS[model]
    dh = d // h
    kv = dh * g
    name = f"decode_{model}_{length}_{kind}"
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[kind]
    generator = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape, scale=1.0):
        return ((torch.rand(*shape, device="cuda", generator=generator) * 2
                 - 1) * scale).to(dtype)

    x = rand(1, 1, d)
    w = {"W_q": rand(d, d, scale=d**-0.5), "W_k": rand(kv, d, scale=d**-0.5),
         "W_v": rand(kv, d, scale=d**-0.5), "W_o": rand(d, d, scale=d**-0.5)}
    k_cache, v_cache = rand(1, length, kv), rand(1, length, kv)
    history = length - 1
    pos = torch.tensor([history], dtype=torch.int32, device="cuda")
    y = torch.empty(1, 1, d, dtype=dtype, device="cuda")
    k_before, v_before = k_cache.clone(), v_cache.clone()
    attnc = attnc_cuda_call(
        torch, objects, name,
        [x, pos, k_cache, v_cache] + [w[n] for n in
                                      ("W_q", "W_k", "W_v", "W_o")] + [y])
    attnc()
    torch.cuda.synchronize()

    want, keys, values = decode_reference(x, w, k_before, v_before, history,
                                          h, g)
    error = (y.double() - want).abs().max().item()
    rows_error = max((k_cache.double() - keys).abs().max().item(),
                     (v_cache.double() - values).abs().max().item())
    note = f"{error:.1e}; cache {rows_error:.1e}"

    size = 4 if kind == "f32" else 2
    step_bytes = size * (2 * d * d + 2 * kv * d + 2 * length * kv)
    rows = []
    ms = time_cuda(torch, attnc)
    rows.append((f"attnc ({kind})", ms, step_bytes / ms / 1e6, note))

    caches = (k_before.view(1, length, g, dh).transpose(1, 2).contiguous(),
              v_before.view(1, length, g, dh).transpose(1, 2).contiguous())
    mask = torch.ones(1, 1, 1, length, dtype=torch.bool, device="cuda")
    index = torch.tensor([history], device="cuda")

    def torch_step():
        q = F.linear(x, w["W_q"]).view(1, 1, h, dh).transpose(1, 2)
        k = F.linear(x, w["W_k"]).view(1, 1, g, dh).transpose(1, 2)
        v = F.linear(x, w["W_v"]).view(1, 1, g, dh).transpose(1, 2)
        caches[0].index_copy_(2, index, k)
        caches[1].index_copy_(2, index, v)
        o = F.scaled_dot_product_attention(q, caches[0], caches[1],
                                           attn_mask=mask, enable_gqa=g != h)
        return F.linear(o.transpose(1, 2).reshape(1, 1, d), w["W_o"])

    with torch.inference_mode():
        ms = time_cuda(torch, torch_step)
        error = (torch_step().double() - want).abs().max().item()
    rows.append((f"PyTorch static cache ({kind})", ms, step_bytes / ms / 1e6,
                 f"{error:.1e}"))
    return (f"decode step, {model} ({d}, {h} heads, {g} kv heads), "
            f"cache {length} rows, {kind}", rows, "GB/s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=pathlib.Path, required=True)
    parser.add_argument("--goldens", type=pathlib.Path, required=True)
    parser.add_argument("--report", type=pathlib.Path, required=True)
    parser.add_argument("--goldens-only", action="store_true")
    args = parser.parse_args()

    lines = ["# attnc GPU check", ""]
    failed = 0
    lines += ["## Goldens (host-pointer entry)", "",
              "| case | result | detail |", "| --- | --- | --- |"]
    for library in sorted(args.objects.glob("golden_*.so")):
        case = library.stem[len("golden_"):]
        try:
            ok, detail = check_golden(args.objects, args.goldens, case)
        except Exception as failure:
            ok, detail = False, f"{type(failure).__name__}: {failure}"
        failed += not ok
        lines.append(f"| {case} | {'pass' if ok else 'FAIL'} | {detail} |")
        print(f"golden {case}: {'pass' if ok else 'FAIL'}: {detail}")

    if not args.goldens_only:
        import torch
        lines += ["", f"## Timings on {torch.cuda.get_device_name()}", "",
                  "Median of 20 calls (CUDA events), after 3 warm-ups; "
                  "error: max |difference| from PyTorch in float64 (SDPA, "
                  "decode steps; a step's cache rows too) or float32 (the "
                  "layer).", ""]
        benches = [lambda s=s: bench_sdpa(torch, args.objects, s)
                   for s in [(8, 2048, 1024, 16), (1, 8192, 1024, 16),
                             (32, 512, 768, 12)]]
        benches += [lambda s=s: bench_sdpa(torch, args.objects, s, "bf16")
                    for s in [(8, 2048, 1024, 16), (1, 8192, 1024, 16)]]
        benches.append(lambda: bench_bert_layer(torch, args.objects))
        benches += [lambda s=s: bench_decode(torch, args.objects, *s)
                    for s in [("gpt2", 1024, "f32"), ("gpt2", 8192, "f32"),
                              ("llama", 8192, "f32"), ("gpt2", 8192, "bf16"),
                              ("llama", 8192, "bf16")]]
        for bench in benches:
            try:
                title, rows, *unit = bench()
            except Exception as failure:
                failed += 1
                lines += [f"benchmark failed: {type(failure).__name__}: "
                          f"{failure}", ""]
                print(f"benchmark failed: {failure}")
                continue
            rate = unit[0] if unit else "TFLOP/s"
            lines += [f"### {title}", "",
                      f"| kernel | ms | {rate} | error / note |",
                      "| --- | --- | --- | --- |"]
            for kernel, ms, tflops, note in rows:
                lines.append(
                    f"| {kernel} | {'' if ms is None else f'{ms:.3f}'} | "
                    f"{'' if tflops is None else f'{tflops:.2f}'} | {note} |")
                print(f"{title}: {kernel}: {ms} ms {note}")
            lines.append("")
    args.report.write_text("\n".join(lines) + "\n")
    print(f"report: {args.report}; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
