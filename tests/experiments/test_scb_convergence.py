from pathlib import Path

from inductionlab import experiments
from inductionlab.experiments.ren.scb_convergence import _methods


def test_the_lambda_sweep_and_the_no_decay_pair_train_beside_the_compared_methods():
    cfg = experiments.configure("scb-convergence", overrides={"lambda_sweep": "0,0.01", "active_lambda": 0.02})
    methods = dict(_methods(cfg))
    assert list(methods)[:3] == ["proximal", "SGD η=0.03", "SGD η=0.003"]
    assert methods["proximal λ=0"].lam == 0.0 and methods["proximal λ=0.01"].lam == 0.01
    assert methods["proximal λ=0"].eta2 == cfg.train.eta2  # the sweep keeps the step-size decay
    no_decay, active = methods["no decay λ=0"], methods["no decay active λ"]
    assert no_decay.eta2 == active.eta2 == cfg.train.eta1 and (no_decay.lam, active.lam) == (0.0, 0.02)
    assert all(t.method == "proximal" for name, t in methods.items() if not name.startswith("SGD"))


def test_the_l1_finding_names_its_reimplementation_and_the_small_rate_claim_refuses_a_tie():
    claims = {c.id: c for c in experiments.get("scb-convergence").claims}
    finding = claims["ren-fig1-l1-buys"]
    assert finding.kind == "a finding about the paper"
    assert (Path(__file__).parents[2] / finding.evidence.reimplementation).is_file()
    assert not claims["ren-fig1-beats-small-sgd"].test.holds(1.0)  # a tie with SGD at η₁/10 is no win
