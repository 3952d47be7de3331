"""One experiment across two papers: the general transformer of Wang et al. (two attention layers, dot-product and
learnable ALiBi-type terms, no copier or selector built in; docs/conventions.md#wang-1) trained on the in-context
n-gram chains of Chen et al. (docs/conventions.md#chen-1): a bigram chain (parents {1}) and the trigram chain
with parents {1, 2}.

Does an unstructured transformer pass through the unigram → bigram → n-gram stages reported for statistical
induction heads, and does its layer 1 copy the same lags that Chen's selector picks?  Measured on held-out
sequences at the last position (the query x_{L+1}), over training: the KL divergence KL(estimator ‖ model) and
the total variation to the uniform law, the in-context unigram and bigram estimators and the Bayes predictor;
the TransformerLens previous-token (best layer-1 head) and induction (best layer-2 head) scores on the same
sequences; and each layer-1 head's mean attention at lags 1..``max_lag`` (its learned lag weights).

``t_unigram`` / ``t_bigram`` / ``t_bayes``: the first evaluation step at which the model is closer (in KL) to
that estimator than to the one before it (uniform → unigram → bigram → Bayes); None if never.  For the bigram
chain the Bayes predictor *is* the bigram estimator, so its ``t_bayes`` is None by definition.  Training: next-
token cross-entropy at every position on fresh sequences each step (online, seeded), Adam.  Top-level summary
keys are those of the headline chain ``task.parents`` (the trigram by default); ``settings`` holds each chain's,
the ``compare`` chains (the bigram by default) first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from inductionlab import plots, rng
from inductionlab.analysis.heads import head_scores
from inductionlab.config import check_seeds, require, set_here
from inductionlab.experiments.experiment import NATS, Experiment, op_elements
from inductionlab.models import transformer as tf
from inductionlab.models.transformer import ArchitectureConfig
from inductionlab.runs import Results, RunContext
from inductionlab.tasks.markov import MarkovConfig, reference_predictors, sample
from inductionlab.train.autograd import TrainConfig, pack, train
from inductionlab.train.interventions import InterventionConfig, build, check, forward_hooks
from inductionlab.train.next_token import token_losses
from inductionlab.train.transformer_interventions import transformer_family

REFERENCES = ("uniform", "unigram", "bigram", "bayes")  # the stage order


def _parents(setting: str) -> tuple[int, ...]:
    return tuple(int(p) for p in setting.split("+"))


@dataclass(frozen=True)
class Config:
    task: MarkovConfig = field(default_factory=MarkovConfig)  # the headline chain: vocabulary, parents, L and α
    compare: tuple[str, ...] = ("1",)  # chains trained first, beside it: parent lags joined by "+", e.g. 1 (bigram)
    model: ArchitectureConfig = field(
        default_factory=lambda: ArchitectureConfig(d_model=32, n_heads=2, init_std=0.05)
    )  # its vocabulary is task.vocab_size
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            optimizer="adam", lr=3e-3, steps=3000, batch_size=64, eval_every=100, eval_log_points=10
        )
    )
    eval_size: int = 512  # held-out sequences
    max_lag: int = 4  # layer-1 lag weights reported for lags 1..max_lag
    seeds: tuple[int, ...] = (0,)  # the run axis: one model per seed, trained together (docs/conventions.md#seeds)
    intervene: InterventionConfig = field(default_factory=InterventionConfig)  # e.g. --intervene.ablate blocks.0.attn

    def __post_init__(self) -> None:
        check_seeds(self.seeds)
        set_here(self.train, "train", {"seed": 0}, "seeds (the batches are drawn from the first seed)")
        for s in self.compare:
            require(
                all(p.strip().isdigit() and int(p) >= 1 for p in s.split("+")),
                "compare",
                f"each chain is positive lags joined by '+', such as 1+2 (chains are comma-separated); got {s!r}",
            )
            replace(self.task, parents=_parents(s))  # validates the lags against task.L
        require(
            len(set(self.settings)) == len(self.settings),
            "compare",
            f"chains must differ from each other and from task.parents, got {list(self.settings)}",
        )
        require(self.model.n_layers == 2, "model.n_layers", "needs 2 layers (previous-token, then induction)")
        require(self.eval_size >= 1 and 1 <= self.max_lag < self.task.L, "max_lag", "needs 1 ≤ max_lag < task.L")
        require(
            all(max(_parents(s)) <= self.max_lag for s in self.settings),
            "max_lag",
            f"must reach every parent lag (the parent mass is read from lags 1..max_lag), got {self.max_lag}",
        )
        check(self.intervene, transformer_family(self.model.build(self.task.vocab_size)), [self.train.steps])

    @property
    def settings(self) -> tuple[str, ...]:
        """Every chain trained, as parent lags joined by "+": the ``compare`` chains, then ``task.parents``."""
        return (*("+".join(str(p) for p in _parents(s)) for s in self.compare), "+".join(map(str, self.task.parents)))


CONFIG = Config()
PRESETS = {
    "quick": {"train.steps": 800},
    "smoke": {"train.steps": 20, "train.eval_every": 10, "train.eval_log_points": 0, "eval_size": 16, "task.L": 20},
}


def _kl_tv(ref: torch.Tensor, q: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean KL(ref ‖ q) and TV over sequences, per run: ref (1 or S, B, d), q (S, B, d)."""
    kl = (ref * (ref.clamp_min(1e-300).log() - q.clamp_min(1e-300).log())).sum(-1).mean(-1)
    return kl.numpy(), (0.5 * (ref - q).abs().sum(-1)).mean(-1).numpy()


def _evaluate(cfg: Config, model: tf.TransformerConfig, held_out: torch.Tensor, refs: dict, views, hooks: tf.Hooks):
    """The evaluation function of one chain: distances to every reference, head scores and layer-1 lag weights;
    ``hooks``: the model's forward hooks (an ablation), applied to the predictions as in training."""

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        params = views(theta)
        with torch.no_grad():
            logits, cache = tf.forward(model, params, held_out[:, :-1].unsqueeze(0), keep=True, hooks=hooks)
        q = logits[:, :, -1].double().softmax(-1)  # (S, B, d): the prediction of x_{L+1}
        row: dict[str, np.ndarray] = {}
        for name in REFERENCES:
            row[f"kl_{name}"], row[f"tv_{name}"] = _kl_tv(refs[name], q)
        scores = head_scores(model, params, held_out[:, :-1], held_out.shape[1] // 2, cache=None if hooks else cache)
        row["previous_token_score"] = scores["previous_token"][:, 0].amax(-1).double().numpy()
        row["induction_score"] = scores["induction"][:, 1].amax(-1).double().numpy()
        pattern = cache["blocks.0.attn.hook_pattern"]  # (S, B, H, L, L)
        for j in range(1, cfg.max_lag + 1):
            lag = torch.diagonal(pattern[..., cfg.max_lag :, :], offset=cfg.max_lag - j, dim1=-2, dim2=-1)
            for h in range(model.n_heads):
                row[f"lag_h{h}_{j}"] = lag[:, :, h].mean((1, 2)).double().numpy()
        return row

    return evaluate


def _train_chain(cfg: Config, setting: str, ctx: RunContext) -> pd.DataFrame:
    task = replace(cfg.task, parents=_parents(setting))
    model = cfg.model.build(task.vocab_size)
    theta0, views = pack(tf.init_per_seed(model, cfg.seeds))
    hooks, ablations = build(cfg.intervene, transformer_family(model))
    fhooks = forward_hooks(ablations)
    held_out, _ = sample(task, cfg.eval_size, rng.numpy_generator(rng.derive(cfg.seeds[0], "held-out"), *task.parents))
    refs = reference_predictors(task, held_out.unsqueeze(0))
    refs["uniform"] = torch.full_like(refs["bayes"], 1.0 / task.vocab_size)

    def batch(g: torch.Generator) -> torch.Tensor:  # fresh sequences each step, seeded by the loop's generator
        seed = int(torch.randint(0, 2**62, (1,), generator=g))
        return sample(task, cfg.train.batch_size, rng.numpy_generator(seed))[0]

    _, metrics = train(
        replace(cfg.train, seed=rng.derive(cfg.seeds[0])),  # each data draw its own batches (docs/conventions.md#seeds)
        theta0,
        lambda theta, x: token_losses(model, views(theta), x, fhooks).mean((1, 2)),
        batch,
        _evaluate(cfg, model, held_out, refs, views, fhooks),
        ctx.child(f"parents_{setting.replace('+', '_')}"),
        hooks=hooks,
        desc=f"parents {{{setting.replace('+', ',')}}}",
        model={"family": "transformer", "config": model},
    )
    return metrics.assign(parents=setting)


def _first(m: pd.DataFrame, closer: str, than: str) -> float | None:
    hit = m.step[m[f"kl_{closer}"] < m[f"kl_{than}"]]
    return float(hit.iloc[0]) if len(hit) else None


def chain_summary(m: pd.DataFrame, setting: str, max_lag: int, n_heads: int) -> dict:
    """Stage times, final distances and scores, each layer-1 head's attention at lags 1..max_lag (the lag-weight
    table), its top lag, and ``layer1_parent_mass``: the attention on the parent lags, averaged over the heads
    (means over runs)."""
    mean = m.groupby("step").mean(numeric_only=True).reset_index()
    last = mean.iloc[-1]
    times = {f"t_{b}": _first(mean, b, a) for a, b in zip(REFERENCES, REFERENCES[1:])}
    weights = {
        f"head{h}": {str(j): float(last[f"lag_h{h}_{j}"]) for j in range(1, max_lag + 1)} for h in range(n_heads)
    }
    top = [int(np.argmax(list(w.values()))) + 1 for w in weights.values()]
    parent_mass = np.mean([sum(w[str(r)] for r in _parents(setting)) for w in weights.values()])
    reached = [t for t in times.values() if t is not None]
    return {
        **times,
        "stages_in_order": None not in times.values() and reached == sorted(reached),
        "final_kl_to_bayes": float(last.kl_bayes),
        "final_tv_to_bayes": float(last.tv_bayes),
        "final_kl": {name: float(last[f"kl_{name}"]) for name in REFERENCES},
        "final_induction_score": float(last.induction_score),
        "final_previous_token_score": float(last.previous_token_score),
        "layer1_lag_weights": weights,
        "layer1_top_lags": top,
        "layer1_lags_are_parents": sorted(set(top)) == sorted(_parents(setting)),
        "layer1_parent_mass": float(parent_mass),
    }


def run(cfg: Config, ctx: RunContext) -> Results:
    tables, settings = [], {}
    for setting in cfg.settings:
        m = _train_chain(cfg, setting, ctx)
        tables.append(m)
        settings[setting] = chain_summary(m, setting, cfg.max_lag, cfg.model.n_heads)
    return Results(
        {"metrics": pd.concat(tables, ignore_index=True)}, {**settings[cfg.settings[-1]], "settings": settings}
    )


def plot(results: Results, out_dir: Path) -> list[Path]:
    m, s = results.tables["metrics"], results.summary["settings"]
    fig, axes = plots.subplots(3, len(s), width=4.4, height=3.2)
    for row, (setting, g) in enumerate(m.groupby("parents", sort=False)):
        mean = g.groupby("step").mean(numeric_only=True)
        steps = np.maximum(mean.index, 1)
        ax, hx, lx = axes[3 * row : 3 * row + 3]
        for k, name in enumerate(REFERENCES):
            ax.plot(steps, mean[f"kl_{name}"], color=f"C{k}", label=f"KL({name} ‖ model)")
            t = s[setting].get(f"t_{name}")
            if t is not None:
                ax.axvline(max(t, 1), color=f"C{k}", ls=":", lw=1)
        ax.set(xscale="log", yscale="log", xlabel="step", ylabel="KL at the query (nats)")
        ax.set_title(
            f"parents {{{setting.replace('+', ',')}}}: distance to each estimator (dotted: stage times)", fontsize=8
        )
        ax.legend(fontsize=6)
        hx.plot(steps, mean.previous_token_score, color="C4", label="previous-token (best layer-1 head)")
        hx.plot(steps, mean.induction_score, color="C3", label="induction (best layer-2 head)")
        hx.set(xscale="log", xlabel="step", ylabel="TransformerLens score (mul)", ylim=(0, 1))
        hx.set_title("head scores on held-out chains", fontsize=8)
        hx.legend(fontsize=6)
        lags = sorted({int(c.rsplit("_", 1)[1]) for c in mean.columns if c.startswith("lag_h")})
        heads = sorted({int(c[5:].split("_")[0]) for c in mean.columns if c.startswith("lag_h")})
        for h, style in zip(heads, ("-", "--", ":", "-.")):
            for j in lags:
                lx.plot(steps, mean[f"lag_h{h}_{j}"], style, color=f"C{j - 1}", label=f"head {h}, lag {j}")
        lx.set(xscale="log", xlabel="step", ylabel="mean attention weight", ylim=(0, 1))
        lx.set_title(f"layer-1 lag weights; top lags {s[setting]['layer1_top_lags']}", fontsize=8)
        lx.legend(fontsize=5, ncol=2)
    return [plots.save(fig, Path(out_dir) / "markov_transformer.png")]


EXPERIMENT = Experiment(
    op_size=lambda c: op_elements(
        c.train.batch_size, c.task.L, c.model.n_heads * c.model.d_model
    ),  # docs/conventions.md#threads
    loss_unit=NATS,
    name="markov-transformer",
    description="Wang et al.'s transformer on Chen et al.'s n-gram chains: unigram → bigram → Bayes stages, heads, lags",
    figure="Wang et al. × Chen et al. (stages)",
    wall="~3.5 min",  # default, one core beside another run: 211 s (2026-12-02, AMD EPYC; the fused layer)
    cpu_only="a d = 32 two-layer model on 3 tokens: the step is Python and sampling overhead",
    headline=("t_unigram", "t_bigram", "t_bayes", "final_kl_to_bayes", "final_induction_score", "layer1_top_lags"),
    config=CONFIG,
    presets=PRESETS,
    run=run,
    plot=plot,
)
