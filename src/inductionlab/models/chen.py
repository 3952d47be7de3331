"""The two-attention-layer "disentangled" transformer TF(M, H, d, D) of Chen, Sheen, Wang, Yang 2024 (docs/conventions.md#chen-2).

* **Layer 1, the copier** (§2.1): H heads driven by relative positions only; head h attends from position l to
  l − j with logit w^{(h)}_j over a window of lags j = 1..M and outputs v^{(h)}_l = Σ_j softmax_j(w^{(h)}) e_{x_{l−j}}.
  Lags before the start are left out of the softmax; with none left v = 0 (docs/conventions.md#chen-a8).  ``windows="shared"``:
  every head sees lags 1..M (docs/conventions.md#chen-a3).  ``windows="shifted"``: the authors' scheme, M = 2H − 1 and head h
  sees lags h..h+H−1 only (repo parity).
* **Disentangled residual**: layer 2 sees [e_{x_l}; v^{(1)}_l; …; v^{(H)}_l]; the raw token is its value.
* **FFN with normalisation, the selector** (§2.2): over the subsets S ⊆ [H], |S| ≤ D (∅ included, docs/conventions.md#chen-a5),
  with selection weights p_S = c_S² / Σ c².  ``norm="head_l2"`` (default, the repo form, docs/conventions.md#chen-a4): each head
  output is ℓ2-normalised and K_l = Σ_S p_S Π_{h∈S} relu⟨v̂^{(h)}_{L+1}, v̂^{(h)}_l⟩.  ``norm="exact"``: the
  paper's u = φ(v)/‖φ(v)‖, K_l = Σ c_S² Π⟨v_{L+1}, v_l⟩ / (‖φ(v_{L+1})‖ ‖φ(v_l)‖).  ``norm="layernorm"``: a
  LayerNorm(d) per head with trainable affine parameters in place of the ℓ2 step (the full model, §5.3);
  ``layernorm="shared"``: one LayerNorm's affine parameters for every head, as the authors' ``RPEAttention``
  (docs/conventions.md#chen-5-3).
* **Layer 2, the classifier** (§2.3): y = Σ_{l≤L} softmax_l(a K_l) e_{x_l} ∈ Δ([d]), one scalar a.
* **Loss** (§2.4, docs/conventions.md#chen-a2): ``loss="ce"`` is −log(y_{x_{L+1}} + 1e−12); ``loss="softmax_of_probs"`` is the repo's
  surrogate −log softmax(y)_{x_{L+1}}.
* ``variant="full"`` (§5.3): per-head W_Q, W_K, W_OV ∈ ℝ^{d×d} (initialised ``proj_init``·I, 0.01 by default; the
  authors' stored run used 0.001, docs/conventions.md#chen-5-3), token scores
  e_{x_l}ᵀ W_Q W_Kᵀ e_{x_j} added to the RPE, and attention to the position itself (lag 0) with logit 1e−6;
  the query position L + 1 attends to its own (empty, zero-valued) slot as well, as the authors' appended
  zero row does.

**How it is computed.**  Everything layer 1 produces at position l depends on l only through its *window
state*, the tokens (x_{l−j})_{j ∈ lags} (lags 1..M; 0..M in the full variant), each in [d] or "absent"
(before the start, and the query's own token).  There are Z = (d+1)^{|lags|} states (64 for d = M = 3), so
the head outputs are computed once per state that occurs in the data, the kernel once per pair of states as a
table T (S, Z, Z), and
a sequence's logits are gathered as T[z_{L+1}, z_l].  This is the model exactly, for any parameters, at a
cost of O(B·L) per step instead of the authors' (L+1)² masked matrices per head.

Shapes: S runs (seeds on the run axis), B sequences, L positions, H heads, M lags, d tokens, Z states,
n_sub subsets.  Parameters (all with the run axis first): ``w`` (S, H, M), ``c`` (S, n_sub), ``a`` (S, 1);
full variant ``W_Q``, ``W_K``, ``W_OV`` (S, H, d, d); layernorm ``ln_gamma``, ``ln_beta`` (S, H, d), or (S, 1, d)
shared by the heads.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, fields
from typing import Literal, NamedTuple

import torch

from inductionlab.config import require
from inductionlab.models import chen_fused

EPS_LOG = 1e-12  # docs/conventions.md#chen-a2
EPS_L2 = 1e-7  # the repo's v / (‖v‖ + 1e−7)
SELF_LOGIT = 1e-6  # the full model's lag-0 logit (docs/conventions.md#chen-5-3)
GROUPS = {"c": ("c", "ln_gamma", "ln_beta"), "w": ("w", "W_Q", "W_K", "W_OV"), "a": ("a",)}


@dataclass(frozen=True)
class ChenConfig:
    """Architecture and initialisation (docs/conventions.md#chen-3-1: c = a = 0.01, head h starts at w_+ on lag h, w_− elsewhere;
    (3, 0.1) for the simplified model, (1, 0.01) for the full one)."""

    vocab_size: int = 3
    n_heads: int = 3
    window: int = 3  # M; "shifted" needs 2H − 1
    max_degree: int = 2  # D
    windows: Literal["shared", "shifted"] = "shared"
    norm: Literal["head_l2", "exact", "layernorm"] = "head_l2"
    loss: Literal["ce", "softmax_of_probs"] = "ce"
    variant: Literal["simplified", "full"] = "simplified"
    w_plus: float = 3.0
    w_minus: float = 0.1
    c_init: float = 0.01
    a_init: float = 0.01
    proj_init: float = 0.01  # the full variant's W_Q, W_K, W_OV start at proj_init·I (docs/conventions.md#chen-5-3)
    layernorm: Literal["per_head", "shared"] = "per_head"  # norm="layernorm": one per head, or one for all heads

    def __post_init__(self) -> None:
        require(self.vocab_size >= 2, "model.vocab_size", f"needs at least 2 tokens, got {self.vocab_size}")
        require(self.n_heads >= 1, "model.n_heads", f"must be ≥ 1, got {self.n_heads}")
        require(
            1 <= self.max_degree <= self.n_heads,
            "model.max_degree",
            f"must lie in 1..n_heads = {self.n_heads}, got {self.max_degree}",
        )
        if self.windows == "shared":
            require(
                self.window >= self.n_heads,
                "model.window",
                f"the shared window needs M ≥ H = {self.n_heads} (head h starts on lag h), got {self.window}",
            )
        else:
            require(
                self.window == 2 * self.n_heads - 1,
                "model.window",
                f"the shifted scheme needs M = 2H − 1 = {2 * self.n_heads - 1}, got {self.window}",
            )
        require(
            self.n_states <= 4096, "model.window", f"(d+1)^(number of lags) = {self.n_states} window states exceed 4096"
        )
        require(self.c_init != 0, "model.c_init", "must be non-zero (p_S = c_S² / Σ c²)")
        require(self.proj_init != 0, "model.proj_init", "must be non-zero (W_Q W_Kᵀ and W_OV start at proj_init·I)")

    @property
    def lags(self) -> tuple[int, ...]:
        return tuple(range(0 if self.variant == "full" else 1, self.window + 1))

    @property
    def n_states(self) -> int:
        return (self.vocab_size + 1) ** (self.window + (self.variant == "full"))

    @property
    def subsets(self) -> list[tuple[int, ...]]:
        """Subsets of heads (0-based), by size then lexicographically: (), (0,), (1,), …, (0, 1), …"""
        return [s for k in range(self.max_degree + 1) for s in itertools.combinations(range(self.n_heads), k)]


def subset_label(subset: tuple[int, ...]) -> str:
    """ "{1,2}" for heads (0, 1) — head h starts on lag h, so labels read as lag sets."""
    return "{" + ",".join(str(h + 1) for h in subset) + "}"


def init_params(cfg: ChenConfig, n_runs: int, dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """The deterministic initialisation of docs/conventions.md#chen-3-1, repeated over S = n_runs."""
    H, M, d = cfg.n_heads, cfg.window, cfg.vocab_size
    w = torch.full((H, M), cfg.w_minus, dtype=dtype)
    w[torch.arange(H), torch.arange(H)] = cfg.w_plus  # head h on lag h + 1 (0-based column h)
    p = {
        "w": w,
        "c": torch.full((len(cfg.subsets),), cfg.c_init, dtype=dtype),
        "a": torch.full((1,), cfg.a_init, dtype=dtype),
    }
    if cfg.variant == "full":
        eye = cfg.proj_init * torch.eye(d, dtype=dtype).expand(H, d, d)
        p.update(W_Q=eye, W_K=eye, W_OV=eye)
    if cfg.norm == "layernorm":
        n_ln = 1 if cfg.layernorm == "shared" else H  # a shared LayerNorm broadcasts over the heads
        p.update(ln_gamma=torch.ones(n_ln, d, dtype=dtype), ln_beta=torch.zeros(n_ln, d, dtype=dtype))
    return {k: v.expand(n_runs, *v.shape).clone() for k, v in p.items()}


def selection_weights(c: torch.Tensor) -> torch.Tensor:
    """p_S = c_S² / Σ c² (S, n_sub)."""
    c2 = c.square()
    return c2 / c2.sum(-1, keepdim=True)


def _state_tokens(cfg: ChenConfig, states: torch.Tensor) -> torch.Tensor:
    """(Z, J) the token at each lag of the window states with codes ``states`` (Z,) (d = absent); the code of a
    state is Σ_j tok_j (d+1)^j."""
    base, J = cfg.vocab_size + 1, len(cfg.lags)
    return torch.stack([(states // base**j) % base for j in range(J)], 1)


def allowed_lags(cfg: ChenConfig) -> torch.Tensor:
    """(H, J) which lags each head may attend to: the shifted scheme masks all but lags h+1..h+H of head h (0-based
    h), and the full variant's lag 0, the query's own slot, stays open to every head as in the authors' model (its
    fixed small logit on the diagonal: docs/chen.md#authors-full-run)."""
    lags = torch.tensor(cfg.lags)
    heads = torch.arange(cfg.n_heads).view(-1, 1)
    if cfg.windows == "shifted":
        return (lags >= heads + 1) & (lags <= heads + cfg.n_heads) | (lags == 0)
    return torch.ones(cfg.n_heads, len(lags), dtype=torch.bool)


def head_outputs(cfg: ChenConfig, params: dict[str, torch.Tensor], states: torch.Tensor | None = None) -> torch.Tensor:
    """v^{(h)} (S, H, Z, d) for the window states ``states`` (Z,) — all (d+1)^{|lags|} by default (docs/conventions.md#chen-2-1;
    the full variant §5.3)."""
    d = cfg.vocab_size
    toks = _state_tokens(cfg, torch.arange(cfg.n_states) if states is None else states)  # (Z, J)
    E = torch.nn.functional.one_hot(toks, d + 1)[..., :d].to(params["w"].dtype)  # (Z, J, d); absent → 0
    w = params["w"]  # (S, H, M)
    if cfg.variant == "full":
        w = torch.cat([torch.full_like(w[..., :1], SELF_LOGIT), w], -1)  # lag 0 first
    logits = w.unsqueeze(2)  # (S, H, 1, J)
    if cfg.variant == "full":
        qk = torch.einsum("shde,shfe->shdf", params["W_Q"], params["W_K"])  # (S, H, d, d)
        logits = logits + torch.einsum("zd,shdf,zjf->shzj", E[:, 0], qk, E)  # the query is the lag-0 token
    present = (toks < d) | (torch.tensor(cfg.lags) == 0)  # lag 0: the query attends to its own empty slot too
    mask = present.unsqueeze(0) & allowed_lags(cfg).unsqueeze(1)  # (H, Z, J)
    shift = logits.detach().masked_fill(~mask, float("-inf")).amax(-1, keepdim=True).nan_to_num(neginf=0.0)
    weights = torch.where(mask, logits - shift, float("-inf")).exp()  # (S, H, Z, J); no lag valid → all 0
    attn = weights / weights.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
    if cfg.variant == "full":
        return torch.einsum("shzj,zjd,shed->shze", attn, E, params["W_OV"])
    return torch.einsum("shzj,zjd->shzd", attn, E)


def normed_heads(cfg: ChenConfig, params: dict[str, torch.Tensor], states: torch.Tensor | None = None) -> torch.Tensor:
    """φ(v^{(h)}) (S, H, Z, d): the head outputs of :func:`head_outputs` after the model's normalisation
    (docs/conventions.md#chen-2-2); ``exact`` leaves them as they are."""
    v = head_outputs(cfg, params, states)  # (S, H, Z, d)
    if cfg.norm == "head_l2":
        return v / (v.norm(dim=-1, keepdim=True) + EPS_L2)
    if cfg.norm == "layernorm":
        gamma, beta = params["ln_gamma"].unsqueeze(2), params["ln_beta"].unsqueeze(2)
        return torch.nn.functional.layer_norm(v, v.shape[-1:]) * gamma + beta
    return v


def _subset_sum(cfg: ChenConfig, grams: tuple[torch.Tensor, ...], p: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Σ_S p_S Π_{h∈S} g_h over the subsets S of :attr:`ChenConfig.subsets`, elementwise: ``grams`` one tensor per
    head, ``p`` one per subset, all broadcasting to one shape (docs/conventions.md#chen-2-2)."""
    total = torch.zeros_like(grams[0])
    for k, subset in enumerate(cfg.subsets):
        prod = torch.ones_like(total)
        for h in subset:
            prod = prod * grams[h]
        total = total + p[k] * prod
    return total


def kernel_table(
    cfg: ChenConfig, params: dict[str, torch.Tensor], p: torch.Tensor | None = None, states: torch.Tensor | None = None
) -> torch.Tensor:
    """T[z_q, z] = ⟨u(z_q), u(z)⟩ (S, Z, Z), the layer-2 kernel between the window states ``states`` (all by
    default) (docs/conventions.md#chen-2-2).  ``p`` (S, n_sub) replaces the selection weights c² / Σ c² (for gradients in p)."""
    v = normed_heads(cfg, params, states)  # (S, H, Z, d)
    p = selection_weights(params["c"]) if p is None else p
    gram = v @ v.transpose(-1, -2)  # (S, H, Z, Z)
    if cfg.norm != "exact":
        gram = gram.relu()
    weights = tuple(w[:, None, None] for w in p.unbind(1))  # n_sub × (S, 1, 1)
    table = _subset_sum(cfg, gram.unbind(1), weights)
    if cfg.norm == "exact":  # ‖φ(v(z))‖² / Σ c², the exact form's normaliser
        sq_norm = _subset_sum(cfg, gram.diagonal(dim1=-2, dim2=-1).unbind(1), tuple(w[:, None] for w in p.unbind(1)))
        n = sq_norm.clamp_min(torch.finfo(sq_norm.dtype).tiny).sqrt()
        table = table / (n.unsqueeze(-1) * n.unsqueeze(-2))
    return table


@dataclass(frozen=True)
class ChenModelConfig:
    """The Chen et al. model's keys (docs/conventions.md#chen-3-1; the fields mean what they mean in
    :class:`ChenConfig`) less the vocabulary, which is the task's: :meth:`build` adds it."""

    n_heads: int = 3  # copier heads H (layer 1)
    window: int = 3  # RPE window M: the copier sees lags 1..M ("shifted" needs M = 2H − 1)
    max_degree: int = 2  # FFN degree D: the selector's subsets S of heads have |S| ≤ D (chen-2-2)
    # shared: every head sees lags 1..M; shifted: M = 2H − 1, head h lags h..h+H−1 (chen-a3)
    windows: Literal["shared", "shifted"] = "shared"
    # FFN normalisation: head_l2 (the authors' code), exact (the paper's) or layernorm (chen-a4)
    norm: Literal["head_l2", "exact", "layernorm"] = "head_l2"
    # ce: −log y_{x_{L+1}}; softmax_of_probs: the authors' surrogate (chen-a2)
    loss: Literal["ce", "softmax_of_probs"] = "ce"
    # simplified (RPE-only copier) or full (per-head W_Q, W_K, W_OV, §5.3)
    variant: Literal["simplified", "full"] = "simplified"
    w_plus: float = 3.0  # w_+: head h's initial RPE logit on lag h (chen-3-1)
    w_minus: float = 0.1  # w_−: the initial RPE logit on every other lag
    c_init: float = 0.01  # initial selector weights c_S (p_S = c_S²/Σc²)
    a_init: float = 0.01  # initial classifier scale a
    proj_init: float = 0.01  # full variant: W_Q, W_K, W_OV start at proj_init·I (the authors' stored run: 0.001)
    layernorm: Literal["per_head", "shared"] = "per_head"  # norm layernorm: one per head or one for all (the authors')

    def __post_init__(self) -> None:
        self.build(2)  # validates every field as ChenConfig does

    def build(self, vocab_size: int) -> ChenConfig:
        """The model over the task's ``vocab_size`` tokens."""
        return ChenConfig(vocab_size=vocab_size, **{f.name: getattr(self, f.name) for f in fields(self)})


class Batch(NamedTuple):
    """A dataset prepared for the model, with the positions of each sequence grouped: one entry u per distinct
    (sequence, window state z_l, token x_l), for the S·B sequences of all runs, and one pair q per distinct
    (run s, query state z_{L+1}, state z_l) among them.  States are numbered 0..Z−1 among the ``states`` (Z,)
    (their codes) that occur in the data.  ``row`` (Q,) s·Z + z_{L+1} and ``col`` (Q,) s·Z + z_l index the
    states of all runs, ``pair_run`` (Q,) s; ``pair`` (U,) the entry's pair; ``run`` (U,) s; ``seq`` (U,)
    s·B + b; ``slot`` (U,) (s·B + b)·d + x_l, where y is accumulated; ``count`` (U,) how many positions l ≤ L
    share the entry; ``labels`` (S, B) the targets x_{L+1}."""

    row: torch.Tensor
    col: torch.Tensor
    pair_run: torch.Tensor
    pair: torch.Tensor
    run: torch.Tensor
    seq: torch.Tensor
    slot: torch.Tensor
    count: torch.Tensor  # type: ignore[assignment]  # a field named like tuple.count, which it shadows
    labels: torch.Tensor
    states: torch.Tensor


def make_batch(cfg: ChenConfig, tokens: torch.Tensor, dtype: torch.dtype = torch.float64) -> Batch:
    """``tokens`` (S, B, L + 1) or (B, L + 1) — inputs x_{1:L} and label x_{L+1} — as a :class:`Batch`."""
    tokens = tokens.unsqueeze(0) if tokens.dim() == 2 else tokens
    require(
        int(tokens.max()) < cfg.vocab_size and int(tokens.min()) >= 0, "tokens", f"must lie in 0..{cfg.vocab_size - 1}"
    )
    S, B, L1 = tokens.shape
    d, base = cfg.vocab_size, cfg.vocab_size + 1
    x = tokens.clone()
    x[..., -1] = d  # the query position L + 1 has no token of its own
    codes = torch.zeros_like(x)
    for j, lag in enumerate(cfg.lags):
        shifted = torch.full_like(x, d)
        shifted[..., lag:] = x[..., : L1 - lag]
        codes += shifted * base**j
    states, codes = torch.unique(codes, return_inverse=True)  # only the states that occur: Z ≤ (d+1)^{|lags|}
    Z = len(states)
    seq = torch.arange(S * B).view(S, B, 1)
    key = ((seq * Z + codes[..., -1:]) * Z + codes[..., :-1]) * d + tokens[..., :-1]  # (S, B, L)
    key, count = torch.unique(key, return_counts=True)
    token, pair = key % d, key // d
    z, zq, seq = pair % Z, (pair // Z) % Z, pair // Z**2
    run = seq // B
    pairs, pair = torch.unique((run * Z + zq) * Z + z, return_inverse=True)  # (Q,), (U,)
    row, col = pairs // Z, (pairs // Z**2) * Z + pairs % Z
    return Batch(row, col, row // Z, pair, run, seq, seq * d + token, count.to(dtype), tokens[..., -1], states)


def pair_kernel(
    cfg: ChenConfig, params: dict[str, torch.Tensor], batch: Batch, p: torch.Tensor | None = None
) -> torch.Tensor:
    """T[z_{L+1}, z_l] (Q,) of :func:`kernel_table` at the batch's pairs only: the Q pairs of states that occur,
    not the S·Z² of the table (the same products, pair by pair; fused where it can: docs/conventions.md#chen-fused)."""
    v = normed_heads(cfg, params, batch.states)  # (S, H, Z, d)
    S, H, Z, d = v.shape
    p = selection_weights(params["c"]) if p is None else p
    by_state = v.transpose(1, 2).reshape(S * Z, H, d)  # (S·Z, H, d)
    if cfg.norm == "exact":
        return _exact_pairs(cfg, by_state, p, batch)
    masks = torch.tensor([sum(1 << h for h in subset) for subset in cfg.subsets], dtype=torch.int32)
    eager = functools.partial(_relu_pairs, cfg)
    return chen_fused.pairs(by_state, p, masks, batch.row, batch.col, batch.pair_run, eager)


def _relu_pairs(cfg: ChenConfig, by_state, p, masks, row, col, pair_run) -> torch.Tensor:
    """The eager pair kernel with relu'd grams (the fused loop's reference; ``masks`` are ``cfg.subsets``)."""
    gram = (by_state.index_select(0, row) * by_state.index_select(0, col)).sum(-1).relu()  # (Q, H)
    return _subset_sum(cfg, gram.unbind(1), p.index_select(0, pair_run).unbind(1))


def _exact_pairs(cfg: ChenConfig, by_state: torch.Tensor, p: torch.Tensor, batch: Batch) -> torch.Tensor:
    """The pair kernel of the exact normalisation: Σ_S p_S Π⟨v, v'⟩ over ‖φ(v)‖ ‖φ(v')‖ (docs/conventions.md#chen-2-2)."""
    Z = len(batch.states)
    gram = (by_state.index_select(0, batch.row) * by_state.index_select(0, batch.col)).sum(-1)  # (Q, H)
    pairs = _subset_sum(cfg, gram.unbind(1), p.index_select(0, batch.pair_run).unbind(1))
    sq = _subset_sum(cfg, (by_state * by_state).sum(-1).unbind(1), p.repeat_interleave(Z, 0).unbind(1))  # (S·Z,)
    n = sq.clamp_min(torch.finfo(sq.dtype).tiny).sqrt()
    return pairs / (n.index_select(0, batch.row) * n.index_select(0, batch.col))


def predict(
    cfg: ChenConfig, params: dict[str, torch.Tensor], batch: Batch, p: torch.Tensor | None = None
) -> torch.Tensor:
    """The output distribution y = Σ_{l≤L} softmax_l(a K_l) e_{x_l} (S, B, d); ``p`` as in :func:`kernel_table`."""
    kernel = pair_kernel(cfg, params, batch, p)  # (Q,)
    d = cfg.vocab_size
    args = (batch.pair, batch.run, batch.seq, batch.slot, batch.count, batch.labels.numel(), d)
    mass = chen_fused.mass(kernel, params["a"].view(-1), *args, _mass)
    y = mass.view(*batch.labels.shape, d)
    return y / y.sum(-1, keepdim=True)


def _mass(kernel, a, pair, run, seq, slot, count, n_seq: int, d: int) -> torch.Tensor:
    """The eager numerators of y (n_seq·d,): Σ_u count_u exp(a K − shift) per slot (the fused loop's reference)."""
    logits = a.index_select(0, run) * kernel.index_select(0, pair)  # (U,)
    # the largest logit of each sequence, subtracted for stability (it cancels in y)
    shift = torch.full((n_seq,), float("-inf"), dtype=logits.dtype).scatter_reduce(0, seq, logits.detach(), "amax")
    weights = (logits - shift.index_select(0, seq)).exp() * count.to(logits.dtype)
    return torch.zeros(n_seq * d, dtype=logits.dtype).index_add_(0, slot, weights)


def loss(cfg: ChenConfig, params: dict[str, torch.Tensor], batch: Batch, p: torch.Tensor | None = None) -> torch.Tensor:
    """Mean loss per run (S,): −log(y_{x_{L+1}} + 1e−12), or the repo's softmax-of-probabilities surrogate."""
    y = predict(cfg, params, batch, p)
    if cfg.loss == "ce":
        return -(y.gather(2, batch.labels.unsqueeze(-1)).squeeze(-1) + EPS_LOG).log().mean(-1)
    return -(y.log_softmax(-1).gather(2, batch.labels.unsqueeze(-1)).squeeze(-1)).mean(-1)


def selected_lags(params: dict[str, torch.Tensor], subset: tuple[int, ...]) -> tuple[int, ...]:
    """The lags the heads of ``subset`` copy (the argmax of each head's RPE weights; run 0)."""
    return tuple(sorted(int(params["w"][0, h].argmax()) + 1 for h in subset))


def copier_attention(model: ChenConfig, w: torch.Tensor, subset: tuple[int, ...]) -> float:
    """The least, over the heads of ``subset``, of a head's attention on the lag it copies (its largest RPE
    weight): softmax(w_h) over the lags the head may attend to, once all of them are in the sequence
    (docs/conventions.md#chen-2-1); ``w`` (H, M) of one run."""
    allowed = allowed_lags(model)[:, -model.window :]
    attention = w.double().masked_fill(~allowed, -torch.inf).softmax(-1)
    return float(min(attention[h].max() for h in subset)) if subset else float("nan")


def lag_attention(model: ChenConfig, w: torch.Tensor) -> torch.Tensor:
    """(H,) each head's attention on the lag it starts on (head h, lag h): softmax(w_h) over the lags the head
    may attend to, once all of them are in the sequence (docs/conventions.md#chen-2-1); ``w`` (H, M) of one run."""
    allowed = allowed_lags(model)[:, -model.window :]
    attention = w.double().masked_fill(~allowed, -torch.inf).softmax(-1)
    return attention.diagonal()
