"""The claims of ``plateau-scaling`` (Wang et al. Theorem 5.5) and its negative controls (docs/conventions.md#claims,
#controls): what ``reproduce`` judges of its runs, each claim on the mean over ``DRAWS`` data draws.  The registry
attaches them to the experiment when it imports it (``experiments/registry.py``); the run module never imports them."""

from __future__ import annotations

from inductionlab.analysis.claims import Between, Claim, Control, Evidence, Near

# data seeds: each claim is judged on the mean over five draws (docs/conventions.md#claims), what the power rule asks of
# wang-thm5.5-wstar-exact (calibration 1000–1003: m −1.836, s 0.048 against −1.8: n = 5; docs/conventions.md#calibration)
DRAWS = 5
# The power rule raised the draws from 4 to 5, a protocol change: the judged draws move to never-run seeds (0–3 seen)
JUDGED_SEED = 100

CLAIMS = (
    Claim(
        id="wang-thm5.5-L",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length grows linearly in L",
        key="exponents.L",
        expected="exponent 1",
        test=Near(1.0, atol=0.15),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-alpha",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length grows like (1 + α*)²",
        key="exponents.one_plus_alpha",
        expected="exponent 2",
        test=Near(2.0, atol=0.2),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-wstar",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length falls like 1/w*²",
        key="exponents.w_star",
        expected="exponent −2",
        test=Near(-2.0, atol=0.2),
        control="dp-linear",
    ),
    Claim(
        id="wang-thm5.5-sigma",
        paper="wang",
        where="Thm 5.5",
        statement="The plateau length is linear in log(1/σ_init)",
        key="log_inv_sigma_r2",
        expected="linear (R² → 1)",
        test=Between(lo=0.99),
        control="dp-linear",
    ),
    Claim(
        id="wang-thm5.5-L-exact",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The plateau grows linearly in L on the exact-softmax gradient flow too (Monte Carlo loss, not eq. 10)",
        key="exponents_exact.L",
        expected="exponent 1",
        test=Near(1.0, atol=0.15),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-alpha-exact",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The plateau grows like (1 + α*)² on the exact-softmax gradient flow too",
        key="exponents_exact.one_plus_alpha",
        expected="exponent 2",
        test=Near(2.0, atol=0.2),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-wstar-exact",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The plateau falls like 1/w*² on the exact-softmax gradient flow too",
        key="exponents_exact.w_star",
        expected="exponent −2",
        test=Near(-2.0, atol=0.2),
        if_failed="open: on the exact softmax the local w* exponent over w* ∈ [0.25, 0.49] is "
        "≈ −1.8 (quick: −1.81); the Θ hides w*-dependent factors of the softmax normaliser that eq. 10 drops",
        control="dp-linear",
    ),
    Claim(
        id="wang-thm5.5-L-sgd",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III; App. B.1 (online SGD, lr 0.1, B = 1000)",
        statement="The plateau grows linearly in L under online SGD too (T_III at grid.sgd_L = 20, 40, σ_init = 0.01)",
        key="exponents_sgd.L",
        expected="exponent 1",
        test=Near(1.0, atol=0.15),
        if_failed="open: the exponent needs SGD at two L (default grid.sgd_L = 20, 40); the quick "
        "preset trains L = 20 only",
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-phase1-TI",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I",
        statement="Phase I takes T_I = O(1): the time at which L_G4 falls to 1% of its start does not grow with L "
        "(closed-form gradient flow, eqs. 7 and 10, at L in grid.L_values)",
        key="phases.T_I_exponent",
        expected="T_I = O(1) in L: exponent 0",
        test=Near(0.0, atol=0.05),
        control="g4-slow",
    ),
    Claim(
        id="wang-thm5.5-phase1-ih",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I",
        statement="For L ≫ 1 the induction-head loss at T_I is still ≥ 99% of its start: L_IH2(T_I) ≥ 0.99 L_IH2(0) at "
        "L = 4·10⁴ (closed-form flow, eqs. 7 and 10, the other factors at the base point)",
        key="phase1.ih_ratio_at_L.40000",
        expected="L_IH2(T_I)/L_IH2(0) ≥ 0.99 (our closed form: 1 − ratio ≈ 1.86·T_I/(L − 2), 0.9905 at L = 4·10⁴)",
        test=Between(lo=0.99),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-phase1-ih-1overL",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I; eq. (10)",
        statement="The Phase I bound approaches 1 like 1/L because T_I = O(1) while w_V2 relaxes on the time scale L − 2: "
        "the log–log slope of 1 − L_IH2(T_I)/L_IH2(0) against L over L = 4·10³ … 4·10⁵ (grid.phase1_L ≥ "
        "grid.phase1_slope_from)",
        key="phase1.one_minus_ratio_slope",
        expected="1 − ratio ≈ 2(B²/C)·T_I/(L − 2) (the small-t expansion of theory.mixed.ih_ratio_lazy): slope −1",
        test=Near(-1.0, atol=0.05),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-phase1-ih-L40",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I, at Fig. 1's L = 40 (Fig. 2 of the summary paper)",
        statement="Phase I's bound L_IH2(T_I) ≥ 0.99 L_IH2(0) at the paper's own point α* = 1, w* = 0.49, σ_init = 0.01, "
        "L = 40 (closed-form flow, eqs. 7 and 10)",
        key="phase1.ih_ratio_at_L.40",
        expected="L_IH2(T_I)/L_IH2(0) ≥ 0.99",
        test=Between(lo=0.99),
        if_failed="a finding about the paper: at L = 40 the ratio is 0.072, since T_I ≈ 205 does not shrink with L while "
        "w_V2's fit removes 93% of L_IH2(0) on the time scale L − 2; the bound needs L ≈ 3.8/(ε_G·ε_IH) ≈ 3.8·10⁴",
        control="ih-fast",
        evidence=Evidence(
            sentence="Dynamics paper (wang2025_get_rich_dynamics), §3.2, Theorem 4, hypotheses: “Let α* = Ω(1) and "
            "w* = O(1), and we consider the regime of small initialization (0 < σ_init ≪ 1) and long input sequences "
            "(L ≫ 1).” Phase I: “Specifically, let T_I = O(1), then we have the following estimates: "
            "L_G4(θ(T_I)) ⩽ 0.01 · L_G4(θ(0)), L_IH2(θ(T_I)) ⩾ 0.99 · L_IH2(θ(0)).”",
            regime="Fig. 1's point α* = 1 = Ω(1), w* = 0.49 = O(1) (< 1/√2, the domain of eq. 10), σ_init = 0.01 ≪ 1, "
            "L = 40, on the closed-form flow of eqs. 7 and 10 that the proof (App. C.4) uses: plateau-scaling, any "
            "preset, phase1.ih_ratio_at_L.40 (T_I = 205.5 at phase1.T_I). Every hypothesis holds but “L ≫ 1” hides a "
            "constant: the proof's step h(T_I) = O(σ_init + 1/L) < 2σ_init needs L ≳ h*·T_I/σ_init ≈ 10⁴ (at L = 40, "
            "T_o ≈ 134 < T_I and h(T_I) = 0.51 ≈ h*). With T_I ≈ 2.06/ε_G (L_G4 = O(1/t), eq. 9) and 1 − ratio ≈ "
            "2(B²/C)·T_I/(L − 2), B²/C = (1 − 4w*⁴)^½/(1 − w*⁴) = 0.93, the bound needs L ≈ 3.8/(ε_G·ε_IH) = 3.8·10⁴ "
            "at the theorem's ε_G = ε_IH = 0.01 (phase1.L_constant; wang-thm5.5-phase1-ih: 0.9905 at L = 4·10⁴)",
            reimplementation="tests/findings/test_wang_phase1_ih.py",
        ),
    ),
    Claim(
        id="wang-thm5.5-phase1-ih-lazy",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase I; eq. (10)",
        statement="What holds instead of the 99% bound at finite L: L_IH2(T_I)/L_IH2(0) follows the fit of w_V2 alone with "
        "w_KQ frozen at σ_init (theory.mixed.ih_ratio_lazy), rising toward 1 as L grows (largest relative gap "
        "over the L grid)",
        key="phases.ih_ratio_T_I_vs_lazy",
        expected="ratio = 1 − (B²/AC)(1 − e^{−2A·T_I/(L−2)}) (our derivation from eq. 10), → 1 as L → ∞",
        test=Between(hi=0.02),
        control="sigma-large",
    ),
    Claim(
        id="wang-thm5.5-To",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="The observation time T_o (first time w_V2 exceeds h* = 1/(1+α*)) is Θ(L): its exponent in L",
        key="phases.T_o_exponent",
        expected="T_o = Θ(L): exponent 1",
        test=Near(1.0, atol=0.1),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-wkq-rate",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phases II–III",
        statement="w_KQ grows exponentially at a rate Θ(w*²/((1+α*)²L)): the fitted rate of log w_KQ (while 2σ_init < w_KQ < "
        "w*/4) times (1+α*)²L/w*² is the same at every L (max/min over the L grid)",
        key="phases.wkq_rate_spread",
        expected="w_KQ(t) = σ_init exp(Θ(w*²t/((1+α*)²L))): rate × (1+α*)²L/w*² constant in L",
        test=Between(1.0, 1.2),
        control="ih-fast",
    ),
    Claim(
        id="wang-thm5.5-phase4-g4",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase IV",
        statement="After T_III the 4-gram loss falls like 1/t: the log–log slope of L_G4 against t (mean over the L grid)",
        key="phases.g4_loglog_slope",
        expected="L_G4 = O(1/t): slope −1",
        test=Near(-1.0, atol=0.05),
        control="rpe-frozen",
    ),
    Claim(
        id="wang-thm5.5-phase4-ih",
        paper="wang",
        where="Thm 5.5 (dynamics paper Thm 4), Phase IV",
        statement="After T_III the induction loss decays exponentially at a rate Ω(w*²/((1+α*)²L)): the rate of log L_IH2 times "
        "(1+α*)²L/w*² is the same at every L (max/min over the L grid)",
        key="phases.ih_rate_spread",
        expected="L_IH2 = O(exp(−Ω(w*²t/((1+α*)²L)))): rate × (1+α*)²L/w*² constant in L",
        test=Between(1.0, 1.2),
        control="ih-fast",
    ),
)


FLOW_ONLY = (
    "the flow preset leaves out only the exact-softmax and SGD points, which its claims do not read: their "
    "closed-form flows are the same at both presets"
)


CONTROLS = (
    Control(
        name="sigma-large",
        breaks="σ_init = 0.1, not ≪ 1 (Theorem 5.5's assumption): w_KQ moves during Phase I, so the induction head is no "
        "longer lazy while the 4-gram is learned",
        overrides={"model.sigma_init": 0.1},
        preset="flow",
        cheaper=FLOW_ONLY,
    ),
    Control(
        name="dp-linear",
        breaks="the induction head's logit linear in its one parameter v = w_Q w_K (the flow preconditioned by "
        "1/(w_Q² + w_K²), v̇ = −∂L/∂v): no time-scale separation of the quadratic dot product (dynamics paper §3.3), "
        "so w_KQ does not escape σ_init exponentially",
        overrides={"learner": "dp-linear", "grid.sgd_L": ()},
        preset=None,
        cheaper="the SGD points are left out: its claims read the closed-form and exact-softmax flows only",
    ),
    Control(
        name="ih-fast",
        breaks="the induction head's gradient scaled by L_G4(θ0)/L_IH2(θ0) ≈ α*²(L − 2), in the flows and in SGD: it "
        "learns as if its share of the target were the 4-gram's, so the speed difference (dynamics paper §3.3) that "
        "gives the (1+α*)²L is gone",
        overrides={"learner": "ih-fast"},
        preset=None,
        wall="~3 min",
    ),
    Control(
        name="g4-slow",
        breaks="the 4-gram's gradient scaled by L_IH2(θ0)/L_G4(θ0): it learns as if its share of the target were the "
        "induction head's ∼ 1/((1+α*)²L), so Phase I is no longer fast",
        overrides={"learner": "g4-slow"},
        preset="flow",
        cheaper=FLOW_ONLY,
    ),
    Control(
        name="rpe-frozen",
        breaks="the 4-gram head's RPE slope p held at σ_init (the RPE removed): its softmax cannot sharpen toward "
        "x_{L−2}, whose approach to p = ∞ is what makes L_G4 fall like 1/t",
        overrides={"learner": "rpe-frozen"},
        preset="flow",
        cheaper=FLOW_ONLY,
    ),
)
