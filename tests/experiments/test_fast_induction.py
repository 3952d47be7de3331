"""The ``fast-induction`` experiment: its data, its models, its refusal of a missing package, and the mechanism its
claims rest on — the toolkit's transformer forms an induction head on exact repeats and not on shuffled ones
(docs/monitor.md#a-head-in-two-cpu-minutes)."""

import sys

import pytest
import torch

from inductionlab import experiments, rng
from inductionlab.experiments.across.fast_induction.libraries import NetConfig, TaskConfig, own_model, repeated_windows
from inductionlab.extras import MissingExtra
from inductionlab.runs import RunContext

EXP = experiments.get("fast-induction")


def _induction_hits(tokens: torch.Tensor) -> float:
    """The share of positions whose token is the one that followed the previous occurrence of the token before it
    (what an induction head predicts), among the positions where that token occurred before."""
    hits = total = 0
    for seq in tokens.tolist():
        for i in range(2, len(seq)):
            earlier = [j for j in range(i - 1) if seq[j] == seq[i - 1]]
            if earlier:
                total += 1
                hits += seq[earlier[-1] + 1] == seq[i]
    return hits / total


def test_exact_repeats_are_periodic_and_shuffled_ones_keep_the_tokens_but_not_their_successors():
    exact = TaskConfig(vocab=1000, L=32, periods=(4, 8))
    shuffled = TaskConfig(vocab=1000, L=32, periods=(4, 8), copies="shuffled")
    a = repeated_windows(exact, (3, 40), rng.generator(0))
    b = repeated_windows(shuffled, (120,), rng.generator(0))
    assert a.shape == (3, 40, 32) and b.shape == (120, 32) and int(a.max()) < 1000
    for seq in a.view(-1, 32):  # each sequence repeats its first k tokens, k in the range
        k = next(k for k in range(4, 9) if torch.equal(seq[k:], seq[:-k]))
        assert torch.equal(seq, seq[:k].repeat(8)[:32])
    for seq in b:  # each complete copy holds the first copy's tokens, in an order of its own
        k = next(k for k in range(4, 9) if sorted(seq[k : 2 * k].tolist()) == sorted(seq[:k].tolist()))
        copies = [sorted(seq[c : c + k].tolist()) for c in range(0, 32 - k + 1, k)]
        assert all(c == copies[0] for c in copies)
    assert _induction_hits(a.view(-1, 32)) > 0.98  # below 1 only where a window holds a token twice
    assert 0.1 < _induction_hits(b) < 0.35  # the right successor by chance: about 1/k of the window


def test_the_toolkit_model_has_no_position_in_layer_2():
    model = own_model(NetConfig(d_model=32, n_heads=2), TaskConfig())
    assert model.heads("rpe").tolist() == [[1.0, 1.0], [0.0, 0.0]] and model.heads("dp").tolist() == [[1.0, 1.0]] * 2
    assert model.K == 16 and model.init_std == 0.2 and model.readout == "all"


def test_the_huggingface_model_is_an_attention_only_llama():
    pytest.importorskip("transformers")
    from inductionlab.experiments.across.fast_induction.libraries import build_hf

    model = build_hf(NetConfig(d_model=16, n_heads=2), TaskConfig(vocab=20, L=12, periods=(2, 5)), 0)
    assert type(model).__name__ == "LlamaForCausalLM" and model.config._attn_implementation == "eager"
    x = torch.randn(2, 5, 16)
    for layer in model.model.layers:
        assert torch.equal(layer.mlp(x), torch.zeros_like(x))  # the MLP adds nothing
        assert not any(p.requires_grad for p in layer.mlp.parameters())


def test_a_missing_package_is_named_before_anything_trains(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformer_lens", None)  # import transformer_lens now raises ImportError
    cfg = experiments.configure("fast-induction", "smoke")
    with pytest.raises(
        MissingExtra, match=r"^models: 'tl' \(or leave it out: --models own,hf\) needs transformer_lens"
    ):
        EXP.run(cfg, RunContext(threads=1))


def test_the_head_forms_on_exact_repeats_and_not_on_shuffled_ones():
    """The toolkit's transformer alone, one seed, 250 steps (its phase steps: 116–166 on seeds 0–8)."""
    keys = {"models": "own", "seeds": "0", "own.steps": 250}
    found = {}
    for copies in ("exact", "shuffled"):
        cfg = experiments.configure("fast-induction", overrides={**keys, "task.copies": copies})
        found[copies] = EXP.run(cfg, RunContext(threads=1)).summary["own"]
    exact, shuffled = found["exact"], found["shuffled"]
    assert exact["formed"] == [True] and exact["coincides"] == [True] and exact["phase_step"]["0"] < 200
    assert exact["final_induction_score"][0] > 0.45 and exact["final_loss_repeated"][0] < 1.5
    assert shuffled["formed"] == [False] and shuffled["coincides"] == [False]
    assert shuffled["final_induction_score"][0] < 0.1 and shuffled["final_loss_repeated"][0] > 3.0


def _section(formed: list[bool], coincides: list[bool], final: list[float] | None = None) -> dict:
    """A model's summary section: per seed, the head formed, the drop coincides, and the learned precondition's
    losses on repeated tokens (start 4.2 nats)."""
    final = final or [0.8] * len(formed)
    return {"formed": formed, "coincides": coincides, "final_loss_repeated": final, "initial_loss_repeated": [4.2] * 3}


def test_the_claims_are_judged_over_the_seeds_that_learned_and_the_controls_reject_them():
    from inductionlab.analysis.verdicts import judge, judge_control

    models = ("own", "hf", "tl")
    passing = {m: _section([True] * 3, [True] * 3) for m in models}
    one_off = {m: _section([True, False, True], [True] * 3) for m in models}
    broken = {m: _section([False] * 3, [False] * 3, [3.8] * 3) for m in models}
    stuck = {m: _section([False] * 3, [False] * 3, [4.19, 0.8, 0.8]) for m in models}  # one seed never moved
    assert len(EXP.claims) == 6 and all(c.seeds == 3 and c.learned is not None for c in EXP.claims)
    assert {c.control for c in EXP.claims} == {"shuffled-copies", "drop-without-head"}
    for claim in EXP.claims:
        assert judge(claim, passing)["status"] == "passed"
        assert judge(claim, stuck)["status"] == "did not learn"  # two of three seeds learned: not judged
        assert judge_control(claim, broken)["control_status"] == "rejects"
    heads = [c for c in EXP.claims if c.key.endswith(".formed")]
    assert all(judge(c, one_off)["status"] == "failed" for c in heads)  # one seed without a head fails the claim


def test_the_coincidence_control_keeps_the_head_and_times_a_drop_without_one():
    """The toolkit's transformer, one seed: its head forms as in the claims' run, and the loss drop of its twin
    trained on shuffled copies (attention to the context's tokens, no head) comes long before the head's rise."""
    keys = {"models": "own", "seeds": "0", "own.steps": 250}
    runs = {
        drop: EXP.run(
            experiments.configure("fast-induction", overrides={**keys, "drop_from": drop}), RunContext(threads=1)
        )
        for drop in ("same", "shuffled")
    }
    same, twin = runs["same"].summary["own"], runs["shuffled"].summary["own"]
    assert twin["formed"] == same["formed"] == [True] and twin["phase_step"] == same["phase_step"]
    assert same["coincides"] == [True] and twin["coincides"] == [False]
    assert twin["loss_drop_step"]["0"] < 60 < same["phase_step"]["0"]


def test_load_model_gives_the_toolkit_model_and_a_resume_trains_it_anew(tmp_path):
    import json

    import torch

    from inductionlab import load_model
    from inductionlab.cli import main

    out = tmp_path / "fi"
    argv = ["run", "fast-induction", "--preset", "smoke", "--models", "own", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    model = load_model(out)
    assert model.family == "transformer" and model.name == "own"
    assert load_model(out, run=1).run == 1  # one per seed of the run axis
    logits = model(torch.randint(16, (1, 10)))
    assert logits.shape[-1] == 16 and torch.isfinite(logits).all()
    before = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()  # as if stopped before the end
    assert main([*argv, "--resume"]) == 0
    after = json.loads((out / "summary.json").read_text())
    assert after["own"]["final_induction_score"] == before["own"]["final_induction_score"]  # the monitors' rows again


def test_the_library_models_are_kept_and_reload_to_the_scores_the_run_measured(tmp_path):
    """The HuggingFace Llama (``save_pretrained``) and the TransformerLens model (state dict and config) of each
    seed are kept in the run directory; reloaded, the monitor measures on them what it measured at the last step.
    The shuffled twin of the coincidence control keeps its own folder, so the claims' models are never overwritten."""
    pytest.importorskip("transformers")
    pytest.importorskip("transformer_lens")
    import json

    import pandas as pd
    import transformers
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from inductionlab.cli import main
    from inductionlab.monitor import Monitor, MonitorConfig

    out = tmp_path / "fi"
    argv = ["run", "fast-induction", "--preset", "smoke", "--models", "hf,tl", "--drop_from", "shuffled"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    cfg = json.loads((out / "config.json").read_text())
    monitor_cfg = MonitorConfig(**{k: cfg["monitor"][k] for k in ("every", "batch", "period")})
    last = pd.read_parquet(out / "monitor_steps.parquet")
    last = last[last.step == last.step.max()]
    for seed in cfg["seeds"]:
        hf = transformers.AutoModelForCausalLM.from_pretrained(out / "hf" / f"seed-{seed}")
        folder = out / "tl" / f"seed-{seed}"
        tl = HookedTransformer(HookedTransformerConfig(**json.loads((folder / "config.json").read_text())))
        tl.load_state_dict(torch.load(folder / "model.pt"))
        for name, model in (("hf", hf), ("tl", tl)):
            row = Monitor(model, monitor_cfg).measure(0)
            mine = last[(last.model == name) & (last.seed == seed)]
            assert row["best_induction"] == pytest.approx(float(mine.best_induction.iloc[0]), abs=1e-6), name
    assert (out / "hf-shuffled-twin" / "seed-0" / "model.safetensors").is_file()
