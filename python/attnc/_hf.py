"""Hugging Face transformers blocks for attnc.from_torch.

GPT2Block, LlamaDecoderLayer and BertLayer of transformers 5.x (eval mode,
built from a config or loaded) become .attn specs of the same computation.
With `cache_length=L`, a GPT2Block or LlamaDecoderLayer becomes a
DecoderBlock: one layer of decoding that keeps its KV cache (two `state`
tensors of L rows, docs/language.md "KV cache") and is called with the new
tokens' hidden states and their position; one kernel per number of new
tokens (a prompt's prefill, then one-token steps), compiled at its first
use.

Only what a module's config and weights say is read; a setting attnc cannot
express (a rope scaling, cross-attention, another activation, ...) raises
NotImplementedError naming it, never a silently different block.
"""

import torch

from . import _torch

# config.activation_function / config.hidden_act -> the spec's expression of
# `x` (transformers' ACT2FN names; gelu_new and gelu_pytorch_tanh are both
# the tanh approximation, which is gelu(approximate=true)).
_ACTIVATIONS = {
    "gelu": "gelu({x})",
    "gelu_new": "gelu({x}, approximate=true)",
    "gelu_pytorch_tanh": "gelu({x}, approximate=true)",
    "relu": "relu({x})",
    "silu": "silu({x})",
}


def is_hf_block(module):
    """Whether from_torch reads `module` here: a transformers class it
    knows (by class name and module, so transformers is never imported for
    other modules)."""
    cls = type(module)
    return cls.__module__.startswith("transformers.") and \
        cls.__name__ in _BUILDERS


def _activation(name, where):
    if not isinstance(name, str) or name not in _ACTIVATIONS:
        raise NotImplementedError(
            f"attnc.from_torch: {where} is {name!r}; attnc expresses "
            f"{', '.join(sorted(_ACTIVATIONS))}")
    return _ACTIVATIONS[name]


def _linear(spec, prefix, x, weight, bias):
    """`linear(x, W, b)` with nn.Linear's [out, in] weight."""
    w = spec.param(f"{prefix}weight", weight)
    if bias is None:
        return f"linear({x}, {w})"
    return f"linear({x}, {w}, {spec.param(f'{prefix}bias', bias)})"


def _attention(spec, prefix, x, heads, kv_heads, weights, biases, extra):
    """`multihead_attention(x, x, x, ...)` with weights (W_q, W_k, W_v, W_o)
    as nn.Linear's and biases (each a tensor or None)."""
    args = [f"heads={heads}"] + ([f"kv_heads={kv_heads}"]
                                 if kv_heads != heads else [])
    for name, w in zip("qkvo", weights):
        args.append(f"w_{name}={spec.param(f'{prefix}W_{name}', w)}")
    for name, b in zip("qkvo", biases):
        if b is not None:
            args.append(f"b_{name}={spec.param(f'{prefix}b_{name}', b)}")
    out = f"{prefix}out"
    spec.let(out, f"multihead_attention({x}, {x}, {x}, "
             f"{', '.join(args + extra)})")
    return out


def _kv_dim(m):
    """The width of a decoder block's cache rows: kv heads x head_dim."""
    if type(m).__name__ == "GPT2Block":
        return m.attn.embed_dim
    return m.self_attn.config.num_key_value_heads * m.self_attn.head_dim


def _cache_keywords(spec, shape, cache_length, kv_dim):
    """The cache inputs and states of a decoding block (pos, cache_k,
    cache_v) and the multihead_attention keywords that use them."""
    if cache_length is None:
        return []
    B = shape[0]
    spec.input("pos", [B], "i32")
    spec.state("cache_k", [B, cache_length, kv_dim])
    spec.state("cache_v", [B, cache_length, kv_dim])
    return ["cache_k=cache_k", "cache_v=cache_v", "cache_pos=pos"]


# ---------------------------------------------------------------------------
# The blocks: each returns the spec for hidden states of `shape`.
# ---------------------------------------------------------------------------

def _gpt2_block(m, shape, cache_length):
    attn = m.attn
    if hasattr(m, "crossattention"):
        raise NotImplementedError(
            "attnc.from_torch: GPT2Block with cross-attention "
            "(config.add_cross_attention)")
    if not attn.scale_attn_weights or attn.scale_attn_by_inverse_layer_idx:
        raise NotImplementedError(
            "attnc.from_torch: GPT2Attention scales scores by 1/sqrt(d) "
            "only (config.scale_attn_weights=True, "
            "scale_attn_by_inverse_layer_idx=False)")
    D = attn.embed_dim
    act = _activation(attn.config.activation_function,
                      "config.activation_function")
    # Conv1D keeps [in, out] weights: c_attn's three column blocks are
    # W_q, W_k, W_v transposed.
    w = attn.c_attn.weight.detach()
    b = attn.c_attn.bias.detach()
    weights = [w[:, i * D:(i + 1) * D].t() for i in range(3)] + \
        [attn.c_proj.weight.detach().t()]
    biases = [b[i * D:(i + 1) * D] for i in range(3)] + [attn.c_proj.bias]

    spec = _torch._Spec("hf_gpt2_block")
    x = spec.input("X", shape)
    extra = ["causal=true"] + _cache_keywords(spec, shape, cache_length,
                                              _kv_dim(m))
    g, bt = _torch._layer_norm_params(spec, "ln_1_", m.ln_1)
    spec.let("ln_1_out", f"layer_norm({x}, {g}, {bt}, eps={m.ln_1.eps!r})")
    a = _attention(spec, "attn_", "ln_1_out", attn.num_heads, attn.num_heads,
                   weights, biases, extra)
    spec.let("residual", f"add({x}, {a})")
    g, bt = _torch._layer_norm_params(spec, "ln_2_", m.ln_2)
    spec.let("ln_2_out", f"layer_norm(residual, {g}, {bt}, "
             f"eps={m.ln_2.eps!r})")
    fc = _linear(spec, "mlp_c_fc_", "ln_2_out", m.mlp.c_fc.weight.t(),
                 m.mlp.c_fc.bias)
    spec.let("mlp_hidden", act.format(x=fc))
    proj = _linear(spec, "mlp_c_proj_", "mlp_hidden",
                   m.mlp.c_proj.weight.t(), m.mlp.c_proj.bias)
    spec.let("Y", f"add(residual, {proj})")
    spec.outputs = ["Y"]
    return spec


def _llama_rope_base(config):
    rope = getattr(config, "rope_parameters", None) or {}
    kind = rope.get("rope_type", "default")
    if kind != "default":
        raise NotImplementedError(
            f"attnc.from_torch: LlamaDecoderLayer with rope_type {kind!r} "
            "(attnc's rope is the default one: rope_base only)")
    return float(rope.get("rope_theta", 10000.0))


def _llama_decoder_layer(m, shape, cache_length):
    attn = m.self_attn
    config = attn.config
    H = config.num_attention_heads
    G = config.num_key_value_heads
    d = attn.head_dim
    D = shape[-1]
    if H * d != D:
        raise NotImplementedError(
            f"attnc.from_torch: LlamaDecoderLayer with heads x head_dim = "
            f"{H * d} != hidden_size {D} (attnc's w_o is square)")
    act = _activation(config.hidden_act, "config.hidden_act")
    base = _llama_rope_base(config)

    spec = _torch._Spec("hf_llama_decoder_layer")
    x = spec.input("X", shape)
    extra = ["causal=true", "rope=true", f"rope_base={base!r}"] + \
        _cache_keywords(spec, shape, cache_length, _kv_dim(m))
    n1 = spec.param("input_layernorm_weight", m.input_layernorm.weight)
    spec.let("input_layernorm_out", f"rms_norm({x}, {n1}, "
             f"eps={m.input_layernorm.variance_epsilon!r})")
    projections = [attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj]
    a = _attention(spec, "self_attn_", "input_layernorm_out", H, G,
                   [p.weight for p in projections],
                   [p.bias for p in projections], extra)
    spec.let("residual", f"add({x}, {a})")
    n2 = spec.param("post_attention_layernorm_weight",
                    m.post_attention_layernorm.weight)
    spec.let("post_attention_layernorm_out",
             f"rms_norm(residual, {n2}, "
             f"eps={m.post_attention_layernorm.variance_epsilon!r})")
    mlp = m.mlp
    gate = _linear(spec, "mlp_gate_proj_", "post_attention_layernorm_out",
                   mlp.gate_proj.weight, mlp.gate_proj.bias)
    up = _linear(spec, "mlp_up_proj_", "post_attention_layernorm_out",
                 mlp.up_proj.weight, mlp.up_proj.bias)
    spec.let("mlp_hidden", f"mul({act.format(x=gate)}, {up})")
    down = _linear(spec, "mlp_down_proj_", "mlp_hidden",
                   mlp.down_proj.weight, mlp.down_proj.bias)
    spec.let("Y", f"add(residual, {down})")
    spec.outputs = ["Y"]
    return spec


def _bert_layer(m, shape, cache_length, masked):
    if m.is_decoder or m.add_cross_attention:
        raise NotImplementedError(
            "attnc.from_torch: BertLayer as a decoder (config.is_decoder, "
            "add_cross_attention); attnc takes BERT's encoder layer")
    if cache_length is not None:
        raise ValueError(
            "attnc.from_torch: cache_length is for decoder blocks "
            "(GPT2Block, LlamaDecoderLayer); BertLayer is an encoder layer")
    if m.chunk_size_feed_forward:
        raise NotImplementedError(
            "attnc.from_torch: BertLayer with chunk_size_feed_forward")
    self_attn = m.attention.self
    config = self_attn.config if hasattr(self_attn, "config") else None
    H = self_attn.num_attention_heads
    act = _activation(getattr(config, "hidden_act", "gelu"),
                      "config.hidden_act")
    out = m.attention.output

    spec = _torch._Spec("hf_bert_layer")
    x = spec.input("X", shape)
    extra = []
    if masked:
        extra.append(f"valid_lens={spec.input('lens', [shape[0]], 'i32')}")
    projections = [self_attn.query, self_attn.key, self_attn.value,
                   out.dense]
    a = _attention(spec, "attention_", x, H, H,
                   [p.weight for p in projections],
                   [p.bias for p in projections], extra)
    g, bt = _torch._layer_norm_params(spec, "attention_output_LayerNorm_",
                                      out.LayerNorm)
    spec.let("attention_output", f"add_norm({x}, {a}, {g}, {bt}, "
             f"eps={out.LayerNorm.eps!r})")
    inner = _linear(spec, "intermediate_dense_", "attention_output",
                    m.intermediate.dense.weight, m.intermediate.dense.bias)
    spec.let("intermediate", act.format(x=inner))
    dense = _linear(spec, "output_dense_", "intermediate",
                    m.output.dense.weight, m.output.dense.bias)
    g, bt = _torch._layer_norm_params(spec, "output_LayerNorm_",
                                      m.output.LayerNorm)
    spec.let("Y", f"add_norm(attention_output, {dense}, {g}, {bt}, "
             f"eps={m.output.LayerNorm.eps!r})")
    spec.outputs = ["Y"]
    return spec


_BUILDERS = {"GPT2Block": _gpt2_block,
             "LlamaDecoderLayer": _llama_decoder_layer,
             "BertLayer": _bert_layer}


# ---------------------------------------------------------------------------
# Calls.
# ---------------------------------------------------------------------------

def _adds_its_mask(m):
    """Whether BertLayer m adds its attention_mask to the scores (the eager
    implementation, also a config without one); sdpa and the others take
    a boolean mask as True = attend, as F.scaled_dot_product_attention."""
    config = getattr(m.attention.self, "config", None)
    return getattr(config, "_attn_implementation", None) in \
        (None, "eager", "paged|eager")


# An additive mask masks with a large negative (BertModel: the dtype's
# min); any value below this is one (exp of it is 0 in every float type).
_MASKED = -1e4


def _bert_lens(mask, B, T, adds):
    """BERT's attention mask as key lengths, in every form Hugging Face
    passes: [B, T] as the tokenizer gives it (1 or True keeps a token, 0
    masks it), or 4-D [B, 1, 1, T] (or [B, 1, T, T] with equal rows) as
    BertModel passes its layers: boolean (True attends; `adds` false) or
    additive (0 keeps, a large negative masks). Each row must keep a
    prefix of the keys (right padding)."""
    if mask.dim() == 4:
        if mask.shape[1] != 1 or mask.shape[3] != T or \
                not torch.equal(mask, mask[:, :, :1].expand_as(mask)):
            raise NotImplementedError(
                "attnc.from_torch: BertLayer's attention_mask with "
                "different rows per query (attnc masks by key lengths)")
        row = mask[:, 0, 0]
        if row.dtype == torch.bool:
            if adds:
                raise NotImplementedError(
                    "attnc.from_torch: a boolean 4-D attention_mask for an "
                    "eager BertLayer, which adds its mask to the scores "
                    "(True adds 1): pass the additive mask BertModel makes "
                    "for eager layers (0 keeps, torch.finfo(dtype).min "
                    "masks), or build the layer with "
                    "attn_implementation=\"sdpa\"")
            keep = row
        else:
            keep = row == 0
            if not torch.all(keep | (row < _MASKED)):
                raise NotImplementedError(
                    "attnc.from_torch: BertLayer's additive attention_mask "
                    "holds values other than 0 (keep) and a large negative "
                    "(mask): a bias on the scores, which attnc cannot "
                    "express")
    elif mask.dim() == 2:
        if not torch.all((mask == 0) | (mask == 1)):
            raise NotImplementedError(
                "attnc.from_torch: a [batch, tokens] attention_mask is the "
                "tokenizer's, 1 keeping a token and 0 masking it; this one "
                "holds other values (an additive mask is 4-D: "
                f"[{B}, 1, 1, {T}])")
        keep = mask != 0
    else:
        raise ValueError(
            f"attnc.from_torch: attention_mask of shape {list(mask.shape)}; "
            f"expected [{B}, {T}] (1 keeps a token) or [{B}, 1, 1, {T}] "
            "(boolean or additive, as BertModel passes it)")
    if list(keep.shape) != [B, T]:
        raise ValueError(
            f"attnc.from_torch: attention_mask covers {list(keep.shape)} "
            f"tokens; the hidden states are [{B}, {T}]")
    lens = keep.sum(dim=1)
    prefix = torch.arange(T).unsqueeze(0) < lens.unsqueeze(1)
    if not torch.equal(keep, prefix):
        raise NotImplementedError(
            "attnc.from_torch: BertLayer's attention_mask keeps tokens "
            "that are not a prefix of each row (attnc masks by lengths: "
            "right padding)")
    return lens.to(torch.int32)


_INT32 = (-2**31, 2**31 - 1)


def _positions(pos, B):
    """A decoding call's positions as the kernel's pos input: [B] integers.
    They are never narrowed here (a .to(int32) wraps 2**32 + 3 to 3, a
    row of the cache): an int outside int32 is refused, and an integer
    tensor goes to the kernel as it is, whose reader refuses a value that
    does not fit in i32 (and the run a position outside the cache)."""
    if isinstance(pos, bool):
        raise TypeError("attnc DecoderBlock: pos must be integers, got a "
                        "bool")
    if isinstance(pos, int):
        if not _INT32[0] <= pos <= _INT32[1]:
            raise ValueError(
                f"attnc DecoderBlock: pos is {pos}, which does not fit in "
                "int32, so is no row of the cache (a position is the number "
                "of tokens already cached: 0 to cache_length - T)")
        return torch.full((B,), pos, dtype=torch.int32)
    pos = torch.as_tensor(pos)
    if pos.dtype.is_floating_point or pos.dtype.is_complex or \
            pos.dtype == torch.bool:
        raise TypeError(f"attnc DecoderBlock: pos must be integers, got "
                        f"{pos.dtype}")
    if pos.dim() == 0:
        pos = pos.expand(B)
    if list(pos.shape) != [B]:
        raise ValueError(f"attnc DecoderBlock: pos has shape "
                         f"{list(pos.shape)}; expected [{B}] (one position "
                         "per sequence) or an int")
    return pos.contiguous()


class DecoderBlock:
    """What from_torch(module, example, cache_length=L) returns for a
    GPT2Block or LlamaDecoderLayer: one layer of decoding with its KV cache.

    `block(hidden_states, pos)` takes the new tokens' hidden states
    [B, T, D] (a prompt's T tokens, then one at a time) and `pos`, the
    tokens already in each sequence's cache (an int, or int [B]); it writes
    their keys and values into rows pos .. pos+T-1 of `cache_k`/`cache_v`
    ([B, L, kv_heads*head_dim] tensors of the module's dtype, updated in
    place) and returns the layer's output for them, which attends to cache
    rows 0 .. pos+t (positions, for rope, pos+t). pos < 0 or pos+T > L
    raises ValueError (naming the entry) with nothing written. A kernel per T, compiled at
    its first use; `spec` is the example's."""

    def __init__(self, variants, shape, cache_length, kv_dim):
        self._variants = variants
        self.batch, _, self.hidden = shape
        self.dtype = _torch._torch_dtype(variants.dtype)
        self.cache_length = cache_length
        self.cache_k = torch.zeros(self.batch, cache_length, kv_dim,
                                   dtype=self.dtype)
        self.cache_v = torch.zeros_like(self.cache_k)
        spec, kernel = variants.get(shape[1])
        self.spec = spec.text()
        self.params = spec.params
        self.kernel = kernel.kernel

    def __call__(self, hidden_states, pos):
        x = hidden_states
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or \
                x.shape[0] != self.batch or x.shape[2] != self.hidden:
            raise ValueError(
                f"attnc DecoderBlock: hidden_states must be a tensor "
                f"[{self.batch}, T, {self.hidden}], got "
                f"{list(getattr(x, 'shape', []))}")
        if x.dtype != self.dtype:
            raise ValueError(f"attnc DecoderBlock: hidden_states are "
                             f"{x.dtype}; the block computes in {self.dtype}")
        _, kernel = self._variants.get(x.shape[1])
        return kernel(X=x.contiguous(), pos=_positions(pos, self.batch),
                      cache_k=self.cache_k, cache_v=self.cache_v)

    def _verification_call(self, inputs):
        """The prefill of the example at position 0 (what the module
        computes on the whole example: causal attention), for from_torch's
        check; the cache is left as it was, all zeros."""
        try:
            return self(inputs[0], 0)
        finally:
            self.cache_k.zero_()
            self.cache_v.zero_()

    def __repr__(self):
        return (f"<attnc.DecoderBlock {self.kernel.name}: cache "
                f"{list(self.cache_k.shape)} {self.dtype}; "
                f"{_torch._COPIED_WEIGHTS}>")


def forward_of(m):
    """How the transformers module m runs on from_torch's example inputs,
    as a function of the module as a callable (m, or m computing in float64)
    and the inputs: Llama's layer takes its rope tables (attnc computes
    them for positions 0 ... T-1); BertLayer takes a [B, T] keep mask as
    BertModel passes it, additive [B, 1, 1, T] (the layer would add it as
    it is)."""
    name = type(m).__name__
    if name == "LlamaDecoderLayer":
        from transformers.models.llama.modeling_llama import \
            LlamaRotaryEmbedding
        rotary = LlamaRotaryEmbedding(m.self_attn.config)

        def forward(run, inputs):
            x = inputs[0]
            positions = torch.arange(x.shape[1]).unsqueeze(0).expand(
                x.shape[0], -1)
            return run(x, position_embeddings=rotary(x, positions))
        return forward
    if name == "BertLayer":
        def forward(run, inputs):
            x = inputs[0]
            mask = inputs[1] if len(inputs) > 1 else None
            if mask is not None and mask.dim() == 2:
                mask = (1.0 - mask[:, None, None, :].to(x.dtype)) * \
                    torch.finfo(x.dtype).min
            return run(x, mask)
        return forward
    return lambda run, inputs: run(inputs[0])


def _compiled(spec, options):
    return spec, _torch._compile_spec(spec, options)


def from_hf(m, inputs, return_weights, cache_length, options):
    """from_torch's block for a transformers module (is_hf_block)."""
    name = type(m).__name__
    if return_weights:
        raise NotImplementedError(
            f"attnc.from_torch: return_weights with {name}")
    if not inputs or not isinstance(inputs[0], torch.Tensor) or \
            inputs[0].dim() != 3:
        raise ValueError(
            f"attnc.from_torch: {name} takes (hidden_states[, "
            "attention_mask]) as example inputs, hidden_states a tensor "
            "[batch, tokens, hidden]")
    shape = list(inputs[0].shape)
    if name == "BertLayer":
        if len(inputs) > 2:
            raise ValueError("attnc.from_torch: BertLayer takes "
                             "(hidden_states[, attention_mask])")
        return _bert_block(m, shape, len(inputs) == 2 and
                           inputs[1] is not None, cache_length, options)
    if len(inputs) != 1:
        raise ValueError(
            f"attnc.from_torch: {name} takes (hidden_states,) as example "
            "inputs: attnc computes the causal mask and, for Llama, the "
            "rope tables itself")
    build = _BUILDERS[name]
    if cache_length is None:
        spec, kernel = _compiled(build(m, shape, None), options)
        expected = {"hidden_states": shape}

        def call(block, hidden_states):
            _torch._check_shapes({"hidden_states": hidden_states}, expected)
            return kernel(X=hidden_states.contiguous())

        return _torch.TorchBlock(spec, kernel, call)
    if int(cache_length) < 1:
        raise ValueError(f"attnc.from_torch: cache_length must be at "
                         f"least 1, got {cache_length}")
    L = int(cache_length)
    variants = _torch._Variants(lambda T: _compiled(
        build(m, [shape[0], T, shape[2]], L), options))
    return DecoderBlock(variants, shape, L, _kv_dim(m))


def _bert_block(m, shape, masked, cache_length, options):
    variants = _torch._Variants(lambda masked: _compiled(
        _bert_layer(m, shape, cache_length, masked), options))
    spec, kernel = variants.get(masked)
    expected = {"hidden_states": shape}
    B, T = shape[0], shape[1]
    adds = _adds_its_mask(m)

    def call(block, hidden_states, attention_mask=None):
        _torch._check_shapes({"hidden_states": hidden_states}, expected)
        args = {"X": hidden_states.contiguous()}
        if attention_mask is not None:
            args["lens"] = _bert_lens(attention_mask, B, T, adds)
        return variants.get(attention_mask is not None)[1](**args)

    return _torch.TorchBlock(spec, kernel, call)
