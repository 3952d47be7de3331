"""Your own target on the six-parameter toy model, with gradient flow on the same time axis.

    python examples/own_target_toy.py [--smoke]

Extras: none (the core install).

Three mixed targets (α*, w*) train at once on the run axis; the closed-form gradient flow of the first is drawn
beside its SGD curve, and the phase times of both are printed.  Writes own_target_toy.png.
"""

import argparse
import math

from inductionlab import FlowProblem, MixedTarget, ToyTrainConfig, phase_times, plots, solve_flow, toy, train_toy

parser = argparse.ArgumentParser()
parser.add_argument("--smoke", action="store_true", help="a few seconds instead of about a minute")
smoke = parser.parse_args().smoke
L, steps = (8, 12_000) if smoke else (40, 40_000)  # smoke: the third target's T_50 lies beyond t = 1200
alphas, w_stars = [1.0, 2.0, 4.0], [0.49, 0.49, 0.35]


def shown(t: float) -> str:
    """A phase time, or that training stopped before it (NaN from :func:`inductionlab.phase_times`)."""
    return "not reached at this size" if math.isnan(t) else f"{t:.0f}"


target = MixedTarget.per_run(alpha_star=alphas, w_star=w_stars, L=L)
cfg = ToyTrainConfig(
    stage1_steps=0, stage2_steps=steps, batch_size=256 if smoke else 1000, eval_size=4096, eval_every=steps // 20
)
out = train_toy(cfg, target, toy.init_params(0.01, 3), seeds=[0, 1, 2])
flow = solve_flow(FlowProblem(L=L, alpha_star=alphas[0], w_star=w_stars[0], sigma_init=0.01, t_end=cfg.lr * steps))

fig, (ax,) = plots.subplots(1, width=5.5, height=3.8)
for run, g in out.metrics[out.metrics.stage == "II"].groupby("run"):
    times = phase_times(g.t, g.loss_G4, g.loss_IH2, g.w_V2, g.w_KQ, alphas[run], w_stars[run])
    print(f"run {run} (α* = {alphas[run]}, w* = {w_stars[run]}): T_I = {shown(times.T_I)}, T_50 = {shown(times.T_50)}")
    ax.semilogy(g.t, g.loss_IH2, label=f"SGD, α* = {alphas[run]}, w* = {w_stars[run]}")
ax.semilogy(flow.curve.t, flow.curve.loss_IH2, "k--", label="gradient flow (closed form), first target")
print(f"gradient flow, first target: T_I = {shown(flow.phases.T_I)}, T_50 = {shown(flow.phases.T_50)}")
ax.set(xlabel="t = lr × step", ylabel=r"$\mathcal{L}_{IH_2}$", title="Your targets: induction-head loss")
ax.legend(fontsize=7)
print("figure:", plots.save(fig, "own_target_toy.png"))
