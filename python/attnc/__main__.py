"""python -m attnc heatmaps A.npy -o a.png: draws what attnc.show_heatmaps
draws, from a .npy file (such as the attention weights `attnc run` writes)."""

import argparse
import os
import sys


# Agg's limit on each side of an image (matplotlib refuses more).
_MAX_PIXELS = 2 ** 16


def _fail(message):
    # One line on stderr and exit status 1, as for every error after the
    # command line parsed: never a traceback (issue 31).
    sys.exit(f"attnc heatmaps: {message}")


def _check_numbers(args):
    """The numeric options, before the file is read (and before matplotlib
    is imported, which takes longer than all of this)."""
    import math

    if args.figsize is not None and not all(
            math.isfinite(x) and x > 0 for x in args.figsize):
        figsize = " ".join(f"{x:g}" for x in args.figsize)
        _fail(f"--figsize {figsize}: width and height must be positive "
              "finite inches")
    if args.dpi < 1:
        _fail(f"--dpi {args.dpi}: must be at least 1")
    if args.rows is not None and args.rows < 1:
        _fail(f"--rows {args.rows}: must be at least 1")


def _check_pixels(figsize, dpi):
    """The image's size in pixels, once the figure's size is known."""
    figsize_text = " ".join(f"{x:g}" for x in figsize)
    pixels = [int(figsize[0] * dpi), int(figsize[1] * dpi)]
    if not all(1 <= p <= _MAX_PIXELS for p in pixels):
        _fail(f"--figsize {figsize_text} at --dpi {dpi} is a {pixels[0]} x "
              f"{pixels[1]} pixel image: each side must be 1 to "
              f"{_MAX_PIXELS} pixels")


def _check_names(args):
    """--cmap and the output's format, before anything is drawn."""
    import matplotlib.backend_bases

    from ._heatmaps import check_cmap

    try:
        check_cmap(args.cmap)
    except ValueError as e:
        _fail(e)
    # savefig picks the format by the extension (none: PNG); an unknown one
    # would fail only after drawing.
    formats = matplotlib.backend_bases.FigureCanvasBase \
        .get_supported_filetypes()
    ext = os.path.splitext(args.output)[1][1:].lower()
    if ext and ext not in formats:
        _fail(f"cannot write {args.output}: unknown format {ext!r} "
              f"({', '.join(sorted(formats, key=lambda f: f != 'png'))})")


def _load(path):
    import numpy as np

    # np.load takes what is no .npy for a pickle, and a .npz for an
    # archive: say what the file is instead.
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as e:
        _fail(f"cannot read {path}: {e}")
    if magic.startswith(b"PK"):
        _fail(f"{path}: a .npz archive, not a .npy file (np.save writes "
              "one array)")
    if magic != b"\x93NUMPY":
        _fail(f"{path}: not a .npy file (np.save writes one)")
    try:
        return np.load(path)
    except (OSError, ValueError, EOFError) as e:
        _fail(f"cannot read {path}: {e}")


def _heatmaps(args):
    from ._heatmaps import as_grid, grid_figsize, show_heatmaps

    _check_numbers(args)
    matrices = _load(args.input)
    try:
        grid = as_grid(matrices, rows=args.rows)
    except (TypeError, ValueError) as e:
        _fail(f"{args.input}: {e}")
    titles = args.titles
    if titles and len(titles) != grid.shape[1]:
        _fail(f"{len(titles)} titles for {grid.shape[1]} columns")
    figsize = tuple(args.figsize) if args.figsize else grid_figsize(
        *grid.shape[:2])
    _check_pixels(figsize, args.dpi)
    # matplotlib only now: an error above is said without waiting for it.
    import matplotlib
    matplotlib.use("Agg")
    _check_names(args)
    try:
        fig = show_heatmaps(grid, args.xlabel, args.ylabel, titles=titles,
                            figsize=figsize, cmap=args.cmap)
    except (TypeError, ValueError) as e:
        _fail(e)
    try:
        fig.savefig(args.output, dpi=args.dpi)
    except (OSError, ValueError) as e:
        _fail(f"cannot write {args.output}: {e}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m attnc")
    commands = parser.add_subparsers(dest="command", required=True)
    h = commands.add_parser(
        "heatmaps", help="draw matrices from a .npy file as heatmaps (D2L's "
        "show_heatmaps)",
        description="Draws a .npy array as D2L's show_heatmaps: 2-D one "
        "matrix, 3-D [N, H, W] a row of N (or --rows rows), 4-D [rows, cols, "
        "H, W] a grid. The PNG is figsize x dpi pixels.")
    h.add_argument("input", help="the .npy file")
    h.add_argument("-o", "--output", required=True, help="the image to write "
                   "(its extension picks the format: .png, .svg, .pdf)")
    h.add_argument("--xlabel", default="Keys")
    h.add_argument("--ylabel", default="Queries")
    h.add_argument("--titles", nargs="+", help="one title per column")
    h.add_argument("--rows", type=int, help="rows to split a 3-D array into")
    h.add_argument("--figsize", type=float, nargs=2, default=None,
                   metavar=("W", "H"), help="inches (default: about 1.5 "
                   "a map, plus the labels and the colour bar)")
    h.add_argument("--dpi", type=int, default=100)
    h.add_argument("--cmap", default="Reds")
    args = parser.parse_args(argv)
    if args.command == "heatmaps":
        return _heatmaps(args)
    return 1


if __name__ == "__main__":
    sys.exit(main())
