"""python -m attnc heatmaps A.npy -o a.png: draws what attnc.show_heatmaps
draws, from a .npy file (such as the attention weights `attnc run` writes)."""

import argparse
import sys


def _heatmaps(args):
    import matplotlib
    matplotlib.use("Agg")
    import numpy as np

    from ._heatmaps import as_grid, show_heatmaps

    try:
        matrices = np.load(args.input)
    except (OSError, ValueError) as e:
        sys.exit(f"attnc heatmaps: cannot read {args.input}: {e}")
    try:
        grid = as_grid(matrices, rows=args.rows)
    except ValueError as e:
        sys.exit(f"attnc heatmaps: {args.input}: {e}")
    titles = args.titles
    if titles and len(titles) != grid.shape[1]:
        sys.exit(f"attnc heatmaps: {len(titles)} titles for {grid.shape[1]} "
                 "columns")
    fig = show_heatmaps(grid, args.xlabel, args.ylabel, titles=titles,
                        figsize=tuple(args.figsize), cmap=args.cmap)
    try:
        fig.savefig(args.output, dpi=args.dpi)
    except OSError as e:
        sys.exit(f"attnc heatmaps: cannot write {args.output}: {e}")
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
    h.add_argument("--figsize", type=float, nargs=2, default=(2.5, 2.5),
                   metavar=("W", "H"), help="inches (default 2.5 2.5)")
    h.add_argument("--dpi", type=int, default=100)
    h.add_argument("--cmap", default="Reds")
    args = parser.parse_args(argv)
    if args.command == "heatmaps":
        return _heatmaps(args)
    return 1


if __name__ == "__main__":
    sys.exit(main())
