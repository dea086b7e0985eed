"""D2L's show_heatmaps (chapter "Attention Mechanisms and Transformers"):
a grid of matrices drawn as heatmaps, with one colour bar."""

import difflib
import math

import numpy as np

# The most maps one figure draws. Each imshow on axes that share x and y
# sets the limits of every sibling, so drawing takes time cubic in the
# count: 100 maps take seconds, 400 minutes, 200 x 200 never ends. A D2L
# figure has tens.
MAX_MAPS = 100


def _as_numpy(matrices):
    if hasattr(matrices, "detach"):  # a torch tensor
        t = matrices.detach().cpu()
        try:
            return t.numpy()
        except TypeError:
            # NumPy has no bfloat16 (nor float8): draw those as float32.
            if t.is_floating_point():
                return t.float().numpy()
            raise
    try:
        m = np.asarray(matrices)
    except ValueError as e:  # ragged lists
        raise ValueError(f"show_heatmaps: matrices are not an array: {e}") \
            from None
    return _bfloat16_as_float32(m)


def _bfloat16_as_float32(m):
    """bf16 as NumPy holds it: ml_dtypes.bfloat16, or the 2-byte void
    ('|V2', '<V2') that np.load gives for a .npy of one (attnc run writes
    bf16 outputs so): bit patterns, the high half of a float32's. Drawn as
    float32; matplotlib cannot read them."""
    if m.dtype.kind != "V" or m.dtype.itemsize != 2 or m.dtype.names:
        return m
    bits = np.ascontiguousarray(m).view(np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32)


def as_grid(matrices, rows=None):
    """`matrices` as [rows, cols, H, W]: 4-D as given, 3-D [N, H, W] as one
    row of N (or `rows` rows), 2-D as one matrix. Raises ValueError or
    TypeError, saying why, for what is no grid of at most MAX_MAPS
    non-empty real matrices."""
    m = _as_numpy(matrices)
    if m.ndim not in (2, 3, 4):
        raise ValueError(
            "show_heatmaps: expected matrices of rank 2, 3 or 4 "
            f"([rows, cols, H, W]), got shape {list(m.shape)}")
    # imshow's own error for these comes from deep inside matplotlib.
    if m.dtype.kind not in "biuf":
        hint = " (take np.abs or .real first)" if m.dtype.kind == "c" else ""
        raise TypeError(
            f"show_heatmaps: cannot draw matrices of dtype {m.dtype}: a "
            f"heatmap needs real numbers (bool, integer or float){hint}")
    if m.size == 0:
        raise ValueError(
            f"show_heatmaps: nothing to draw: shape {list(m.shape)} has a "
            "dimension of 0")
    if rows is not None and rows < 1:
        raise ValueError(f"show_heatmaps: rows={rows}, must be at least 1")
    if m.ndim == 2:
        if rows not in (None, 1):
            raise ValueError(f"show_heatmaps: rows={rows} for one matrix")
        m = m[None, None]
    elif m.ndim == 3:
        n = m.shape[0]
        rows = rows or 1
        if n % rows:
            raise ValueError(
                f"show_heatmaps: {n} matrices do not split into {rows} rows")
        m = m.reshape(rows, n // rows, *m.shape[1:])
    elif rows is not None and rows != m.shape[0]:
        raise ValueError(
            f"show_heatmaps: rows={rows} for a 4-D array of {m.shape[0]} rows")
    num_rows, num_cols = m.shape[:2]
    if num_rows * num_cols > MAX_MAPS:
        raise ValueError(
            f"show_heatmaps: {num_rows * num_cols} maps ({num_rows} x "
            f"{num_cols}) are too many for one figure: at most {MAX_MAPS}; "
            "draw a slice of the array (such as A[:4, :8] of [rows, cols, "
            "H, W], or A[:8] of [N, H, W])")
    return m


def check_cmap(cmap):
    """Raises ValueError (without the caller's prefix) for a colour map
    name matplotlib does not know; a Colormap or None passes."""
    import matplotlib

    if isinstance(cmap, str) and cmap not in matplotlib.colormaps:
        close = difflib.get_close_matches(cmap, list(matplotlib.colormaps))
        hint = (" (did you mean " + ", ".join(map(repr, close)) + "?)"
                if close else "")
        raise ValueError(f"unknown cmap {cmap!r}{hint}: matplotlib.colormaps "
                         "lists the names")


def _check_figsize(figsize):
    # (width, height) in inches, or with matplotlib's unit as a third item
    # ("cm", "px"), which matplotlib checks.
    try:
        size = [float(x) for x in figsize[:2]]
        extra = len(figsize) - 2
    except (TypeError, ValueError):
        size, extra = [], 0
    if (len(size) != 2 or extra not in (0, 1)
            or not all(math.isfinite(x) and x > 0 for x in size)):
        raise ValueError("show_heatmaps: figsize must be (width, height), "
                         f"positive finite inches, got {figsize!r}")


def grid_figsize(num_rows, num_cols):
    """Inches for a grid of maps: about 1.5 inches a map, plus room for the
    labels and the colour bar (D2L's 2.5 x 2.5 squeezed ten maps into one
    row of unreadable ones)."""
    return (1.2 + 1.5 * num_cols, 0.7 + 1.5 * num_rows)


def show_heatmaps(matrices, xlabel, ylabel, titles=None, figsize=(2.5, 2.5),
                  cmap="Reds"):
    """Draws `matrices` ([rows, cols, H, W], NumPy or torch) as D2L's
    show_heatmaps does and returns the matplotlib Figure: x labels on the
    last row, y labels on the first column, `titles` over each column, one
    colour bar for all. figsize=None sizes the figure to the grid
    (grid_figsize). The layout is matplotlib's constrained one, so the
    labels and the colour bar stay inside the figure when it is saved. Bad
    arguments raise ValueError or TypeError, checked before anything is
    drawn."""
    import matplotlib.pyplot as plt

    matrices = as_grid(matrices)
    num_rows, num_cols = matrices.shape[:2]
    if figsize is None:
        figsize = grid_figsize(num_rows, num_cols)
    if titles and len(titles) < num_cols:
        raise ValueError(
            f"show_heatmaps: {len(titles)} titles for {num_cols} columns")
    _check_figsize(figsize)
    try:
        check_cmap(cmap)
    except ValueError as e:
        raise ValueError(f"show_heatmaps: {e}") from None
    fig, axes = plt.subplots(num_rows, num_cols, figsize=figsize,
                             sharex=True, sharey=True, squeeze=False,
                             layout="constrained")
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
