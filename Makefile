# MANET emulation testbed. Quickstart: `make setup`, `make run`, `make test` (see README.md).
# Python is the project's virtual environment, made by `make setup` (docs/setup.md).
VENV      := .venv
PY        ?= $(VENV)/bin/python
SCENARIO  ?= topologies/chain5-dsr-mobile.yaml
SEED      ?=
EXPERIMENT?= default
MEDIUM    := medium/target/release/manet-medium
FASTPATH  := nodes/router/native/libmtfast.so
PYTEST    := $(PY) -m pytest -q -p no:cacheprovider
# cargo, with crates.io's sparse index on Debian 12's cargo 1.65 (run from medium/).
CARGO     := bash ../scripts/cargo.sh
# Targets that run Python need the venv (unless PY names another interpreter).
NEED_PY   := $(filter $(VENV)/bin/python,$(PY))

PAPER     ?=
BUDGET    ?=

.PHONY: setup run test test-full test-unit test-netns test-fresh bench clean lint medium help reproduce

help:
	@echo "make setup | run [SCENARIO=path SEED=n] | test | test-unit | test-fresh | bench | clean | lint | reproduce PAPER=name [BUDGET=2h]"

setup:
	bash scripts/setup.sh

$(VENV)/bin/python:
	@echo "$@ not found: run 'make setup' first (it makes the project's virtual environment)" >&2; exit 1

medium: $(MEDIUM)
$(MEDIUM): $(shell find medium/src -name '*.rs' 2>/dev/null) medium/Cargo.toml medium/Cargo.lock
	cd medium && $(CARGO) build --release -q

$(FASTPATH): nodes/router/native/fastpath.c
	$(MAKE) -s -C nodes/router/native

run: medium $(FASTPATH) | $(NEED_PY)
	$(PY) -m testbed.run $(SCENARIO) $(if $(SEED),--seed $(SEED)) --experiment $(EXPERIMENT)

# CI's tier: everything but the tests marked slow (long real-time scenarios, variants of a
# mechanism CI tests once; test-full runs them; tests/README.md, with the time file by file).
test: medium $(FASTPATH) | $(NEED_PY)
	cd medium && $(CARGO) test --release -q
	$(PYTEST) tests -m "not slow" --timeout 600

test-full: medium $(FASTPATH) | $(NEED_PY)
	cd medium && $(CARGO) test --release -q
	$(PYTEST) tests --timeout 900

test-unit: | $(NEED_PY)
	$(PYTEST) tests -m "not netns"

test-netns: medium $(FASTPATH) | $(NEED_PY)
	$(PYTEST) tests -m netns --timeout 600

# A clean Debian 12 root file system: make setup, make run, make test-unit in it (docs/setup.md).
test-fresh:
	bash scripts/test-fresh.sh

bench: medium $(FASTPATH) | $(NEED_PY)
	PY=$(PY) bash scripts/bench.sh

# A paper's sweep (experiments/sweeps/$(PAPER).yaml) with --parallel auto and sequential seeds within
# the budget, resuming from its rows in docs/results/data/, then its report docs/results/$(PAPER).md.
reproduce: medium $(FASTPATH) | $(NEED_PY)
	@test -n "$(PAPER)" || { echo "usage: make reproduce PAPER=<name> [BUDGET=2h]; papers: $$(ls experiments/sweeps | grep -v -e small -e mini -e smoke | sed 's/.yaml//' | tr '\n' ' ')"; exit 2; }
	@test -f experiments/sweeps/$(PAPER).yaml || { echo "error: experiments/sweeps/$(PAPER).yaml: no such sweep"; exit 2; }
	$(PY) -m experiments.reproduce $(PAPER) $(if $(BUDGET),--budget $(BUDGET)) || test $$? -eq 1

clean: | $(NEED_PY)
	$(PY) -m testbed.clean

lint: | $(NEED_PY)
	$(PY) -m ruff check .
	$(PY) -m mypy
