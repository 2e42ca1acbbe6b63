# Every target builds or refreshes .venv from pyproject.toml itself, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: all venv test lint typecheck unit demo bench bench-reference clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check ldptree tests benchmarks
	$(BIN)/ruff format --check ldptree tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict ldptree

unit: $(STAMP)
	$(BIN)/python -m pytest -q

test: lint typecheck unit

demo: $(STAMP)
	$(BIN)/ldptree demo --out demo-output

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_lpdt.py

# Opt-in: installs the authors' reference package (pulls numba, scikit-learn) into .venv; it is
# never a dependency of ldptree. `make clean` removes it with the venv.
bench-reference: $(STAMP)
	$(BIN)/python -m pip install --quiet "lpdt==0.0.2"
	$(BIN)/python benchmarks/bench_lpdt.py

clean:
	rm -rf $(VENV) demo-output .mypy_cache .pytest_cache .ruff_cache
