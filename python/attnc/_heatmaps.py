"""D2L's show_heatmaps (chapter "Attention Mechanisms and Transformers"):
a grid of matrices drawn as heatmaps, with one colour bar."""

import numpy as np


def _as_numpy(matrices):
    if hasattr(matrices, "detach"):  # a torch tensor
        matrices = matrices.detach().cpu().numpy()
    return np.asarray(matrices)


def as_grid(matrices, rows=None):
    """`matrices` as [rows, cols, H, W]: 4-D as given, 3-D [N, H, W] as one
    row of N (or `rows` rows), 2-D as one matrix."""
    m = _as_numpy(matrices)
    if m.ndim == 2:
        m = m[None, None]
    elif m.ndim == 3:
        n = m.shape[0]
        rows = rows or 1
        if n % rows:
            raise ValueError(
                f"show_heatmaps: {n} matrices do not split into {rows} rows")
        m = m.reshape(rows, n // rows, *m.shape[1:])
    elif m.ndim != 4:
        raise ValueError(
            "show_heatmaps: expected matrices of rank 2, 3 or 4 "
            f"([rows, cols, H, W]), got shape {list(m.shape)}")
    elif rows is not None and rows != m.shape[0]:
        raise ValueError(
            f"show_heatmaps: rows={rows} for a 4-D array of {m.shape[0]} rows")
    return m


def show_heatmaps(matrices, xlabel, ylabel, titles=None, figsize=(2.5, 2.5),
                  cmap="Reds"):
    """Draws `matrices` ([rows, cols, H, W], NumPy or torch) as D2L's
    show_heatmaps does and returns the matplotlib Figure: x labels on the
    last row, y labels on the first column, `titles` over each column, one
    colour bar for all."""
    import matplotlib.pyplot as plt

    matrices = as_grid(matrices)
    num_rows, num_cols = matrices.shape[:2]
    fig, axes = plt.subplots(num_rows, num_cols, figsize=figsize,
                             sharex=True, sharey=True, squeeze=False)
    for i, (row_axes, row_matrices) in enumerate(zip(axes, matrices)):
        for j, (ax, matrix) in enumerate(zip(row_axes, row_matrices)):
            pcm = ax.imshow(matrix, cmap=cmap)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles:
                ax.set_title(titles[j])
    fig.colorbar(pcm, ax=axes, shrink=0.6)
    return fig
