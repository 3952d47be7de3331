"""Ordered series of checkpoints the ``watch`` command measures (docs/monitor.md#the-watch-command): a
``transformers.Trainer``'s ``checkpoint-STEP`` folders, any folders saved with ``save_pretrained`` whose names end
in their step (``step-500``, ``step500``, ``500``), TransformerLens state dicts (``*.pt`` / ``*.pth`` files whose
names end in their step) loaded into a ``HookedTransformer``, and a toolkit run that kept a checkpoint per
evaluation (``--keep-checkpoints``: ``checkpoints/<model>/step-STEP.pt``)."""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from inductionlab.config import ConfigError, require
from inductionlab.extras import require as require_extra
from inductionlab.models import transformer as tf
from inductionlab.runs import RunContext, RunFileError, why
from inductionlab.train.autograd import pack

# a name that is a step as a whole: a prefix without digits, then the step (step-100, ckpt_100, 100); step-1e3,
# v1.0 or epoch2-step100 are not, whatever digits they end in
STEP = re.compile(r"[^0-9]*?([0-9]+)")
KEPT = re.compile(r"step-([0-9]+)")  # a checkpoint the toolkit kept (--keep-checkpoints): step-STEP.pt
STATE_DICTS = (".pt", ".pth")
TL_KEYS = {"n_layers", "d_model", "d_head", "n_ctx", "d_vocab"}  # a TransformerLens HookedTransformerConfig's
HF, TL = "watch on HuggingFace checkpoints", "watch on TransformerLens state dicts"  # what needs each extra


@dataclass(frozen=True)
class Series:
    """Checkpoints as (step, path), by step; ``load`` path → a model :func:`~inductionlab.monitor.adapter_for`
    takes; ``incomplete`` path → why it cannot be measured (None: it looks whole); ``kind`` names the series."""

    kind: str
    items: list[tuple[int, Path]]
    load: Callable[[Path], Any]
    incomplete: Callable[[Path], str | None]


def numbered(
    directory: Path, keep: Callable[[Path], bool], record: Callable[[Path], int | None] = lambda p: None
) -> list[tuple[int, Path]]:
    """The entries of ``directory`` that ``keep`` accepts, with their step, by step: the step the entry records
    itself (``record``: a ``trainer_state.json``'s ``global_step``), else its name (without suffix) read whole as a
    step (:data:`STEP`).  An entry without a digit in its name and no record is not part of the series; one whose
    name holds digits but is not a step (``v1.0``, ``step-1e3``), or two entries at one step, are refused, naming
    them (docs/monitor.md#the-watch-command)."""
    found: dict[int, Path] = {}
    for entry in sorted(directory.iterdir()) if directory.is_dir() else ():
        if not keep(entry):
            continue
        name = entry.stem if entry.is_file() else entry.name
        step, match = record(entry), STEP.fullmatch(name)
        if step is None and match is None:
            require(
                not re.search("[0-9]", name),
                "directory",
                f"{entry} is not named by its step (a prefix without digits, then the step: step-100) and records "
                "none (no trainer_state.json with a global_step): rename it or move it out of the series",
            )
            continue
        step = int(match[1]) if step is None and match is not None else step
        assert step is not None
        require(
            step not in found,
            "directory",
            f"{found.get(step)} and {entry} are both step {step}: keep one of them in the series",
        )
        found[step] = entry
    return sorted(found.items())


@contextlib.contextmanager
def quiet_transformers() -> Iterator[Any]:
    """``transformers`` with its "Loading weights" progress bars off (put back afterwards)."""
    transformers = require_extra("transformers", HF)

    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    try:
        yield transformers
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()


def load_hf(folder: Path) -> Any:
    """A ``save_pretrained`` folder as a causal LM with eager attention (the monitor needs its weights)."""
    with quiet_transformers() as transformers:
        return transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager")


def global_step(folder: Path) -> int | None:
    """The ``global_step`` a Trainer wrote in the folder's ``trainer_state.json`` (None: no such file, or no
    readable step in it)."""
    try:
        step = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))["global_step"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def _tl_template(directory: Path, template: Any) -> Any:
    """The ``HookedTransformer`` the state dicts load into: ``template``, else one built from the directory's
    ``config.json`` when it holds a HookedTransformerConfig's fields; None when neither."""
    if template is not None:
        return template
    path = directory / "config.json"
    try:
        fields = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not (isinstance(fields, dict) and TL_KEYS <= set(fields) and "model_type" not in fields):
        return None
    tl = require_extra("transformer_lens", TL)
    with warnings.catch_warnings():  # 3.x announces HookedTransformer's removal in 4.0; the tl extra pins < 4
        warnings.filterwarnings("ignore", "HookedTransformer is deprecated", DeprecationWarning)
        try:
            return tl.HookedTransformer(tl.HookedTransformerConfig(**fields))
        except (TypeError, ValueError, AssertionError) as err:
            raise RunFileError(
                f"{path} is no HookedTransformerConfig TransformerLens can build ({why(err)})", path
            ) from None


def _tl_series(directory: Path, template: Any) -> Series | None:
    files = numbered(directory, lambda p: p.is_file() and p.suffix in STATE_DICTS)
    model = _tl_template(directory, template) if files else None
    if model is None:
        return None

    def load(path: Path) -> Any:
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        return model

    return Series("TransformerLens state dicts", files, load, lambda path: None)


def _kept_model(directory: Path, name: str | None) -> str:
    """The model whose kept checkpoints are watched: ``name``, else the only one, else the main one
    (``checkpoints/ckpt/``, as :func:`inductionlab.loading.load_model` chooses)."""
    kept = sorted(p.name for p in (directory / "checkpoints").iterdir() if p.is_dir() and any(p.glob("step-*.pt")))
    if name is None:
        several = f"{directory} kept the checkpoints of {len(kept)} models; choose one of {', '.join(kept)} (--name)"
        require(len(kept) == 1 or RunContext.name in kept, "name", several)
        return kept[0] if len(kept) == 1 else RunContext.name
    require(name in kept, "name", f"{directory} kept the checkpoints of {', '.join(kept)}, not {name!r}")
    return name


def read_kept(path: Path, run: int = 0) -> tuple[tf.TransformerConfig, tf.Params]:
    """The general transformer of run ``run`` in a checkpoint kept at an evaluation (``--keep-checkpoints``,
    docs/models.md#checkpoints-over-time): (config, parameters with a run axis of length 1)."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)["stepper"]
    except Exception as err:  # noqa: BLE001 - any failure to read: a damaged or foreign file
        raise RunFileError(f"{path} is damaged or not a kept checkpoint ({why(err)})", path) from None
    record = state.get("model") or {}
    family = record.get("family", "unrecorded")
    require(family == "transformer", "name", f"{path} holds the {family} model; the monitor measures transformers")
    cfg, theta = record["config"], state["theta"]  # θ (S, P): the runs' packed parameters
    params = pack(tf.zero_params(cfg, theta.shape[0], theta.dtype))[1](theta)
    S = theta.shape[0]
    require(isinstance(run, int) and 0 <= run < S, "run", f"must lie in 0..{S - 1} (the runs of {path.parent.name})")
    return cfg, {k: v[run : run + 1].detach().clone() for k, v in params.items()}


def _toolkit_series(directory: Path, name: str | None, run: int) -> Series | None:
    """A toolkit run directory with kept checkpoints (``checkpoints/<model>/step-STEP.pt``)."""
    if not ((directory / "config.json").is_file() and any((directory / "checkpoints").glob("*/step-*.pt"))):
        return None
    folder = directory / "checkpoints" / _kept_model(directory, name)
    items = numbered(folder, lambda p: p.is_file() and KEPT.fullmatch(p.stem) is not None)
    for _, path in reversed(items):  # a bad ``run`` fails here, naming the field, before any measurement
        with contextlib.suppress(RunFileError):  # a damaged one is skipped (and reported) where it is measured
            read_kept(path, run)
            break
    return Series(f"kept checkpoints of {folder.name}", items, lambda path: read_kept(path, run), lambda path: None)


def find_series(
    directory: Path,
    trainer: Callable[[Path], list[tuple[int, Path]]],
    incomplete: Callable[[Path], str | None],
    template: Any = None,
    name: str | None = None,
    run: int = 0,
) -> Series | None:
    """The series of checkpoints in ``directory``, tried in this order: a Trainer's ``checkpoint-*`` folders
    (``trainer``), a toolkit run's kept checkpoints (model ``name``, run ``run``), ``save_pretrained`` folders
    ending in their step, TransformerLens state dicts (into ``template``, or the HookedTransformer its
    ``config.json`` describes).  None when it holds none of these."""
    found = trainer(directory)
    if found:
        require_extra("transformers", HF)  # before any checkpoint is read (docs/conventions.md#extras)
        return Series("checkpoint-* folders", found, load_hf, incomplete)
    toolkit = _toolkit_series(directory, name, run)
    if toolkit is not None:
        return toolkit
    folders = numbered(directory, lambda p: p.is_dir() and (p / "config.json").is_file(), global_step)
    if folders:
        require_extra("transformers", HF)
        return Series("save_pretrained folders", folders, load_hf, incomplete)
    return _tl_series(directory, template)


def no_series(directory: Path) -> ConfigError:
    return ConfigError(
        f"watch: no checkpoints in {directory}: give the output_dir of a transformers Trainer that saved checkpoints "
        "(save_strategy='steps'), a folder of save_pretrained folders named by their step (step-500, ...), a folder "
        "of TransformerLens state dicts named by their step with the model's HookedTransformerConfig as config.json "
        "(or watch(..., template=model) from Python), or a toolkit run kept with --keep-checkpoints"
    )
