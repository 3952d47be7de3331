"""What ``fast-induction`` trains (docs/monitor.md#a-head-in-two-cpu-minutes): the data — windows of random tokens
repeated with a period of their own, or, for the negative control, each repeat shuffled — and the three two-layer
attention-only models, each with an induction-head monitor attached: the toolkit's general transformer on the
toolkit's loop (:func:`inductionlab.train.autograd.train`, every seed on the run axis), and a HuggingFace Llama and a
TransformerLens ``HookedTransformer`` on a plain PyTorch loop, one seed after the other.  ``transformers`` and
``transformer_lens`` are imported inside the functions that build their models, so that the registry loads without
them; :func:`needs` names each model's package, which the run checks before anything is written."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from inductionlab import rng
from inductionlab.config import require
from inductionlab.extras import require as require_extra
from inductionlab.models import transformer as tf
from inductionlab.monitor.adapters import toolkit_adapter
from inductionlab.monitor.core import Monitor
from inductionlab.monitor.data import repeated_window_tokens
from inductionlab.monitor.settings import MonitorConfig
from inductionlab.runs import RunContext
from inductionlab.train.autograd import TrainConfig, pack, train

MODELS = ("own", "hf", "tl")  # the toolkit's transformer, the HuggingFace Llama, the TransformerLens model
PACKAGES = {"hf": "transformers", "tl": "transformer_lens"}  # model → its package (inductionlab.extras.PACKAGES)
OWN_INIT_STD = 0.2  # the toolkit transformer's weights start N(0, 0.2²): at its default 0.01 the plateau is far longer
# Torch threads of every model's training, whatever the run may use: these models' steps are Python and kernel-launch
# overhead, and a second thread only waits (measured on 2 busy cores: the toolkit's model 5 s on one, 38 s on two)
THREADS = 1


@dataclass(frozen=True)
class TaskConfig:
    """The training sequences: per sequence a period k drawn from ``periods`` and a window of k random tokens,
    repeated to fill L tokens (a period of its own per sequence: no fixed offset copies it, docs/monitor.md)."""

    vocab: int = 64  # tokens 0..vocab − 1, drawn uniformly
    L: int = 32  # tokens per training sequence (and the models' context)
    periods: tuple[int, int] = (4, 16)  # each sequence repeats a window of k tokens, k drawn from this range
    copies: Literal["exact", "shuffled"] = "exact"  # shuffled: each repeat permutes its window (the control)
    batch_size: int = 32  # sequences per training step (per seed)

    def __post_init__(self) -> None:
        require(self.vocab >= 2, "vocab", f"must be ≥ 2, got {self.vocab}")
        lo, hi = self.periods
        require(2 <= lo <= hi < self.L, "periods", f"need 2 ≤ low ≤ high < L = {self.L}, got {lo},{hi}")
        require(self.copies in ("exact", "shuffled"), "copies", f"must be exact or shuffled, got {self.copies!r}")
        require(self.batch_size >= 1, "batch_size", f"must be ≥ 1, got {self.batch_size}")


@dataclass(frozen=True)
class NetConfig:
    """One model: two attention-only layers of ``n_heads`` heads, each d_model / n_heads wide, trained by Adam."""

    d_model: int = 32  # residual-stream width
    n_heads: int = 2  # attention heads per layer, each d_model / n_heads wide
    lr: float = 1e-2  # Adam's learning rate (constant)
    steps: int = 300  # training steps per seed

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "steps"):
            require(getattr(self, name) >= 1, name, f"must be ≥ 1, got {getattr(self, name)}")
        require(self.d_model % self.n_heads == 0, "d_model", f"must be a multiple of n_heads = {self.n_heads}")
        require(math.isfinite(self.lr) and self.lr > 0, "lr", f"must be a finite number > 0, got {self.lr}")


def repeated_windows(task: TaskConfig, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Token ids (*shape, L) of :func:`inductionlab.monitor.repeated_window_tokens` for ``task`` (its ``copies``
    "shuffled": the negative control's)."""
    return repeated_window_tokens(task.vocab, task.L, task.periods, shape, gen, task.copies == "shuffled")


def needs(models: Sequence[str]) -> dict[str, str]:
    """The optional package of each of ``models`` that has one, and what needs it: ``models: 'hf'`` and the way to
    leave it out (the experiment's ``needs``, checked before anything is written; docs/conventions.md#extras)."""
    out = {}
    for name in models:
        if name in PACKAGES:
            others = ",".join(m for m in models if m != name) or "own"
            out[PACKAGES[name]] = f"models: {name!r} (or leave it out: --models {others})"
    return out


def check_packages(models: Sequence[str]) -> None:
    """Refuse, naming ``models``, the package and its extra, a model whose package is not installed
    (:class:`~inductionlab.extras.MissingExtra`, before anything trains)."""
    for module, what in needs(models).items():
        require_extra(module, what)


def own_model(net: NetConfig, task: TaskConfig) -> tf.TransformerConfig:
    """The toolkit's transformer: layer 1 with the dot-product and the relative-position term, layer 2 with the
    dot product alone — Theorem 4.1's construction needs no position in layer 2 (docs/conventions.md#wang-4-2), and
    with one there the model settled, on most seeds, on a recency-weighted bag of the context's tokens."""
    on, off = (True,) * net.n_heads, (False,) * net.n_heads
    return tf.TransformerConfig(
        vocab=task.vocab,
        readout="all",
        d_model=net.d_model,
        n_layers=2,
        n_heads=net.n_heads,
        d_head=net.d_model // net.n_heads,
        rpe=(on, off),
        init_std=OWN_INIT_STD,
    )


def train_own(
    net: NetConfig, task: TaskConfig, seeds: Sequence[int], monitor: MonitorConfig, ctx: RunContext, name: str = "own"
) -> list[Monitor]:
    """The toolkit's transformer, one run per seed on the run axis (each initialised from its seed, each drawing
    its batches from ``rng.generator(seed)``, as the other models do), trained by Adam on the toolkit's loop; a
    monitor per run measures at the loop's evaluations (every ``monitor.every`` steps and the last); :data:`THREADS`
    torch threads.  Its one checkpoint, ``checkpoints/<name>.pt`` at the last step, is for ``load_model``: a resumed
    run trains it anew (the monitors' rows are not in a checkpoint, and the run is short enough to repeat)."""
    model, S = own_model(net, task), len(seeds)
    theta0, views = pack(tf.init_per_seed(model, seeds))
    monitors: list[Monitor] = []
    gens = [rng.generator(seed) for seed in seeds]  # a run's batches do not depend on the other runs

    def sample(_: torch.Generator) -> torch.Tensor:  # (S, B, L): each run's own batch
        return torch.stack([repeated_windows(task, (task.batch_size,), gen) for gen in gens])

    def loss(theta: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:  # tokens (S, B, L)
        logits = tf.forward(model, views(theta), tokens[..., :-1])[0]  # (S, B, L − 1, V)
        ce = F.cross_entropy(logits.flatten(0, 2), tokens[..., 1:].flatten(), reduction="none")
        return ce.view(S, -1).mean(1)

    def evaluate(theta: torch.Tensor, step: int) -> dict[str, np.ndarray]:
        params = views(theta)
        adapters = [toolkit_adapter(model, params, r) for r in range(S)]
        if not monitors:
            monitors.extend(Monitor(a, monitor) for a in adapters)
        rows = [m.maybe(step, a) or m.measure(step, a) for m, a in zip(monitors, adapters)]
        return {"best_induction": np.array([r["best_induction"] for r in rows])}

    cfg = TrainConfig(
        optimizer="adam",
        lr=net.lr,
        steps=net.steps,
        batch_size=task.batch_size,
        eval_every=monitor.every,
        eval_log_points=0,
        checkpoint_every=net.steps,
    )
    own = dataclasses.replace(ctx.child(name), resume=False, threads=THREADS)  # trained anew on a resume
    train(cfg, theta0, loss, sample, evaluate, own, desc=name, model={"family": "transformer", "config": model})
    return monitors


def build_hf(net: NetConfig, task: TaskConfig, seed: int) -> Any:
    """A randomly initialised ``transformers.LlamaForCausalLM`` (eager attention, rotary positions) of two layers,
    initialised from ``seed`` (``transformers.set_seed``: the HF models draw from the global generator); its MLPs
    are one unit wide with the output projection zero and frozen: attention only."""
    transformers = require_extra("transformers", "models: 'hf'")
    settings: dict[str, Any] = {  # LlamaConfig's keyword arguments (attn_implementation is a PretrainedConfig one)
        "vocab_size": task.vocab,
        "hidden_size": net.d_model,
        "num_hidden_layers": 2,
        "num_attention_heads": net.n_heads,
        "num_key_value_heads": net.n_heads,
        "head_dim": net.d_model // net.n_heads,
        "intermediate_size": 1,
        "max_position_embeddings": task.L,
        "tie_word_embeddings": False,
        "bos_token_id": 0,  # ids inside the vocabulary; training never reads them
        "eos_token_id": 0,
        "pad_token_id": 0,
        "attn_implementation": "eager",
    }
    config = transformers.LlamaConfig(**settings)
    transformers.set_seed(rng.derive(seed))
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if ".mlp." in name:
                if ".down_proj." in name:
                    param.zero_()
                param.requires_grad_(False)
    return model


def build_tl(net: NetConfig, task: TaskConfig, seed: int) -> Any:
    """A randomly initialised TransformerLens ``HookedTransformer`` (``attn_only=True``, LayerNorm, shortformer
    positions: added to the queries and keys only, as in Olsson et al.'s small models) of two layers, initialised
    from ``seed`` (its config's ``seed``)."""
    tl = require_extra("transformer_lens", "models: 'tl'")
    config = tl.HookedTransformerConfig(
        n_layers=2,
        d_model=net.d_model,
        n_heads=net.n_heads,
        d_head=net.d_model // net.n_heads,
        n_ctx=task.L,
        d_vocab=task.vocab,
        attn_only=True,
        normalization_type="LN",
        positional_embedding_type="shortformer",
        seed=rng.derive(seed),
        device="cpu",
    )
    with warnings.catch_warnings():  # its deprecation notice of HookedTransformer (the 3.x series keeps it)
        warnings.simplefilter("ignore", DeprecationWarning)
        return tl.HookedTransformer(config)


def train_module(
    model: torch.nn.Module,
    logits: Callable[[torch.Tensor], torch.Tensor],
    net: NetConfig,
    task: TaskConfig,
    seed: int,
    monitor: Monitor,
    ctx: RunContext,
    desc: str,
) -> None:
    """Adam on ``model``'s trainable parameters for ``net.steps`` steps of next-token cross-entropy
    (``logits(tokens)``: (B, L, V)) on batches from ``rng.generator(seed)``, :data:`THREADS` torch threads;
    ``monitor.maybe`` before every step and a last measurement after the last one."""
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=net.lr)
    gen, threads = rng.generator(seed), torch.get_num_threads()
    torch.set_num_threads(THREADS)
    model.train()
    try:
        for step in tqdm(range(net.steps), desc=desc, disable=not ctx.progress, leave=False):
            monitor.maybe(step, model)
            tokens = repeated_windows(task, (task.batch_size,), gen)
            out = logits(tokens)[:, :-1]
            loss = F.cross_entropy(out.flatten(0, 1), tokens[:, 1:].flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        monitor.maybe(net.steps, model) or monitor.measure(net.steps, model)
    finally:
        torch.set_num_threads(threads)


def save_library_model(model: Any, library: str, name: str, seed: int, run_dir: Path | None) -> None:
    """Keep a trained library model in ``run_dir/<name>/seed-<seed>`` (docs/monitor.md#a-head-in-two-cpu-minutes): a
    HuggingFace model as ``save_pretrained`` writes it (``from_pretrained`` and ``inductionlab watch`` read it), a
    TransformerLens one as ``model.pt`` (its state dict) beside ``config.json`` (its ``HookedTransformerConfig``
    fields).  Written into a temporary folder renamed into place, so a folder that exists is complete."""
    if run_dir is None:
        return
    final = Path(run_dir) / name / f"seed-{seed}"
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent, prefix=f".{final.name}.") as scratch:
        folder = Path(scratch) / "model"
        if library == "hf":
            transformers = require_extra("transformers", "models: 'hf'")
            bars = transformers.utils.logging.is_progress_bar_enabled()
            transformers.utils.logging.disable_progress_bar()  # save_pretrained's "Writing model shards"
            model.save_pretrained(folder)
            if bars:
                transformers.utils.logging.enable_progress_bar()
        else:
            folder.mkdir()
            torch.save(model.state_dict(), folder / "model.pt")
            fields = {k: v for k, v in model.cfg.to_dict().items() if _plain(v)}
            (folder / "config.json").write_text(json.dumps(fields, indent=1) + "\n")
        if final.exists():
            shutil.rmtree(final)  # the same run made again (a resume trains these models anew)
        os.replace(folder, final)


def _plain(value: Any) -> bool:
    """A value JSON keeps as it is (a config's dtype, device or callables are left out: TransformerLens rebuilds them)."""
    return (
        value is None
        or isinstance(value, (bool, int, float, str))
        or (isinstance(value, (list, tuple)) and all(_plain(v) for v in value))
    )
