"""Measure how far the golden numbers move between CPU kernel paths, to fit the golden tolerances.

    python -m tests.golden_spread OUT.json                     # this process's kernel path
    ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 python -m tests.golden_spread B.json
    python -m tests.golden_spread --compare A.json B.json ...   # the largest relative change per experiment

Each run writes every experiment's smoke digest (what ``tests/test_golden.py`` compares) to OUT.json;
``--compare`` prints, per experiment, the largest relative difference between the files and the golden file
(and the largest absolute difference among values below 1e-4), which docs/conventions.md#portable-numbers
records."""

import json
import sys
import tempfile
from pathlib import Path

import torch

from tests.test_golden import GOLDEN, golden_digest


def dump(path: str) -> None:
    torch.set_num_threads(1)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(p.stem for p in GOLDEN.glob("*.json")):
            out[name] = golden_digest(name, Path(tmp) / name)
    Path(path).write_text(json.dumps(out, indent=1, sort_keys=True))


def _flat(digest: dict) -> dict:
    return {f"{part}:{k}": v for part in ("summary", "tables") for k, v in digest[part].items()}


def compare(paths: list[str]) -> None:
    files = [json.loads(Path(p).read_text()) for p in paths]
    for name in sorted(files[0]):
        versions = [_flat(f[name]) for f in files] + [_flat(json.loads((GOLDEN / f"{name}.json").read_text()))]
        rel, small, worst = 0.0, 0.0, ""
        for key, ref in versions[-1].items():
            if not isinstance(ref, float):
                continue
            for v in versions[:-1]:
                got = v.get(key)
                if not isinstance(got, float) or got != got:
                    continue
                d = abs(got - ref)
                if abs(ref) < 1e-4:
                    small = max(small, d)
                elif d / abs(ref) > rel:
                    rel, worst = d / abs(ref), key
        print(f"{name:32s} rel {rel:9.2e}  abs(<1e-4) {small:9.2e}  {worst}")


if __name__ == "__main__":
    compare(sys.argv[2:]) if sys.argv[1] == "--compare" else dump(sys.argv[1])
