"""With an extra's packages hidden (docs/conventions.md#extras), every command and function that needs it stops
with one line naming the extra and the command that installs it — exit status 2, no traceback — before anything is
written: a run directory, a sweep, a TensorBoard folder, a watch's tables."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from inductionlab.extras import BROUGHT_BY, PACKAGES

# Each extra's packages hidden in a fresh interpreter (HIDE), where its commands run through the command line's main
# (whose return value is the exit status) and its functions are called; the stdout, stderr and error of each come
# back as JSON (HARNESS).
HIDE = textwrap.dedent(
    """
    import io, json, sys, traceback

    HIDDEN = set(sys.argv[1].split(","))


    class Hide:  # these packages are not installed
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in HIDDEN:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, Hide())
    """
)
HARNESS = HIDE + textwrap.dedent(
    """
    from inductionlab.cli import main

    results, real, out, err = [], sys.stdout, io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err  # the same buffers throughout: the logging handler keeps the first
    for step in json.loads(sys.argv[2]):
        out.seek(0), out.truncate(), err.seek(0), err.truncate()
        try:
            results.append({"code": main(step) if isinstance(step, list) else exec(step, {})})
        except BaseException as e:
            results.append({"type": type(e).__name__, "extra": getattr(e, "extra", None), "message": str(e)})
            traceback.print_exc()
        results[-1] |= {"stdout": out.getvalue(), "stderr": err.getvalue()}
    real.write(json.dumps(results))
    """
)


def hidden(extra: str) -> list[str]:
    """The modules of ``extra``'s packages, and of those they bring, to hide."""
    names = {name for name, (_, e, _) in PACKAGES.items() if e == extra}
    names |= {m.split(".")[0] for m, package in BROUGHT_BY.items() if PACKAGES[package][1] == extra}
    return sorted(names - {"torch"})  # torch.utils.tensorboard: hiding tensorboard hides it


def without(extra: str, steps: list) -> list[dict]:
    """Each step (a command line's arguments, or Python code) run with ``extra``'s packages hidden."""
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, ",".join(hidden(extra)), json.dumps(steps)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def refused(results: list[dict], extra: str) -> None:
    """Every command stopped with exit status 2 and one line naming ``extra`` and how to install it."""
    for r in results:
        lines = r["stderr"].splitlines()
        assert r.get("code") == 2 and len(lines) == 1 and r["stdout"] == "", r
        assert lines[0].startswith("inductionlab: error: ") and f"(the {extra} extra)" in lines[0], r
        assert f"pip install 'inductionlab[{extra}]'" in lines[0], r


def raised(results: list[dict], extra: str) -> None:
    """Every call raised MissingExtra, its message one line naming ``extra`` and how to install it."""
    for r in results:
        assert r.get("type") == "MissingExtra" and r["extra"] == extra, r
        assert f"(the {extra} extra)" in r["message"] and "\n" not in r["message"], r
        assert f"pip install 'inductionlab[{extra}]'" in r["message"], r


def hf_checkpoints(root: Path, prefix: str = "checkpoint-") -> Path:
    """Folders of a tiny GPT-2 saved at steps 10 and 20 (a Trainer's with the default ``prefix``); where
    transformers is not installed, each folder's config.json alone, which is as far as a watch reads."""
    try:
        import transformers
    except ImportError:
        transformers = None
    for step in (10, 20):
        folder = root / f"{prefix}{step}"
        if transformers is not None:
            config = transformers.GPT2Config(
                n_layer=1, n_head=1, n_embd=8, n_positions=16, vocab_size=12, bos_token_id=0, eos_token_id=0
            )
            transformers.GPT2LMHeadModel(config).save_pretrained(folder)
        else:
            folder.mkdir(parents=True)
            (folder / "config.json").write_text(
                json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
            )
    return root


def untouched(tmp_path: Path) -> bool:
    """No run directory, sweep or TensorBoard folder under ``tmp_path``, and no watch files beside a series."""
    return not any(tmp_path.rglob("watch*")) and not any((tmp_path / n).exists() for n in ("run", "sweep", "tb"))


TOOLKIT = (
    "from inductionlab.models import transformer as tf; import torch; "
    "cfg = tf.TransformerConfig(vocab=11, d_model=8, n_heads=2, readout='all'); "
    "params = tf.init_params(cfg, 1, torch.Generator().manual_seed(0), torch.float32); "
)


def smoke(tmp_path: Path, name: str = "run") -> list[str]:
    return ["--preset", "smoke", "--no-progress", "--out", str(tmp_path / name)]


def test_without_the_hf_extra(tmp_path):
    series, saved = hf_checkpoints(tmp_path / "hf"), hf_checkpoints(tmp_path / "saved", "step-")
    results = without(
        "hf",
        [
            ["watch", str(series)],
            ["watch", str(saved)],
            ["run", "fast-induction", *smoke(tmp_path)],
            ["run", "fast-induction", *smoke(tmp_path), "--models", "own,hf"],
            ["run", "hf-induction", *smoke(tmp_path)],
            ["sweep", "fast-induction", *smoke(tmp_path, "sweep")],
            "from inductionlab.monitor import InductionCallback",
            "from inductionlab.monitor.hf import callback_class; callback_class()",
        ],
    )
    refused(results[:6], "hf")
    raised(results[6:], "hf")
    assert "models: 'hf' (or leave it out: --models own)" in results[3]["stderr"]
    assert untouched(tmp_path)


def test_without_the_tl_extra(tmp_path):
    (tmp_path / "tl").mkdir()
    fields = dict(n_layers=2, d_model=16, d_head=8, n_heads=2, n_ctx=16, d_vocab=12, attn_only=True)
    (tmp_path / "tl" / "config.json").write_text(json.dumps(fields))
    for step in (10, 20):
        torch.save({"embed.W_E": torch.zeros(12, 16)}, tmp_path / "tl" / f"model_step{step}.pt")
    results = without(
        "tl",
        [
            ["watch", str(tmp_path / "tl")],
            ["run", "fast-induction", *smoke(tmp_path)],
            TOOLKIT + "from inductionlab.analysis.tl_export import to_hooked_transformer as to; to(cfg, params)",
            TOOLKIT + "import inductionlab as il; il.to_hooked_transformer(cfg, params)",
            f"import inductionlab as il; il.to_hooked_transformer({str(tmp_path / 'run')!r})",  # before it is read
        ],
    )
    refused(results[:2], "tl")
    raised(results[2:], "tl")
    assert untouched(tmp_path)


def test_without_the_log_extra(tmp_path):
    own = [*smoke(tmp_path), "--models", "own"]
    results = without(
        "log",
        [
            ["run", "fast-induction", *own, "--log.tensorboard", str(tmp_path / "tb")],
            ["run", "fast-induction", *own, "--log.wandb", "project"],
            ["run", "fast-induction", *own, "--log.tensorboard", str(tmp_path / "tb"), "--log.wandb", "project"],
            f"from inductionlab.train.hooks import TensorBoardLogger; TensorBoardLogger({str(tmp_path / 'tb')!r})",
            "from inductionlab.train.hooks import WandbLogger; WandbLogger('project')",
        ],
    )
    refused(results[:3], "log")
    raised(results[3:], "log")
    assert untouched(tmp_path)


def test_without_the_llc_extra(tmp_path):
    series = hf_checkpoints(tmp_path / "hf")
    llc = "from inductionlab.monitor import LLCConfig, Monitor, MonitorConfig; "
    results = without(
        "llc",
        [
            ["watch", "--llc", str(series)],
            TOOLKIT + llc + "Monitor((cfg, params), MonitorConfig(period=5), llc=LLCConfig())",
        ],
    )
    refused(results[:1], "llc")
    raised(results[1:], "llc")
    assert untouched(tmp_path)


def test_without_the_lightning_nnsight_and_text_extras(tmp_path):
    (tmp_path / "bpe").mkdir()
    (tmp_path / "bpe" / "tokenizer.json").write_text("{}")
    lightning = [
        "from inductionlab.monitor import InductionLightningCallback",
        "from inductionlab.monitor.lightning import callback_class; callback_class()",
    ]
    raised(without("lightning", lightning), "lightning")
    raised(
        without("nnsight", ["from inductionlab.extras import require; require('nnsight', 'nnsight_adapter')"]),
        "nnsight",
    )
    bpe = ["--data.tokenizer", "bpe", "--data.vocab_size", "300"]
    results = without(
        "text",
        [
            ["run", "repeated-text", *smoke(tmp_path), *bpe],
            "from inductionlab.tasks.text import bpe_corpus; bpe_corpus(['a b c'], ['a b'], 300)",
            f"from inductionlab.tasks.text import load_tokenizer; load_tokenizer({str(tmp_path / 'bpe')!r})",
        ],
    )
    refused(results[:1], "text")
    raised(results[1:], "text")
    assert untouched(tmp_path)


def test_the_command_itself_says_one_line_and_exits_2(tmp_path):
    """``python -m inductionlab watch DIR`` on a Trainer's checkpoints without transformers (it once ended in a
    traceback from the check that a checkpoint is a causal LM)."""
    series = hf_checkpoints(tmp_path / "hf")
    code = (
        HIDE
        + "import runpy; sys.argv[1:] = ['watch', sys.argv[2]]; runpy.run_module('inductionlab', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, ",".join(hidden("hf")), str(series)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.startswith("inductionlab: error: watch on HuggingFace checkpoints needs transformers (the hf")
    assert len(done.stderr.splitlines()) == 1 and "pip install 'inductionlab[hf]'" in done.stderr
    assert untouched(tmp_path)
