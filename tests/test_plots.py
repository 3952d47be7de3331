"""The shared figure helpers: no legend of a saved figure covers a curve of its axes (inductionlab.plots.save)."""

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg

from inductionlab import plots


def _legend_over_a_curve(fill: bool):
    """One axes whose legend sits in the centre, on a diagonal line; with ``fill`` also lines through every one of
    matplotlib's nine legend places, so that no place inside the axes is free."""
    fig, (ax,) = plots.subplots(1)
    x = np.linspace(0, 1, 50)
    ax.plot(x, x, label="diagonal")
    if fill:
        for y in np.linspace(0.02, 0.98, 25):
            ax.plot(x, np.full_like(x, y), color="0.7", lw=0.5)
    ax.legend(loc="center")
    return fig, ax


def _covered(fig, ax) -> bool:
    FigureCanvasAgg(fig)  # a figure saved by plots.save is closed: draw it on a canvas of its own
    fig.draw_without_rendering()
    return plots.covers(ax, ax.get_legend(), fig.canvas.get_renderer())


def test_a_legend_on_a_curve_moves_to_a_free_place_inside_the_axes():
    fig, ax = _legend_over_a_curve(fill=False)
    assert _covered(fig, ax)
    plots.uncover_legends(fig)
    assert not _covered(fig, ax)
    box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert ax.bbox.contains(*box.p0) and ax.bbox.contains(*box.p1)  # still inside: a free place existed


def test_a_legend_with_no_free_place_inside_moves_outside_the_axes(tmp_path):
    fig, ax = _legend_over_a_curve(fill=True)
    plots.save(fig, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
    assert not _covered(fig, ax)
    assert ax.get_legend().get_window_extent(fig.canvas.get_renderer()).x0 >= ax.bbox.x1  # right of the axes


def test_a_legend_beside_the_curves_stays_where_it_was_put():
    fig, (ax,) = plots.subplots(1)
    x = np.linspace(0, 1, 50)
    ax.plot(x, 0.1 * x, label="low")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left")
    plots.uncover_legends(fig)
    assert ax.get_legend()._loc == 2  # upper left, untouched
