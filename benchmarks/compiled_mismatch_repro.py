"""Minimal reproduction, torch only: Inductor's on-disk caches do not key on the CPU's vector ISA.

On an AVX-512 CPU, process 1 compiles a small function on the machine's own kernel path and caches it; process 2,
sharing the cache folder but run with ``ATEN_CPU_CAPABILITY=avx2``, gets a cache hit of the FX graph (and
AOTAutograd) cache whose C++ source was generated for 16-wide vectors (``Vectorized<float>::loadu(ptr, 16)``,
loop strides of 16), recompiles that source with the AVX2 flags, where ``at::vec::Vectorized<float>`` has 8
lanes, and returns wrong numbers (or writes past a buffer: heap corruption, hangs).  Measured with torch 2.13.0+cpu
on an AMD EPYC with AVX-512 (benchmarks/RESULTS.md, "Compiled step against eager after the GPT-2 run").

``import torch._dynamo`` (which ``transformers`` does when it loads a model class) writes torch's default
``TORCHINDUCTOR_CACHE_DIR`` into ``os.environ`` at import time, so the default folder is shared by every process of a
user whatever its ``ATEN_CPU_CAPABILITY``.

    python benchmarks/compiled_mismatch_repro.py    # prints each process's max |compiled - eager|; exit 1 on a mismatch
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile

CHILD = """
import torch

def f(x, w):
    e = torch.exp(x * w)
    return (e * x).sum(1) / e.sum(1)

torch.manual_seed(0)
x, w = torch.randn(4, 64, 32), torch.randn(4, 1, 1)
got, want = torch.compile(f, dynamic=False)(x, w), f(x, w)
print(f"{torch.backends.cpu.get_cpu_capability():7s} max |compiled - eager| = {(got - want).abs().max().item():.3g}")
"""


def run(capability: str | None, cache: str) -> float:
    """One process compiling ``f`` with ``cache`` as Inductor's cache; prints and returns its max |compiled - eager|."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"} | {"TORCHINDUCTOR_CACHE_DIR": cache}
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    line = out.stdout.strip() or f"process failed: {out.stderr.strip().splitlines()[-1:]}"
    print(f"  ATEN_CPU_CAPABILITY={capability or '(unset)':7s} {line}")
    return float(line.rsplit("= ", 1)[1]) if "= " in line else math.inf


def main() -> int:
    import torch

    if torch.backends.cpu.get_cpu_capability() != "AVX512":
        print(
            "needs a CPU whose default ATen kernel path is AVX512; this one:", torch.backends.cpu.get_cpu_capability()
        )
        return 0
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    probe = "import os, torch._dynamo; print(os.environ.get('TORCHINDUCTOR_CACHE_DIR'))"
    written = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout.strip()
    print(f"import torch._dynamo with TORCHINDUCTOR_CACHE_DIR unset sets it to {written}")
    with tempfile.TemporaryDirectory() as alone, tempfile.TemporaryDirectory() as shared:
        print("control, an empty cache:")
        control = run("avx2", alone)
        print("one cache, the machine's path first:")
        errors = [run(None, shared), run("avx2", shared)]
    bad = not all(e <= 1e-5 for e in [control, *errors])  # NaN counts as bad
    print("MISMATCH: the AVX2 process ran kernels generated for AVX-512" if bad else "no mismatch")
    return int(bad)


if __name__ == "__main__":
    sys.exit(main())
