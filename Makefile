# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export DAGSTER_HOME := $(CURDIR)

.PHONY: demo test dev lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when the dependency list changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/mole research "What are the health effects of drinking coffee?" --usd 0.50

test: $(STAMP)
	$(BIN)/python -m pytest -q

dev: $(STAMP)
	$(BIN)/dagster dev -w workspace.yaml

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/ledger_bench.py
	$(BIN)/python bench/local_gate_bench.py

clean:
	rm -rf .mole
