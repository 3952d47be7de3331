"""The claims of ``scb-convergence`` (Ren et al. Fig. 1) and its negative controls (docs/conventions.md#claims,
#controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS`` data draws.  The registry
attaches them to the experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Evidence

# data seeds: each claim is judged on the mean over eight draws (docs/conventions.md#claims); eight is what the power
# rule asked of ren-fig1-l1-high-noise at its first threshold (calibration 1000–1003: m 0.719, s 0.051 against 0.75;
# docs/conventions.md#calibration), a draw costing about a minute
DRAWS = 8
# The judged draws sit on never-run seeds after each protocol change (docs/conventions.md#calibration): 0–3 were seen
# at 4 draws, 100–107 at 8 draws under the thresholds 0.01 and 0.75, which calibration 1000–1007 left underpowered
JUDGED_SEED = 200

CONTROLS = (
    Control(
        name="no-decay",
        breaks="Stage 2 keeps Stage 1's large step (η₂ = η₁): the step-size decay that carries Algorithm 1 is gone",
        overrides={"train.eta2": 0.03},
        preset=None,  # the claims' own budget (docs/conventions.md#controls)
    ),
    Control(
        name="no-l1",
        breaks="λ = 0 in Algorithm 1's Stage 2: no ℓ1 prox, the step-size decay and the rounding kept — the run compared "
        "against becomes the same algorithm",
        overrides={"train.lam": 0.0},
        preset=None,  # the claims' own budget (docs/conventions.md#controls)
    ),
    Control(
        name="no-l1-high-noise",
        breaks="λ = 0 in the high-noise comparison (η₂ = η₁): no ℓ1 prox, the run compared against becomes the same "
        "algorithm, so its gain is 1",
        overrides={"active_lambda": 0.0},
        preset=None,  # the claims' own budget (docs/conventions.md#controls)
        # its eight draws: a gain of 1 lies 0.1 beyond 0.9, which the claim's calibration spread (s 0.166, one
        # instance of eight) powers only over ⌈(1.645 · 0.166 / 0.1)²⌉ = 8 draws (docs/conventions.md#calibration)
        draws=8,
    ),
)


CLAIMS = (
    Claim(
        id="ren-fig1-recovers",
        paper="ren",
        where="§5.1 and Fig. 1; Thm 3.1",
        statement="Algorithm 1 recovers the sparse attention: 'the final distance to the ground-truth after normalization gets "
        "close to 0' (§5.1)",
        key="final.proximal.dist_A_norm",
        expected="‖Ā − Q‖_μ ≤ 0.05: 'close to 0', under a tenth of its uniform start (‖1/T − Q‖_μ ≈ 0.58 at N = 5, "
        "Q = 3, T = 500)",
        test=Between(hi=0.05),
        control="no-decay",
    ),
    Claim(
        id="ren-fig1-beats-sgd",
        paper="ren",
        where="§5.1 and Fig. 1",
        statement="Algorithm 1 beats vanilla SGD at the same learning rate: 'SGD struggles to converge with the same small batch "
        "size and large learning rate' (§5.1)",
        key="final.proximal.dist_A_norm",
        expected="proximal / SGD(η₁) ≤ 0.5",
        test=Between(hi=0.5),
        over="final.SGD η=0.03.dist_A_norm",
        control="no-decay",
    ),
    Claim(
        id="ren-fig1-beats-small-sgd",
        paper="ren",
        where="§5.1 and Fig. 1",
        statement="Algorithm 1 beats vanilla SGD at a tenth of the learning rate: with a smaller rate 'the convergence rate is "
        "too slow' (§5.1)",
        key="final.proximal.dist_A_norm",
        expected="proximal / SGD(η₁/10) ≤ 0.95 (a tie, 1, fails; 4 seeds of instance and batches: 0.78–0.89, mean "
        "0.83 ± 0.09 at 2 s.d.)",
        test=Between(hi=0.95),
        over="final.SGD η=0.003.dist_A_norm",
        control="no-decay",
        if_failed="open: with the ℓ1 step inert at λ = 1e-5, Algorithm 1's Stage 2 is SGD at η₁/10 after 2000 steps at "
        "η₁ and a rounding, so the two end close (ratio 0.82 at the default seed)",
    ),
    Claim(
        id="ren-fig1-l1-buys",
        paper="ren",
        where="§5.1 (last sentence) and App. I",
        statement="The ℓ1 step is what resolves the gradient variance: 'proximal gradient descent with an ℓ1 regularizer can "
        "resolve this issue' (§5.1); 'ℓ1 regularization is necessary' (App. I) — at the paper's λ = 1e-5, Algorithm 1 "
        "beats the same algorithm with λ = 0",
        key="final.proximal.dist_A_norm",
        expected="proximal(λ = 1e-5) / proximal(λ = 0) ≤ 0.9",
        test=Between(hi=0.9),
        over="final.proximal λ=0.dist_A_norm",
        control="no-l1",
        if_failed="a finding about the paper: λ = 1e-5 sits about 5 600× below the ℓ∞ noise of the off-support "
        "gradient entries at B = 64 (stage2_noise_linf ≈ 0.056; it would need B ≈ 2·10⁹ to act), so the prox is inert "
        "(it zeroes 1.5e-5 of T·N per step) and Fig. 1's lead over SGD comes from the step-size decay and the rounding "
        "(the no-decay control shows it)",
        evidence=Evidence(
            sentence="'This phenomenon verifies our theory that the variance of the original stochastic gradient will be "
            "too large for SGD to converge when [the batch is small], while proximal gradient descent with an [ℓ1] "
            "regularizer can resolve this issue' (§5.1, the last sentence on Fig. 1; the text is formula-stripped)",
            regime="Fig. 1's own setup (§5 'Experiment setup', App. I 'Setup'): λ = 1e-5 (stated: only '…e-5' survives "
            "the stripping, and a gap of 10³–10⁴ holds for any mantissa from 1 to 9), online batches (B = 64 is our "
            "choice: the stripped text lost the paper's B; an independent re-derivation found the ℓ∞ noise 0.018–0.17 "
            "along the population path at B = 64, 450–17 000× λ), Stage 1 at the large η₁ until τ₁, then a smaller η₂ (η₁ = 0.03, the largest that "
            "does not diverge, App. I's rule; η₂ = η₁/10; N = 5, Q = 3, T = 500, τ₁ = 2000 of 20 000 steps: the spec's "
            "values where the stripped text lost the paper's) — scb-convergence at its default meets it: "
            "final.proximal.dist_A_norm / final.proximal λ=0.dist_A_norm = 1.003 on the same batches, "
            "stage2_noise_linf / λ ≈ 5 600",
            reimplementation="tests/findings/test_ren_l1_inert.py",
        ),
    ),
    Claim(
        id="ren-fig1-l1-high-noise",
        paper="ren",
        where="App. I ('ℓ1 regularization is necessary and outperforms SGD when batch size is small (gradient noise is "
        "large)'); §3.3",
        statement="Where Stage 2's gradient noise is large (η₂ = η₁, no decay), an active λ = 1e-2 beats λ = 0",
        key="final.no decay active λ.dist_A_norm",
        expected="proximal(λ = 1e-2) / proximal(λ = 0), both at η₂ = η₁: ≤ 0.9 ('outperforms': the bar of "
        "ren-fig1-l1-buys)",
        test=Between(hi=0.9),
        over="final.no decay λ=0.dist_A_norm",
        control="no-l1-high-noise",
    ),
)
