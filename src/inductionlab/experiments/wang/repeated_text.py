"""The induction-head phase change on real words, within a CPU budget : the WikiText model of
``wikitext`` trained on text sequences whose second half repeats their first half (the repeated-token task of
Olsson et al. 2022, here over real words; :func:`inductionlab.tasks.text.repeated_chunks`).  Plain text needs
far more tokens than a CPU run sees before induction heads form; with a repeat in every sequence the copy
signal is strong, and the same model shows the plateau, the abrupt drop of the loss on the repeated tokens
and the induction score rising above 0.5 together.

Reported: ``t_loss_drop`` — the drop of the loss on repeated tokens, measured against the loss elsewhere:
the first step at which loss_other − loss_repeated (what copying from the context gains) reaches half its
final value (no drop — NaN — if the final gain is below 0.5 nats); the plateau is the flat stretch of that
gain — ``t_induction_half`` (first step with the best layer-2 induction score ≥ 0.5),
``final_induction_score``, the times ‖p‖ and ‖(W_K, W_Q)‖ move (as in ``wikitext``), also for the layer-2
(induction) heads alone (``t_half_wkq_growth_layer2``), and ``p_learned_first`` (‖p‖ reaches half its final
value before ‖(W_K, W_Q)‖ doubles).

Choices (config fields): sequences of L = 100 tokens (50 words, then their repeat), bf16 autocast as in
``wikitext``, and SGD with heavy-ball momentum 0.9, lr 0.3 and each run's gradient clipped to norm 0.5, for
4000 steps.  Why this optimiser: the paper's plain SGD lr 0.1 keeps the time-scale separation but is far too
slow for a CPU budget (‖(W_K, W_Q)‖ had not moved after 600 steps; with lr 0.3 for 9000 steps ‖p‖ and the
previous-token head were learned but no induction head formed; lr 1 diverged).  Momentum makes the steps
~10× longer and clipping keeps them stable, and both keep the gradient's direction, so parameters with larger
gradients (p) still move first.  Adam does not: it normalises every coordinate, and the tiny, consistent
gradients of the layer-1 W_K, W_Q made ‖(W_K, W_Q)‖ double by step 163, before ‖p‖ was learned (Adam lr 3e-3:
the induction head at step ~1040, but the all-layer order lost).  Measured (seed 0): lr 0.6 made the layer-2
W_K, W_Q grow too fast and the induction head formed only partly (score ≤ 0.29 at 3000 steps).

Controls (docs/conventions.md#controls): ``plain-text`` trains on plain chunks (``--repeat false``) and is measured
on the same repeated sequences; ``adam`` swaps in Adam, which moves W_K, W_Q as fast as p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from inductionlab import plots, rng
from inductionlab.analysis.ablation import head_ablation
from inductionlab.analysis.heads import head_scores
from inductionlab.analysis.phases import first_crossing, plateau
from inductionlab.experiments.experiment import NATS, Experiment, op_elements
from inductionlab.experiments.wang import _shared
from inductionlab.experiments.wang._shared import (
    SMOKE,
    intervention_windows,
    norm_times,
    plot_norms,
    plot_scores,
    train_on_text,
    use_bf16,
)
from inductionlab.models import transformer as tf
from inductionlab.monitor.settings import MonitorConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.induction import repeated_random_tokens
from inductionlab.tasks.text import TextConfig, tokenizer_needs
from inductionlab.train.autograd import TrainConfig

MIN_GAIN = 0.5  # nats: the least final copy gain that counts as a drop, and the least that counts as copying
ABLATION_FLOOR = 0.5  # of the copying gain (at least MIN_GAIN): an ablation that costs less is not "necessary"
INDUCTION_THRESHOLD = MonitorConfig.threshold  # a head is an induction head once its score reaches this


@dataclass(frozen=True)
class Config(_shared.Config):
    """The text experiments' config (docs/conventions.md#wang-6-6) and ``repeat``: train on sequences whose second
    half repeats the first (False: on plain chunks of text, the control ``plain-text``; the evaluation stays the
    repeated one, :func:`inductionlab.experiments.wang._shared.repeated_measures`)."""

    repeat: bool = True  # train on sequences with a repeated half (False: plain text, the control plain-text)


CONFIG = Config(
    data=TextConfig(L=100),
    train=TrainConfig(
        optimizer="sgd",
        lr=0.3,
        momentum=0.9,
        clip_norm=0.5,
        steps=4000,
        batch_size=32,
        eval_every=50,
        eval_log_points=20,
        checkpoint_every=100,
    ),
)
PRESETS: dict[str, dict[str, Any]] = {"quick": {"train.steps": 800}, "smoke": SMOKE}


def run(cfg: Config, ctx: RunContext) -> Results:
    corpus, model, params, metrics = train_on_text(cfg, ctx, repeated=True, desc="repeated-text", plain=not cfg.repeat)
    ablation, top = _ablation(cfg, model, params)
    mean = metrics.groupby("step").mean(numeric_only=True)
    steps = mean.index.to_numpy(float)
    benefit = (mean.loss_other - mean.loss_repeated).to_numpy()  # what copying from the context gains
    start, end = plateau(steps, benefit)
    # no drop unless copying ends up worth something (MIN_GAIN nats): else half of a tiny gain is noise
    t_drop = first_crossing(steps, benefit, 0.5 * benefit[-1], "up") if benefit[-1] >= MIN_GAIN else math.inf
    t_ind = first_crossing(steps, mean.induction_score.to_numpy(), 0.5, "up")
    times = norm_times(steps, mean.p_norm.to_numpy(), mean.wkq_norm.to_numpy())
    t_double = times["t_double_wkq_norm"]  # +inf: never doubled, later than every step
    # an event that never happens coincides with nothing: the gap is infinite (docs/conventions.md#never)
    gap = math.inf if math.isinf(t_drop) or math.isinf(t_ind) else abs(t_drop - t_ind) / cfg.train.steps
    summary = {
        "precision": "bf16 autocast" if use_bf16(cfg) else "float32",
        "t_loss_drop": t_drop,
        "t_induction_half": t_ind,
        "final_induction_score": float(mean.induction_score.iloc[-1]),
        "drop_vs_induction_gap_fraction": gap,
        "copy_gain": float(benefit[-1]),
        "plateau": {"start": start, "end": end},
        **times,
        "p_learned_first": bool(times["t_half_p_norm"] < t_double),
        "t_half_wkq_growth_layer2": norm_times(steps, mean.p_norm.to_numpy(), mean.wkq_norm_l2.to_numpy())[
            "t_half_wkq_growth"
        ],
        "final": {
            k: float(mean[k].iloc[-1])
            for k in (
                "loss_repeated",
                "loss_other",
                "val_loss",
                "p_norm",
                "wkq_norm",
                "previous_token_score",
                "prefix_matching_score",
            )
        },
        "initial": {k: float(mean[k].iloc[0]) for k in ("loss_repeated", "loss_other", "val_loss")},
    }
    return Results({"metrics": metrics, "ablation": ablation}, summary | top | intervention_windows(cfg))


def _ablation(cfg: Config, model: tf.TransformerConfig, params: tf.Params) -> tuple[pd.DataFrame, dict]:
    """Each head zero-ablated alone (:func:`inductionlab.analysis.ablation.head_ablation`) on repeated random tokens
    (period ``eval.score_period``, drawn from ``eval.seed`` + 1): the loss change overall and on the copyable
    positions (the second copy), beside the head's scores; and the copying gain of the intact model there, its loss
    on the first copy (fresh tokens) less its loss on the copyable positions (run 0; the circuit's costs:
    :func:`_circuit`)."""
    T = cfg.eval.score_period
    tokens = repeated_random_tokens(cfg.eval.score_batch, T, 2, rng.generator(cfg.eval.seed, "eval"), vocab=model.vocab)
    targets = tokens[:, 1:]

    def per_position(logits: torch.Tensor) -> torch.Tensor:  # (S, B, 2T − 1)
        S = logits.shape[0]
        flat = F.cross_entropy(logits.flatten(0, 2).float(), targets.expand(S, -1, -1).flatten(), reduction="none")
        return flat.view(S, *targets.shape)

    where = torch.zeros(targets.shape, dtype=torch.bool)
    where[:, T:] = True  # x_{i+1} follows an earlier copy of x_i
    result = head_ablation(model, params, tokens[:, :-1].unsqueeze(0), per_position, "zero", where)
    with torch.no_grad():
        base = per_position(tf.forward(model, params, tokens[:, :-1].unsqueeze(0))[0])[0]  # run 0: (B, 2T − 1)
    all_scores = head_scores(model, params, tokens, T, rows="matched")
    scores = all_scores["induction"]  # (S, n_layers, H)
    S, n_layers, H = scores.shape
    run, layer, head = (a.ravel() for a in np.indices((S, n_layers, H)))
    table = pd.DataFrame(
        {
            "run": run,
            "layer": layer,
            "head": head,
            "loss_change": result["total"].double().numpy().ravel(),
            "loss_change_repeated": result["where"].double().numpy().ravel(),
            "induction_score": scores.double().numpy().ravel(),
            "previous_token_score": all_scores["previous_token"].double().numpy().ravel(),
        }
    )
    return table, _circuit(table[table.run == 0], float(base[~where].mean() - base[where].mean()))


def _circuit(first: pd.DataFrame, gain: float) -> dict:
    """What ablating the circuit's heads costs in run 0's ablation table ``first``, against the copying ``gain``
    (floored at MIN_GAIN: a model that does not copy has no copying to lose).  ``ablation_cost``: the layer-1 head with
    the top previous-token score and the last layer's top induction head; ``ablation_smaller_over_larger``: the
    smaller over the larger, the larger floored at ABLATION_FLOOR of the gain (a head whose ablation costs less is
    not necessary, so two heads that do nothing give a ratio near 0, not noise over noise);
    ``induction_ablation_margin``: what the induction head's ablation costs more than its layer's next head's and
    more than nothing, over the gain.  An ablation that lowers the loss carries no copying
    (docs/conventions.md#ablation): a next head whose ablation helps does not lift the margin, and the costliest
    head (``top_ablation_head``, overall and in the last layer) is None where no ablation costs anything.  Over all
    layers the top ablation is either circuit head: the previous-token head feeds the induction head's keys
    (Theorem 4.1), so its ablation also removes copying."""
    last = first[first.layer == first.layer.max()]

    def top(rows: pd.DataFrame, column: str) -> list[int]:
        return rows.loc[rows[column].idxmax(), ["layer", "head"]].astype(int).tolist()

    def costliest(rows: pd.DataFrame) -> list[int] | None:
        return top(rows, "loss_change_repeated") if rows.loss_change_repeated.max() > 0 else None

    induction, previous = top(last, "induction_score"), top(first[first.layer == 0], "previous_token_score")
    cost = {  # the copying loss each of the circuit's two heads costs when ablated
        name: float(first.loss_change_repeated[(first["layer"] == lh[0]) & (first["head"] == lh[1])].iloc[0])
        for name, lh in (("induction", induction), ("previous_token", previous))
    }
    scale = max(gain, MIN_GAIN)
    others = last.loss_change_repeated[last["head"] != induction[1]]
    return {
        "ablation_copying_gain": gain,
        "top_previous_token_head": previous,
        "ablation_cost": cost,
        "ablation_smaller_over_larger": min(cost.values()) / max(*cost.values(), ABLATION_FLOOR * scale),
        "induction_ablation_margin": (cost["induction"] - max(float(others.max()), 0.0)) / scale,
        "top_ablation_head": costliest(first),
        "top_ablation_head_last_layer": costliest(last),
        "top_induction_head": induction,
        "top_ablation_is_top_induction": costliest(last) == induction,
        "top_ablation_overall_is_top_induction": costliest(first) == induction,
    }


def plot(results: Results, out_dir: Path) -> list[Path]:
    mean, s = results.tables["metrics"].groupby("step").mean(numeric_only=True), results.summary
    # taller than the house 3.4 in, with room between the panels: the middle one has a y label on each side (the third's
    # left label sits next to its right one) and up to three rows of legend below it, which shrink every axes of the
    # row; at 3.4 in its right label, ‖(W_K, W_Q)‖'s, grew past the shrunken axes to the figure's edge
    fig, (ax, bx, cx) = plots.subplots(3, width=4.3, height=4.0)
    fig.get_layout_engine().set(wspace=0.08)
    ax.plot(mean.index, mean.loss_repeated, color=plots.CURVE_COLORS["loss_IH2"], label="loss on repeated tokens")
    ax.plot(mean.index, mean.loss_other, color=plots.CURVE_COLORS["loss_G4"], label="loss elsewhere")
    for key, style in (("t_loss_drop", "--"), ("t_induction_half", ":")):
        if math.isfinite(plots.num(s[key])):
            ax.axvline(s[key], color="grey", ls=style, label=f"{key} = {s[key]:.0f}")
    ax.set(xlabel="step", ylabel="cross-entropy (validation)", title="repeated text")
    plots.mark_windows(ax, s.get("intervention_windows"), float(mean.index.max()))
    ax.legend(fontsize=7)
    plot_norms(bx, mean, s)
    plot_scores(cx, mean)
    paths = [plots.save(fig, Path(out_dir) / "repeated_text.png")]
    table = results.tables.get("ablation")
    if table is not None and len(table):
        paths.append(_plot_ablation(table[table.run == 0], s, Path(out_dir) / "repeated_text_ablation.png"))
    return paths


def _induction_head(scores: pd.Series) -> str:
    """The head with the largest induction score, called an induction head only when its score reaches the
    monitor's threshold (:class:`inductionlab.monitor.settings.MonitorConfig`, docs/monitor.md#phase-detection)."""
    (layer, head), best = scores.idxmax(), float(scores.max())
    if best >= INDUCTION_THRESHOLD:
        return f"induction head ({layer}, {head}), score {best:.2f} ≥ {INDUCTION_THRESHOLD:g}"
    return f"no induction head: best ({layer}, {head}), score {best:.2f}, below the threshold {INDUCTION_THRESHOLD:g}"


def _plot_ablation(run0: pd.DataFrame, s: dict, path: Path) -> Path:
    """Run 0's heads on a (layer, head) grid: the loss change on repeated tokens when each is zero-ablated (colour),
    with its induction score; the title names the heads whose ablation costs most and the induction head."""
    cells = run0.set_index(["layer", "head"])
    grid = cells.loss_change_repeated.unstack("head")  # (layers, heads)
    fig, (ax,) = plots.subplots(1, width=2.6 + 1.3 * grid.shape[1], height=2.0 + 1.0 * grid.shape[0])
    image = ax.imshow(grid.to_numpy(), cmap="viridis", aspect="auto")
    middle = float(np.nanmean(grid.to_numpy()))
    for (l, h), row in cells.iterrows():
        text = f"Δ {row.loss_change_repeated:.3g}\ninduction {row.induction_score:.2f}"
        color = "k" if row.loss_change_repeated > middle else "w"
        ax.text(h, l, text, ha="center", va="center", fontsize=7, color=color)
    ax.set_xticks(range(grid.shape[1]), [f"head {h}" for h in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [f"layer {l}" for l in grid.index])
    fig.colorbar(image, ax=ax, label="Δ: loss change on repeated tokens (nats)")
    top, last = (tuple(s[k]) if s.get(k) else "none" for k in ("top_ablation_head", "top_ablation_head_last_layer"))
    ax.set_title(
        f"zero ablation of each head, run 0 (layer, head)\nlargest Δ: {top} overall, {last} in the last layer\n"
        + _induction_head(cells.induction_score),
        fontsize=8,
    )
    return plots.save(fig, path)


EXPERIMENT = Experiment(
    op_size=lambda c: op_elements(
        c.train.batch_size, c.data.L, c.data.vocab_size
    ),  # the logits (docs/conventions.md#threads)
    devices=("cpu", "cuda"),
    loss_unit=NATS,
    needs=lambda c: tokenizer_needs(c.data),  # tokenizers for a BPE tokenizer (docs/conventions.md#extras)
    data="data.path",
    name="repeated-text",
    description="Real words with a repeated half: the induction-head phase change (loss drop, induction score) on CPU",
    figure="Wang et al. Fig. 5 (repeat)",
    wall="~5 min",  # default preset, 2 cores
    headline=(
        "t_loss_drop",
        "t_induction_half",
        "final_induction_score",
        "t_half_p_norm",
        "t_double_wkq_norm",
        "p_learned_first",
    ),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
