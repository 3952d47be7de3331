"""Models out of runs (docs/models.md): for every model family, a smoke run, then :func:`load_model`, checked against
the run's own evaluation numbers — the final row of its metrics, recomputed through the loaded model on the
evaluation data the experiment drew; and :func:`to_hooked_transformer` of a run directory, whose logits and
``to_tokens`` equal the loaded model's."""

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from inductionlab import experiments, rng
from inductionlab.config import ConfigError
from inductionlab.loading import load_model, to_hooked_transformer
from inductionlab.runner import run_experiment
from inductionlab.tasks import markov, scb
from inductionlab.tasks.induction import lifted_target, sample_tokens
from inductionlab.tasks.mixed import MixedTarget
from inductionlab.tasks.text import load_corpus, random_chunks
from inductionlab.train.toy_batches import EvalSet

RTOL = 1e-6  # float32 recomputed beside the trainer's own evaluation: measured ≤ 2.5e-9 (the toy), 0 elsewhere


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """``smoke(name, **overrides)`` → (config, run directory): each smoke run made once for the module."""
    made = {}

    def make(name, **overrides):
        key = (name, tuple(sorted(overrides.items())))
        if key not in made:
            cfg = experiments.configure(name, "smoke", overrides)
            made[key] = cfg, run_experiment(name, cfg, tmp_path_factory.mktemp(name), threads=1)
        return made[key]

    return make


def _last(run_dir, table="metrics", **where):
    df = pd.read_parquet(run_dir / f"{table}.parquet")
    for k, v in where.items():
        df = df[df[k] == v]
    return df[df.run == 0].iloc[-1]


def _close(got, want, rtol=RTOL):
    assert abs(float(got) - float(want)) <= rtol * abs(float(want)), (float(got), float(want))


@pytest.mark.parametrize("name, table", [("ckpt", "metrics"), ("literal", "literal"), (None, "metrics")])
def test_toy_gives_the_runs_final_losses(smoke, name, table):
    """Both layer-1 modes: Stage II on the ideal layer 1 (the default) and on the trained one (the literal run);
    without a name, the run's main model (docs/models.md#main-model): the default protocol's, ``ckpt``."""
    cfg, run_dir = smoke("lazy-to-rich")
    model = load_model(run_dir, name=name)
    assert model.family == "toy" and model.config.layer1 == ("learned" if name == "literal" else "ideal")
    assert model.name == name or (name is None and model.name == "ckpt")
    evalset = EvalSet(MixedTarget.from_config(cfg.task, len(cfg.seeds)), cfg.train.eval_size, cfg.train.eval_seed)
    sums = torch.zeros(2, dtype=torch.float64)
    for b in evalset.batches:
        out = model(b.x[0].T)  # (B, L) → (B, 2)
        sums += 0.5 * (out.T - b.targets[0]).double().square().sum(-1)
    g4, ih = sums / cfg.train.eval_size
    last = _last(run_dir, table)
    _close(g4, last.loss_G4)
    _close(ih, last.loss_IH2)


def test_transformer_on_induction_targets_gives_the_runs_final_loss(smoke):
    cfg, run_dir = smoke("probe")
    model = load_model(run_dir)
    assert model.family == "transformer" and model.config.readout == "last" and model.tokenizer is None
    task = cfg.task
    x = sample_tokens((cfg.eval_size, task.L, task.d), task.tokens, rng.generator(2024), torch.float32)
    loss = 0.5 * (model(x) - task.target(x)).square().sum(-1).mean()  # (B, L, d) → (B, d)
    _close(loss, _last(run_dir).loss)


def test_text_run_keeps_its_vocabulary_and_tokenizer_and_gives_its_val_loss(smoke):
    cfg, run_dir = smoke("wikitext")
    model = load_model(run_dir)
    corpus = load_corpus(cfg.data)
    assert json.loads((run_dir / "config.json").read_text())["data"]["path"] == ""  # read from $INDUCTIONLAB_DATA
    assert model.config.vocab == len(corpus.vocab) and model.tokenizer.vocab == corpus.vocab
    first = " ".join(corpus.vocab[i] for i in corpus.train[:6])
    assert (
        model.tokenizer.encode(first) == corpus.train[:6].tolist() and model.tokenizer.decode(corpus.train[:6]) == first
    )
    gen = rng.generator(cfg.eval.seed)
    chunks = [random_chunks(corpus.val, cfg.data.L, cfg.train.batch_size, gen) for _ in range(cfg.eval.val_batches)]
    losses = [F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten()) for x in chunks]
    _close(torch.stack(losses).mean(), _last(run_dir).val_loss)


def test_chen_gives_the_runs_final_validation_loss(smoke):
    cfg, run_dir = smoke("markov-length-generalization")
    model = load_model(run_dir)
    assert model.family == "chen" and model.config.loss == "ce"
    _, val = markov.datasets(cfg.task, (cfg.seeds[0],), cfg.n_samples, cfg.n_val)  # (1, B, L + 1)
    y = model(val[0, :, :-1])  # (B, d): the law of x_{L+1}
    loss = -(y.gather(1, val[0, :, -1:]) + 1e-12).log().mean()
    _close(loss, _last(run_dir).val_loss)


@pytest.mark.parametrize("name", ["linear", "softmax"])
def test_scb_model_gives_the_runs_distances_and_population_loss(smoke, name):
    cfg, run_dir = smoke("scb-softmax")
    model = load_model(run_dir, name=name)
    assert model.family == "linear" and model.config.attention == name
    inst = scb.random_instance(cfg.task, 1, rng.numpy_generator(cfg.seeds[0]))
    last = _last(run_dir, model=name)
    _close(scb.mu_norm2(model.params["V"] - inst.P, inst.mu).sqrt()[0], last.dist_V, 1e-9)
    _close(scb.mu_norm2(model.params["A"] - inst.Q, inst.mu).sqrt()[0], last.dist_A, 1e-9)
    tokens, query, label = scb.sample(inst, 20_000, torch.Generator().manual_seed(0))
    f = model(torch.cat([tokens[0], query[0, :, None]], 1))  # (B, T + 1) → (B, N)
    per = 0.5 * (F.one_hot(label[0], cfg.task.N) - f).square().sum(-1)
    assert abs(float(per.mean()) - last.loss) <= 4 * float(per.std()) / len(per) ** 0.5  # Monte Carlo vs. exact


@pytest.mark.parametrize("name", ["Adam", "GD"])
def test_highdim_gives_the_runs_final_partial_losses(smoke, name):
    cfg, run_dir = smoke("adam-vs-gd-highdim")
    model = load_model(run_dir, name=name)
    m = model.config
    x = torch.randn(cfg.eval_size, m.L, m.d, generator=rng.generator(cfg.eval_seed))
    out = model(x)  # (B, L, d) → (B, 2d)
    for block, want, col in zip(out.split(m.d, -1), lifted_target(x, m.alpha_star, m.w_star()), ("G4", "IH2")):
        _close(0.5 * (block - want).square().mean(-1).mean(), _last(run_dir, optimizer=name)[f"loss_{col}"])


def test_markov_transformer_gives_the_runs_distance_to_uniform(smoke):
    cfg, run_dir = smoke("markov-transformer")
    model = load_model(run_dir, name="parents_1")
    task = markov.MarkovConfig(**{**vars(cfg.task), "parents": (1,)})
    held_out = markov.sample(task, cfg.eval_size, rng.numpy_generator(rng.derive(cfg.seeds[0], "held-out"), 1))[0]
    q = model(held_out[:, :-1])[:, -1].double().softmax(-1)  # (B, L) → (B, L, V): the prediction of x_{L+1}
    _close((0.5 * (q - 1 / task.vocab_size).abs().sum(-1)).mean(), _last(run_dir, parents="1").tv_uniform)


def test_clear_errors(smoke, tmp_path):
    _, run_dir = smoke("adam-vs-gd-highdim")
    with pytest.raises(ConfigError, match="name: .* holds 2 models; choose one of Adam, GD"):
        load_model(run_dir)
    with pytest.raises(ConfigError, match="holds the models Adam, GD, not 'SGD'"):
        load_model(run_dir, name="SGD")
    with pytest.raises(ConfigError, match=r"run: must lie in 0\.\.0"):  # GD: one run per reading (the mean alone)
        load_model(run_dir, run=3, name="GD")
    _, approx = smoke("approx-ih2")
    with pytest.raises(
        ConfigError, match="approx-ih2 saved no trained model .*it trains none.*load_model loads runs of"
    ):
        load_model(approx)
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text('{"experiment": "probe"}')
    with pytest.raises(FileNotFoundError, match="unfinished run"):
        load_model(tmp_path)
    _, probe = smoke("probe")
    old = tmp_path / "old"
    shutil.copytree(probe, old)
    ck = torch.load(old / "checkpoints" / "ckpt.pt", weights_only=False)
    del ck["stepper"]["model"]  # as written before the trainers recorded their model
    torch.save(ck, old / "checkpoints" / "ckpt.pt")
    with pytest.raises(ConfigError, match="does not record which model .* re-run the experiment"):
        load_model(old)
    with pytest.raises(ConfigError, match="TransformerLens takes the general transformer"):
        to_hooked_transformer(load_model(smoke("lazy-to-rich")[1], name="ckpt"))
    with pytest.raises(ConfigError, match="inputs: transformer takes real tokens"):
        load_model(probe)(torch.zeros(2, 5, dtype=torch.long))


needs_tl = pytest.mark.skipif(
    importlib.util.find_spec("transformer_lens") is None, reason="the tl extra is not installed: pip install -e '.[tl]'"
)


@needs_tl
@pytest.mark.parametrize("tokenizer", ["word", "bpe"])
def test_hooked_transformer_of_a_text_run_tokenizes_and_gives_our_logits(smoke, tokenizer):
    pytest.importorskip("tokenizers")
    overrides = {"data.tokenizer": "bpe", "data.vocab_size": 260} if tokenizer == "bpe" else {}
    _, run_dir = smoke("wikitext", **overrides)
    model = load_model(run_dir)
    text = "w1 w7 w3 w1 w7 w35"
    hooked = to_hooked_transformer(run_dir)
    tokens = hooked.to_tokens(text)
    assert tokens.tolist() == [model.tokenizer.encode(text)]
    with torch.no_grad():
        assert (hooked(tokens) - model(tokens)).abs().max() <= 1e-5 * model(tokens).abs().max()
        exact = to_hooked_transformer(model.to(torch.float64))
        assert (exact(tokens) - model.to(torch.float64)(tokens)).abs().max() < 1e-10


@needs_tl
def test_hooked_transformer_of_a_synthetic_run_reads_token_ids(smoke):
    _, run_dir = smoke("markov-transformer")
    model = load_model(run_dir, name="parents_1_2").to(torch.float64)
    hooked = to_hooked_transformer(model)
    tokens = hooked.to_tokens("0 2 1 1 0 2 2")
    assert tokens.tolist() == [[0, 2, 1, 1, 0, 2, 2]]
    with torch.no_grad():
        assert (hooked(tokens) - model(tokens)).abs().max() < 1e-10


@needs_tl
def test_the_example_of_docs_models_runs(tmp_path, monkeypatch):
    """The example at the top of docs/models.md, as written (it writes runs/mt under the working directory)."""
    text = (Path(__file__).parents[1] / "docs" / "models.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/models.md", "exec"), {})
    assert (tmp_path / "runs" / "mt" / "checkpoints" / "parents_1.pt").exists()
