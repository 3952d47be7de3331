"""The monitor where researchers work (docs/monitor.md): chance levels, the minimum loss drop, the phase-change
event, the figure, the Trainer's log (every report_to backend) and the Lightning callback."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.monitor import (
    Monitor,
    MonitorConfig,
    attainable_scores,
    chance_scores,
    head_scores,
    patterns_adapter,
    phase_change,
)
from inductionlab.tasks.induction import repeated_random_tokens

V = 16


def _uniform(tokens: torch.Tensor) -> list[torch.Tensor]:
    B, L = tokens.shape
    rows = torch.ones(L, L, dtype=torch.float64).tril()
    return [(rows / rows.sum(-1, keepdim=True)).expand(B, 2, L, L).clone()]


def _induction(tokens: torch.Tensor) -> list[torch.Tensor]:
    """A hand-built induction head: each query attends to the tokens after earlier copies of its token (else to
    itself); head 1 attends uniformly."""
    B, L = tokens.shape
    hit = torch.zeros(B, L, L, dtype=torch.float64)
    hit[:, :, 1:] = (tokens.unsqueeze(-1) == tokens.unsqueeze(-2))[:, :, :-1].double()
    hit = hit.tril() + torch.eye(L, dtype=torch.float64) * (hit.tril().sum(-1, keepdim=True) == 0)
    return [torch.stack([hit / hit.sum(-1, keepdim=True), _uniform(tokens)[0][:, 0]], 1)]


class _Switch(torch.nn.Module):
    """Logits of a fixed table; attention uniform until ``formed``, then an induction head."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(V, V, dtype=torch.float64))
        self.formed = False

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.table[tokens]


def _switch_monitor(**kw) -> tuple[_Switch, Monitor]:
    model = _Switch()
    adapter = patterns_adapter(model, lambda m, t: _induction(t) if m.formed else _uniform(t), n_heads=2, n_layers=1)
    return model, Monitor(adapter, MonitorConfig(every=10, batch=4, period=8, vocab=V), **kw)


def test_a_head_attending_uniformly_scores_the_chance_level_which_has_its_closed_form():
    tokens = repeated_random_tokens(6, 25, 2, torch.Generator().manual_seed(0), vocab=V)
    chance = chance_scores(tokens, 25)
    L = 50
    assert chance["previous_token"] == pytest.approx((sum(1 / k for k in range(1, L + 1)) - 1) / L, abs=1e-12)
    assert chance["previous_token"] == pytest.approx(0.070, abs=5e-4)  # the value a user measured at init
    # induction under uniform attention: Σ over rows of (#targets in row i)/(i + 1), over L rows
    same = tokens.unsqueeze(-1) == tokens.unsqueeze(-2)  # (B, L, L)
    targets = torch.zeros_like(same)
    targets[:, :, 1:] = same[:, :, :-1]
    per_row = targets.tril().sum(-1).double() / torch.arange(1, L + 1)
    assert chance["induction"] == pytest.approx(float(per_row.sum(-1).mean() / L), abs=1e-12)
    _, monitor = _switch_monitor()
    monitor.measure(0)
    measured = monitor.heads.iloc[0]
    for name, level in monitor.chance.items():
        assert measured[name] == pytest.approx(level, abs=1e-12), name
    assert chance_scores(monitor.tokens, 8) == monitor.chance
    ideal = head_scores(_induction(monitor.tokens), monitor.tokens, 8)["induction"][0, 0]
    assert ideal > 5 * monitor.chance["induction"]


@pytest.mark.parametrize("repeats", [2, 3, 4])
def test_the_attainable_score_is_the_ideal_heads_and_no_head_beats_it(repeats):
    tokens = repeated_random_tokens(8, 20, repeats, torch.Generator().manual_seed(1), vocab=4096)  # no chance repeats
    top = attainable_scores(tokens, 20)
    assert top["induction"] == pytest.approx((repeats - 1) / repeats, abs=1e-12)  # the first copy has no earlier token
    assert top["induction"] == pytest.approx(head_scores(_induction(tokens), tokens, 20)["induction"][0, 0], abs=1e-12)
    g = torch.Generator().manual_seed(2)
    B, L = tokens.shape
    for _ in range(5):  # any causal attention scores at most the ideal head's
        logits = torch.randn(B, 1, L, L, generator=g, dtype=torch.float64) * 4
        pattern = torch.softmax(logits.masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), -math.inf), -1)
        assert head_scores([pattern], tokens, 20)["induction"][0, 0] <= top["induction"] + 1e-12


def _noise(drop: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    t = np.arange(0, 1001, 10)
    wiggle = 0.02 * np.random.default_rng(0).standard_normal(len(t))
    heads = pd.DataFrame({"step": t, "layer": 0, "head": 0, "induction": 0.05 + 0.01 * np.sin(t)})
    loss = 2.77 + wiggle - drop / (1 + np.exp(-(t - 500) / 20))
    return heads, pd.DataFrame({"step": t, "loss_repeated": loss})


def test_a_loss_that_only_wiggles_has_no_loss_drop_and_a_real_drop_is_found():
    levels = {"chance": 0.05, "attainable": 0.5}
    assert math.isnan(phase_change(*_noise(0.0), 10, **levels, min_loss_drop=0.1).loss_drop_step)
    found = phase_change(*_noise(1.0), 10, **levels, min_loss_drop=0.1).loss_drop_step
    assert abs(found - 500) <= 10


def test_a_head_that_scores_its_chance_level_above_the_threshold_did_not_form():
    """A tiny vocabulary puts uniform attention's induction score (its chance level, 0.313 on 3 tokens) above the
    former absolute threshold 0.3: relative to chance a head that stays there scores 0, so there is no phase change;
    one that rises from there has one."""
    heads, steps = _noise(0.0)
    levels = {"chance": 0.313, "attainable": 0.94}
    flat = heads.assign(induction=0.313 + 0.0001 * np.arange(len(heads)))  # 0.313 → 0.323: relative 0 → 0.016
    assert math.isnan(phase_change(flat, steps, 10, **levels).step)
    rising = heads.assign(induction=0.313 + 0.4 / (1 + np.exp(-(heads.step - 400) / 20)))
    assert abs(phase_change(rising, steps, 10, **levels).step - 400) <= 10


@pytest.mark.parametrize(
    "field, value",
    [("every", "50"), ("batch", 2.0), ("threshold", "0.3"), ("threshold", 0), ("min_loss_drop", -0.1)]
    + [("min_loss_drop", "0.1"), ("min_loss_drop", math.nan), ("icl_late", 3), ("seed", None), ("repeats", 1)]
    + [("min_rise", -1), ("min_rise", True), ("period", 1), ("vocab", 1)],
)
def test_every_config_field_is_checked_by_name(field, value):
    with pytest.raises(ConfigError, match=f"^{field}: "):
        MonitorConfig(**{field: value})


def test_the_phase_change_event_fires_once_and_the_metrics_and_figure_follow(tmp_path):
    seen = []
    model, monitor = _switch_monitor(on_phase_change=seen.append, out_dir=tmp_path)
    with pytest.raises(ConfigError, match="^plot: "):
        monitor.plot()
    for step in range(0, 200, 10):
        model.formed = step >= 100
        monitor.maybe(step)
    assert len(seen) == 1 and seen[0] is monitor.detected and 90 <= seen[0].step <= 100
    assert seen[0].head == (0, 0)
    metrics = monitor.metrics()
    assert metrics["monitor/phase_step"] == seen[0].step
    assert metrics["monitor/induction_l0h1"] == pytest.approx(monitor.chance["induction"], abs=1e-12)
    assert metrics["monitor/best_induction"] == metrics["monitor/induction_l0h0"] > 0.3
    assert monitor.plot() == tmp_path / "monitor.png" and (tmp_path / "monitor.png").stat().st_size > 10_000
    assert Monitor(monitor.adapter, monitor.config).metrics() == {}  # nothing measured yet
    with pytest.raises(ConfigError, match="^on_phase_change: "):
        Monitor(monitor.adapter, monitor.config, on_phase_change="stop")


def test_each_measurement_reaches_a_loggers_log_as_one_row_of_the_monitor_stage():
    from inductionlab.train.hooks import Logger

    class Rows(Logger):
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def log(self, step, stage, row, stage_index=0) -> None:
            self.calls.append((step, stage, row, stage_index))

    rows = Rows()
    _, monitor = _switch_monitor(loggers=[rows])
    monitor.measure(0)
    monitor.measure(10)
    assert [(step, stage, index) for step, stage, _, index in rows.calls] == [(0, "monitor", 0), (10, "monitor", 0)]
    last = monitor.steps.iloc[-1]
    expected = {k: float(last[k]) for k in ("loss_repeated", "loss_first", "best_induction", "best_layer", "best_head")}
    heads = {f"induction_l0h{h}": float(monitor.heads.induction.iloc[-2 + h]) for h in (0, 1)}
    got = rows.calls[-1][2]
    assert got["chance_induction"] == monitor.chance["induction"] and "phase_step" in got  # the Trainer path's tags
    assert {k: v for k, v in got.items() if k not in ("chance_induction", "phase_step")} == expected | heads
    assert {f"monitor/{k}" for k in got} >= set(monitor.metrics())  # the same tags on every path
    from inductionlab.train.loop import Hook

    with pytest.raises(ConfigError, match="^loggers: each must be a Logger .* got Hook"):
        Monitor(monitor.adapter, monitor.config, loggers=[Hook()])  # refused when built, not at the first measurement


@pytest.mark.parametrize("errors", ["warn", "raise"])
def test_a_logger_that_raises_loses_no_measurement_and_is_reported_once_by_name(errors, tmp_path, caplog):
    from inductionlab.monitor.core import LoggerError
    from inductionlab.train.hooks import Logger

    class Broken(Logger):
        def log(self, step, stage, row, stage_index=0) -> None:
            raise OSError("disk full")

    _, monitor = _switch_monitor(loggers=[Broken()], out_dir=tmp_path, logger_errors=errors)
    for step in (0, 10):
        if errors == "raise":
            with pytest.raises(LoggerError, match=f"logger Broken failed at step {step}: disk full"):
                monitor.maybe(step)
        else:
            monitor.maybe(step)
    assert list(pd.read_parquet(tmp_path / "monitor_steps.parquet").step) == [0, 10]  # saved before the loggers
    assert monitor.maybe(10) is None  # measured: not taken again
    if errors == "warn":
        assert [r.getMessage() for r in caplog.records].count(
            "monitor: logger Broken failed at step 0 (disk full); the monitor goes on"
        ) == 1 and not any("step 10" in r.getMessage() for r in caplog.records)
    with pytest.raises(ConfigError, match="^logger_errors: 'warn' or 'raise'"):
        _switch_monitor(logger_errors="ignore")
