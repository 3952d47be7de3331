"""The scaling laws the papers predict for a sweep's grid keys: for a grid key, which summary numbers should scale as
a power of which function of the key, and where the paper says so.  An experiment declares the laws that hold for it
(``Experiment.laws``); the sweep report (``inductionlab report SWEEP_DIR``) overlays each law on its panel, scaled by a fitted constant, beside a
log-log least-squares fit of the exponent (:func:`inductionlab.analysis.scaling.power_law_fit`).

A law reads  ``metric ≈ C · u(x)^exponent``: x is the grid key's value, u one of :data:`VARIABLES` (L, 1 + α*, w*,
log(1/σ_init)), and the constant C, which the theory does not give, is fitted.

:data:`THEOREM_5_5`, the toy model on the mixed target (Gaussian tokens, Stage II on the t = lr × step axis, as
``lazy-to-rich`` runs it), Wang et al. Theorem 5.5 (docs/conventions.md#wang-5-5): T_I = O(1); T_II, T_III = Θ((1+α*)² L log(1/σ_init) / w*²)
(:func:`inductionlab.theory.mixed.predicted_plateau`); T_50 lies between T_II and T_III, so it scales alike; the
observation time T_o = Θ(L):

============================  =======================  ==============  ========
grid key                      summary keys             u(x)            exponent
============================  =======================  ==============  ========
``task.L``                    T_II, T_50, T_III, T_o   L               1
``task.L``                    T_I                      L               0
``task.alpha_star``           T_II, T_50, T_III        1 + α*          2
``task.w_star``               T_II, T_50, T_III        w*              −2
``model.sigma_init``          T_II, T_50, T_III        log(1/σ_init)   1
``model.sigma_init``          T_I                      log(1/σ_init)   0
============================  =======================  ==============  ========

The theorem is proved for Gaussian tokens, so ``lazy-to-rich-boolean`` declares no law.  A grid key without a law
gets the plain plot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

VARIABLES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "L": lambda x: x,
    "1+α*": lambda x: 1 + x,
    "w*": lambda x: x,
    "log(1/σ_init)": lambda x: np.log(1 / x),
}


@dataclass(frozen=True)
class Law:
    """``metric ≈ C · u(x)^exponent`` for each metric in ``metrics``, x the value of grid key ``key``, u =
    :data:`VARIABLES` [``variable``], or ``transform`` for a variable of one's own (``variable`` then names it, e.g.
    ``Law("n", ("T",), "n", 1.0, "my Thm 2", transform=lambda x: x)``); ``source`` cites the paper (shown in the
    figure's legend)."""

    key: str
    metrics: tuple[str, ...]
    variable: str
    exponent: float
    source: str
    transform: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        for name in ("key", "variable", "source"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"Law.{name}: a non-empty string, got {getattr(self, name)!r}")
        if not (
            isinstance(self.metrics, tuple) and self.metrics and all(isinstance(m, str) and m for m in self.metrics)
        ):
            raise ValueError(f"Law.metrics: a tuple of summary keys such as ('T_50',), got {self.metrics!r}")
        if isinstance(self.exponent, bool) or not isinstance(self.exponent, (int, float)):
            raise ValueError(f"Law.exponent: a number, got {self.exponent!r}")
        if not np.isfinite(self.exponent):
            raise ValueError(f"Law.exponent: a finite number, got {self.exponent!r}")
        if self.transform is not None and not callable(self.transform):
            raise ValueError(f"Law.transform: a function of x, got {type(self.transform).__name__}")
        if self.transform is None and self.variable not in VARIABLES:
            raise ValueError(
                f"Law.variable {self.variable!r}: expected one of {sorted(VARIABLES)}, or give its transform"
            )

    def formula(self) -> str:
        """``T_II, T_50 ∝ (1+α*)^2``: the metrics and the power of u(x) they scale as."""
        base = f"({self.variable})" if "+" in self.variable else self.variable
        return f"{', '.join(self.metrics)} ∝ {base}^{self.exponent:g}"

    def u(self, x) -> np.ndarray:
        """u(x) (NaN where u is undefined or not positive: log(1/σ_init) at σ_init ≥ 1)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            u = (self.transform or VARIABLES[self.variable])(np.asarray(x, dtype=float))
        return np.where(u > 0, u, np.nan)


PLATEAU = ("T_II", "T_50", "T_III")
THM_5_5 = "Wang et al. Thm 5.5"
THEOREM_5_5: tuple[Law, ...] = (
    Law("task.L", (*PLATEAU, "T_o"), "L", 1.0, THM_5_5),
    Law("task.L", ("T_I",), "L", 0.0, f"{THM_5_5}: T_I = O(1)"),
    Law("task.alpha_star", PLATEAU, "1+α*", 2.0, THM_5_5),
    Law("task.w_star", PLATEAU, "w*", -2.0, THM_5_5),
    Law("model.sigma_init", PLATEAU, "log(1/σ_init)", 1.0, THM_5_5),
    Law("model.sigma_init", ("T_I",), "log(1/σ_init)", 0.0, f"{THM_5_5}: T_I = O(1)"),
)


def laws_for(laws: tuple[Law, ...], key: str) -> dict[str, Law]:
    """{summary key: its law} among ``laws`` (an experiment's) for grid key ``key`` (empty where none is given)."""
    return {metric: law for law in laws if law.key == key for metric in law.metrics}
