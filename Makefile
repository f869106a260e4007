# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Everything a run writes goes under MOLE_HOME (default .mole/ here, ignored by git), Dagster's
# instance included: DAGSTER_HOME is $(MOLE_HOME)/dagster with the project's dagster.yaml copied
# in, so `make dev` leaves no .nux/, logs/ or .logs_queue/ in the checkout.
MOLE_HOME ?= $(CURDIR)/.mole
export MOLE_HOME
export DAGSTER_HOME := $(MOLE_HOME)/dagster
# Extra flags for `dg dev`, e.g. make dev DEV_ARGS="-p 3001"
DEV_ARGS ?=

.PHONY: demo test dev scale-dev lint bench qa qa-pdf clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when the dependency list changes. setuptools tells every editable install of a
# flat layout "Editable installation. Please be careful with folders in your working
# directory..." as a warning, which pip passes on as a BuildBackendWarning: information about
# setuptools, not about mole, so it is filtered out by its first words (issue 33).
QUIET_INSTALL := PYTHONWARNINGS='ignore:Editable installation'
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(QUIET_INSTALL) $(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/mole research "What are the health effects of drinking coffee?" --usd 0.50

# One worker per core; worksteal evens out the long end-to-end tests. A single test or file:
# .venv/bin/python -m pytest tests/test_x.py (no -n needed). The 25 slowest tests are printed
# (issue 34), so a run that grew slower says where. Where the CPU goes, by file (the unit that
# holds on a shared machine): MOLE_TEST_CPU_LOG=DIR make test, then
# $(BIN)/python -m tests.cpu_times DIR (tests/cpu_times.py).
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --dist worksteal --durations=25

# The instance configuration, copied whenever the project's changes.
$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	@mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

# `dg dev`, which the installed Dagster recommends (`dagster dev` prints a SupersessionWarning
# saying so), started from the instance folder: run from the checkout, Dagster warns that the
# checkout's dagster.yaml is not the one in DAGSTER_HOME (true, and by design: it is copied
# there). Same webserver and daemon, on the instance `mole research` records its runs in.
dev: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	cd $(DAGSTER_HOME) && $(abspath $(BIN))/dg dev -w $(CURDIR)/workspace.yaml $(DEV_ARGS)

# The scale-out profile (deploy/README.md): Dagster on PostgreSQL, steps on a dask cluster. Needs
# MOLE_DB, MOLE_DAGSTER_PG_URL and MOLE_DASK_SCHEDULER set; its instance is a folder of its own.
SCALE_HOME := $(MOLE_HOME)/dagster-scale

$(SCALE_HOME)/dagster.yaml: deploy/dagster.yaml
	@mkdir -p $(SCALE_HOME)
	cp deploy/dagster.yaml $@

scale-dev: $(STAMP) $(SCALE_HOME)/dagster.yaml
	cd $(SCALE_HOME) && DAGSTER_HOME=$(SCALE_HOME) $(abspath $(BIN))/dg dev \
	    -w $(CURDIR)/deploy/workspace.yaml $(DEV_ARGS)

# Lint, format and types, as CI runs them (the import layers are a test: tests/test_layers.py).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The performance suite (bench/suite.py; ~20 min on two cores, figures in BENCHMARKS.md).
# Extra flags: make bench BENCH_ARGS="--quick" (a few minutes), "--only ledger batching",
# "--record" (store the medians as the reference in bench/results.json).
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python bench/suite.py $(BENCH_ARGS)

# QA benchmark over ../shared/qa-dev (skips when absent): ~20 min, sessions one at a time.
# Extra flags: make qa QA_ARGS="--only D01 D05 --repeat 2 --record"
qa: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python bench/qa.py $(QA_ARGS)

# PDF answer benchmark over ../shared/qa-pdf-dev (skips when absent; the web path needs
# pdftotext): both paths, ~30-40 min each on two busy cores. Extra flags:
# make qa-pdf QA_PDF_ARGS="--paths local --only Q01 Q26 --record"
qa-pdf: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python bench/qa_pdf.py $(QA_PDF_ARGS)

clean:
	rm -rf .mole
