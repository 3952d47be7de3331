"""The general multi-layer, multi-head attention transformer of Wang et al. (docs/conventions.md#wang-1; paper §2, eqs. 1–3):
dot-product ("DP") and ALiBi-type relative-position ("RPE") attention, switchable per head, with a
learnable slope per head and the strictly causal φ(z; p) = −p(z − 1) for z ≥ 1, −∞ otherwise.

Shapes (run axis first, so many seeds / settings train in one process): S runs, B batch, L positions,
D = d_model, H heads, K = d_head, d = token dimension, V = vocabulary.  Parameter names and shape order
follow TransformerLens, with the run axis in front:

* ``embed.W_E`` (S, d, D) for real-valued tokens, (S, V, D) for discrete ones (a lookup);
* ``blocks.{l}.attn.W_Q``, ``W_K``, ``W_V`` (S, H, D, K); ``blocks.{l}.attn.W_O`` (S, H, K, D);
  ``blocks.{l}.attn.p`` (S, H) — the RPE slope of each head;
* ``blocks.{l}.mlp.W_in`` (S, D, m), ``b_in`` (S, m), ``W_out`` (S, m, D), ``b_out`` (S, D) where the layer
  has an FFN (width m > 0);
* ``unembed.W_U`` (S, D, d_out).

Block l: Z ← Z + SA(Z) (or SA(Z) without residual), then Z ← Z + FFN(Z) if it has one.  No 1/√K scaling
by default (the paper has none; ``scale=True`` adds it).  Query position i attends to keys j with
``key_start ≤ j < i`` (1-indexed; docs/conventions.md#wang-a1: the toy and the constructions start layer-2 keys at 2 or n);
a query with no keys (position 1 always) outputs 0, never NaN.

Forward hooks (TransformerLens names, for ablation and patching, :mod:`inductionlab.analysis.ablation`): ``hooks``
maps a name to a function tensor → tensor that replaces the activation —
``blocks.{l}.attn.hook_pattern`` (S, B, H, L', L), ``blocks.{l}.attn.hook_z`` (S, B, H, L', K) (each head's
output before W_O) and ``blocks.{l}.hook_resid_post`` (S, B, L', D).  With hooks or ``keep``, every layer
computes all L query positions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Literal

import torch

from inductionlab import rng
from inductionlab.config import format_value, require
from inductionlab.models import fused

PerLayer = bool | tuple[bool, ...]
PerHead = bool | tuple[tuple[bool, ...], ...]


@dataclass(frozen=True)
class TransformerConfig:
    """Architecture.  Per-layer options take one value for all layers or a tuple with one per layer;
    ``dp`` / ``rpe`` take one bool, or per layer a tuple of per-head bools."""

    d_in: int = 1  # token dimension (real-valued tokens); ignored when vocab > 0
    vocab: int = 0  # > 0: discrete tokens 0..vocab−1 with a lookup embedding
    d_model: int = 8
    n_layers: int = 2
    n_heads: int = 1
    d_head: int = 0  # 0: d_model
    dp: PerHead = (
        True  # one bool for every head, or per layer a JSON list of per-head bools: [[true,false],[true,true]]
    )
    rpe: PerHead = True  # as dp
    residual: PerLayer = True  # one bool for every layer, or one per layer: true,false
    ffn_width: int | tuple[int, ...] = 0  # FFN width (0: none), one for every layer or one per layer: 512,0
    key_start: int | tuple[int, ...] = 1  # first key position (1-indexed), one for every layer or one per layer: 1,2
    scale: bool = False
    readout: Literal["last", "all"] = "last"
    d_out: int = 0  # 0: d_in (real tokens) or vocab (discrete)
    init_std: float = 0.01
    slope_init: float = 0.01

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads"):
            require(getattr(self, name) >= 1, f"model.{name}", f"must be an integer ≥ 1, got {getattr(self, name)}")
        for name in ("d_in", "vocab", "d_head", "d_out"):
            require(getattr(self, name) >= 0, f"model.{name}", f"must be an integer ≥ 0, got {getattr(self, name)}")
        require(self.vocab > 0 or self.d_in >= 1, "model.d_in", "real-valued tokens need d_in ≥ 1 (or set model.vocab)")
        require(self.init_std >= 0 and math.isfinite(self.init_std), "model.init_std", "must be a finite number ≥ 0")
        for name in ("residual", "ffn_width", "key_start"):
            value = getattr(self, name)
            require(
                not isinstance(value, tuple) or len(value) == self.n_layers,
                f"model.{name}",
                f"give one value or {self.n_layers} (one per layer), got {value}",
            )
        for name in ("dp", "rpe"):
            value = getattr(self, name)
            ok = isinstance(value, bool) or (len(value) == self.n_layers and all(len(v) == self.n_heads for v in value))
            require(
                ok, f"model.{name}", f"give one bool or {self.n_layers} tuples of {self.n_heads} bools (layer × head)"
            )
        require(all(k >= 1 for k in self.layer("key_start")), "model.key_start", "key positions start at 1 (1-indexed)")
        require(all(m >= 0 for m in self.layer("ffn_width")), "model.ffn_width", "must be ≥ 0 (0: no FFN)")

    def check_keys(self, L: int, prefix: str = "model", where: str = "a sequence") -> None:
        """Refuse a ``key_start`` beyond the last key of ``L`` positions: query i attends to keys key_start ≤ j < i
        (docs/conventions.md#wang-a1), so such a layer attends to nothing and every score averaged over its
        attention is empty (NaN)."""
        require(
            max(self.layer("key_start")) <= L - 1,
            f"{prefix}.key_start",
            f"must be ≤ {L - 1}: {where} has {L} positions and queries attend to keys key_start ≤ j < i, "
            f"got {format_value(self.key_start)}",
        )

    def layer(self, name: str) -> tuple:
        """The per-layer value of ``name``, expanded to one entry per layer."""
        value = getattr(self, name)
        return value if isinstance(value, tuple) else (value,) * self.n_layers

    def heads(self, name: Literal["dp", "rpe"]) -> torch.Tensor:
        """(n_layers, H) 0/1 mask of the heads that use the DP or the RPE term."""
        return torch.tensor([self.heads_on(name, l) for l in range(self.n_layers)], dtype=torch.float32)

    def heads_on(self, name: Literal["dp", "rpe"], l: int) -> tuple[bool, ...]:
        """Layer l's heads that use the DP or the RPE term, as bools."""
        value = getattr(self, name)
        return (value,) * self.n_heads if isinstance(value, bool) else tuple(value[l])

    @property
    def K(self) -> int:
        return self.d_head or self.d_model

    @property
    def out_dim(self) -> int:
        return self.d_out or (self.vocab if self.vocab else self.d_in)


Params = dict[str, torch.Tensor]
Hooks = Mapping[str, Callable[[torch.Tensor], torch.Tensor]]  # activation name → replacement function


def _hook(hooks: Hooks | None, name: str, value: torch.Tensor) -> torch.Tensor:
    return hooks[name](value) if hooks and name in hooks else value


def replace_heads(z: torch.Tensor, heads: Sequence[int], mode: Literal["zero", "mean"]) -> torch.Tensor:
    """Head outputs z (S, B, H, L, K) with the heads ``heads`` replaced by zero, or by their mean over the batch at
    each position (zero / mean ablation, docs/conventions.md#mech); a new tensor."""
    require(mode in ("zero", "mean"), "mode", f"must be 'zero' or 'mean', got {mode!r}")
    z = z.clone()
    z[:, :, list(heads)] = 0.0 if mode == "zero" else z[:, :, list(heads)].mean(1, keepdim=True)
    return z


def param_shapes(cfg: TransformerConfig) -> dict[str, tuple[int, ...]]:
    """Name → shape without the run axis."""
    D, H, K = cfg.d_model, cfg.n_heads, cfg.K
    shapes: dict[str, tuple[int, ...]] = {"embed.W_E": (cfg.vocab or cfg.d_in, D)}
    for l, m in enumerate(cfg.layer("ffn_width")):
        a = f"blocks.{l}.attn."
        shapes |= {
            a + "W_Q": (H, D, K),
            a + "W_K": (H, D, K),
            a + "W_V": (H, D, K),
            a + "W_O": (H, K, D),
            a + "p": (H,),
        }
        if m:
            f = f"blocks.{l}.mlp."
            shapes |= {f + "W_in": (D, m), f + "b_in": (m,), f + "W_out": (m, D), f + "b_out": (D,)}
    shapes["unembed.W_U"] = (D, cfg.out_dim)
    return shapes


def init_params(
    cfg: TransformerConfig, n_runs: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
) -> Params:
    """Weights ~ N(0, init_std²), biases 0, slopes ``slope_init`` (docs/conventions.md#wang-6: initialisation scale 0.01)."""
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith(".p"):
            params[name] = torch.full((n_runs, *shape), cfg.slope_init, dtype=dtype)
        elif ".b_" in name:
            params[name] = torch.zeros(n_runs, *shape, dtype=dtype)
        else:
            params[name] = torch.randn(n_runs, *shape, generator=generator, dtype=dtype) * cfg.init_std
    return params


def init_per_seed(cfg: TransformerConfig, seeds: Sequence[int], dtype: torch.dtype = torch.float32) -> Params:
    """One run per seed, each initialised (:func:`init_params`) from its own seed, so that a run does not depend on
    the others on the run axis (docs/conventions.md#seeds)."""
    parts = [init_params(cfg, 1, rng.generator(int(s)), dtype) for s in seeds]
    return {name: torch.cat([p[name] for p in parts]) for name in parts[0]}


def zero_params(cfg: TransformerConfig, n_runs: int = 1, dtype: torch.dtype = torch.float64) -> Params:
    """All-zero parameters, for hand-built constructions to fill in."""
    return {name: torch.zeros(n_runs, *shape, dtype=dtype) for name, shape in param_shapes(cfg).items()}


def attention_mask(L: int, key_start: int, device: torch.device | None = None) -> torch.Tensor:
    """(L, L) bool: query i (row) may attend to key j iff key_start ≤ j < i (1-indexed), strictly causal."""
    i = torch.arange(1, L + 1, device=device).view(-1, 1)
    j = torch.arange(1, L + 1, device=device).view(1, -1)
    return (j < i) & (j >= key_start)


def embed(cfg: TransformerConfig, params: Params, x: torch.Tensor) -> torch.Tensor:
    """Tokens → (S, B, L, D).  Real tokens x (S or 1, B, L, d); discrete tokens (S or 1, B, L) integers; a batch
    without the run axis — (B, L, d) or (B, L) — is shared by all runs (as ``x[None]``)."""
    W_E = params["embed.W_E"]
    if x.dim() == (2 if cfg.vocab else 3):
        x = x.unsqueeze(0)
    if cfg.vocab:
        require(not x.is_floating_point(), "x", "discrete tokens must be integers (model.vocab > 0)")
        # one lookup in the (S·V, D) table: its backward adds rows in a fixed order, so runs on several threads
        # repeat exactly (W_E[runs, x] accumulates its gradient with atomic adds; measured: differs run to run)
        S, V, D = W_E.shape
        rows = x + V * torch.arange(S, device=x.device).view(-1, 1, 1)  # (S, B, L)
        return torch.nn.functional.embedding(rows, W_E.reshape(S * V, D))
    require(x.shape[-1] == cfg.d_in, "x", f"expected tokens of dimension d_in = {cfg.d_in}, got {tuple(x.shape)}")
    return _linear(x.expand(W_E.shape[0], *x.shape[1:]), W_E)


def _linear(z: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """z (S, ..., D) times W (S, D, K) → (S, ..., K) as one (S, N, D) @ (S, D, K) product: a broadcast over
    the batch axes would run one small matmul per sequence instead (measured 3–4× slower)."""
    return torch.bmm(z.reshape(z.shape[0], -1, z.shape[-1]), W).view(*z.shape[:-1], W.shape[-1])


def _project(z: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """z (S, B, L, D) times per-head W (S, H, D, K) → (S, B, H, L, K), as one matmul over all heads."""
    S, H, D, K = W.shape
    return _linear(z, W.permute(0, 2, 1, 3).reshape(S, D, H * K)).unflatten(-1, (H, K)).transpose(2, 3)


def attention(
    cfg: TransformerConfig,
    params: Params,
    l: int,
    z: torch.Tensor,
    last_only: bool = False,
    hooks: Hooks | None = None,
    keep: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Layer l's multi-head attention: output (S, B, L', D), pattern (S, B, H, L', L) and the heads' outputs
    before W_O (S, B, H, L', K), where L' = L, or 1 with ``last_only`` (only the last query: all a
    last-position readout needs from the last layer).  Without ``hooks`` or ``keep`` the layer runs fused where it
    can (:mod:`inductionlab.models.fused`, docs/conventions.md#fused-attention) and pattern and heads are None."""
    a = f"blocks.{l}.attn."
    L = z.shape[2]
    Lq = 1 if last_only else L
    dp, rpe = cfg.heads("dp")[l].to(z.device, z.dtype), cfg.heads("rpe")[l].to(z.device, z.dtype)
    W = (
        params[a + "W_Q"] * dp.view(-1, 1, 1),
        params[a + "W_K"],
        params[a + "W_V"],
        params[a + "W_O"],
    )  # DP off: q = 0
    # from the config, not the tensor: no graph break under torch.compile
    slope = params[a + "p"] * rpe if any(cfg.heads_on("rpe", l)) else None
    scale = 1 / math.sqrt(cfg.K) if cfg.scale else 1.0
    key_start = cfg.layer("key_start")[l]
    if not (hooks or keep):
        slope = slope if slope is not None else z.new_zeros(z.shape[0], cfg.n_heads)
        return fused.attend(z, W, slope, key_start, scale, Lq, _layer_eager), None, None
    return _layer(z, W, slope, key_start, scale, Lq, hooks, a)


def _layer(
    z: torch.Tensor,
    W: tuple[torch.Tensor, ...],
    slope: torch.Tensor | None,
    key_start: int,
    scale: float,
    Lq: int,
    hooks: Hooks | None = None,
    prefix: str = "",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eager attention layer: output (S, B, Lq, D), pattern and heads, ``hooks`` applied on the way (names after
    ``prefix``); W = (W_Q, W_K, W_V, W_O)."""
    W_Q, W_K, W_V, W_O = W
    L = z.shape[2]
    q = _project(z[:, :, L - Lq :], W_Q)
    k, v = _project(z, W_K), _project(z, W_V)
    pattern = _hook(hooks, prefix + "hook_pattern", attention_pattern(q, k, slope, key_start, scale))
    heads = _hook(hooks, prefix + "hook_z", torch.matmul(pattern, v))
    S, H, K, D = W_O.shape
    return _linear(heads.transpose(2, 3).flatten(-2), W_O.reshape(S, H * K, D)), pattern, heads


def _layer_eager(z, W, slope, key_start: int, scale: float, Lq: int) -> torch.Tensor:
    """:func:`_layer`'s output: the eager reference of the fused layer."""
    return _layer(z, W, slope, key_start, scale, Lq)[0]


def attention_pattern(
    q: torch.Tensor, k: torch.Tensor, slope: torch.Tensor | None, key_start: int, scale: float
) -> torch.Tensor:
    """Eager attention pattern (S, B, H, Lq, L) from q (S, B, H, Lq, K), k (S, B, H, L, K) and each head's RPE slope
    (S, H) or None (no RPE term).  Queries are the last Lq positions; the causal mask and the RPE term form one
    additive bias (Lq, L) per head (paper eq. 2); rows without keys are 0."""
    Lq, L = q.shape[3], k.shape[3]
    allowed = attention_mask(L, key_start, q.device)[L - Lq :]
    has_keys = allowed.any(-1, keepdim=True)  # (L', 1); rows without keys get a finite dummy row, then 0
    bias = torch.zeros(Lq, L, dtype=q.dtype, device=q.device).masked_fill_(~allowed & has_keys, -math.inf)
    if slope is not None:
        i = torch.arange(L, dtype=q.dtype, device=q.device)
        dist = (i[L - Lq :].view(-1, 1) - i.view(1, -1) - 1).clamp(min=0)  # i − j − 1 on allowed keys
        bias = bias - slope.view(*slope.shape[:1], 1, -1, 1, 1) * dist
    return torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * scale + bias, -1) * has_keys


def forward(
    cfg: TransformerConfig, params: Params, x: torch.Tensor, keep: bool = False, hooks: Hooks | None = None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Model output for tokens ``x`` — discrete (S, B, L) ids or real (S, B, L, d), one batch per run, or without
    the run axis, (B, L) / (B, L, d), one batch for all runs — of shape (S, B, d_out) at the last position, or
    (S, B, L, d_out) with readout "all"; and,
    with ``keep``, a cache of ``blocks.{l}.attn.hook_pattern`` (S, B, H, L, L), ``blocks.{l}.attn.hook_z``
    (S, B, H, L, K) and ``blocks.{l}.hook_resid_post`` (S, B, L, D) (TransformerLens names) plus
    ``hook_embed``; ``hooks`` replace activations on the way (see the module docstring)."""
    z = embed(cfg, params, x)
    cache = {"hook_embed": z} if keep else {}
    for l, (residual, width) in enumerate(zip(cfg.layer("residual"), cfg.layer("ffn_width"))):
        last_only = cfg.readout == "last" and not keep and not hooks and l == cfg.n_layers - 1
        out, pattern, heads = attention(cfg, params, l, z, last_only, hooks, keep)
        z = (z[:, :, -out.shape[2] :] + out) if residual else out
        if width:
            f = f"blocks.{l}.mlp."
            hidden = torch.relu(_linear(z, params[f + "W_in"]) + params[f + "b_in"][:, None, None])
            z = z + _linear(hidden, params[f + "W_out"]) + params[f + "b_out"][:, None, None]
        z = _hook(hooks, f"blocks.{l}.hook_resid_post", z)
        if keep:
            assert pattern is not None and heads is not None  # keep: the eager layer, which returns them
            cache |= {f"blocks.{l}.attn.hook_pattern": pattern, f"blocks.{l}.attn.hook_z": heads}
            cache[f"blocks.{l}.hook_resid_post"] = z
    if cfg.readout == "last":
        z = z[:, :, -1]  # (the last layer computed only this query unless keep)
    return _linear(z, params["unembed.W_U"]), cache


@dataclass(frozen=True)
class ArchitectureConfig:
    """The architecture less its token space, for the experiments whose tokens come from elsewhere (a chain's
    ``task.vocab_size``, a corpus, the induction task's ``task.d``), so that it is one key, never a second that must
    agree: :meth:`build` adds a vocabulary (a language model, all positions read
    out), :meth:`real_valued` a token dimension (the induction task, the last position read out); the fields mean
    what they mean in :class:`TransformerConfig`."""

    d_model: int = 8  # residual-stream width D
    n_layers: int = 2  # attention layers
    n_heads: int = 1  # heads H per layer
    d_head: int = 0  # dimension K of each head's queries, keys and values (0: d_model)
    dp: PerHead = True  # dot-product score ⟨W_Q x_i, W_K x_j⟩ on: one bool, or per layer a JSON list of per-head bools
    rpe: PerHead = True  # relative-position term −p(i − j − 1) on (wang-1-1): one bool, or per layer per head as dp
    residual: PerLayer = True  # residual connection around attention: one bool, or one per layer: true,false
    ffn_width: int | tuple[int, ...] = 0  # FFN width (0: none), one for every layer or one per layer: 512,0
    # first key position (1-indexed), one for every layer or one per layer: 1,2 (wang-a1)
    key_start: int | tuple[int, ...] = 1
    scale: bool = False  # divide the dot-product scores by √d_head (the paper has no scaling)
    init_std: float = 0.01  # weights start N(0, init_std²)
    slope_init: float = 0.01  # every head's RPE slope p starts here

    def __post_init__(self) -> None:
        self.build(2)  # validates every field as TransformerConfig does

    def build(self, vocab: int) -> TransformerConfig:
        """The full architecture over ``vocab`` tokens (lookup embedding, ``vocab`` outputs at every position)."""
        require(vocab >= 1, "vocab", f"must be ≥ 1, got {vocab}")
        return TransformerConfig(vocab=vocab, readout="all", **self.keys())

    def keys(self) -> dict:
        """Every field by name (read one by one, so a config whose reads are traced sees each read)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def real_valued(self, d: int) -> TransformerConfig:
        """The full architecture over real-valued tokens of dimension ``d`` (``d`` outputs at the last position)."""
        return TransformerConfig(d_in=d, readout="last", **self.keys())

    def check_keys(self, L: int, prefix: str = "model", where: str = "a sequence") -> None:
        """:meth:`TransformerConfig.check_keys`: refuse a ``key_start`` beyond the last key of ``L`` positions."""
        self.build(2).check_keys(L, prefix, where)
