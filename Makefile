# Every target builds or refreshes .venv from pyproject.toml itself, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: all venv test lint typecheck unit demo bench clean

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

clean:
	rm -rf $(VENV) demo-output .mypy_cache .pytest_cache .ruff_cache
