"""The induction-head monitor: every ``every`` training steps, the head scores of any model (through an adapter,
:mod:`inductionlab.monitor.adapters`) on fixed repeated random tokens, the loss on their first and repeated copies,
optionally the in-context-learning score on held-out text, and the phase change located online
(docs/monitor.md#what-it-measures, docs/monitor.md#phase-detection).

Scores (Olsson et al. 2022; :mod:`inductionlab.analysis.heads`): previous-token, duplicate-token and induction
scores in TransformerLens's form (``measure="mul"``, every query row), so that they equal TransformerLens's
``head_detector.detect_head`` on the same sequences, and the prefix-matching score at the copy period.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from inductionlab import rng
from inductionlab.config import ConfigError, require
from inductionlab.monitor.adapters import Adapter, checked
from inductionlab.monitor.llc import LLCConfig, check_llc, estimate_llc, module_of
from inductionlab.monitor.phase import LEAST_SPAN, PhaseChange, confirmed, located
from inductionlab.monitor.pick import adapter_for
from inductionlab.monitor.settings import (
    SCORE_NAMES,
    MonitorConfig,
    attainable_scores,
    chance_scores,
    head_scores,
    memory_check,
)
from inductionlab.runs import write_json, write_parquet
from inductionlab.tasks.induction import repeated_random_tokens
from inductionlab.train.hooks import Logger

FILES = ("monitor_heads.parquet", "monitor_steps.parquet", "monitor_phase.json")
log = logging.getLogger(__name__)


def token_losses(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy (nats) (B, L − 1): entry t − 1 is the loss on token t given tokens 0..t − 1, from
    logits (B, L, V) for tokens (B, L)."""
    logits = logits[:, :-1].to(torch.promote_types(logits.dtype, torch.float32))
    targets = tokens[:, 1:].to(logits.device)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(targets.shape).cpu()


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


def _llc_tokens(
    llc: LLCConfig | None, tokens: torch.Tensor | None, source: Any, config: MonitorConfig, vocab: int, model_vocab: int
) -> torch.Tensor | None:
    """The sequences (N, L) the LLC is sampled on, checked before any work; None without ``llc``."""
    if llc is None:
        require(tokens is None, "llc_tokens", "given without llc=LLCConfig(...): nothing would read them")
        return None
    require(isinstance(llc, LLCConfig), "llc", f"must be an LLCConfig, got {type(llc).__name__}")
    check_llc()
    module_of(source)
    if tokens is None:
        gen = rng.generator(config.seed, "held-out", 1)  # a second held-out set, apart from the measurement's
        return repeated_random_tokens(256, config.period, config.repeats, gen, vocab=vocab)
    ok = isinstance(tokens, torch.Tensor) and tokens.dim() == 2 and not tokens.is_floating_point()
    require(ok and tokens.shape[0] >= 1 and tokens.shape[1] >= 2, "llc_tokens", "must be token ids (N, L), L ≥ 2")
    require(
        0 <= int(tokens.min()) and int(tokens.max()) < model_vocab,
        "llc_tokens",
        f"ids must lie in 0..{model_vocab - 1}",
    )
    return tokens


def _warn_without_scale(chance: float, attainable: float, vocab: int) -> None:
    """One log line when a uniform and the ideal induction head score too alike to read a head between them."""
    if attainable - chance < LEAST_SPAN:
        log.warning(
            "monitor: on vocabulary %d the ideal induction head scores %.3f and a uniform one %.3f: too close to "
            "tell a head from chance, so no phase change is located (docs/monitor.md#chance-levels); a larger "
            "vocabulary or period separates them",
            vocab,
            attainable,
            chance,
        )


class LoggerError(RuntimeError):
    """A logger of the monitor failed, with ``Monitor(logger_errors="raise")``; the measurement was saved."""


class Monitor:
    """Measures induction-head formation on any model during training (docs/monitor.md#what-it-measures).

    ``model_or_adapter``: anything :func:`~inductionlab.monitor.pick.adapter_for` takes.  ``held_out``: token
    ids (B, L) of real text, L > ``icl_late``, for the in-context-learning score (without it there is no
    ``icl_score`` column).  ``out_dir``: where :meth:`save` writes (after every measurement as well).  ``loggers``:
    the toolkit's loggers (:class:`~inductionlab.train.hooks.Logger`: JsonlLogger, TensorBoardLogger, WandbLogger);
    each measurement reaches their ``log`` as one row of a stage named ``monitor``: the numeric columns of
    :attr:`steps` and ``induction_l{layer}h{head}`` per head.
    ``on_phase_change``: called once, with the :class:`PhaseChange`, at the first measurement at which a phase
    change is detected (its ``step`` finite): checkpoint, stop or alert there (docs/monitor.md#phase-detection).
    ``logger_errors``: a logger that raises is reported once, by name, and the monitor goes on (``"warn"``), or
    its error stops the training (``"raise"``, :class:`LoggerError`); either way the measurement is saved first.
    ``llc``: an :class:`~inductionlab.monitor.llc.LLCConfig` adds the local learning coefficient of the model at
    every measurement (columns ``llc``, ``llc_std``; docs/monitor.md#the-llc), sampled on ``llc_tokens`` (N, L)
    — the training data, ideally — else on 256 fresh sequences like the measurement's."""

    def __init__(
        self,
        model_or_adapter: Any,
        config: MonitorConfig = MonitorConfig(),
        held_out: torch.Tensor | None = None,
        out_dir: str | Path | None = None,
        loggers: Sequence[Logger] = (),
        on_phase_change: Callable[[PhaseChange], Any] | None = None,
        logger_errors: str = "warn",
        llc: LLCConfig | None = None,
        llc_tokens: torch.Tensor | None = None,
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
            memory_check(units, config.batch, config.period, config.repeats, "layers · heads")
        model_vocab = int(getattr(self.adapter, "vocab", 0) or 0) or self._probe_vocab()
        vocab = config.vocab or model_vocab
        require(vocab <= model_vocab, "vocab", f"must be ≤ the model's vocabulary size {model_vocab}, got {vocab}")
        gen = rng.generator(config.seed, "held-out")
        self.tokens = repeated_random_tokens(config.batch, config.period, config.repeats, gen, vocab=vocab)  # (B, L)
        self.held_out = _held_out(held_out, config, model_vocab)
        self.llc, self.llc_tokens = llc, _llc_tokens(llc, llc_tokens, model_or_adapter, config, vocab, model_vocab)
        self.chance = chance_scores(self.tokens, config.period)  # score name → its level under uniform attention
        self.attainable = attainable_scores(self.tokens, config.period)  # score name → the ideal head's
        _warn_without_scale(self.chance["induction"], self.attainable["induction"], vocab)
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.loggers = tuple(loggers)
        for logger in self.loggers:
            require(
                callable(getattr(logger, "log", None)),
                "loggers",
                f"each must be a Logger (inductionlab.train.hooks: log(step, stage, row)), got {type(logger).__name__}",
            )
        require(
            on_phase_change is None or callable(on_phase_change),
            "on_phase_change",
            f"must be a function of the PhaseChange, got {type(on_phase_change).__name__}",
        )
        self.on_phase_change = on_phase_change
        require(logger_errors in ("warn", "raise"), "logger_errors", f"'warn' or 'raise', got {logger_errors!r}")
        self.logger_errors, self._failed_loggers = logger_errors, set[str]()
        self.detected: PhaseChange | None = None  # the phase change as first detected (None: not yet)
        self._induction = np.empty((0, 0))  # (n_layers, H): the last measurement's induction scores
        self._head_rows: list[pd.DataFrame] = []  # one table per measurement, joined on demand (and kept)
        self._step_rows: list[dict[str, Any]] = []
        self._measured: set[int] = set()
        self._phase: tuple[int, PhaseChange] | None = None  # (measurements it was located on, the phase change)

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
        if self.llc is not None and self.llc_tokens is not None:
            row["llc"], row["llc_std"] = estimate_llc(module_of(self._source), self.llc_tokens, self.llc)
        self._step_rows.append(row)
        self._measured.add(int(step))
        self._induction = scores["induction"]
        if self.out_dir is not None:
            self.save()  # first: a logger that fails loses no measurement
        self._detect()
        self._log(row, scores["induction"])
        return row

    def _detect(self) -> None:
        """Set :attr:`detected` and call ``on_phase_change`` at the first measurement that finds a phase change."""
        if self.detected is None:
            phase, c = self.phase(), self.config
            if confirmed(phase, self.heads, *self.levels, c.threshold, c.confirm):
                self.detected = phase
                if self.on_phase_change is not None:
                    self.on_phase_change(phase)

    def metrics(self) -> dict[str, float]:
        """The last measurement's headline numbers for a logger (docs/monitor.md#logging): ``monitor/`` +
        best_induction, loss_repeated, loss_first, (icl_score), (llc), chance_induction, phase_step (NaN before one is
        detected) and ``monitor/induction_l{layer}h{head}`` per head.  Empty before the first measurement."""
        if not self._step_rows:
            return {}
        row = self._step_rows[-1]
        names = ("best_induction", "loss_repeated", "loss_first", "icl_score", "llc")
        out = {f"monitor/{name}": float(row[name]) for name in names if name in row}
        out["monitor/chance_induction"] = self.chance["induction"]
        out["monitor/phase_step"] = self.detected.step if self.detected is not None else math.nan
        return out | {f"monitor/induction_l{l}h{h}": float(v) for (l, h), v in np.ndenumerate(self._induction)}

    def plot(self, path: str | Path | None = None) -> Any:
        """The figure of :func:`inductionlab.monitor.figure.plot_monitor` (every head's induction score over the
        steps, the best head against its chance level and threshold, the loss, the phase change): written to
        ``path`` (default: out_dir/monitor.png) and its path returned; without either, the matplotlib Figure."""
        from inductionlab.monitor.figure import plot_monitor

        require(bool(self._step_rows), "plot", "nothing measured yet: call measure(step) or maybe(step) first")
        target = Path(path) if path is not None else (self.out_dir / "monitor.png" if self.out_dir else None)
        fig = plot_monitor(
            self.heads, self.steps, self.phase(), self.chance, self.config.threshold, target, attainable=self.attainable
        )
        return fig

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
        """Tell the loggers the measurement: :meth:`metrics`' numbers (the tags the Trainer path logs, under the
        stage ``monitor``) and the best head's place."""
        values = {key.removeprefix("monitor/"): v for key, v in self.metrics().items()}
        values |= {key: float(row[key]) for key in ("best_layer", "best_head") if row.get(key) is not None}
        for logger in self.loggers:
            try:
                logger.log(int(row["step"]), "monitor", values)
            except Exception as err:
                name = type(logger).__name__
                if self.logger_errors == "raise":
                    raise LoggerError(f"monitor: logger {name} failed at step {row['step']}: {err}") from err
                if name not in self._failed_loggers:
                    self._failed_loggers.add(name)
                    log.error("monitor: logger %s failed at step %s (%s); the monitor goes on", name, row["step"], err)

    def phase(self) -> PhaseChange:
        """The phase change detected so far (valid after each measurement; located once per measurement, which
        :meth:`save`, the live decision and the figure then share)."""
        if self._phase is None or self._phase[0] != len(self._step_rows):
            self._phase = (len(self._step_rows), located(self.heads, self.steps, self.config, *self.levels))
        return self._phase[1]

    @property
    def levels(self) -> tuple[float, float]:
        """The induction scores of a uniform and of the ideal head on the monitor's tokens: relative 0 and 1."""
        return self.chance["induction"], self.attainable["induction"]

    def save(self) -> list[Path]:
        """Write out_dir/monitor_heads.parquet, monitor_steps.parquet and monitor_phase.json; their paths."""
        if self.out_dir is None:
            raise ConfigError("out_dir: Monitor(..., out_dir=...) is needed to save")
        paths = [self.out_dir / name for name in FILES]
        write_parquet(paths[0], self.heads)
        write_parquet(paths[1], self.steps)
        write_json(paths[2], {"config": asdict(self.config), "chance": self.chance, **self.phase().as_dict()})
        return paths
