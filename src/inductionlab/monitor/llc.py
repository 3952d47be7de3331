"""The local learning coefficient (LLC) of a model at a measurement (docs/monitor.md#the-llc): the estimate
λ̂ = nβ (E_w[L_n(w)] − L_n(w*)) of Lau et al. (2023, "Quantifying degeneracy in singular models via the learning
coefficient"), the expectation over SGLD draws w localised at the checkpoint's weights w*, which Hoogland et al.
(2024, "The developmental landscape of in-context learning") follow across checkpoints to find developmental stages.
Sampled by ``devinterp`` (the ``llc`` extra, docs/conventions.md#extras) on a copy of the model: the model
itself is not touched."""

from __future__ import annotations

import contextlib
import io
import math
import numbers
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from inductionlab.config import ConfigError, require
from inductionlab.extras import require as require_extra

LLC = "the LLC (llc=, watch --llc)"  # what needs devinterp, as its missing-extra message says


@dataclass(frozen=True)
class LLCConfig:
    """SGLD for the LLC (devinterp's names in brackets; docs/monitor.md#the-llc)."""

    lr: float = 1e-3  # SGLD step size ε (lr)
    n_beta: float = 30.0  # the inverse temperature nβ (n_beta)
    localization: float = 100.0  # γ, the pull towards the checkpoint's weights (localization)
    chains: int = 2  # independent SGLD chains (num_chains)
    draws: int = 50  # SGLD steps per chain, every one a draw (num_draws)
    batch: int = 32  # sequences per SGLD step (batch_size)
    seed: int = 0  # SGLD's noise and batch order (init_seed): the same seed, the same estimate

    def __post_init__(self) -> None:
        for name, least in (("lr", 0.0), ("n_beta", 0.0), ("localization", -1.0)):
            value = getattr(self, name)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            what = "≥ 0" if least < 0 else "> 0"
            require(
                ok and value > least and value >= 0, f"llc.{name}", f"must be a finite number {what}, got {value!r}"
            )
        for name in ("chains", "draws", "batch"):
            value = getattr(self, name)
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 1
            require(ok, f"llc.{name}", f"must be an integer ≥ 1, got {value!r}")
        ok = isinstance(self.seed, numbers.Integral) and not isinstance(self.seed, bool)
        require(ok, "llc.seed", f"must be an integer, got {self.seed!r}")


def check_llc() -> None:
    """Refuse, before any work, a monitor asked for the LLC without ``devinterp`` installed
    (:class:`~inductionlab.extras.MissingExtra`, the ``llc`` extra)."""
    require_extra("devinterp.slt.llc", LLC)
    require_extra("datasets", LLC)


def module_of(source: Any) -> torch.nn.Module:
    """The ``torch.nn.Module`` whose weights SGLD perturbs: the monitored model, or the module an adapter wraps."""
    for candidate in (source, getattr(source, "model", None), getattr(source, "module", None)):
        if isinstance(candidate, torch.nn.Module) and any(p.requires_grad for p in candidate.parameters()):
            return candidate
    raise ConfigError(
        f"llc: needs a torch.nn.Module with trainable parameters to sample around, got {type(source).__name__} "
        "(a toolkit run's functional parameters have none: measure it with watch on a kept series instead)"
    )


def estimate_llc(model: torch.nn.Module, tokens: torch.Tensor, config: LLCConfig) -> tuple[float, float]:
    """The LLC of ``model`` at its current weights on token ids ``tokens`` (N, L) (next-token cross-entropy, nats):
    the mean over chains and its standard deviation across them.  Runs on a copy (devinterp deep-copies the model),
    in the model's mode, without printing: devinterp's progress bars and notices are swallowed."""
    llc = require_extra("devinterp.slt.llc", LLC).llc
    data = require_extra("datasets", LLC).Dataset.from_dict({"input_ids": tokens.tolist()}).with_format("torch")
    with tempfile.TemporaryDirectory() as scratch, contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = llc(
            model,
            data,
            {},
            lr=config.lr,
            n_beta=config.n_beta,
            localization=config.localization,
            num_chains=config.chains,
            num_draws=config.draws,
            batch_size=config.batch,
            init_seed=config.seed,
            device=str(next(model.parameters()).device),
            output_path=Path(scratch) / "samples.zarr",
        )
    return float(out.llc_mean.values), float(out.llc_std.values)
