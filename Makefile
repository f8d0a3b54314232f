# MANET emulation testbed. Quickstart: `make setup`, `make run`, `make test` (see README.md).
PY        ?= python3
SCENARIO  ?= topologies/chain5-dsr-mobile.yaml
SEED      ?=
EXPERIMENT?= default
MEDIUM    := medium/target/release/manet-medium
FASTPATH  := nodes/router/native/libmtfast.so
PYTEST    := $(PY) -m pytest -q -p no:cacheprovider

PAPER     ?=
BUDGET    ?=

.PHONY: setup run test test-full test-unit test-netns bench clean lint medium help reproduce

help:
	@echo "make setup | run [SCENARIO=path SEED=n] | test | bench | clean | lint | reproduce PAPER=name [BUDGET=2h]"

setup:
	bash scripts/setup.sh

medium: $(MEDIUM)
$(MEDIUM): $(shell find medium/src -name '*.rs' 2>/dev/null) medium/Cargo.toml
	cd medium && cargo build --release -q

$(FASTPATH): nodes/router/native/fastpath.c
	$(MAKE) -s -C nodes/router/native

run: medium $(FASTPATH)
	$(PY) -m testbed.run $(SCENARIO) $(if $(SEED),--seed $(SEED)) --experiment $(EXPERIMENT)

# CI's tier: everything but the tests marked slow (long real-time scenarios and the veth-level
# duplicates of the kernel-TCP mechanism tests, which test-full runs; tests/README.md).
test: medium $(FASTPATH)
	cd medium && cargo test --release -q
	$(PYTEST) tests -m "not slow" --timeout 600

test-full: medium $(FASTPATH)
	cd medium && cargo test --release -q
	$(PYTEST) tests --timeout 900

test-unit:
	$(PYTEST) tests -m "not netns"

test-netns: medium $(FASTPATH)
	$(PYTEST) tests -m netns --timeout 600

bench: medium $(FASTPATH)
	bash scripts/bench.sh

# A paper's sweep (experiments/sweeps/$(PAPER).yaml) with --parallel auto and sequential seeds within
# the budget, resuming from its rows in docs/results/data/, then its report docs/results/$(PAPER).md.
reproduce: medium $(FASTPATH)
	@test -n "$(PAPER)" || { echo "usage: make reproduce PAPER=<name> [BUDGET=2h]; papers: $$(ls experiments/sweeps | grep -v -e small -e mini -e smoke | sed 's/.yaml//' | tr '\n' ' ')"; exit 2; }
	@test -f experiments/sweeps/$(PAPER).yaml || { echo "error: experiments/sweeps/$(PAPER).yaml: no such sweep"; exit 2; }
	$(PY) -m experiments.sweep experiments/sweeps/$(PAPER).yaml --parallel auto $(if $(BUDGET),--budget $(BUDGET)) || test $$? -eq 1
	$(PY) -m experiments.compare $(PAPER) --quiet

clean:
	$(PY) -m testbed.clean

lint:
	$(PY) -m ruff check .
	$(PY) -m mypy
