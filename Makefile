# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export DAGSTER_HOME := $(CURDIR)

.PHONY: demo test dev lint bench qa clean

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
	@for f in bench/*_bench.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# QA benchmark over ../shared/qa-dev (skips when absent): ~20 min, sessions one at a time.
# Extra flags: make qa QA_ARGS="--only D01 D05 --repeat 2 --record"
qa: $(STAMP)
	$(BIN)/python bench/qa.py $(QA_ARGS)

clean:
	rm -rf .mole
