"""The local learning coefficient beside the head scores (docs/monitor.md#the-llc): devinterp's SGLD estimate
against the closed form of a regular model, deterministic under a seed, on fast-induction's kept checkpoints, in
``Monitor(llc=...)`` and ``watch --llc``, and refused where it cannot act."""

import math

import pandas as pd
import pytest
import torch

pytest.importorskip("devinterp")

from inductionlab.cli import main  # noqa: E402
from inductionlab.config import ConfigError  # noqa: E402
from inductionlab.monitor import LLCConfig, Monitor, MonitorConfig, estimate_llc, toolkit_adapter  # noqa: E402

V = 4


class Bigram(torch.nn.Module):
    """logits[t] = W[token t]: a regular model of V(V − 1) identifiable parameters (a row's softmax ignores a
    constant), so its learning coefficient at the maximum-likelihood point is V(V − 1)/2 (Watanabe)."""

    def __init__(self) -> None:
        super().__init__()
        self.W = torch.nn.Parameter(torch.zeros(V, V))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.W[ids]


def _bigram_at_its_mle() -> tuple[Bigram, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    P = torch.softmax(1.5 * torch.randn(V, V, generator=gen), -1)
    seq = torch.zeros(512, 33, dtype=torch.long)
    seq[:, 0] = torch.randint(V, (512,), generator=gen)
    for t in range(1, seq.shape[1]):
        seq[:, t] = torch.multinomial(P[seq[:, t - 1]], 1, generator=gen)[:, 0]
    counts = torch.zeros(V, V).index_put_((seq[:, :-1].flatten(), seq[:, 1:].flatten()), torch.ones(1), True)
    model = Bigram()
    with torch.no_grad():
        model.W.copy_(torch.log(counts / counts.sum(1, keepdim=True)))
    return model, seq


def test_the_estimate_of_a_regular_model_is_half_its_dimension():
    """At nβ = n / log n (n = 16 384 tokens), step 1e-3 and 2 × 1000 draws, the estimate is 6.59 against
    V(V − 1)/2 = 6 (SGLD's step biases it upwards: 7.5 at 3e-3, 10.1 at 1e-2); a wrong unit (a summed loss, nats
    against bits) or a missing nβ would miss by a factor."""
    torch.set_num_threads(1)
    model, seq = _bigram_at_its_mle()
    n = seq[:, 1:].numel()
    llc, spread = estimate_llc(model, seq, LLCConfig(lr=1e-3, n_beta=n / math.log(n), localization=0.0, draws=1000))
    assert llc == pytest.approx(V * (V - 1) / 2, rel=0.2) and spread < 1.0


def _llama_series(tmp_path):
    """fast-induction's HuggingFace Llama, kept by a smoke run at its last step, and the same model untrained."""
    pytest.importorskip("transformers")
    out = tmp_path / "fi"
    argv = ["run", "fast-induction", "--preset", "smoke", "--models", "hf", "--seeds", "0", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    return out / "hf" / "seed-0"


def test_the_estimate_on_a_kept_checkpoint_is_finite_and_the_same_under_a_seed(tmp_path):
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(_llama_series(tmp_path))
    tokens = torch.randint(model.config.vocab_size, (64, 16), generator=torch.Generator().manual_seed(1))
    before = [p.detach().clone() for p in model.parameters()]
    first, again = (estimate_llc(model, tokens, LLCConfig(draws=20)) for _ in range(2))
    other = estimate_llc(model, tokens, LLCConfig(draws=20, seed=1))
    assert all(math.isfinite(v) for v in first) and first == again and other != first
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # sampled on a copy


def test_watch_llc_adds_a_column_and_a_panel_to_a_saved_series(tmp_path):
    import transformers

    folder = _llama_series(tmp_path)
    series = tmp_path / "series"
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    for step in (0, 10, 20):
        model.save_pretrained(series / f"step-{step}")
    argv = ["watch", str(series), "--batch", "4", "--threshold", "0.3", "--llc", "--llc-draws", "5"]
    assert main(argv) == 0
    steps = pd.read_parquet(series / "watch_steps.parquet")
    assert steps.step.tolist() == [0, 10, 20] and steps.llc.notna().all() and (steps.llc_std >= 0).all()
    assert steps.llc.nunique() == 1  # the same weights, the same seed: the same estimate
    assert (series / "watch.png").stat().st_size > 0


def test_the_llc_is_refused_where_it_cannot_act(capsys):
    with pytest.raises(ConfigError, match="llc.draws"):
        LLCConfig(draws=0)
    with pytest.raises(ConfigError, match="llc.lr"):
        LLCConfig(lr=math.nan)
    assert main(["watch", "nowhere", "--llc-draws", "5"]) == 2  # before the missing folder is looked at
    assert "--llc-draws: needs --llc" in capsys.readouterr().err
    assert main(["watch", "nowhere", "--llc", "--llc-chains", "0"]) == 2
    assert "--llc-chains" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="llc_tokens"):
        Monitor(_patterned(), MonitorConfig(batch=2, period=4, vocab=4), llc_tokens=torch.zeros(2, 8, dtype=torch.long))


def _patterned():
    from inductionlab.models import transformer as tf

    cfg = tf.TransformerConfig(vocab=8, d_model=8, n_layers=2, n_heads=1)
    params = tf.init_per_seed(cfg, [0])
    return toolkit_adapter(cfg, params, 0)


def test_a_toolkit_model_has_no_module_to_sample_around():
    with pytest.raises(ConfigError, match="llc: needs a torch.nn.Module"):
        Monitor(_patterned(), MonitorConfig(batch=2, period=4, vocab=8), llc=LLCConfig())
