"""Speed of the gradient-flow solver: one closed-form Stage-II solve at the paper point
(target ≤ 50 ms) and the gradient-flow part of ``plateau-scaling`` at its defaults (target ≤ 10 s).

Run: ``python benchmarks/bench_flow.py``.
"""

from __future__ import annotations

import statistics
import time

from inductionlab.experiments.wang import plateau_scaling
from inductionlab.theory.mixed import predicted_plateau
from inductionlab.train.flow import FlowProblem, solve_flow


def main() -> None:
    solve_flow(FlowProblem())  # warm-up (imports, caches)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        solve_flow(FlowProblem())
        times.append(time.perf_counter() - t)
    cfg = plateau_scaling.EXPERIMENT.config
    t = time.perf_counter()
    for point in plateau_scaling._points(cfg, full_grid=False):
        pred = predicted_plateau(point["L"], point["alpha_star"], point["w_star"], point["sigma_init"])
        solve_flow(FlowProblem(**point, t_end=cfg.grid.horizon * pred), n_points=40)
    scan = time.perf_counter() - t
    print("| measurement | value |\n|---|---|")
    print(f"| one GF solve, paper point (median of 7) | {statistics.median(times) * 1e3:.1f} ms |")
    print(f"| plateau-scaling GF part ({len(plateau_scaling._points(cfg, full_grid=False))} solves) | {scan:.2f} s |")


if __name__ == "__main__":
    main()
