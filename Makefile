# Every target builds or refreshes .venv from pyproject.toml itself, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: all venv test test-slow test-all lint typecheck unit demo docs bench bench-reference clean

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

# The suite runs on every core (pytest-xdist; PYTEST_WORKERS=0: in this process). `make test` skips
# the tests marked slow (long statistical and end-to-end checks, the benchmark smoke runs);
# `make test-slow` runs only those, `make test-all` everything; CI runs test and test-slow.
PYTEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal

# The quick group compiles XLA programs without backend optimisation: at test sizes compiling, not
# running, is most of the time (31 % less CPU time on tests/mechanisms and tests/rounds from an
# empty kernel cache; docs/performance.md). Every quick test passes at both levels; integer
# reports and sums are the same bit for bit, floating-point programs may differ in the last bits
# (PSGD's fit does), so the bit-pinned fits are in the slow group, which compiles at XLA's default
# level, as users do.
unit: $(STAMP)
	XLA_FLAGS="$$XLA_FLAGS --xla_backend_optimization_level=0" $(PYTEST) -m "not slow"

test: lint typecheck unit

test-slow: $(STAMP)
	$(PYTEST) -m slow

test-all: lint typecheck
	$(PYTEST)

demo: $(STAMP)
	$(BIN)/ldptree demo --out demo-output

# The documentation site, built in strict mode (a warning fails); installs the docs extra first.
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The scale table (fresh processes, interleaved repeats, cold/cached/warm, CPU, peak RSS; n up to
# 10^8, about 2 GB of data files in the temporary folder). Run it on an otherwise idle machine.
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_scale.py

# Opt-in: installs the authors' reference package (pulls numba, scikit-learn) into .venv; it is
# never a dependency of ldptree. `make clean` removes it with the venv.
bench-reference: $(STAMP)
	$(BIN)/python -m pip install --quiet "lpdt==0.0.2"
	$(BIN)/python benchmarks/bench_lpdt.py

clean:
	rm -rf $(VENV) demo-output site .mypy_cache .pytest_cache .ruff_cache
