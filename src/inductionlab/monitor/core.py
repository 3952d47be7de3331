"""The induction-head monitor: every ``every`` training steps, the head scores of any model (through an adapter,
:mod:`inductionlab.monitor.adapters`) on fixed repeated random tokens, the loss on their first and repeated copies,
optionally the in-context-learning score on held-out text, and the phase change located online
(docs/monitor.md#what-it-measures, docs/monitor.md#phase-detection).

Scores (Olsson et al. 2022; :mod:`inductionlab.analysis.heads`): previous-token, duplicate-token and induction
scores in TransformerLens's form (``measure="mul"``, every query row), so that they equal TransformerLens's
``head_detector.detect_head`` on the same sequences, and the prefix-matching score at the copy period.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from inductionlab import rng
from inductionlab.analysis import heads as H
from inductionlab.analysis.phases import first_crossing
from inductionlab.config import ConfigError, require
from inductionlab.monitor.adapters import Adapter, adapter_for, checked
from inductionlab.runs import write_json, write_parquet
from inductionlab.tasks.induction import repeated_random_tokens
from inductionlab.train.loop import Hook, LoopState, Stage

SCORE_NAMES = (*H.HEAD_NAMES, "prefix_matching")
FILES = ("monitor_heads.parquet", "monitor_steps.parquet", "monitor_phase.json")
PATTERN_BYTES = 4 * 2**30  # a measurement's attention patterns in float64: n_layers · H · batch · L² · 8 bytes at most


def pattern_bytes(units: int, batch: int, length: int) -> int:
    """Bytes of ``units`` (layers × heads) attention patterns (batch, L, L) in float64."""
    return units * batch * length * length * 8


def _memory_check(units: int, batch: int, period: int, repeats: int, what: str) -> None:
    """Refuse a measurement whose float64 attention patterns exceed :data:`PATTERN_BYTES`, saying the largest
    period that fits."""
    need = pattern_bytes(units, batch, period * repeats)
    if need > PATTERN_BYTES:
        longest = math.isqrt(PATTERN_BYTES // (units * batch * 8))
        raise ConfigError(
            f"period: period · repeats = {period * repeats} tokens need {what} · batch · L² · 8 bytes = "
            f"{need / 2**30:.3g} GiB of attention patterns (float64), over the monitor's {PATTERN_BYTES / 2**30:.0f} "
            f"GiB; with {what} = {units}, batch {batch} and repeats {repeats}, period ≤ {longest // repeats}"
        )


def _integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class MonitorConfig:
    """What the monitor measures and how often (docs/monitor.md#what-it-measures)."""

    every: int = 50  # measure every this many training steps (and at step 0 / the first call)
    batch: int = 16  # repeated-random-token sequences per measurement
    period: int = 25  # tokens of the first copy (sequence = the copy repeated `repeats` times)
    repeats: int = 2
    vocab: int = 0  # 0: the model's vocabulary size
    seed: int = 0  # the fixed measurement tokens come from rng.generator(seed, "held-out")
    icl_early: int = 10  # the in-context-learning score: loss at token index icl_late minus loss at icl_early
    icl_late: int = 45  # (Olsson et al.; indices within the held-out sequences, < their length)
    threshold: float = 0.3  # a head "is an induction head" once its induction score reaches this

    def __post_init__(self) -> None:
        for name in ("every", "batch", "period", "repeats", "vocab", "seed", "icl_early", "icl_late"):
            value = getattr(self, name)
            require(_integer(value), name, f"must be an integer, got {value!r} ({type(value).__name__})")
        for name in ("every", "batch"):
            require(getattr(self, name) >= 1, name, f"must be an integer ≥ 1, got {getattr(self, name)}")
        require(self.period >= 2, "period", f"must be ≥ 2 (a copy of at least two tokens), got {self.period}")
        require(self.repeats >= 2, "repeats", f"must be ≥ 2 (a copy needs an original), got {self.repeats}")
        require(self.vocab == 0 or self.vocab >= 2, "vocab", f"must be 0 (the model's) or ≥ 2, got {self.vocab}")
        require(self.icl_early >= 1, "icl_early", f"must be ≥ 1 (token 0 has no prediction), got {self.icl_early}")
        require(self.icl_late > self.icl_early, "icl_late", f"must be > icl_early = {self.icl_early}")
        ok = isinstance(self.threshold, numbers.Real) and not isinstance(self.threshold, bool)
        require(ok and 0 < self.threshold <= 1, "threshold", f"must be a number in (0, 1], got {self.threshold!r}")
        _memory_check(1, self.batch, self.period, self.repeats, "one head")

    @property
    def length(self) -> int:
        """Tokens per measurement sequence: period · repeats."""
        return self.period * self.repeats


@dataclass(frozen=True)
class PhaseChange:
    """The induction-head phase change seen so far (docs/monitor.md#phase-detection); NaN where not (yet) seen."""

    head: tuple[int, int] | None  # (layer, head) with the largest induction score at the last measurement
    step: float  # when its induction score crossed half-way from its lowest to its last value (NaN: below threshold)
    score: float  # its last induction score
    loss_drop_step: float  # when loss_repeated crossed half-way from its peak to its last value (NaN: no drop)
    coincides: bool  # the loss drop within the score's rise (10% to 90%) ± one interval, both finite

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "head": list(self.head) if self.head is not None else None}


def head_scores(patterns: Sequence[torch.Tensor], tokens: torch.Tensor, period: int) -> dict[str, np.ndarray]:
    """Score name → (n_layers, H) float64 for attention patterns [(B, H, L, L) per layer] on tokens (B, L) that
    repeat with period ``period``: TransformerLens's form for the three detection patterns, plus prefix matching."""
    stacked = torch.stack([p.detach().to("cpu", torch.float64) for p in patterns])  # (n_layers, B, H, L, L)
    out: dict[str, np.ndarray] = {"prefix_matching": H.prefix_matching_score(stacked, period).numpy()}
    for name in H.HEAD_NAMES:
        out[name] = H.attention_score(stacked, H.detection_pattern(tokens, name)).numpy()
    return out


def token_losses(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy (nats) (B, L − 1): entry t − 1 is the loss on token t given tokens 0..t − 1, from
    logits (B, L, V) for tokens (B, L)."""
    logits = logits[:, :-1].to(torch.promote_types(logits.dtype, torch.float32))
    targets = tokens[:, 1:].to(logits.device)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(targets.shape).cpu()


def _rise(t: np.ndarray, y: np.ndarray, direction: str) -> float:
    """First t after the curve's extreme — its lowest point for ``"up"``, its highest for ``"down"`` — at which y
    crosses half-way from that extreme to its last value (:func:`first_crossing`): a loss that first rises (a model
    learning the unigram statistics of text finds random tokens less likely) is timed from its peak.  NaN without
    two finite ends that move in ``direction``."""
    if len(y) < 2 or not math.isfinite(y[-1]) or not np.isfinite(y).any():
        return math.nan
    i = int(np.nanargmin(y) if direction == "up" else np.nanargmax(y))
    if (y[-1] - y[i]) * (1 if direction == "up" else -1) <= 0:
        return math.nan
    return first_crossing(t, y, (y[i] + y[-1]) / 2, direction, start=t[i])


def phase_change(heads: pd.DataFrame, steps: pd.DataFrame, every: int, threshold: float) -> PhaseChange:
    """The phase change of a monitor's tables (docs/monitor.md#phase-detection): the best induction head at the
    last measurement, when its score rose half-way (NaN if it never reaches ``threshold``), and when the loss on
    the repeated tokens dropped half-way."""
    if heads.empty:
        return PhaseChange(None, math.nan, math.nan, math.nan, False)
    ordered = steps.sort_values("step")
    drop = _rise(ordered.step.to_numpy(float), ordered.loss_repeated.to_numpy(float), "down")
    last = heads[heads.step == heads.step.max()]
    scores = last.induction.to_numpy(float)
    if not np.isfinite(scores).any():  # no head has a score (e.g. no query had keys): no best head
        return PhaseChange(None, math.nan, math.nan, drop, False)
    best = np.where(np.isfinite(scores), scores, -math.inf).argmax()
    layer, head = int(last["layer"].iloc[best]), int(last["head"].iloc[best])
    curve = heads[(heads["layer"] == layer) & (heads["head"] == head)].sort_values("step")
    t, y = curve.step.to_numpy(float), curve.induction.to_numpy(float)
    step = _rise(t, y, "up") if np.nanmax(y, initial=-math.inf) >= threshold else math.nan
    close = False
    if math.isfinite(step) and math.isfinite(drop):  # the drop within the score's rise (10% to 90%), ± one interval
        i = int(np.nanargmin(y))
        lo, hi = (first_crossing(t, y, y[i] + f * (y[-1] - y[i]), "up", start=t[i]) for f in (0.1, 0.9))
        close = lo - every <= drop <= hi + every
    return PhaseChange((layer, head), step, float(y[-1]), drop, bool(close))


def _held_out(held_out: torch.Tensor | None, config: MonitorConfig, vocab: int) -> torch.Tensor | None:
    """Held-out token ids (B, L), L > icl_late, each in 0..vocab − 1; refused by name otherwise."""
    if held_out is None:
        return None
    ok = isinstance(held_out, torch.Tensor) and held_out.dim() == 2 and not held_out.is_floating_point()
    require(
        ok and held_out.shape[1] > config.icl_late and held_out.numel() > 0,
        "held_out",
        f"must be token ids (B, L) with L > icl_late = {config.icl_late}, got "
        + (
            f"{held_out.dtype} {tuple(held_out.shape)}"
            if isinstance(held_out, torch.Tensor)
            else type(held_out).__name__
        ),
    )
    low, high = int(held_out.min()), int(held_out.max())
    require(
        0 <= low and high < vocab,
        "held_out",
        f"token ids must lie in 0..{vocab - 1} (the model's vocabulary size is {vocab}), got {low}..{high}",
    )
    return held_out


class Monitor:
    """Measures induction-head formation on any model during training (docs/monitor.md#what-it-measures).

    ``model_or_adapter``: anything :func:`~inductionlab.monitor.adapters.adapter_for` takes.  ``held_out``: token
    ids (B, L) of real text, L > ``icl_late``, for the in-context-learning score (without it there is no
    ``icl_score`` column).  ``out_dir``: where :meth:`save` writes (after every measurement as well).  ``loggers``:
    the toolkit's :mod:`inductionlab.train.hooks` loggers (JsonlLogger, TensorBoardLogger, WandbLogger); each
    measurement reaches their ``on_evaluate`` as one run's block, with a stage named ``monitor``."""

    def __init__(
        self,
        model_or_adapter: Any,
        config: MonitorConfig = MonitorConfig(),
        held_out: torch.Tensor | None = None,
        out_dir: str | Path | None = None,
        loggers: Sequence[Hook] = (),
    ):
        require(isinstance(config, MonitorConfig), "config", f"must be a MonitorConfig, got {type(config).__name__}")
        self.config, self._source = config, model_or_adapter
        self.adapter: Adapter = adapter_for(model_or_adapter)
        n_ctx = int(getattr(self.adapter, "n_ctx", 0) or 0)
        require(
            not n_ctx or config.length <= n_ctx,
            "period",
            f"period · repeats = {config.length} tokens exceed the model's {n_ctx} positions",
        )
        units = int(getattr(self.adapter, "n_layers", 0) or 0) * int(getattr(self.adapter, "n_heads", 0) or 0)
        if units:
            _memory_check(units, config.batch, config.period, config.repeats, "layers · heads")
        model_vocab = int(getattr(self.adapter, "vocab", 0) or 0) or self._probe_vocab()
        vocab = config.vocab or model_vocab
        require(vocab <= model_vocab, "vocab", f"must be ≤ the model's vocabulary size {model_vocab}, got {vocab}")
        gen = rng.generator(config.seed, "held-out")
        self.tokens = repeated_random_tokens(config.batch, config.period, config.repeats, gen, vocab=vocab)  # (B, L)
        self.held_out = _held_out(held_out, config, model_vocab)
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.loggers = tuple(loggers)
        self._head_rows: list[pd.DataFrame] = []  # one table per measurement, joined on demand (and kept)
        self._step_rows: list[dict[str, Any]] = []
        self._measured: set[int] = set()

    def _probe_vocab(self) -> int:
        return int(checked(self.adapter, torch.zeros(1, 2, dtype=torch.long), patterns=False)[0].shape[-1])

    @property
    def heads(self) -> pd.DataFrame:
        """One row per (measurement, layer, head): step, layer, head and the four scores."""
        columns = ["step", "layer", "head", *SCORE_NAMES]
        if not self._head_rows:
            return pd.DataFrame(columns=columns)
        if len(self._head_rows) > 1:
            self._head_rows = [pd.concat(self._head_rows, ignore_index=True)]
        return self._head_rows[0].copy()

    @property
    def steps(self) -> pd.DataFrame:
        """One row per measurement: step, loss_repeated, loss_first, (icl_score), best_induction, best_layer,
        best_head."""
        return pd.DataFrame(self._step_rows)

    def measure(self, step: int, model: Any = None) -> dict[str, Any]:
        """Measure now (``model``: the model to measure, when it is not the one the monitor was built with); one
        row per (layer, head) is added to :attr:`heads` and one to :attr:`steps`, which is returned."""
        if model is not None and model is not self._source:
            self.adapter, self._source = adapter_for(model), model
        logits, patterns = checked(self.adapter, self.tokens)
        scores = head_scores(patterns, self.tokens, self.config.period)
        n_layers, n_heads = scores["induction"].shape
        layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
        table = pd.DataFrame({"step": int(step), "layer": layer, "head": head})
        self._head_rows.append(table.assign(**{name: scores[name].reshape(-1) for name in SCORE_NAMES}))
        row: dict[str, Any] = {"step": int(step), **self._losses(logits)}
        induction = scores["induction"].reshape(-1)
        best = int(np.where(np.isfinite(induction), induction, -math.inf).argmax())
        found = bool(np.isfinite(induction).any())  # else no head has a score: no best head
        row |= {
            "best_induction": float(induction[best]) if found else math.nan,
            "best_layer": best // n_heads if found else None,
            "best_head": best % n_heads if found else None,
        }
        self._step_rows.append(row)
        self._measured.add(int(step))
        self._log(row, scores["induction"])
        if self.out_dir is not None:
            self.save()
        return row

    def maybe(self, step: int, model: Any = None) -> dict[str, Any] | None:
        """:meth:`measure` when ``step`` is a multiple of ``every`` or nothing was measured yet (and this step
        was not measured already); else None."""
        if step in self._measured or (self._measured and step % self.config.every):
            return None
        return self.measure(step, model)

    def _losses(self, logits: torch.Tensor) -> dict[str, float]:
        """loss_first (targets 1..period − 1), loss_repeated (targets period + 1..L − 1: every token a copy can
        predict) and, with held-out text, icl_score."""
        losses = token_losses(logits, self.tokens).double()  # (B, L − 1): entry t − 1 scores token t
        p = self.config.period
        out = {"loss_repeated": float(losses[:, p:].mean()), "loss_first": float(losses[:, : p - 1].mean())}
        if self.held_out is not None:
            chunks = [token_losses(checked(self.adapter, x)[0], x) for x in self.held_out.split(self.config.batch)]
            text = torch.cat(chunks).double()
            out["icl_score"] = float(
                text[:, self.config.icl_late - 1].mean() - text[:, self.config.icl_early - 1].mean()
            )
        return out

    def _log(self, row: dict[str, Any], induction: np.ndarray) -> None:
        if not self.loggers:
            return
        block = {key: np.array([value]) for key, value in row.items()}
        block |= {f"induction_l{l}h{h}": np.array([v]) for (l, h), v in np.ndenumerate(induction)}
        stage = Stage("monitor", steps=int(row["step"]), eval_every=self.config.every)
        state = LoopState(0, stage, int(row["step"]), torch.empty(1, 0))
        for logger in self.loggers:
            logger.on_evaluate(state, block)

    def phase(self) -> PhaseChange:
        """The phase change detected so far (valid after each measurement)."""
        return phase_change(self.heads, self.steps, self.config.every, self.config.threshold)

    def save(self) -> list[Path]:
        """Write out_dir/monitor_heads.parquet, monitor_steps.parquet and monitor_phase.json; their paths."""
        if self.out_dir is None:
            raise ConfigError("out_dir: Monitor(..., out_dir=...) is needed to save")
        paths = [self.out_dir / name for name in FILES]
        write_parquet(paths[0], self.heads)
        write_parquet(paths[1], self.steps)
        write_json(paths[2], {"config": asdict(self.config), **self.phase().as_dict()})
        return paths
