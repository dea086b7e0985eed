"""attnc.from_torch against the modules themselves: D2L's
MultiHeadAttention and TransformerEncoderBlock (the book's code, as the
goldens use it), nn.MultiheadAttention, nn.TransformerEncoderLayer."""

import math

import pytest
import torch
from torch import nn

import attnc
import make_goldens as d2l

ATOL = 1e-5


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def close(a, b, atol=ATOL):
    assert a.shape == b.shape
    torch.testing.assert_close(a, b.detach(), atol=atol, rtol=0)


@pytest.mark.parametrize("bias", [False, True])
def test_d2l_mha_book_shapes(bias):
    # The book: 100 hiddens, 5 heads, batch 2, 4 queries, valid_lens [3, 2].
    m = d2l.MultiHeadAttention(100, 5, 0.5, bias=bias).eval()
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2])
    f = attnc.from_torch(m, (X, X, X, vl), return_weights=True)
    close(f(X, X, X, vl), m(X, X, X, vl))
    close(f.attention_weights, m.attention.attention_weights, atol=1e-6)
    assert "multihead_attention" in f.spec if not bias else \
        "split_heads" in f.spec


def test_d2l_mha_cross_attention_and_2d_lens():
    m = d2l.MultiHeadAttention(100, 5, 0.5).eval()
    Q, KV = torch.randn(2, 4, 100), torch.randn(2, 6, 100)
    vl = torch.tensor([[1, 2, 3, 6], [0, 6, 2, 1]])
    f = attnc.from_torch(m, (Q, KV, KV, vl))
    close(f(Q, KV, KV, vl), m(Q, KV, KV, vl))


@pytest.mark.parametrize("vl", [
    torch.tensor([2**32 + 1, 2]),        # before: wrapped to 1 by .to(int32)
    torch.tensor([2.5, 0.5]),            # D2L keeps ceil(len) keys: 3 and 1
    torch.tensor([-3, 7]),               # <= 0: uniform; > Tk: all keys
    torch.tensor([float("nan"), float("inf")]),
    torch.tensor([[1.5, 2, 9, -1], [0, 6, 2.01, 1]]),
])
def test_d2l_lengths_mean_what_they_mean_in_d2l(vl):
    m = d2l.MultiHeadAttention(20, 4, 0.5).eval()
    Q, KV = torch.randn(2, 4, 20), torch.randn(2, 6, 20)
    f = attnc.from_torch(m, (Q, KV, KV, vl))
    close(f(Q, KV, KV, vl), m(Q, KV, KV, vl))


def test_d2l_mha_without_lens():
    m = d2l.MultiHeadAttention(20, 4, 0.5).eval()
    X = torch.randn(3, 5, 20)
    f = attnc.from_torch(m, (X, X, X, None))
    close(f(X, X, X, None), m(X, X, X, None))
    with pytest.raises(ValueError, match="compiled without valid_lens"):
        f(X, X, X, torch.tensor([1, 2, 3]))


@pytest.mark.parametrize("bias", [False, True])
def test_d2l_encoder_block(bias):
    # The book's: 24 hiddens, 48 FFN hiddens, 8 heads, X [2, 100, 24].
    m = d2l.TransformerEncoderBlock(24, 48, 8, 0.5, use_bias=bias).eval()
    X = torch.randn(2, 100, 24)
    vl = torch.tensor([3, 2])
    f = attnc.from_torch(m, (X, vl), return_weights=True)
    close(f(X, vl), m(X, vl))
    close(f.attention_weights, m.attention.attention.attention_weights,
          atol=1e-6)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_nn_multihead_attention(batch_first, bias):
    m = nn.MultiheadAttention(16, 4, bias=bias, batch_first=batch_first).eval()
    x = torch.randn(2, 5, 16) if batch_first else torch.randn(5, 2, 16)
    f = attnc.from_torch(m, (x, x, x))
    for kwargs in ({}, {"average_attn_weights": False},
                   {"need_weights": False}, {"is_causal": True}):
        if kwargs.get("is_causal"):
            mask = nn.Transformer.generate_square_subsequent_mask(5)
            expected = m(x, x, x, attn_mask=mask, is_causal=True)
        else:
            expected = m(x, x, x, **kwargs)
        got = f(x, x, x, **kwargs)
        close(got[0], expected[0])
        if expected[1] is None:
            assert got[1] is None
        else:
            close(got[1], expected[1], atol=1e-6)
    mask = torch.tensor([[False] * 3 + [True] * 2, [False] * 5])
    expected = m(x, x, x, key_padding_mask=mask)
    got = f(x, x, x, key_padding_mask=mask)
    close(got[0], expected[0])
    close(got[1], expected[1], atol=1e-6)


def test_nn_multihead_attention_cross():
    m = nn.MultiheadAttention(16, 2, batch_first=True, kdim=8, vdim=12).eval()
    q, k, v = torch.randn(2, 3, 16), torch.randn(2, 7, 8), torch.randn(2, 7, 12)
    f = attnc.from_torch(m, (q, k, v))
    close(f(q, k, v)[0], m(q, k, v)[0])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_nn_transformer_encoder_layer(norm_first, batch_first, activation):
    act = nn.GELU(approximate="tanh") if activation == "gelu_tanh" else \
        activation
    m = nn.TransformerEncoderLayer(16, 4, 32, batch_first=batch_first,
                                   norm_first=norm_first,
                                   activation=act).eval()
    x = torch.randn(2, 5, 16) if batch_first else torch.randn(5, 2, 16)
    f = attnc.from_torch(m, (x,))
    close(f(x), m(x))
    mask = torch.tensor([[False] * 3 + [True] * 2, [False] * 5])
    close(f(x, src_key_padding_mask=mask), m(x, src_key_padding_mask=mask))


def test_errors_name_the_attribute():
    m = d2l.MultiHeadAttention(20, 4, 0.5)
    X = torch.randn(2, 3, 20)
    with pytest.raises(ValueError, match=r"MultiHeadAttention.*\.training"):
        attnc.from_torch(m, (X, X, X, None))
    m.eval()
    m.attention.train()
    with pytest.raises(ValueError, match=r"MultiHeadAttention\.attention is "
                       "in training mode"):
        attnc.from_torch(m, (X, X, X, None))
    layer = nn.TransformerEncoderLayer(16, 4, 32, activation=torch.tanh,
                                       batch_first=True).eval()
    with pytest.raises(NotImplementedError, match="activation is 'tanh'"):
        attnc.from_torch(layer, (torch.randn(2, 5, 16),))
    kv = nn.MultiheadAttention(16, 4, add_bias_kv=True).eval()
    with pytest.raises(NotImplementedError, match="bias_k"):
        attnc.from_torch(kv, (torch.randn(5, 2, 16),) * 3)
    with pytest.raises(NotImplementedError, match="Linear is not a block"):
        attnc.from_torch(nn.Linear(3, 4).eval(), (torch.randn(2, 3),))
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        attnc.from_torch(42, ())
    with pytest.raises(ValueError, match=r"takes \(queries, keys, values, "
                       r"valid_lens\)"):
        attnc.from_torch(m.eval(), (X,))
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    f = attnc.from_torch(mha, (x, x, x))
    with pytest.raises(ValueError, match="must mask a suffix"):
        f(x, x, x, key_padding_mask=torch.tensor([[True] + [False] * 4] * 2))
    with pytest.raises(NotImplementedError, match="attn_mask"):
        f(x, x, x, attn_mask=torch.zeros(5, 5))
    short = x[:, :4]
    with pytest.raises(ValueError, match=r"query has shape \[2, 4, 16\], but "
                       r"this callable was compiled for \[2, 5, 16\]: attnc "
                       "kernels have fixed shapes"):
        f(short, short, short)


def test_messages_name_the_modules_arguments():
    # A wrong batch named the kernel's input 'X' (the user passed queries)
    # without saying that shapes are fixed; None after compiling with
    # lengths said only "compiled with valid_lens".
    m = d2l.MultiHeadAttention(20, 4, 0.5).eval()
    X = torch.randn(2, 5, 20)
    vl = torch.tensor([3, 5])
    f = attnc.from_torch(m, (X, X, X, vl))
    Y = torch.randn(3, 5, 20)
    with pytest.raises(ValueError, match=r"queries has shape \[3, 5, 20\], "
                       r"but this callable was compiled for \[2, 5, 20\]"):
        f(Y, Y, Y, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"valid_lens has shape \[3\]"):
        f(X, X, X, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="compiled with valid_lens .* got "
                       "None. For calls without lengths"):
        f(X, X, X, None)
    block = d2l.TransformerEncoderBlock(20, 40, 4, 0.5).eval()
    g = attnc.from_torch(block, (X, vl))
    with pytest.raises(ValueError, match=r"X has shape \[2, 4, 20\]"):
        g(X[:, :4], vl)
    layer = nn.TransformerEncoderLayer(20, 4, 40, batch_first=True).eval()
    h = attnc.from_torch(layer, (X,))
    with pytest.raises(ValueError, match=r"src has shape \[2, 4, 20\]"):
        h(X[:, :4])


def test_a_float64_module_is_called_as_it_is():
    # module.double(): called with float64 tensors and returning float64,
    # as the module (before: "pass cast=True", and cast= was refused).
    m = d2l.MultiHeadAttention(20, 4, 0.5).double().eval()
    X = torch.randn(2, 5, 20, dtype=torch.float64)
    vl = torch.tensor([3, 5])
    f = attnc.from_torch(m, (X, X, X, vl), return_weights=True)
    Y = f(X, X, X, vl)
    assert Y.dtype == torch.float64
    close(Y, m(X, X, X, vl))
    assert f.attention_weights.dtype == torch.float64
    n = nn.MultiheadAttention(16, 2, batch_first=True).double().eval()
    Q = torch.randn(2, 3, 16, dtype=torch.float64)
    g = attnc.from_torch(n, (Q, Q, Q))
    out, weights = g(Q, Q, Q)
    assert out.dtype == weights.dtype == torch.float64
    expected, expected_weights = n(Q, Q, Q)
    close(out, expected)
    close(weights, expected_weights)


@pytest.mark.parametrize("bias", [False, True])
def test_d2l_transformer_encoder_through_block_calls(bias):
    # The book's encoder (200 tokens, 24 hiddens, 8 heads, 2 blocks): one
    # block compiled once and called per layer with its weights.
    enc = d2l.TransformerEncoder(200, 24, 48, 8, 2, 0.5,
                                 use_bias=bias).eval()
    X = torch.randint(0, 200, (2, 100))
    vl = torch.tensor([3, 2])
    f = attnc.from_torch(enc, (X, vl), return_weights=True)
    assert [line for line in f.spec.splitlines()
            if line.startswith("block ")] == ["block d2l_encoder_block {",
                                              "block d2l_encoder {"]
    assert f.spec.count("= d2l_encoder_block(") == 2
    close(f(X, vl), enc(X, vl))
    assert len(f.attention_weights) == 2
    for mine, theirs in zip(f.attention_weights, enc.attention_weights):
        close(mine, theirs, atol=1e-6)


def test_d2l_positional_encoding_and_dot_product_attention():
    pe = d2l.PositionalEncoding(32, 0.5).eval()
    Z = torch.randn(2, 60, 32)
    close(attnc.from_torch(pe, (Z,))(Z), pe(Z))
    dpa = d2l.DotProductAttention(0.5).eval()
    q, k, v = torch.randn(2, 1, 2), torch.randn(2, 10, 2), torch.randn(2, 10, 4)
    vl = torch.tensor([2, 6])
    f = attnc.from_torch(dpa, (q, k, v, vl), return_weights=True)
    close(f(q, k, v, vl), dpa(q, k, v, vl))
    close(f.attention_weights, dpa.attention_weights, atol=1e-6)
    g = attnc.from_torch(dpa, (q, k, v))
    close(g(q, k, v), dpa(q, k, v))


def test_a_variant_compiled_at_a_call_keeps_the_modules_dtype():
    # A bf16 layer compiled without a padding mask, then called with one:
    # the masked kernel, compiled at that call, is bf16 too (it was f32:
    # from_torch's float type was gone by then).
    torch.manual_seed(0)
    m = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    m = m.to(torch.bfloat16)
    x = torch.randn(2, 5, 32).to(torch.bfloat16)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    y = attnc.from_torch(m, (x,))(x, src_key_padding_mask=mask)
    assert y.dtype == torch.bfloat16
    with torch.no_grad():
        expected = m(x, src_key_padding_mask=mask)
    # Entry 0 (no padding); torch zeroes padded rows of entry 1.
    assert (y.float() - expected.float())[0].abs().max() < 0.1


# Issue 52, item 6: modules that look like D2L's but are not. from_torch
# reads what a module holds, and compares the callable with the module on
# the example inputs before returning it.

class AdditiveAttention(nn.Module):
    """D2L's additive attention (section 11.3)."""

    def __init__(self, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = d2l.masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


def learned_table(pe):
    pe.P = nn.Parameter(torch.randn(pe.P.shape))
    return pe


def table_of_base_1000(pe):
    max_len, D = pe.P.shape[1], pe.P.shape[2]
    X = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1) / \
        torch.pow(1000, torch.arange(0, D, 2, dtype=torch.float32) / D)
    pe.P[:, :, 0::2] = torch.sin(X)
    pe.P[:, :, 1::2] = torch.cos(X)
    return pe


@pytest.mark.parametrize("change", [learned_table, table_of_base_1000])
def test_a_positional_encoding_adds_the_table_it_holds(change):
    # Before: compiled as the sinusoidal formula of base 10000 (off by 1.24).
    pe = change(d2l.PositionalEncoding(32, 0.5, max_len=100)).eval()
    Z = torch.randn(2, 60, 32)
    f = attnc.from_torch(pe, (Z,))
    close(f(Z), pe(Z))
    assert "positional_encoding(" not in f.spec and "add(X, P)" in f.spec
    # The book's table is still the op.
    assert "positional_encoding(" in attnc.from_torch(
        d2l.PositionalEncoding(32, 0.5).eval(), (Z,)).spec


def test_an_encoders_learned_positional_table_is_compiled():
    enc = d2l.TransformerEncoder(50, 24, 48, 4, 1, 0.5).eval()
    learned_table(enc.pos_encoding)
    X = torch.randint(0, 50, (2, 10))
    vl = torch.tensor([3, 10])
    f = attnc.from_torch(enc, (X, vl))
    close(f(X, vl), enc(X, vl))
    assert "positional_encoding(" not in f.spec


def test_a_multi_head_attention_on_additive_attention_is_refused():
    # Before: compiled as dot-product attention (off by 0.25).
    m = d2l.MultiHeadAttention(20, 4, 0.5)
    m.attention = AdditiveAttention(5, 0.5)
    m.eval()
    X = torch.randn(2, 5, 20)
    vl = torch.tensor([3, 5])
    m(X, X, X, vl)  # the lazy layers
    with pytest.raises(NotImplementedError, match="attention is "
                       "AdditiveAttention; attnc scores by scaled dot "
                       "product only"):
        attnc.from_torch(m, (X, X, X, vl))


class DotProductAttention(d2l.DotProductAttention):
    """Looks like D2L's (its name, a dropout, no parameters) but scales the
    scores by 1/d, not 1/sqrt(d)."""

    def forward(self, queries, keys, values, valid_lens=None):
        return super().forward(queries / math.sqrt(queries.shape[-1]), keys,
                               values, valid_lens)


def test_a_module_that_computes_something_else_is_refused():
    # Nothing in what the module holds tells it apart from D2L's: the
    # comparison on the example inputs does. Before: returned, off by 0.3.
    q, k, v = torch.randn(2, 3, 16), torch.randn(2, 6, 16), \
        torch.randn(2, 6, 4)
    with pytest.raises(ValueError, match="the compiled DotProductAttention "
                       "does not compute what the module computes on the "
                       r"example inputs: output 0 differs by up to [0-9.]+ "
                       r"\(at most [0-9.e-]+ allowed"):
        attnc.from_torch(DotProductAttention(0.5).eval(), (q, k, v))
    m = d2l.MultiHeadAttention(16, 4, 0.5).eval()
    m.attention = DotProductAttention(0.5).eval()
    with pytest.raises(ValueError, match="does not compute what the module"):
        attnc.from_torch(m, (q, k, k, None))


def test_token_ids_are_not_wrapped():
    # Issue 52, item 8: an id of 2**32 + 3 became the id 3 (.to(int32)).
    enc = d2l.TransformerEncoder(50, 24, 48, 4, 1, 0.5).eval()
    X = torch.randint(0, 50, (2, 10))
    vl = torch.tensor([3, 10])
    f = attnc.from_torch(enc, (X, vl))
    bad = X.clone()
    bad[1, 4] = 2**32 + 3
    with pytest.raises(ValueError, match=r"input 'X': value 4294967299 at "
                       r"\[1, 4\] does not fit in i32"):
        f(bad, vl)


def test_the_repr_says_the_weights_are_copied():
    # Issue 52, item 10: an edit to the module is not seen by the callable
    # (the weights are copied); its repr says so.
    m = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    f = attnc.from_torch(m, (x, x, x))
    assert "weights copied from the module when from_torch ran (later " \
        "changes to the module are not seen: call attnc.from_torch " \
        "again)" in repr(f)
    before = f(x, x, x)[0]
    with torch.no_grad():
        m.out_proj.weight.mul_(2)
    torch.testing.assert_close(f(x, x, x)[0], before, rtol=0, atol=0)


def test_encoder_layer_examples_in_forwards_order():
    # Issue 52, item 14: forward's order (src, src_mask, src_key_padding_mask)
    # is taken with src_mask None; a mask that is no key padding mask is
    # refused saying which order from_torch takes.
    m = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    mask = torch.tensor([[False] * 3 + [True] * 2, [False] * 5])
    f = attnc.from_torch(m, (x, None, mask))
    close(f(x, src_key_padding_mask=mask), m(x, src_key_padding_mask=mask))
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    with pytest.raises(ValueError, match=r"example inputs are \(src,\) or "
                       r"\(src, src_key_padding_mask\), or forward's order "
                       r"\(src, None, src_key_padding_mask\); src is \[batch, "
                       r"seq, feature\].* The mask given, torch.float32 "
                       r"\[5, 5\], is no src_key_padding_mask"):
        attnc.from_torch(m, (x, causal))
    with pytest.raises(NotImplementedError, match="The second of three is "
                       "forward's src_mask"):
        attnc.from_torch(m, (x, causal, mask))
    seq_first = nn.TransformerEncoderLayer(16, 4, 32).eval()
    with pytest.raises(ValueError, match=r"src is \[seq, batch, feature\] "
                       r"\(batch_first=False\).* \(bool \[5, 2\]\)"):
        attnc.from_torch(seq_first, (x, mask))


def test_a_bf16_callable_says_which_dtype_it_takes():
    # Issue 52, item 14: float32 tensors given to a bf16 callable were
    # refused with "pass cast=True", which the callable does not take.
    m = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True).eval()
    m.to(torch.bfloat16)
    x = torch.randn(2, 5, 16)
    f = attnc.from_torch(m, (x.to(torch.bfloat16),))
    with pytest.raises(ValueError) as error:
        f(x)
    assert str(error.value) == (
        "attnc.from_torch: src is torch.float32, but this callable computes "
        "in torch.bfloat16, as the module does: pass torch.bfloat16 tensors "
        "(src.to(torch.bfloat16))")
