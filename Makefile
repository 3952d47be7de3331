# Quickstart: `make demo` (the lazy-to-rich experiment) and `make test`.  Both create .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-portable typecheck bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[test,text,tl,log,hf,nnsight,lightning,llc]"
	touch $(STAMP)

setup: $(STAMP)

# Fig. 2: the paper's Stage II and its gradient flows (--preset demo); the default adds the paper's Stage I and more.
demo: setup
	$(BIN)/inductionlab run lazy-to-rich --preset demo --out runs/lazy-to-rich --force
	@echo "the default (Stage I at the paper's 100 000 steps, and the literal protocol): $(BIN)/inductionlab run lazy-to-rich --out runs/lazy-to-rich-full"

test: setup
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2

# The golden and runtime tests again on the AVX2 kernels (docs/conventions.md#portable-numbers); any order passes.
test-portable: setup
	ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 \
		$(BIN)/python -m pytest -n 2 tests/test_golden.py tests/test_runtime.py -k "not bit_for_bit"

typecheck: setup
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/bench_toy.py
	$(BIN)/python benchmarks/bench_flow.py

clean:
	rm -rf $(VENV) runs sweeps
