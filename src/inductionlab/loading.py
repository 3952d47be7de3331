"""Models out of runs (docs/models.md): :func:`load_model` rebuilds a trained model from a finished run directory,
:func:`to_hooked_transformer` exports a general-transformer run to TransformerLens with its tokenizer.

A run keeps its models in ``checkpoints/*.pt`` (``ckpt.pt``, or one per :meth:`~inductionlab.runs.RunContext.child`
name), each with its trainer's final state: the parameters and what they are (``{"family": ..., "config": ...}``;
the SCB trainers' ``V`` and ``A`` / ``W`` say it themselves).  A text run also keeps its tokenizer (``vocab.json`` or ``tokenizer.json``).

The families, what the loaded model takes and gives (B a batch, L positions; one run, no run axis):

* ``transformer``: token ids (B, L) (``config.vocab`` > 0) or real tokens (B, L, d) → logits (B, L, V) (readout
  "all") or (B, d_out) (readout "last": the last position);
* ``toy``: real tokens (B, L) → TF₋₁(X) (B, 2), the 4-gram and induction coordinates (docs/conventions.md#wang-5-2);
* ``highdim``: real tokens (B, L, d) → (B, 2d), the 4-gram block, then the induction block;
* ``chen``: token ids x₁..x_L (B, L) → the predicted law of x_{L+1} (B, d);
* ``linear`` (SCB): token ids x₁..x_T, then x_{T+1} (B, T + 1) → f = V X a_{x_{T+1}} (B, N) (docs/conventions.md#ren-3).

A file of the run that is damaged (truncated, not JSON, not a checkpoint), foreign (another model's state dict,
another run's checkpoint: its recorded config differs from config.json) or missing (a text run's tokenizer) is
refused with :class:`RunFileError`, naming the file; the files are only read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import torch

from inductionlab import experiments
from inductionlab.analysis import tl_export
from inductionlab.config import ConfigError, differences, require
from inductionlab.extras import require as require_extra
from inductionlab.models import chen, highdim, linear, toy
from inductionlab.models import transformer as tf
from inductionlab.runs import CONFIG, SUMMARY, RunContext, RunFileError, config_values, read_json, why
from inductionlab.tasks.text import TOKENIZER_FILES, BPETokenizer, TextTokenizer, WordTokenizer
from inductionlab.train.autograd import pack


@dataclass(frozen=True)
class ToyModelConfig:
    """What the toy's forward needs besides θ: its layer 1 — ``learned`` (eq. 5 with p̃) or ``ideal``
    (y_s = x_{s−1}, the p̃ → ∞ limit that Stage II trains on by default; docs/conventions.md#wang-5-3)."""

    layer1: toy.Layer1


@dataclass(frozen=True)
class LinearModelConfig:
    """The SCB model's sizes (Ren et al. eq. 2): vocabulary N, context T; ``attention`` ``linear`` (A trained)
    or ``softmax`` (A = the column-wise softmax of the trained logits W; docs/conventions.md#ren-9)."""

    N: int
    T: int
    attention: Literal["linear", "softmax"]


@dataclass(frozen=True)
class LoadedModel:
    """One trained model of a run: ``experiment``, ``family`` (see the module docstring), ``name`` (its checkpoint),
    ``config`` (the family's config: :class:`~inductionlab.models.transformer.TransformerConfig` with its vocabulary,
    :class:`~inductionlab.models.chen.ChenConfig`, :class:`~inductionlab.models.highdim.HighDimConfig`,
    :class:`ToyModelConfig` or :class:`LinearModelConfig`), ``params`` (the family's parameters of run ``run``, with
    a run axis of length 1, so the family's own functions take them: ``tf.forward(m.config, m.params, x[None])``),
    ``checkpoint`` (its file), ``run_config`` (the run's config.json) and ``tokenizer`` (text runs: ``encode(str)
    → ids``, ``decode(ids) → str``; else None).

    ``model(inputs)`` applies the family's forward to a batch (shapes: the module docstring; docs/models.md).
    Interventions a run applied while training (an ablation's forward hooks) are not part of the model."""

    experiment: str
    family: str
    name: str
    config: Any
    params: dict[str, torch.Tensor]
    run: int
    checkpoint: Path
    run_config: dict[str, Any]
    tokenizer: TextTokenizer | None = None

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return FORWARD[self.family](self, torch.as_tensor(inputs))

    def to(self, dtype: torch.dtype) -> LoadedModel:
        """The same model with its parameters in ``dtype`` (e.g. ``torch.float64`` for exact comparisons)."""
        return replace(self, params={k: v.to(dtype) for k, v in self.params.items()})


def _real(m: LoadedModel, x: torch.Tensor, dims: int, what: str) -> torch.Tensor:
    require(x.dim() == dims and x.is_floating_point(), "inputs", f"{m.family} takes {what}, got {tuple(x.shape)}")
    return x.to(next(iter(m.params.values())).dtype)


def _ids(m: LoadedModel, x: torch.Tensor, what: str, vocab: int) -> torch.Tensor:
    ok = x.dim() == 2 and not x.is_floating_point() and x.numel() > 0 and 0 <= int(x.min()) and int(x.max()) < vocab
    require(ok, "inputs", f"{m.family} takes {what} with ids in 0..{vocab - 1}, got {x.dtype} {tuple(x.shape)}")
    return x.long()


def _transformer(m: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    cfg = m.config
    if cfg.vocab:
        x = _ids(m, x, "token ids (B, L)", cfg.vocab)
    else:
        x = _real(m, x, 3, f"real tokens (B, L, {cfg.d_in})")
    return tf.forward(cfg, m.params, x.unsqueeze(0))[0][0]


def _toy(m: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    x = _real(m, x, 2, "real tokens (B, L), L ≥ 4")
    require(x.shape[1] >= 4, "inputs", f"the toy needs L ≥ 4 positions, got {x.shape[1]}")
    return toy.forward(m.params["theta"], x.T.unsqueeze(0), m.config.layer1)[0].T  # (1, 2, B) → (B, 2)


def _highdim(m: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    x = _real(m, x, 3, f"real tokens (B, L, {m.config.d})")
    return torch.cat(highdim.forward(m.config, m.params["theta"], x), -1)[0]


def _chen(m: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    x = _ids(m, x, "token ids x_1..x_L (B, L)", m.config.vocab_size)
    dtype = m.params["a"].dtype
    tokens = torch.cat([x, torch.zeros_like(x[:, :1])], 1)  # the label slot x_{L+1} is not read by the prediction
    return chen.predict(m.config, m.params, chen.make_batch(m.config, tokens, dtype))[0]


def _linear(m: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    N, T = m.config.N, m.config.T
    x = _ids(m, x, f"token ids (B, T + 1 = {T + 1}): x_1..x_T, then x_(T+1)", N)
    require(x.shape[1] == T + 1, "inputs", f"the SCB model takes T + 1 = {T + 1} tokens, got {x.shape[1]}")
    return linear.forward(m.params["V"], m.params["A"], x[None, :, :T], x[None, :, T])[0]


FORWARD: dict[str, Callable[[LoadedModel, torch.Tensor], torch.Tensor]] = {
    "transformer": _transformer,
    "toy": _toy,
    "highdim": _highdim,
    "chen": _chen,
    "linear": _linear,
}


def _plain(obj: Any) -> Any:
    """A config as JSON reads it back (tuples as lists, NaN and ±inf as None), for comparing a checkpoint's with
    config.json."""
    return json.loads(json.dumps(obj, default=str), parse_constant=lambda _: None)


def _run_config(run_dir: Path) -> dict[str, Any]:
    """config.json of a finished run; clear errors for a directory that is not one."""
    if not (run_dir / CONFIG).is_file():
        raise FileNotFoundError(
            f"{run_dir} is not a run directory (no {CONFIG}); give the --out directory of `inductionlab run`"
        )
    if not (run_dir / SUMMARY).is_file():
        raise FileNotFoundError(
            f"{run_dir} is an unfinished run (no {SUMMARY}); finish it with `inductionlab run ... --resume` first"
        )
    path = run_dir / CONFIG
    config = read_json(path, "a run's config (JSON)")
    if not isinstance(config, dict) or not isinstance(config.get("experiment"), str):
        raise RunFileError(
            f"{path} is not an inductionlab config (a JSON object with an 'experiment' name, got "
            f"{type(config).__name__}); give the --out directory of `inductionlab run`",
            path,
        )
    return config


MAIN = RunContext.name  # the checkpoint of the model trained on the run's own context: its main model


def _checkpoint(run_dir: Path, experiment: str, name: str | None) -> Path:
    """The checkpoint of the model ``name`` (None: the run's only one, else its main one, :data:`MAIN`)."""
    files = sorted((run_dir / "checkpoints").glob("*.pt"))
    names = [p.stem for p in files]
    if not files:
        known = experiments.all_experiments()
        none = "" if getattr(known.get(experiment), "saves_models", True) else ": it trains none"
        trains = ", ".join(sorted(n for n, e in known.items() if e.saves_models))
        raise ConfigError(
            f"{run_dir}: experiment {experiment} saved no trained model (no checkpoints/*.pt{none}); "
            f"load_model loads runs of {trains}"
        )
    if name is None:
        several = f"{run_dir} holds {len(files)} models; choose one of {', '.join(names)}"
        several += f" (none is checkpoints/{MAIN}.pt, a main model)"
        require(len(files) == 1 or MAIN in names, "name", several)
        return files[0] if len(files) == 1 else files[names.index(MAIN)]
    require(name in names, "name", f"{run_dir} holds the models {', '.join(names)}, not {name!r}")
    return files[names.index(name)]


def _read_checkpoint(path: Path, config: dict[str, Any], kept: bool = False) -> dict[str, Any]:
    """The checked state of a checkpoint: readable, written by this toolkit's trainer, for the run's own config
    (config.json), and finished (unless ``kept``: one kept at an evaluation during training)."""
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - any failure to read means the file is damaged or not a checkpoint
        raise RunFileError(
            f"checkpoint {path} is damaged or not a checkpoint ({why(err)}); re-run the experiment (--force)", path
        ) from None
    ours = isinstance(ck, dict) and {"done", "stepper"} <= set(ck)
    ours = ours and isinstance(ck["stepper"], dict) and isinstance(ck["done"], bool)
    if not ours:
        held = f"a dict of {', '.join(map(str, list(ck)[:6]))}" if isinstance(ck, dict) else f"a {type(ck).__name__}"
        raise RunFileError(
            f"{path} is not an inductionlab checkpoint (it holds {held}, not a trainer's state with 'done' and "
            "'stepper'); put back the run's own checkpoint, or re-run the experiment (--force)",
            path,
        )
    saved, wanted = ck.get("config"), config_values(config)
    if isinstance(saved, dict) and _plain(saved) != _plain(wanted):
        diff = "; ".join(differences(_plain(saved), _plain(wanted))[:4])
        raise RunFileError(
            f"{path} does not match the run's {CONFIG}: it was written by a run of another config ({diff}); put back "
            "the run's own checkpoint, or re-run the experiment (--force)",
            path,
        )
    require(kept or ck["done"], "name", f"{path} is not a finished model (its run stopped early); resume the run")
    return ck


def _model_of(ck: dict[str, Any], path: Path) -> tuple[str, Any, dict[str, torch.Tensor]]:
    """:func:`_family` of a checked checkpoint; parameters that do not fit the model it records are refused."""
    reason = ""
    try:
        family, cfg, params = _family(ck["stepper"], path)
    except ConfigError:
        raise
    except Exception as err:  # noqa: BLE001 - a record or parameters of another shape: not this toolkit's model
        reason, params = f" ({why(err)})", {}
    if not params or not all(isinstance(v, torch.Tensor) and v.dim() >= 1 for v in params.values()):
        raise RunFileError(
            f"{path}: its parameters do not fit the model it records{reason}; it is not a checkpoint of this toolkit's "
            "models: re-run the experiment (--force)",
            path,
        )
    return family, cfg, params


def _word_tokenizer(path: Path) -> WordTokenizer | None:
    saved = read_json(path, "a word tokenizer (JSON)")
    words = saved.get("vocab") if isinstance(saved, dict) else None
    if isinstance(words, list) and all(isinstance(w, str) for w in words) and len(set(words)) == len(words):
        return WordTokenizer(words)
    return None


def _bpe_tokenizer(path: Path) -> BPETokenizer:
    tokenizers = require_extra("tokenizers", f"the BPE tokenizer of {path.parent}")
    try:
        return BPETokenizer(tokenizers.Tokenizer.from_str(path.read_text(encoding="utf-8")))
    except Exception as err:  # noqa: BLE001 - the tokenizers package's errors name no file
        raise RunFileError(
            f"{path} is damaged or not a BPE tokenizer ({why(err)}); re-run the experiment", path
        ) from None


def _tokenizer(run_dir: Path, config: dict[str, Any], vocab: int) -> TextTokenizer | None:
    """The tokenizer a text run (``data.tokenizer`` in its config) saved; None for synthetic tokens.  Missing or
    damaged, or of another vocabulary size than the model's, it is refused: ids could not be read as text."""
    data = config.get("data")
    kind = data.get("tokenizer") if isinstance(data, dict) else None
    if kind not in TOKENIZER_FILES:
        return None
    path = run_dir / TOKENIZER_FILES[kind]
    if not path.is_file():
        raise RunFileError(
            f"{path} is missing: this text run (data.tokenizer = {kind}) keeps its tokenizer there, and without it "
            "its token ids cannot be read as text; put the file back, or re-run the experiment (--force)",
            path,
        )
    tokenizer = _word_tokenizer(path) if kind == "word" else _bpe_tokenizer(path)
    if tokenizer is None or len(tokenizer.vocab) != vocab:
        size = f"{len(tokenizer.vocab)} tokens" if tokenizer is not None else "no list of distinct words under 'vocab'"
        raise RunFileError(
            f"{path} is not this run's tokenizer: it holds {size}, the model has {vocab}; put back the run's own "
            "file, or re-run the experiment (--force)",
            path,
        )
    return tokenizer


def _family(state: dict, path: Path) -> tuple[str, Any, dict[str, torch.Tensor]]:
    """(family, config, parameters with the run axis) of a trainer's final state."""
    record = state.get("model")
    if record is None and "V" in state and ("A" in state or "W" in state):
        A = state["A"] if "A" in state else linear.softmax_attention(state["W"])
        attention: Literal["linear", "softmax"] = "linear" if "A" in state else "softmax"
        return "linear", LinearModelConfig(A.shape[-1], A.shape[1], attention), {"V": state["V"], "A": A}
    if record is None:
        raise ConfigError(
            f"checkpoint {path} does not record which model its parameters are (written by an older inductionlab, "
            "or by train_autograd called without model=...); re-run the experiment (--force) to load it"
        )
    family, theta = record["family"], state["theta"]
    if family == "transformer":
        return family, record["config"], pack(tf.zero_params(record["config"], theta.shape[0], theta.dtype))[1](theta)
    if family == "chen":
        return family, record["config"], pack(chen.init_params(record["config"], theta.shape[0], theta.dtype))[1](theta)
    if family == "toy":
        return family, ToyModelConfig(record["layer1"]), {"theta": theta}
    require(family == "highdim", "model.family", f"unknown family {family!r} in {path}; known: {', '.join(FORWARD)}")
    return family, record["config"], {"theta": theta}


def kept_steps(run_dir: str | Path, name: str | None = None) -> tuple[str, list[int]]:
    """The model ``name`` (default: as :func:`load_model` chooses) of the finished run in ``run_dir`` and the steps
    at which it kept a checkpoint (``--keep-checkpoints``, docs/models.md#checkpoints-over-time), in order."""
    run_dir = Path(run_dir)
    path = _checkpoint(run_dir, _run_config(run_dir)["experiment"], name)
    steps = (re.fullmatch(r"step-([0-9]+)", p.stem) for p in path.with_suffix("").glob("step-*.pt"))
    return path.stem, sorted(int(m[1]) for m in steps if m)  # a stray step-x.pt is none of the toolkit's


def load_model(run_dir: str | Path, run: int = 0, name: str | None = None, step: int | None = None) -> LoadedModel:
    """The trained model ``name`` (its checkpoint's name) of the finished run in ``run_dir``, for its run ``run``
    (the row of the run axis: a seed, a setting); see :class:`LoadedModel` and docs/models.md#main-model.  Without
    ``name``: the run's only model, else its main model, the one trained on the run's own context
    (``checkpoints/ckpt.pt``, not a :meth:`~inductionlab.runs.RunContext.child`'s variant: lazy-to-rich's default
    protocol, not its ``literal`` one); a run of several models without a main one needs ``name``.  ``step``: the
    model at that training step of a run kept with ``--keep-checkpoints`` (docs/models.md#checkpoints-over-time)::

        model = load_model("runs/wikitext")
        logits = model(torch.tensor([model.tokenizer.encode("the cat sat")]))  # (1, 3, V)
    """
    run_dir = Path(run_dir)
    config = _run_config(run_dir)
    path = _checkpoint(run_dir, config["experiment"], name)
    model = path.stem
    if step is not None:
        steps = kept_steps(run_dir, model)[1]  # the message shows the first few
        require(step in steps, "step", f"{model} of {run_dir} kept no checkpoint at step {step!r} (kept: {steps[:8]})")
        path = path.with_suffix("") / f"step-{step:09d}.pt"
    family, cfg, params = _model_of(_read_checkpoint(path, config, kept=step is not None), path)
    S = next(iter(params.values())).shape[0]
    require(isinstance(run, int) and 0 <= run < S, "run", f"must lie in 0..{S - 1} (the runs of {model}), got {run}")
    one = {k: v[run : run + 1].detach().clone() for k, v in params.items()}
    tokenizer = _tokenizer(run_dir, config, cfg.vocab) if family == "transformer" else None
    return LoadedModel(config["experiment"], family, model, cfg, one, run, path, config, tokenizer)


def to_hooked_transformer(
    run_dir_or_cfg: str | Path | LoadedModel | tf.TransformerConfig,
    params: tf.Params | None = None,
    run: int = 0,
    n_ctx: int = 1024,
    *,
    name: str | None = None,
) -> Any:
    """A TransformerLens ``HookedTransformer`` of a general-transformer model, with a tokenizer, so that
    ``to_tokens("...")`` works (docs/models.md, docs/conventions.md#mech): give a run directory (with ``run`` and
    ``name`` as in :func:`load_model`), a :class:`LoadedModel`, or a config and its parameters (S, ...) as
    :func:`inductionlab.analysis.tl_export.to_hooked_transformer` takes them.  A text run's tokenizer is the one it
    saved; a synthetic run's words are the ids ``"0" … "V−1"``.  No BOS token (the models were trained without one)."""
    tl_export.transformer_lens()  # the tl extra, before the run is read (docs/conventions.md#extras)
    if isinstance(run_dir_or_cfg, tf.TransformerConfig):
        if params is None:
            raise ConfigError("params: give the parameters with a TransformerConfig")
        return tl_export.to_hooked_transformer(run_dir_or_cfg, params, run, n_ctx)
    require(params is None, "params", "comes from the run; give params only with a TransformerConfig")
    model = run_dir_or_cfg
    if not isinstance(model, LoadedModel):
        model = load_model(model, run, name)
    require(
        model.family == "transformer",
        "run_dir",
        f"{model.experiment}'s model {model.name} is the {model.family} model; TransformerLens takes the general "
        "transformer (inductionlab.models.transformer)",
    )
    return tl_export.to_hooked_transformer(model.config, model.params, 0, n_ctx, tokenizer=model.tokenizer)
