"""The claims and negative control of ``scb-transfer`` (Ren et al. §4 and App. H; docs/conventions.md#claims,
#controls, #ren-8): transfer's cost against scratch's over T, the one c of Lemma H.2, Stage 2 after the step.
``DRAWS``: the data draws each claim is judged on.  The registry attaches them to the experiment when it imports it
(``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control

# data seeds: each claim is judged over three draws, what the power rule asks of every claim judged here from the
# ledger's calibration 1000–1003 (docs/conventions.md#calibration, "Draws from power"; no judged draw had run)
DRAWS = 3

CONTROLS = (
    Control(
        name="no-pretraining",
        breaks="γ = 0: V₀ = μ1ᵀ carries no pretrained signal (β₀ = 0), so there is no one-step boost and the transfer "
        "arm must run Algorithm 1's Stage 1 — it becomes training from scratch under the transfer arm's own Stage-2 "
        "settings (batch, rate, λ, ε₂, step cap), its landing read from scratch at the same sample budgets",
        overrides={"gamma": 0.0},
        preset=None,
        # the default's scratch arm and the transfer arm's settings from scratch, ≤ 1.54 M samples a T (estimated
        # from the quick preset's 115 s, not measured at the default)
        wall="~10 min",
    ),
)

_OPEN_SCRATCH = "open: at a fixed η₁ = 0.01 scratch's cost over T = 250–16 000 grows little faster than log T"
CLAIMS = (
    Claim(
        id="ren-s4-transfer-slower",
        paper="ren",
        where="§4 ('bypass the initial sample-intensive signal-boosting stage'), Thm 4.1; §3.2 (scratch: poly(T))",
        statement="Transfer's cost (one-step batch and Stage 2) grows more slowly with T than training from scratch "
        "(poly(N, Q)·log T against poly(T)); the same (P, P̄) at every T",
        key="log_log_slope.transfer",
        expected="slope(transfer) / slope(scratch) ≤ 0.8 over T = 250–16 000 (log T has 0.135, so scratch must exceed "
        "0.17; 1 where both arms are the same algorithm)",
        test=Between(hi=0.8),
        over="log_log_slope.scratch",
        control="no-pretraining",
        if_failed=_OPEN_SCRATCH,
    ),
    Claim(
        id="ren-s4-transfer-cheaper",
        paper="ren",
        where="§4, Thm 4.1",
        statement="At the largest T of the grid transfer needs fewer samples than training from scratch",
        key="transfer_over_scratch_at_max_T",
        expected="transfer < scratch once poly(T) exceeds poly(N, Q)·log T: ratio ≤ 0.9 (1 without transfer); where "
        "scratch does not reach the target within its budget the value is an upper bound (transfer / budget)",
        test=Between(hi=0.9),
        control="no-pretraining",
        # the ledger's calibration 1000–1003: scratch reaches the target at T = 16 000 on one seed (108 800 samples,
        # transfer's one step costs 2.85× that) and not within its 512 000-sample budget on three (0.605, a bound):
        # m 1.17, s 1.12, margin 0.47 at 4 draws; ⌈(1.645 · 1.12 / 0.27)²⌉ = 48 draws would power it
        needs="48 data draws of the default (≈ 1000 core-minutes at 20 a draw), or a T past the grid where scratch's "
        "poly(T) clears the one-step batch c·ln T on every draw (the calibration seeds put that crossing at "
        "4.5·10⁵ to beyond 10⁹)",
        if_failed="open: the one-step batch c·ln T that recovers the support exactly on 32 calibration instances "
        "costs more than scratch's whole run at T = 16 000",
    ),
    Claim(
        id="ren-s4-one-c",
        paper="ren",
        where="App. H, Lemma H.2 (one step with poly(N, Q)·log T samples recovers the support with α₁ = Θ(1))",
        statement="One c for every T: with the batch c·ln T (c fixed on 32 calibration instances at the smallest T) "
        "the one step lands the rounded attention within the target at every T — the median landing per T, the "
        "same (P, P̄) at every T",
        key="landed_median_worst_T",
        expected="median ‖Ā₁ − Q‖_μ over the instances ≤ 0.05 at every T (exact support gives 0.01–0.04; scratch "
        "after the same samples has not left Stage 1 at large T); the share with exact support per T is reported",
        test=Between(hi=0.05),
        control="no-pretraining",
        if_failed="open: the median landing grows above the target at a larger T, so c·ln T does not keep the ℓ∞ "
        "noise of the step below the threshold there",
    ),
    Claim(
        id="ren-s3-stage2-logT",
        paper="ren",
        where="§4, Thm 4.1 ('running Algorithm 1 from Stage 2 allows us to recover (P, Q) to ε-accuracy … with "
        "poly(N, Q, 1/ε)·log T samples'); Lemma E.3 (the accuracy bought with the batch); §3.3",
        statement="Stage 2 needs only log T samples: after the transfer step, Algorithm 1 from Stage 2 (batch 256, "
        "η₂ = 0.003/(1 + t/300), λ = 1e-4) reaches ε₂ = 0.006, below every landing, with samples growing at most half "
        "as fast in T as Algorithm 1 from scratch to 0.05",
        key="stage2_log_log_slope.transfer",
        expected="slope(Stage 2 after the step, to ε₂) / slope(scratch) ≤ 0.5 (log T has 0.135; the calibration seed "
        "1000 gave a Stage 2 flat in T, medians 934k / 896k / 390k / 499k samples at T = 250 / 500 / 1000 / 2000; "
        "about 1 where the arm "
        "runs the same settings from scratch, Stage 1 first: the control)",
        test=Between(hi=0.5),
        over="log_log_slope.scratch",
        control="no-pretraining",
        if_failed=_OPEN_SCRATCH,
    ),
)
