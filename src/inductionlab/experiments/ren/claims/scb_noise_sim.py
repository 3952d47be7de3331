"""The claims and negative controls of ``scb-noise-sim`` (Ren et al. App. I and §3.3; docs/conventions.md#claims,
#controls, #ren-10): the prox against SGD under noise after τ₁ at N = 10 and N = 50, Stage 2 in the theorem's
regime.  ``DRAWS``: the data draws each claim is judged on.  The registry attaches them to the experiment when it
imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Learned, Reached

# data seeds: the power rule (docs/conventions.md#calibration, row scb-noise-sim) asks 3 of ren-noise-prox-n10 and
# ren-noise-n50.  The observation ren-noise-stage1-poly asked 12 on four calibration seeds and 1712 on twelve, so it
# is not judged at this scale; the calibration keeps the twelve seeds (1100–1111) that showed it
DRAWS = 3
CALIBRATION_DRAWS = 12
# judged draws on never-run seeds: 100–103 were seen under the protocol before the comparison after τ₁, 200–203 at four
# draws, which left ren-noise-stage1-poly underpowered; the calibration seeds stay the config's + 1000
JUDGED_SEED = 300

CONTROLS = (
    Control(
        name="no-stage2",
        breaks="ρ = 1e9: Algorithm 1 never leaves Stage 1 — no rounding, no step-size decay, no prox (vanilla SGD at η₁, "
        "after τ₁ too, which is read at its own ρ = 0.1 and so is the claim's): the two arms are one method",
        overrides={"train.rho": 1e9},
        preset="n10",
        cheaper="the claim reads N = 10's comparison after τ₁ alone, whose instance (seed, N), noise scales and batch "
        "stream do not depend on the other N nor on the batch sweep, which this preset leaves out",
    ),
    Control(
        name="no-stage2-n50",
        breaks="ρ = 1e9 at N = 50: Algorithm 1 never leaves Stage 1 — no rounding, no step-size decay, no prox "
        "(vanilla SGD at η₁ at every batch, and after τ₁, which is read at its own ρ = 0.1 and so is the claim's)",
        overrides={"train.rho": 1e9},
        preset="n50",
        cheaper="the claim reads only N = 50, whose instance, noise scales and batch sweep are drawn from (seed, N) "
        "alone, so leaving out N = 10 and 20 cannot change its value",
    ),
    Control(
        name="inert-lambda",
        breaks="the theorem-regime run's λ set to the paper's 1e-5: the prox still acts, but its threshold η_Aλ lies "
        "below the drift of the useless entries ((1 − α)/T, Lemma E.4's lower bound), so it no longer holds them at 0",
        overrides={"regime.lam": 1e-5},
        preset="n10",
        cheaper="the claims read the theorem-regime run alone (its own N, T, instance and batches: Regime), which the "
        "N values and the batch sweep this preset cuts do not enter",
    ),
)

_STAGE2 = Learned(
    key="regime.stage1_exit_step",
    test=Reached(),
    what="the theorem-regime run left Stage 1 (max(α, β) ≥ ρ) and so has a Stage 2 to measure",
)
CLAIMS = (
    Claim(
        id="ren-noise-prox-n10",
        paper="ren",
        where="App. I ('proximal gradient descent performs better than the vanilla gradient descent with a small batch "
        "size (when the noise is large)'; N = 10 by the Gaussian-noise simulation); Thm 3.1 (poly(T) samples before "
        "τ₁, poly(N, Q, 1/ε)·log T after)",
        statement="At N = 10, after τ₁ — Stage 1 once at a large batch B₁ = 65 536 until max(α, β) ≥ 0.1 — Algorithm 1 "
        "ends closer to Q than vanilla SGD(η₁) at the same small batch B₂ = 32 on the same noise, 6000 steps on: "
        "what acts there is Stage 2's rounding and step-size decay (η₂ = η₁/10), not ℓ1 — at λ = 1e-5 the ℓ1 step "
        "zeroes almost nothing (ren-fig1-l1-buys)",
        key="after_tau1.10.final_ratio",
        expected="better: Algorithm 1's final ‖Ā − Q‖_μ / SGD(η₁)'s ≤ 0.8 (exactly 1 where Algorithm 1 never leaves "
        "Stage 1, the control); before τ₁ the two are one algorithm, so Stage 1 is shared",
        test=Between(hi=0.8),
        control="no-stage2",
        learned=Learned(
            key="after_tau1.10.stage1_exit_step",
            test=Between(hi=3000),
            what="Stage 1 ends at B₁ within its cap: max(α, β) ≥ 0.1 by step 3000",
            shown="after_tau1.10.stage1_exit_step",
        ),
        if_failed="open: at N = 10 Algorithm 1's Stage 2 (rounding, η₂ = η₁/10) does not end below SGD(η₁)'s noise "
        "floor at B₂ = 32 within 6000 steps of τ₁",
    ),
    Claim(
        id="ren-noise-n50",
        paper="ren",
        where="App. I ('proximal gradient descent performs better than the vanilla gradient descent with a small batch "
        "size (when the noise is large)'; N = 50 by the Gaussian-noise simulation); Thm 3.1 (poly(T) samples before "
        "τ₁, poly(N, Q, 1/ε)·log T after)",
        statement="At N = 50, after τ₁ — Stage 1 once at a large batch B₁ = 65 536 until max(α, β) ≥ 0.1 — Algorithm 1 "
        "ends closer to Q than vanilla SGD(η₁) at the same small batch B₂ = 256 on the same noise, 6000 steps on: "
        "what acts there is Stage 2's rounding and step-size decay (η₂ = η₁/10), not ℓ1 — at λ = 1e-5 the ℓ1 step "
        "zeroes almost nothing (ren-fig1-l1-buys)",
        key="after_tau1.50.final_ratio",
        expected="better: Algorithm 1's final ‖Ā − Q‖_μ / SGD(η₁)'s ≤ 0.8, as at N = 10 (exactly 1 where Algorithm 1 "
        "never leaves Stage 1, the control); before τ₁ the two are one algorithm, so Stage 1 is shared",
        test=Between(hi=0.8),
        control="no-stage2-n50",
        learned=Learned(
            key="after_tau1.50.stage1_exit_step",
            test=Between(hi=3000),
            what="Stage 1 ends at B₁ within its cap: max(α, β) ≥ 0.1 by step 3000",
            shown="after_tau1.50.stage1_exit_step",
        ),
        if_failed="open: at N = 50 Algorithm 1's Stage 2 (rounding, η₂ = η₁/10) does not end below SGD(η₁)'s noise "
        "floor at B₂ = 256 within 6000 steps of τ₁",
    ),
    Claim(
        id="ren-noise-stage1-poly",
        paper="ren",
        where="§3.2 (Stage 1 needs poly(T) samples: an O(Q/T) signal against T-independent noise)",
        statement="The batch Stage 1 needs grows with N at T = 10NQ (poly(T)·poly(N, Q)); it does not separate poly(T) "
        "from poly(N, Q): at a fixed T = 300 the slope is the same (1.71), so this is an observation, not §3.2's test",
        key="min_batch_log_log_slope",
        expected="slope of log B against log N ≥ 1",
        test=Between(lo=1.0),
        observation=True,
        # the twelve calibration seeds 1100–1111: slopes −1.55 to 3.27, m 1.06, s 1.50 (docs/conventions.md#calibration)
        needs="1712 data draws by the power rule (margin 0.14 at 12), about 8 800 core-minutes, or an instrument "
        "whose spread over seeds is far smaller: the smallest recovering batch moves on a ×4 grid, its N = 10 value "
        "alone spans 16–4096 over seeds, and where N = 50 recovers at no batch of the sweep the slope is fitted over "
        "N = 10 and 20 only",
    ),
    Claim(
        id="ren-fig1-prox-zeroes",
        paper="ren",
        where="§3.3 (Stage 2); Thm 3.1's regime (App. E)",
        statement="In the theorem's Stage-2 regime (``regime``: N = 10, T = 20 000, effective batch 10⁸, λ = 1e-3, Stage 1 "
        "ended at max(α, β) ≥ ρ) the useless (off-support) entries 'will be set to 0 in the proximal step' (§3.3)",
        key="regime.zeroed_fraction",
        expected="zeroed entries per Stage-2 step / (T·N) ≥ 0.99 (the off-support share 1 − Q/T is 0.99985)",
        test=Between(lo=0.99),
        control="inert-lambda",
        learned=_STAGE2,
        if_failed="open: the run is meant to meet the regime (regime.useless_over_threshold and noise_linf_over_lambda "
        "< 1, signal_over_lambda > 1); outside it, at Fig. 1's λ = 1e-5 below the noise, the prox zeroes 1.5e-5 of T·N",
    ),
    Claim(
        id="ren-fig1-negative-branch",
        paper="ren",
        where="§2 (after eq. 6: 'no ã can ever become smaller than −η_Aλ'); Thm 3.1's regime (App. E)",
        statement="In the theorem's Stage-2 regime (``regime``, as for ren-fig1-prox-zeroes) the negative soft-threshold "
        "branch never fires",
        key="regime.negative_fraction",
        expected="0 entries per Stage-2 step (≤ 1e-3 of T·N)",
        test=Between(hi=1e-3),
        control="inert-lambda",
        learned=_STAGE2,
        if_failed="open: the run is meant to meet the regime (regime.useless_over_threshold and noise_linf_over_lambda "
        "< 1, signal_over_lambda > 1); outside it, at Fig. 1's λ = 1e-5 with α = 2.9 at τ₁, it fires on 0.63 of T·N",
    ),
)
