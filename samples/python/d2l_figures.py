"""Reproduces D2L's figures of the positional encoding (section "Self-
Attention and Positional Encoding") and draws the attention weights of the
book's multi-head attention, with kernels compiled by attnc:

  1. pe_columns.png  columns 6-9 of the encoding against the position (the
                     book's d2l.plot of P[0, :, 6:10].T)
  2. pe_heatmap.png  the encoding matrix as a heatmap (d2l.show_heatmaps)
  3. mha_weights.png the attention weights of the book's MultiHeadAttention
                     (100 hiddens, 5 heads, 2 x 4 queries, 6 keys,
                     valid_lens = [3, 2]), one heatmap per head and batch

    .venv/bin/python samples/python/d2l_figures.py --output-dir out/
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import attnc  # noqa: E402

PE_SPEC = """
block positional_encoding_figure {
  dim B = 1, T = 60, D = 32
  input X: f32[B, T, D]
  P = positional_encoding(X)
  output P
}
"""

MHA_SPEC = """
block book_mha {
  dim B = 2, Tq = 4, Tk = 6, D = 100
  input  X: f32[B, Tq, D]
  input  Y: f32[B, Tk, D]
  input  valid_lens: i32[B]
  param  W_q: f32[D, D]
  param  W_k: f32[D, D]
  param  W_v: f32[D, D]
  param  W_o: f32[D, D]
  O, A = multihead_attention(X, Y, Y, heads=5, w_q=W_q, w_k=W_k, w_v=W_v,
                             w_o=W_o, valid_lens=valid_lens,
                             return_weights=true)
  output O, A
}
"""


def positional_encoding_figures(output_dir, dpi):
    # The encoding of zeros is the table P itself (the book's X + P[:T]).
    k = attnc.compile(PE_SPEC)
    P = k(X=np.zeros((1, 60, 32), np.float32))

    fig, ax = plt.subplots(figsize=(6, 2.5))
    for col in range(6, 10):
        ax.plot(np.arange(60), P[0, :, col], label=f"Col {col}")
    ax.set_xlabel("Row (position)")
    ax.legend()
    ax.grid()
    columns = os.path.join(output_dir, "pe_columns.png")
    fig.savefig(columns, dpi=dpi)

    fig = attnc.show_heatmaps(P[None], xlabel="Column (encoding dimension)",
                              ylabel="Row (position)", figsize=(3.5, 4),
                              cmap="Blues")
    heatmap = os.path.join(output_dir, "pe_heatmap.png")
    fig.savefig(heatmap, dpi=dpi)
    return columns, heatmap


def attention_weights_figure(output_dir, dpi):
    # The book's example: X = ones(2, 4, 100), Y = ones(2, 6, 100), and
    # weights as nn.Linear initializes them.
    k = attnc.compile(MHA_SPEC)
    rng = np.random.default_rng(0)
    bound = 1 / np.sqrt(100)
    k.bind(**{n: rng.uniform(-bound, bound, shape).astype(np.float32)
              for n, role, _, shape in k.signature if role == "param"})
    _, A = k(X=np.ones((2, 4, 100), np.float32),
             Y=np.ones((2, 6, 100), np.float32),
             valid_lens=np.array([3, 2], np.int32))
    fig = attnc.show_heatmaps(A.reshape(2, 5, 4, 6), xlabel="Keys",
                              ylabel="Queries",
                              titles=[f"Head {h}" for h in range(1, 6)],
                              figsize=(7, 3.5))
    path = os.path.join(output_dir, "mha_weights.png")
    fig.savefig(path, dpi=dpi)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output-dir", default=".")
    parser.add_argument("--dpi", type=int, default=100)
    args = parser.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)
    for path in positional_encoding_figures(args.output_dir, args.dpi) + \
            (attention_weights_figure(args.output_dir, args.dpi),):
        print(path)


if __name__ == "__main__":
    main()
