"""A training checkpoint read back and checked (docs/architecture.md#the-loop), and the hooks' states in it, keyed
so that a hook added or left out on resume moves no other hook's state."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inductionlab.config import differences
from inductionlab.runs import RunContext, load_checkpoint

Hook = Any  # a train.loop.Hook: its state_dict and load_state_dict (the loop imports this module)


class CheckpointError(RuntimeError):
    """A checkpoint cannot be resumed: damaged, or written by another run (config or run axis); says what to do."""


def hook_keys(hooks: Sequence[Hook]) -> list[str]:
    """Each hook's key in a checkpoint: its class and its place among the hooks of that class, so that a hook added
    or left out on resume (a logger, a progress hook) moves no other hook's state."""
    seen: dict[str, int] = {}
    keys = []
    for h in hooks:
        name = f"{type(h).__module__}.{type(h).__qualname__}"
        keys.append(f"{name}#{seen.get(name, 0)}")
        seen[name] = seen.get(name, 0) + 1
    return keys


def hook_states(hooks: Sequence[Hook]) -> dict[str, dict]:
    """The hooks' states that hold anything, by :func:`hook_keys`."""
    return {key: state for key, h in zip(hook_keys(hooks), hooks) if (state := h.state_dict())}


def read_checkpoint(path: Path, ctx: RunContext, shape: tuple[int, ...]) -> dict:
    """A checkpoint's state, checked: readable, of a run with this config (``ctx.fingerprint``) and run axis."""
    try:
        state = load_checkpoint(path)
        state["stage"], state["step"], state["stepper"]  # noqa: B018 - the keys every checkpoint has
    except Exception as err:  # noqa: BLE001 - any failure to read means the file is damaged
        raise CheckpointError(
            f"checkpoint {path} is damaged or not a checkpoint ({type(err).__name__}: {err}); "
            "delete it to redo that part of the run, or start over with --force"
        ) from None
    saved = state.get("fingerprint", "")
    if ctx.fingerprint and saved and saved != ctx.fingerprint:
        diff = differences(state["config"], ctx.config) if state.get("config") and ctx.config else []
        what = ("; it differs in " + "; ".join(diff[:6])) if diff else f" (hash {saved}, this run {ctx.fingerprint})"
        raise CheckpointError(
            f"checkpoint {path} was written by a run of another config{what}. Resume it with its own config, "
            "or start over with --force"
        )
    if tuple(state.get("shape", shape)) != shape:
        raise CheckpointError(
            f"checkpoint {path} holds parameters of shape {tuple(state['shape'])} (runs × values), "
            f"this run {shape}: another run axis or model; start over with --force"
        )
    return state


def restore_hooks(hooks: Sequence[Hook], saved: dict | list) -> None:
    """Load each hook's saved state by its :func:`hook_keys` key (a list: a checkpoint written before the states
    were keyed, by position); a hook with no saved state keeps its own."""
    if isinstance(saved, list):
        saved = dict(zip(hook_keys(hooks), saved))
    for h, key in zip(hooks, hook_keys(hooks)):
        if saved.get(key):
            h.load_state_dict(saved[key])
