"""Interventions during training, as hooks of the one loop (docs/conventions.md#mech): freeze a parameter, clamp it
to a value or a schedule, ablate attention heads — each for a window of steps.

On the command line an experiment that supports them has an ``intervene`` section::

    --intervene.freeze layer1@0:5000          # layer 1's parameters held for steps 0..4999 of each stage
    --intervene.clamp w_KQ=0.01@0:20000       # the toy's w_Q and w_K held at 0.01 until step 20 000
    --intervene.ablate blocks.0.attn          # every layer-1 head's output zeroed for the whole run
    --intervene.ablate_mode mean              # … or replaced by its batch mean

A *selector* names parameters: an exact name (``w_Q``, ``blocks.1.attn.p``), a dotted prefix (``blocks.0``: every
parameter of layer 1), an alias of the model family (``layer1``, ``w_KQ``), optionally one entry of the first
axis (``blocks.0.attn.p[1]``: head 1's slope; ``blocks.0.attn[1]`` in ``ablate``: head 1).  ``@START:STOP``
is a window of step indices within each stage (STOP left out: to the end).  Several entries are separated by
commas on the command line (a tuple in the config).  A clamp's VALUE is a finite number with
|VALUE| ≤ :data:`CLAMP_LIMIT`; :func:`check` refuses, before training, an entry that names nothing, an index, layer or
head the model lacks, or a window that starts after the longest stage has ended (it would never act).

This module knows no model: each model family says what it offers (:class:`Family`) in a module of its own —
:func:`inductionlab.train.toy_interventions.toy_family`, :func:`inductionlab.train.chen_interventions.chen_family` and
:func:`inductionlab.train.transformer_interventions.transformer_family` (with its head ablation,
:class:`~inductionlab.train.transformer_interventions.AblateHeads`) — so that an experiment imports the families it
trains and no other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from inductionlab.config import ConfigError, require
from inductionlab.train.hooks import FreezeColumns
from inductionlab.train.loop import Hook, LoopState

ALL_STEPS = range(0, 2**62)
CLAMP_LIMIT = 1e4  # the models' parameters are O(1)–O(100) (slopes, w_KQ, Chen's w_+ = 3); beyond, float32 overflows
_ENTRY = re.compile(
    r"^(?P<sel>[A-Za-z_][\w.]*)(\[(?P<idx>\d+)\])?(=(?P<value>[^@]+))?(@(?P<start>\d+):(?P<stop>\d*))?$"
)


@dataclass(frozen=True)
class Entry:
    """One parsed intervention: selector, optional index along the first axis, optional value, step window."""

    selector: str
    index: int | None
    value: float | None
    steps: range


def parse(entry: str, key: str, with_value: bool = False) -> Entry:
    """``SELECTOR[INDEX][=VALUE][@START:STOP]`` → :class:`Entry`; a message naming ``key`` where it is malformed."""
    m = _ENTRY.match(entry.strip())
    form = "SELECTOR[INDEX]=VALUE[@START:STOP]" if with_value else "SELECTOR[INDEX][@START:STOP]"
    if m is None:
        raise ConfigError(f"{key}: cannot read {entry!r}: the form is {form}, e.g. 'layer1@0:5000'")
    require(with_value == (m["value"] is not None), key, f"{entry!r}: the form is {form}")
    value = None
    if with_value:
        try:
            value = float(m["value"])
        except ValueError:
            value = math.nan
        require(
            math.isfinite(value) and abs(value) <= CLAMP_LIMIT,
            key,
            f"{entry!r}: the value must be a finite number with |VALUE| ≤ {CLAMP_LIMIT:g}, got {m['value']!r}",
        )
    start = int(m["start"] or 0)
    stop = int(m["stop"]) if m["stop"] else ALL_STEPS.stop
    require(stop > start, key, f"{entry!r}: the window @START:STOP must have STOP > START")
    return Entry(m["sel"], None if m["idx"] is None else int(m["idx"]), value, range(start, stop))


@dataclass(frozen=True)
class InterventionConfig:
    """Interventions during training (module docstring for the forms); empty: none."""

    freeze: tuple[str, ...] = ()  # SELECTOR[INDEX][@START:STOP]: held at its value from the window's start
    clamp: tuple[str, ...] = ()  # SELECTOR[INDEX]=VALUE[@START:STOP]: held at VALUE in the window
    ablate: tuple[str, ...] = ()  # blocks.L.attn[H][@START:STOP]: the heads' outputs replaced (general transformer)
    ablate_mode: Literal["zero", "mean"] = "zero"  # an ablated head's output is replaced by zero or by its batch mean

    def __post_init__(self) -> None:
        for name in ("freeze", "clamp", "ablate"):
            for entry in getattr(self, name):
                parse(entry, f"intervene.{name}", with_value=name == "clamp")
        require(self.ablate_mode in ("zero", "mean"), "intervene.ablate_mode", "must be 'zero' or 'mean'")

    def __bool__(self) -> bool:
        return bool(self.freeze or self.clamp or self.ablate)

    def entries(self) -> dict[str, list[str]]:
        """The non-empty kinds and their entries, e.g. {"freeze": ["layer1@0:5000"]} (for summaries)."""
        return {k: list(getattr(self, k)) for k in ("freeze", "clamp", "ablate") if getattr(self, k)}


def columns(
    shapes: Mapping[str, tuple[int, ...]], entry: Entry, aliases: Mapping[str, Sequence[str]], key: str
) -> list[int]:
    """The columns of θ (S, P) — parameters packed in ``shapes`` order, each flattened — that ``entry`` selects."""
    names = list(aliases.get(entry.selector, (entry.selector,)))
    chosen = [n for n in shapes if any(n == s or n.startswith(s + ".") for s in names)]
    known = sorted({*aliases, *shapes})
    require(bool(chosen), key, f"{entry.selector!r} names no parameter; known: {', '.join(known)} (or a dotted prefix)")
    out: list[int] = []
    offset = 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        if name in chosen:
            if entry.index is None:
                out.extend(range(offset, offset + size))
            else:
                require(shape != (), key, f"{name} has no axis to index with [{entry.index}]")
                require(entry.index < shape[0], key, f"{name}[{entry.index}]: the first axis has {shape[0]} entries")
                row = size // shape[0]
                out.extend(range(offset + entry.index * row, offset + (entry.index + 1) * row))
        offset += size
    return out


class ClampColumns(Hook):
    """Hold parameter columns at ``value`` — a number, or a schedule step → number — during ``steps`` of the stage
    ``stage`` (None: every stage): written before each step in the window (the step's gradient sees it), after
    it (the update is undone) and before each evaluation in the window."""

    def __init__(
        self,
        columns: Sequence[int],
        value: float | Callable[[int], float],
        steps: range = ALL_STEPS,
        stage: str | None = None,
    ):
        self.columns, self.steps, self.stage = list(columns), steps, stage
        self.value = value if callable(value) else (lambda step, v=float(value): v)

    def _write(self, state: LoopState) -> None:
        if state.step in self.steps and (self.stage is None or state.stage.name == self.stage):
            state.params[:, self.columns] = self.value(state.step)

    before_step = after_step = before_evaluate = _write


class Ablation(Hook):
    """A hook that also replaces activations inside the model: its :attr:`forward_hooks` go to the model's forward
    in the loss and the evaluation (the general transformer's head ablation,
    :class:`~inductionlab.train.transformer_interventions.AblateHeads`)."""

    @property
    def forward_hooks(self) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
        raise NotImplementedError


@dataclass(frozen=True)
class Family:
    """What a model family offers interventions: its parameter shapes (packed order, no run axis), aliases, and
    the number of layers and heads per layer of a general transformer with the hook that ablates them,
    ``ablate(layer, heads, mode, steps)`` (0 and None: heads cannot be ablated)."""

    name: str
    shapes: Mapping[str, tuple[int, ...]]
    aliases: Mapping[str, Sequence[str]]
    n_layers: int = 0
    n_heads: int = 0
    ablate: Callable[[int, list[int] | None, Literal["zero", "mean"], range], Ablation] | None = None


ABLATE_SUPPORT = "the general transformer (from the API: AblateHeads, its forward_hooks passed to the model's forward)"


def build(cfg: InterventionConfig, family: Family) -> tuple[list[Hook], list[Ablation]]:
    """The hooks of ``cfg`` for ``family``: (every hook for the loop, the ablations among them — whose
    ``forward_hooks`` the loss must pass to the model)."""
    hooks: list[Hook] = []
    for text in cfg.freeze:
        e = parse(text, "intervene.freeze")
        hooks.append(FreezeColumns(columns(family.shapes, e, family.aliases, "intervene.freeze"), e.steps))
    for text in cfg.clamp:
        e = parse(text, "intervene.clamp", with_value=True)
        assert e.value is not None  # parse with_value=True always reads one
        hooks.append(ClampColumns(columns(family.shapes, e, family.aliases, "intervene.clamp"), e.value, e.steps))
    ablations: list[Ablation] = []
    for text in cfg.ablate:
        e = parse(text, "intervene.ablate")
        require(
            family.n_layers > 0 and family.ablate is not None,
            "intervene.ablate",
            f"applies to {ABLATE_SUPPORT}; this one trains {family.name}",
        )
        assert family.ablate is not None  # for the type checker: required just above
        m = re.fullmatch(r"blocks\.(\d+)\.attn|layer(\d+)", e.selector)
        if m is None:
            raise ConfigError(
                f"intervene.ablate: {text!r}: name a layer's heads, e.g. blocks.0.attn or blocks.0.attn[1]"
            )
        layer = int(m[1]) if m[1] is not None else int(m[2]) - 1
        require(
            0 <= layer < family.n_layers, "intervene.ablate", f"{text!r}: the model has layers 0..{family.n_layers - 1}"
        )
        require(
            e.index is None or e.index < family.n_heads,
            "intervene.ablate",
            f"{text!r}: head {e.index} does not exist; layer {layer} has heads 0..{family.n_heads - 1}",
        )
        ablations.append(family.ablate(layer, None if e.index is None else [e.index], cfg.ablate_mode, e.steps))
    return hooks + ablations, ablations


def check(cfg: InterventionConfig, family: Family, stage_steps: Sequence[int], unit: str = "steps") -> None:
    """Refuse before training what would fail or silently do nothing: every entry must name parameters (or heads)
    that ``family`` has, and its window must start before the longest of the stages (``stage_steps``, in ``unit``)
    ends — windows count from the start of each stage (docs/conventions.md#mech)."""
    build(cfg, family)
    longest = max(stage_steps, default=0)
    for kind in ("freeze", "clamp", "ablate"):
        for text in getattr(cfg, kind):
            start = parse(text, f"intervene.{kind}", with_value=kind == "clamp").steps.start
            require(
                start < longest,
                f"intervene.{kind}",
                f"{text!r}: the window starts at {start}, but the longest stage has {longest} {unit}, so it would "
                f"never act; start it before {longest}",
            )


def windows(cfg: InterventionConfig) -> list[tuple[int, int | None]]:
    """The step window (start, stop) of every entry; stop None: to the end of the stage."""
    entries = [parse(e, "intervene.freeze") for e in cfg.freeze] + [parse(e, "intervene.ablate") for e in cfg.ablate]
    entries += [parse(e, "intervene.clamp", with_value=True) for e in cfg.clamp]
    return [(e.steps.start, None if e.steps.stop == ALL_STEPS.stop else e.steps.stop) for e in entries]


def forward_hooks(ablations: Sequence[Ablation]) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """The model-forward hooks of several ablations (heads of one layer in several entries are applied in turn)."""
    out: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {}
    for a in ablations:
        for name, fn in a.forward_hooks.items():
            prev = out.get(name)
            out[name] = fn if prev is None else _chain(fn, prev)
    return out


def _chain(
    f: Callable[[torch.Tensor], torch.Tensor], g: Callable[[torch.Tensor], torch.Tensor]
) -> Callable[[torch.Tensor], torch.Tensor]:
    """z ↦ f(g(z))."""
    return lambda z: f(g(z))
