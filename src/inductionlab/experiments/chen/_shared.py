"""What Chen et al.'s experiments that train variants of the model share (``markov-stages``, ``markov-joint``,
``markov-full``; docs/conventions.md#chen-5-1 and docs/conventions.md#chen-5-2): train several variants (FFN degree
D, loss, schedule) on the same finite datasets, summarise each, draw one figure row per variant.

Per variant the summary has ``p_selected`` {subset: final p_S}, ``selected_subset``, ``copier_attention`` (and
``copier_attention_initial``: the least attention a head of the selected subset puts on the lag it copies, after
and before training; ``copier_attention_per_seed`` the same per run), ``copier_attention_12`` (the least
attention of heads 1 and 2 on lags 1 and 2, the parents {1,2} of the paper's trigram chain, whatever was selected;
``copier_attention_12_per_seed`` per run), ``a_final``,
``a_log_slope`` and ``a_log_r2`` (the fit a ≈ slope·ln t + c over the last stage that trains a, the acceptance check of
docs/conventions.md#chen-8), the final losses, the Bayes validation loss, ``tv_bayes`` and ``gih_argmax_agreement`` — the fraction of
validation sequences on which the model's argmax is an argmax of the GIH estimator (a → ∞) over the lags its
selected heads copy (docs/conventions.md#chen-4-1, docs/conventions.md#chen-8).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import torch

from inductionlab import plots
from inductionlab.analysis.gih import argmax_agreement, gih_predictor
from inductionlab.models import chen
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig, datasets, reference_predictors
from inductionlab.train.chen import StagedConfig, a_log_fit, train_staged
from inductionlab.train.chen_interventions import chen_family
from inductionlab.train.interventions import InterventionConfig, build

Variant = tuple[str, chen.ChenConfig, StagedConfig]


Loss = Literal["ce", "softmax_of_probs"]


def summarize(
    model: chen.ChenConfig,
    task: MarkovConfig,
    params: dict[str, torch.Tensor],
    metrics: pd.DataFrame,
    val_tokens: torch.Tensor,
) -> dict:
    """The per-variant summary described in the module docstring (means over runs)."""
    last = metrics[metrics.epoch == metrics.epoch.max()]
    p = {chen.subset_label(s): float(last[f"p_{chen.subset_label(s)}"].mean()) for s in model.subsets}
    best = max(
        range(len(model.subsets)), key=lambda k: (p[chen.subset_label(model.subsets[k])], -len(model.subsets[k]))
    )
    lags = chen.selected_lags(params, model.subsets[best])
    y = chen.predict(model, params, chen.make_batch(model, val_tokens)).double()  # (S, B, d)
    inputs = val_tokens[..., :-1]
    gih = torch.stack([gih_predictor(x, lags, model.vocab_size) for x in inputs])
    bayes = reference_predictors(task, val_tokens)["bayes"]
    labels = val_tokens[..., -1:]
    slope, r2 = a_log_fit(metrics)
    runs = range(params["w"].shape[0])
    heads_12 = [float(chen.lag_attention(model, params["w"][s])[:2].min()) for s in runs]
    return {
        "p_selected": p,
        "selected_subset": chen.subset_label(model.subsets[best]),
        "selected_lags": list(lags),
        "copier_attention": chen.copier_attention(model, params["w"][0], model.subsets[best]),
        "copier_attention_per_seed": [chen.copier_attention(model, params["w"][s], model.subsets[best]) for s in runs],
        "copier_attention_12": heads_12[0],
        "copier_attention_12_per_seed": heads_12,
        "copier_attention_initial": chen.copier_attention(
            model, chen.init_params(model, 1)["w"][0], model.subsets[best]
        ),
        "a_final": float(last.a.mean()),
        "a_log_slope": slope,
        "a_log_r2": r2,
        "final_train_loss": float(last.train_loss.mean()),
        "final_val_loss": float(last.val_loss.mean()),
        "bayes_val_loss": float(-bayes.gather(-1, labels).log().mean()),
        "tv_bayes": float(last.tv_bayes.mean()),
        "gih_argmax_agreement": float(argmax_agreement(y, gih).mean()),
    }


def run_variants(
    task: MarkovConfig,
    variants: list[Variant],
    seeds: tuple[int, ...],
    n_samples: int,
    n_val: int,
    ctx: RunContext,
    intervene: InterventionConfig = InterventionConfig(),
    compare_runs: int = 0,
) -> Results:
    """Train every variant on the same datasets (one per seed, on the run axis); the first is the headline.
    ``intervene``: interventions applied to every variant (e.g. ``freeze=("copier",)``); ``compare_runs`` > 0:
    the variants after the first train on the datasets of the first ``compare_runs`` seeds only."""
    all_train, all_val = datasets(task, seeds, n_samples, n_val)
    tables, rpe, runs = [], [], {}
    for i, (label, model, staged) in enumerate(variants):
        n = compare_runs if i and compare_runs else len(seeds)
        train_tokens, val_tokens = all_train[:n], all_val[:n]  # (S, n, L + 1): the first n seeds' datasets
        slug = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_")
        hooks, _ = build(intervene, chen_family(model))
        params, metrics = train_staged(
            model, staged, task, train_tokens, val_tokens, ctx.child(slug), hooks, desc=label
        )
        tables.append(metrics.assign(variant=label))
        # which lags each head may attend to, over lags 1..M as w has them (the full variant's lags add 0)
        allowed = chen.allowed_lags(model)[:, -model.window :].numpy().ravel()
        for when, w in (("initial", chen.init_params(model, 1)["w"][0]), ("final", params["w"][0])):
            h, j = np.indices(w.shape)
            rpe.append(
                pd.DataFrame(
                    {
                        "variant": label,
                        "when": when,
                        "head": h.ravel() + 1,
                        "lag": j.ravel() + 1,
                        "w": w.double().numpy().ravel(),
                        "allowed": allowed,
                    }
                )
            )
        runs[label] = summarize(model, task, params, metrics, val_tokens)
    headline = runs[variants[0][0]]
    keys: tuple[str, ...] = ("p_selected", "a_log_slope", "gih_argmax_agreement", "copier_attention")
    keys += ("copier_attention_per_seed",)
    keys += ("copier_attention_12", "copier_attention_12_per_seed")
    summary = {k: headline[k] for k in keys} | {"runs": runs}
    if intervene:
        summary["interventions"] = intervene.entries()
    return Results({"metrics": pd.concat(tables, ignore_index=True), "rpe": pd.concat(rpe, ignore_index=True)}, summary)


def plot_variants(results: Results, out_dir: Path, name: str) -> list[Path]:
    """One row per variant: p_S(t) early in training, final p_S, RPE before/after, a(t) on a log-t axis with
    its ln t fit, and the losses on a log-epoch axis beside the Bayes loss.  A second figure shows the
    headline variant's layer-1 attention over the first 10 positions, per head (grey: no attention); a third
    (:func:`_lag_weights`) each head's attention over its lags and p_S through the whole of training."""
    metrics, rpe, runs = results.tables["metrics"], results.tables["rpe"], results.summary["runs"]
    labels = list(runs)
    fig, axes = plots.subplots(2, 3 * len(labels), width=3.9, height=3.0)  # per variant: 3 rows of 2 panels
    for row, label in enumerate(labels):
        m = (
            metrics[metrics.variant == label]
            .groupby(["stage", "stage_name", "step", "epoch"])
            .mean(numeric_only=True)
            .reset_index()
            .sort_values("epoch")
        )
        s, ax = runs[label], axes[6 * row : 6 * row + 6]
        early = m[m.epoch <= 200]
        for col in (c for c in m.columns if c.startswith("p_")):
            ax[0].plot(early.epoch, early[col], label=col[2:], lw=2.5 if col[2:] == s["selected_subset"] else 1)
        ax[0].set(xlabel="epoch", ylabel=r"$p_S$", title=f"{label}\nselection weights (first 200 epochs)")
        ax[0].legend(fontsize=6, ncol=2, title="subset S", title_fontsize=6)
        ps = s["p_selected"]
        ax[1].bar(
            range(len(ps)), list(ps.values()), color=["#1b9e77" if k == s["selected_subset"] else "#999999" for k in ps]
        )
        ax[1].set_xticks(range(len(ps)), list(ps), rotation=45, fontsize=7)
        ax[1].set(xlabel="subset S", ylabel=r"final $p_S$", title=f"final selection: {s['selected_subset']}")
        _rpe_panel(fig, ax[2], rpe[rpe.variant == label])
        trains_a = m[m.stage_name.str.contains("a")]
        a_stage = trains_a[(trains_a.stage == trains_a.stage.max()) & (trains_a.step > 0)]
        ax[3].semilogx(a_stage.step, a_stage.a, "o-", ms=3, color=plots.CURVE_COLORS["w_KQ"])
        ax[3].set(
            xlabel="epoch of the stage training $a$",
            ylabel="classifier $a$",
            title=f"$a(t)$: slope {plots.num(s['a_log_slope']):.2f} per ln t ($R^2$ {plots.num(s['a_log_r2']):.2f})",
        )
        ax[4].semilogx(m.epoch.clip(lower=1), m.train_loss, label="train")
        ax[4].semilogx(m.epoch.clip(lower=1), m.val_loss, label="validation")
        ax[4].axhline(s["bayes_val_loss"], ls="--", color="grey", label="Bayes cross-entropy (validation)")
        ax[4].set(xlabel="epoch", ylabel="loss", title="train and validation loss")
        ax[4].legend(fontsize=7)
        ax[5].axis("off")
        text = _numbers(s) + _interventions(results.summary.get("interventions"))
        ax[5].text(0.02, 0.95, text, va="top", fontsize=8, family="monospace", transform=ax[5].transAxes)
    final = rpe[(rpe.variant == labels[0]) & (rpe.when == "final")]
    paths = [
        plots.save(fig, Path(out_dir) / f"{name}.png"),
        _attention_maps(final, Path(out_dir) / f"{name}_attention.png"),
    ]
    if "allowed" in rpe:  # runs saved before the column was added have no lag-weight figure
        paths.append(_lag_weights(metrics, rpe, runs, Path(out_dir) / f"{name}_lags.png"))
    return paths


def _rpe_panel(fig, ax, g: pd.DataFrame) -> None:
    """The copier RPE weights w (head × lag) of one variant, initial above final."""
    mats = [g[g.when == w].pivot(index="head", columns="lag", values="w").to_numpy() for w in ("initial", "final")]
    im = ax.imshow(np.vstack([mats[0], np.full((1, mats[0].shape[1]), np.nan), mats[1]]), cmap="viridis", aspect="auto")
    ax.set(title="copier RPE weights of run 0\n(top: initial, bottom: final)", xlabel="lag", ylabel="head")
    ax.set_xticks(range(mats[0].shape[1]), range(1, mats[0].shape[1] + 1))
    ax.set_yticks([])
    fig.colorbar(im, ax=ax, shrink=0.8, label="RPE weight $w$")


def _lag_weights(metrics: pd.DataFrame, rpe: pd.DataFrame, runs: dict, path: Path) -> Path:
    """One row per variant: per head, softmax(w_h) over the lags the head may attend to (the simplified model's
    attention once all of them are in the sequence; the full one adds its dot-product scores), and p_S on a log
    scale (a subset's ln p_S moves at the rate of its marginal gain, as p_S = c_S² / Σ c²), both over every epoch
    on a log axis (run 0)."""
    heads = sorted(rpe["head"].unique())
    fig, axes = plots.subplots(len(heads) + 1, len(runs), width=3.3, height=2.8)
    for row, label in enumerate(runs):
        m = metrics[(metrics.variant == label) & (metrics.run == 0)].sort_values("epoch")
        epoch = m.epoch.clip(lower=1)
        ax = axes[row * (len(heads) + 1) : (row + 1) * (len(heads) + 1)]
        g = rpe[(rpe.variant == label) & (rpe.when == "initial")]
        for i, h in enumerate(heads):
            lags = g[(g["head"] == h) & g.allowed].lag.tolist()
            w = m[[f"w_h{h}_lag{lag}" for lag in lags]].to_numpy()
            weights = np.exp(w - w.max(1, keepdims=True))
            weights /= weights.sum(1, keepdims=True)
            for k, lag in enumerate(lags):
                ax[i].semilogx(
                    epoch, weights[:, k], label=f"lag {lag}", color=f"C{lag - 1}", ls=("-", "--", ":")[k % 3]
                )
            ax[i].set(xlabel="epoch", ylabel="softmax of the RPE $w_h$", ylim=(-0.02, 1.02), title=f"{label}\nhead {h}")
            ax[i].legend(fontsize=6)
        selected = runs[label]["selected_subset"]
        for col in (c for c in m.columns if c.startswith("p_")):
            ax[-1].loglog(epoch, m[col].clip(lower=1e-100), label=col[2:], lw=2.5 if col[2:] == selected else 1)
        ax[-1].set(xlabel="epoch", ylabel=r"$p_S$ (log scale)", ylim=(1e-100, 3), title="selection weights $p_S$")
        ax[-1].legend(fontsize=6, ncol=2, title="subset S", title_fontsize=6)
    return plots.save(fig, path)


def _numbers(s: dict) -> str:
    """The variant's headline numbers as a small text panel."""
    lines = [
        f"selected subset    {s['selected_subset']}",
        f"GIH agreement      {plots.num(s['gih_argmax_agreement']):.3f}",
        f"a slope per ln t   {plots.num(s['a_log_slope']):.2f}",
        "final p_S:",
    ]
    lines += [f"  {k:<16} {v:.3f}" for k, v in s["p_selected"].items()]
    return "\n".join(lines)


def _interventions(entries: dict | None) -> str:
    """The run's interventions (windows in epochs of each stage) for the numbers panel."""
    if not entries:
        return ""
    return "\ninterventions (epochs of each stage):\n" + "\n".join(
        f"  {kind} {entry}" for kind, values in entries.items() for entry in values
    )


def _attention_maps(rpe: pd.DataFrame, path: Path, n: int = 10) -> Path:
    """Per head, layer-1 attention probabilities of query i over keys j < i for the first n positions."""
    heads = sorted(rpe["head"].unique())
    fig, axes = plots.subplots(min(len(heads), 3), -(-len(heads) // 3), width=3.0, height=2.8)
    for ax, h in zip(axes, heads):
        w = rpe[rpe["head"] == h].sort_values("lag").w.to_numpy()
        logits = np.full((n, n), -np.inf)
        for i in range(n):
            for lag in range(1, min(i, len(w)) + 1):
                logits[i, i - lag] = w[lag - 1]
        with np.errstate(invalid="ignore"):
            probs = np.exp(logits - logits.max(1, keepdims=True))
            probs /= probs.sum(1, keepdims=True)
        cmap = plots.plt.get_cmap("viridis").with_extremes(bad="#cccccc")
        im = ax.imshow(np.ma.masked_invalid(np.where(np.isinf(logits), np.nan, probs)), cmap=cmap, vmin=0, vmax=1)
        ax.set(title=f"head {h}", xlabel="key position j", ylabel="query position i")
    for ax in axes[len(heads) :]:
        ax.set_visible(False)
    fig.colorbar(im, ax=list(axes[: len(heads)]), shrink=0.8, label="attention (grey: none)")
    fig.suptitle("Layer-1 attention of run 0 over the first positions")
    return plots.save(fig, path)
