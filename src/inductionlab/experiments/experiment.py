"""What an experiment is (docs/architecture.md#experiments): one :class:`Experiment` object per paper figure, built
in its module and known by name — the toolkit's own listed in the registry's ``TOOLKIT``, which attaches the claims
and controls of their ``claims/<name>.py`` module, a researcher's own registered with
:func:`inductionlab.register_experiment` by a script, ``--plugin`` or the entry-point group
``inductionlab.experiments`` (docs/own_experiment.md)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from inductionlab.config import flatten
from inductionlab.extras import require
from inductionlab.runs import Results, RunContext
from inductionlab.theory.laws import Law

if TYPE_CHECKING:  # claims are judged, not run: an experiment's run path never imports them
    from inductionlab.analysis.claims import Claim, Control

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]*")
WALL = re.compile(r"~?\s*[0-9]+(\.[0-9]+)?\s*(min|s)")  # a wall time as list shows it and reproduce schedules by
NATS = "nats"  # the unit of a cross-entropy (natural log)
SQUARED = "½ squared error"  # the unit of Wang et al.'s eq. (3) loss
DEVICES = ("cpu", "cuda")  # the devices an experiment may declare (docs/conventions.md#devices)
C = TypeVar("C")  # the experiment's config class


def op_elements(batch: int, positions: int, *widths: int) -> int:
    """A step's largest op for ``Experiment.op_size``: batch × positions × the widest of ``widths`` and the positions
    (an attention score row is ``positions`` long; docs/conventions.md#threads)."""
    return batch * positions * max((positions, *widths))


def no_figures(results: Results, out_dir: Path) -> list[Path]:
    """The ``plot`` of an experiment that draws nothing: its tables and summary are the result."""
    return []


@dataclass(frozen=True, kw_only=True)
class Experiment(Generic[C]):
    """One experiment: ``name`` (the CLI's name: lower-case letters, digits, ``-`` and ``_``), a one-line
    ``description``, its default ``config`` (a frozen dataclass instance whose ``seeds`` field, a tuple of ints, is
    the run axis — docs/conventions.md#seeds), ``presets`` (preset name → dotted-key overrides; ``smoke`` and
    ``quick`` by convention), ``run(cfg, ctx) -> Results`` and ``plot(results, out_dir) -> [paths]``.

    Optional: ``claims`` and ``controls`` (:mod:`inductionlab.analysis.claims`: what ``reproduce`` judges);
    ``figure`` (where in a paper, for ``list``), ``wall`` (its default's wall time, e.g. ``"~3 min"``),
    ``headline`` (summary keys the CLI prints after a run) and ``draws``: for an experiment whose outcome depends
    on the data it draws, how many data seeds ``reproduce`` runs it at (draw i shifts every seed by i·len(seeds));
    each of its claims is then judged on the mean over the draws (``Claim.seeds``, docs/conventions.md#claims);
    ``judged_seed``: where a protocol changed after its judged seeds were seen, the first seed ``reproduce`` judges
    it on instead of the config's (the calibration seeds stay the config's + 1000: docs/conventions.md#calibration);
    ``calibration_draws``: at least this many calibration runs, where a claim reads one value per run however many
    seeds the run axis holds (0: the rule of :func:`inductionlab.store.plan.calibration_draws`).

    What it declares, which the commands read from here and nowhere else: ``laws`` (the scaling laws the papers
    predict for its grid keys, :class:`inductionlab.theory.laws.Law`, drawn by ``sweep report``), ``loss_unit``
    (its losses' unit on the report's axes, e.g. ``"nats"``), ``devices`` (where it runs, among ``cpu`` and ``cuda``;
    beyond the CPU, ``--device`` reaches the run through a config field ``device``; by default ``("cpu", "cuda")``
    when the config has that field, else ``("cpu",)``; ``cpu_only`` says why a CPU-only experiment refuses another
    device), ``data`` (the config key of the path of the data it reads, e.g.
    ``"data.path"``, which ``reproduce --data`` sets, an empty value meaning ``$INDUCTIONLAB_DATA``; "" when it makes
    its own data), ``saves_models`` (False for one that trains no model, so ``load_model`` has none to load) and
    ``op_size(cfg)``: the elements of one training step's largest op at that config (batch × positions × width for
    a transformer, × vocabulary for its logits), from which the default thread count is chosen; None (undeclared)
    counts as too small to gain from threads (docs/conventions.md#threads); ``times``: the names of summary keys
    and table columns (their last part) that hold the time of an event, whose value is +inf, NaN or None when it
    never came (docs/conventions.md#never), beyond those the naming rule marks (``T_*``, ``*_step``, ``*_time``,
    ``*_epoch``); ``needs``: ``lambda cfg: {module: what}``, the optional packages a run at ``cfg`` imports and what
    in it needs each (``{"transformers": "hf-induction"}``), checked before the run directory is touched
    (:meth:`check_needs`, docs/conventions.md#extras)."""

    name: str
    description: str
    config: C
    run: Callable[[C, RunContext], Results]
    plot: Callable[[Results, Path], list[Path]] = no_figures
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    claims: tuple[Claim, ...] = ()
    controls: tuple[Control, ...] = ()
    figure: str = ""
    wall: str = ""
    headline: tuple[str, ...] = ()
    cpu_only: str = "it trains tiny models whose time is Python overhead, not arithmetic"
    draws: int = 1
    judged_seed: int | None = None
    calibration_draws: int = 0
    laws: tuple[Law, ...] = ()
    loss_unit: str = ""
    devices: tuple[str, ...] = ()  # (): ("cpu", "cuda") with a config field `device`, else ("cpu",)
    data: str = ""
    saves_models: bool = True
    op_size: Callable[[C], int] | None = None
    times: tuple[str, ...] = ()
    needs: Callable[[C], Mapping[str, str]] | None = None

    def __post_init__(self) -> None:
        where = f"experiment {self.name!r}"
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            raise ValueError(
                f"experiment name {self.name!r}: lower-case letters, digits, '-' and '_', e.g. 'skip-gram'"
            )
        if not dataclasses.is_dataclass(self.config) or isinstance(self.config, type):
            raise ValueError(f"{where}: config must be a dataclass instance (frozen), got {type(self.config).__name__}")
        seeds = getattr(self.config, "seeds", None)
        if not (isinstance(seeds, tuple) and seeds and all(isinstance(s, int) for s in seeds)):
            raise ValueError(f"{where}: config needs a field `seeds: tuple[int, ...]` (the run axis), got {seeds!r}")
        if not callable(self.run) or not callable(self.plot):
            raise ValueError(f"{where}: run and plot must be callables")
        object.__setattr__(self, "presets", {k: dict(v) for k, v in dict(self.presets).items()})
        if self.judged_seed is not None and (
            isinstance(self.judged_seed, bool) or not isinstance(self.judged_seed, int)
        ):
            raise ValueError(f"{where}: judged_seed is the first judged seed, an int, got {self.judged_seed!r}")
        if isinstance(self.draws, bool) or not isinstance(self.draws, int) or not 1 <= self.draws <= 64:
            raise ValueError(
                f"{where}: draws must be an int from 1 to 64 (data seeds reproduce runs), got {self.draws!r}"
            )
        if (
            isinstance(self.calibration_draws, bool)
            or not isinstance(self.calibration_draws, int)
            or not (0 <= self.calibration_draws <= 64)
        ):
            raise ValueError(f"{where}: calibration_draws must be an int from 0 to 64, got {self.calibration_draws!r}")
        claims = tuple(self.claims)
        if self.draws > 1:  # every claim of a stochastic experiment is judged over its draws
            claims = tuple(c if c.seeds else dataclasses.replace(c, seeds=self.draws) for c in claims)
        object.__setattr__(self, "claims", claims)
        object.__setattr__(self, "controls", tuple(self.controls))
        if not isinstance(self.headline, str):
            object.__setattr__(self, "headline", tuple(self.headline))
        self._check_claims(where)
        self._check_declared(where)

    def _check_shown(self, where: str) -> None:
        """The fields ``list`` and ``run`` show: strings, summary keys, a flag (docs/own_experiment.md)."""
        for name in ("description", "figure", "wall", "cpu_only", "loss_unit", "data"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{where}: {name} must be a string, got {getattr(self, name)!r}")
        if self.wall and not WALL.fullmatch(self.wall):
            raise ValueError(f"{where}: wall is the default's wall time such as '~3 min' or '~30 s', got {self.wall!r}")
        if isinstance(self.headline, str) or not all(isinstance(k, str) and k for k in self.headline):
            raise ValueError(f"{where}: headline is a tuple of summary keys such as ('T_50',), got {self.headline!r}")
        if isinstance(self.times, str):
            object.__setattr__(self, "times", (self.times,))
        if not isinstance(self.times, (tuple, list)) or not all(isinstance(t, str) and t for t in self.times):
            raise ValueError(
                f"{where}: times is a tuple of key or column names such as ('escape',), got {self.times!r}"
            )
        object.__setattr__(self, "times", tuple(self.times))
        if self.op_size is not None and not callable(self.op_size):
            raise ValueError(
                f"{where}: op_size is a function of the config (its largest op's elements), got {self.op_size!r}"
            )
        if self.needs is not None and not callable(self.needs):
            raise ValueError(
                f"{where}: needs is a function of the config ({{module: what needs it}}), got {self.needs!r}"
            )
        if not isinstance(self.saves_models, bool):
            raise ValueError(f"{where}: saves_models must be True or False, got {self.saves_models!r}")
        if isinstance(self.devices, str) or len(set(self.devices)) != len(tuple(self.devices)):
            raise ValueError(
                f"{where}: devices is a tuple of distinct names such as ('cpu', 'cuda'), got {self.devices!r}"
            )

    def check_needs(self, cfg: C) -> None:
        """Refuse a run of ``cfg`` whose optional packages (``needs``) are not installed, naming the extra
        (:class:`inductionlab.extras.MissingExtra`): called before the run directory is touched."""
        for module, what in (self.needs(cfg) if self.needs is not None else {}).items():
            require(module, what)

    def _check_declared(self, where: str) -> None:
        self._check_shown(where)
        object.__setattr__(self, "laws", tuple(self.laws))
        keys = flatten(self.config)
        devices = tuple(self.devices) or (DEVICES if "device" in keys else ("cpu",))
        object.__setattr__(self, "devices", devices)
        for law in self.laws:
            if not isinstance(law, Law) or law.key not in keys:
                raise ValueError(f"{where}: laws: each must be a Law on one of the config's keys, got {law!r}")
        if not isinstance(self.loss_unit, str):
            raise ValueError(f"{where}: loss_unit must be a string such as 'nats', got {self.loss_unit!r}")
        if not set(devices) <= set(DEVICES):
            raise ValueError(f"{where}: devices must be some of {DEVICES}, got {self.devices!r}")
        if devices != ("cpu",) and "device" not in keys:
            raise ValueError(
                f"{where}: devices {devices!r}: beyond the CPU, --device reaches the run through a config field "
                "`device`, and this config has none"
            )
        if self.data and self.data not in keys:
            raise ValueError(
                f"{where}: data names the config key of a data path, e.g. 'data.path'; {self.data!r} is not a key"
            )

    def _check_claims(self, where: str) -> None:
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: control names repeat: {names}")
        for claim in self.claims:
            if claim.control and claim.control not in names:
                raise ValueError(f"{where}: claim {claim.id} names control {claim.control!r}; declared: {names}")
        for control in self.controls:
            if control.preset is not None and control.preset not in self.presets:
                raise ValueError(f"{where}: control {control.name} runs at unknown preset {control.preset!r}")
            if control.draws > self.draws:  # draw i runs on the seeds of the experiment's draw i
                raise ValueError(f"{where}: control {control.name} runs {control.draws} draws, its claims {self.draws}")
