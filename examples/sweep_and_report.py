"""A sweep over a grid with two seeds, then its report: a table and one figure per grid key.

    python examples/sweep_and_report.py [--smoke]

Extras: none (the core install).

Writes sweeps/example/ (one run directory per grid point and seed, sweep.parquet, sweep_table.md, figures).
"""

import argparse
from pathlib import Path

from inductionlab import experiments, load_sweep, run_sweep
from inductionlab.sweep_report import write_report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="seconds: the smoke preset")
    smoke = parser.parse_args().smoke

    cfg = experiments.configure("lazy-to-rich", preset="smoke" if smoke else "quick", overrides={"gf": "none"})
    grid = {"task.alpha_star": ["1", "2"], "model.sigma_init": ["0.01", "0.03"]}
    out = Path("sweeps/example")
    run_sweep("lazy-to-rich", cfg, grid, out, seeds=2, workers=2, progress=False)
    table = load_sweep(out)
    columns = ["task.alpha_star", "model.sigma_init", "seed", "T_I", "final.w_KQ"]
    print(table[columns].to_string(na_rep="not reached"))  # T_I: the time layer 2 starts; smoke runs stop before
    for path in write_report(out):
        print("wrote", path)


if __name__ == "__main__":  # the sweep's worker processes import this file: run only when executed
    main()
