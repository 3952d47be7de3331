"""Your own task, with public names only (docs/own_task.md): a skip-gram chain whose every token depends on the
tokens 1 and 3 back through a transition table drawn afresh for each sequence, so the model must read the table
from the context; the general transformer trained on it; the task registered as an experiment that the command
line runs; the model loaded back from the run and exported to TransformerLens with a tokenizer.

    python examples/own_task_skipgram.py [--smoke]
    inductionlab --plugin examples/own_task_skipgram.py run skipgram --preset smoke   # the same from a shell

Extras: ``tl`` (the export to TransformerLens): ``pip install 'inductionlab[tl]'`` (docs/conventions.md#extras).
"""

import argparse
import math
from dataclasses import dataclass, field

import torch

import inductionlab as il
from inductionlab.tasks.markov import ngram_estimator


@dataclass(frozen=True)
class SkipGram:
    """x_t = f(x_{t−1}, x_{t−3}) with probability 1 − noise, else uniform; the table f is drawn afresh for each
    sequence (uniform tokens), the first tokens are uniform.  Predicting x_t means finding where the same pair
    (x_{t−1}, x_{t−3}) came before and copying what followed it: a skip-gram induction head."""

    vocab: int = 5  # tokens 0..vocab−1
    parents: tuple[int, ...] = (1, 3)  # the lags each token depends on
    L: int = 64  # tokens the model reads (it predicts the next one)
    noise: float = 0.1  # probability that a token is uniform instead of f(parents)

    def sample(self, batch: int, generator: torch.Generator) -> torch.Tensor:
        """Tokens (batch, L + 1), int64, all drawn from ``generator``."""
        V, states = self.vocab, self.vocab ** len(self.parents)
        table = torch.randint(V, (batch, states), generator=generator)
        x = torch.randint(V, (batch, self.L + 1), generator=generator)  # the uniform draws
        keep = torch.rand(batch, self.L + 1, generator=generator) >= self.noise
        for t in range(max(self.parents), self.L + 1):
            state = sum(x[:, t - r] * V**i for i, r in enumerate(self.parents))
            x[:, t] = torch.where(keep[:, t], table.gather(1, state[:, None])[:, 0], x[:, t])
        return x


@dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...] = (0, 1)  # the run axis: one model per seed
    task: SkipGram = SkipGram()
    model: il.TransformerConfig = il.TransformerConfig(vocab=5, d_model=32, n_heads=2, readout="all", ffn_width=64)
    train: il.TrainConfig = field(default_factory=lambda: il.TrainConfig(lr=3e-3, steps=1500, batch_size=64))
    eval_size: int = 512  # held-out sequences


def run(cfg: Config, ctx: il.RunContext) -> il.Results:
    held_out = cfg.task.sample(cfg.eval_size, il.rng.generator(cfg.seeds[0], "held-out"))
    _, metrics = il.fit_tokens(
        cfg.model,
        lambda g: cfg.task.sample(cfg.train.batch_size, g),
        cfg.train,
        cfg.seeds,
        held_out,
        ctx,
        positions="all",  # every next token (the last one, x_(L+1), is also reported alone: last_loss)
    )
    final = metrics[metrics.step == metrics.step.max()]
    summary = {"final_loss": float(final.last_loss.mean()), "final_accuracy": float(final.last_accuracy.mean())}
    for name, parents in {"skipgram": cfg.task.parents, "bigram": (1,), "unigram": ()}.items():  # in-context counts
        law = ngram_estimator(held_out[:, :-1], parents, cfg.task.vocab, alpha=0.1)  # (B, vocab)
        summary[f"{name}_estimator_loss"] = -law.gather(1, held_out[:, -1:]).log().mean().item()
    summary["uniform_loss"] = math.log(cfg.task.vocab)
    return il.Results({"metrics": metrics}, summary)


EXPERIMENT = il.Experiment(
    name="skipgram",
    description="the general transformer on an in-context skip-gram chain (parents 1 and 3)",
    config=Config(),
    presets={"smoke": {"train.steps": 60, "eval_size": 128}, "quick": {"train.steps": 400}},
    run=run,
    headline=("final_loss", "skipgram_estimator_loss", "bigram_estimator_loss", "uniform_loss", "final_accuracy"),
    claims=(
        il.Claim(
            id="skipgram-learns",
            paper="skipgram",
            where="this example",
            statement="the model predicts the next token better than uniform guessing",
            key="final_loss",
            expected="< ln 5 = 1.609",
            test=il.Between(0.0, 1.55),
        ),
    ),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="seconds: the smoke preset")
    preset = "smoke" if parser.parse_args().smoke else "quick"
    il.register_experiment(EXPERIMENT, replace=True)
    out = "runs/skipgram"
    assert il.cli.main(["run", "skipgram", "--preset", preset, "--out", out, "--force", "--no-progress"]) == 0

    model = il.load_model(out, run=1)  # the model of seed 1
    x = EXPERIMENT.config.task.sample(4, il.rng.generator(99))
    logits = model(x[:, :-1])  # (4, L, vocab)
    print(f"loaded {model.name} of {model.experiment}: logits {tuple(logits.shape)}")
    hooked = il.to_hooked_transformer(out, run=1)
    text = " ".join(str(int(t)) for t in x[0, :-1])
    gap = (hooked(hooked.to_tokens(text))[0] - logits[0]).abs().max().item()
    print(f"TransformerLens from {text[:20]}…: largest difference from our logits {gap:.1e}")


if __name__ == "__main__":  # --plugin imports this file: run only when executed
    main()
