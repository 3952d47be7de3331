"""The lazy-to-rich figure (Wang et al. Fig. 2) on log axes with its legends off the curves, and its `demo` preset."""

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from inductionlab import experiments, plots
from inductionlab.runs import RunContext


@pytest.fixture(scope="module")
def smoke_results():
    cfg = experiments.configure("lazy-to-rich", preset="smoke")
    return experiments.get("lazy-to-rich").run(cfg, RunContext(threads=1))


def test_every_panel_is_on_a_log_axis_and_no_legend_covers_a_curve(smoke_results, tmp_path, monkeypatch):
    figures = []
    save = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path: figures.append(fig) or save(fig, path))
    paths = experiments.get("lazy-to-rich").plot(smoke_results, tmp_path)
    assert [p.name for p in paths] == ["lazy_to_rich.png", "stage1.png"]
    axes = figures[0].axes
    assert [ax.get_yscale() for ax in axes] == ["log"] * 3  # w_KQ's exponential growth: a straight line
    renderer = FigureCanvasAgg(figures[0]).get_renderer()  # saved, hence closed: a canvas of its own
    figures[0].draw_without_rendering()
    assert not any(plots.covers(ax, ax.get_legend(), renderer) for ax in axes if ax.get_legend())
    labels = [t.get_text() for t in figures[0].legends[0].get_texts()]  # phases and line styles, below the panels
    assert "I: partial learning" in labels and "SGD" in labels and any("literal" in t for t in labels)


def test_the_demo_preset_keeps_the_papers_stage_ii_without_the_literal_protocol():
    demo = experiments.configure("lazy-to-rich", preset="demo")
    default = experiments.configure("lazy-to-rich")
    assert not demo.literal and demo.train.stage1_steps < default.train.stage1_steps
    assert (demo.train.stage2_steps, demo.train.eval_size, demo.train.lr) == (
        default.train.stage2_steps,
        default.train.eval_size,
        default.train.lr,
    )
    assert demo.gf == default.gf
