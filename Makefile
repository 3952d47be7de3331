# Quickstart: `make demo` (the lazy-to-rich experiment) and `make test`.  Both create .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test,tl,log]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/inductionlab run lazy-to-rich --out runs/lazy-to-rich --force

test: setup
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python benchmarks/bench_toy.py
	$(BIN)/python benchmarks/bench_flow.py

clean:
	rm -rf $(VENV) runs sweeps
