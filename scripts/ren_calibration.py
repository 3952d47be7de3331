"""Calibration probes of the Ren experiments' protocols (docs/conventions.md#calibration), cheaper than the whole
run and equal to it in the values they read: run only on calibration seeds (≥ 1000).

    python scripts/ren_calibration.py after-tau1 SEED N [KEY=VALUE ...]
        scb-noise-sim's comparison after τ₁ at N, one of ``after_tau1.N`` (``after_tau1``: ren-noise-prox-n10 at
        N = 10, ren-noise-n50 at N = 50), under the default or the dotted overrides given (e.g.
        ``after_tau1.batch=16,256``): the run's own ``_after_tau1`` on the run's instance and noise scales at N,
        without the other N, the sweep and the regime.  ``noise-n50 SEED`` is ``after-tau1 SEED 50``.
    python scripts/ren_calibration.py high-noise SEED LAMBDA[,LAMBDA...]
        scb-convergence's no-decay arms (η₂ = η₁) at λ = 0 and each λ given, on the run's instance and batches:
        the final ‖Ā − Q‖_μ and each λ's ratio to λ = 0 (``ren-fig1-l1-high-noise`` at λ = 1e-2).

One JSON line per call on stdout; one thread.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import torch

from inductionlab import experiments, rng
from inductionlab.experiments.ren import scb_noise_sim
from inductionlab.runs import RunContext
from inductionlab.tasks.scb import random_instance
from inductionlab.theory.scb import noise_scales
from inductionlab.train.proximal import train_scb

CTX = RunContext(threads=1, progress=False)


def after_tau1(seed: int, N: int, overrides: dict[str, str]) -> dict:
    cfg = experiments.configure("scb-noise-sim", overrides={**overrides, "seeds": str(seed)})
    t = cfg.train
    task = replace(cfg.task, N=N, T=cfg.T_per_NQ * N * cfg.task.Q)
    inst = random_instance(task, 1, rng.numpy_generator(seed, N))
    sigma_V, sigma_A = noise_scales(inst.P, inst.Q, inst, cfg.calibration_samples, rng.generator(t.seed, "eval"))
    out = scb_noise_sim._after_tau1(cfg, inst, sigma_V[0], sigma_A[0], CTX)[1]
    return {"seed": seed, "N": N, "steps": cfg.after_tau1.steps} | out


def high_noise(seed: int, lams: list[float]) -> dict:
    cfg = experiments.configure("scb-convergence", overrides={"seeds": str(seed)})
    inst = random_instance(cfg.task, 1, rng.numpy_generator(seed))
    no_decay = replace(cfg.train, method="proximal", eta2=cfg.train.eta1)
    runs = [replace(no_decay, lam=lam) for lam in [0.0, *lams]]
    m = train_scb(runs, inst, cfg.task.Q, CTX)[2]
    final = m[m.step == m.step.max()].sort_values("run").dist_A_norm.tolist()
    return {
        "seed": seed,
        "final_lam0": final[0],
        "final": {f"{lam:g}": x for lam, x in zip(lams, final[1:])},
        "ratio": {f"{lam:g}": x / final[0] for lam, x in zip(lams, final[1:])},
    }


if __name__ == "__main__":
    torch.set_num_threads(1)
    what, seed = sys.argv[1], int(sys.argv[2])
    if seed < 1000:
        sys.exit("calibration seeds only (≥ 1000)")
    if what == "high-noise":
        result = high_noise(seed, [float(x) for x in sys.argv[3].split(",")])
    else:  # after-tau1 SEED N [KEY=VALUE ...], or noise-n50 SEED
        N, extra = (50, []) if what == "noise-n50" else (int(sys.argv[3]), sys.argv[4:])
        result = after_tau1(seed, N, dict(kv.split("=", 1) for kv in extra))
    print(json.dumps(result))
