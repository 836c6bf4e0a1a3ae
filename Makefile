# Everything a fresh machine needs, from the project's own files.
#   make run   - set up and run the bin-packing benchmark at the local scale, then render the report
#   make test  - set up and run the test suite
#   make engines - build the engines' own environments (ENGINE_ENVS), once per machine, in the harness's cache
#   make docs  - re-render the docs' measured tables from the reference runs in docs/reference/
#   make reference - run the reference benchmarks into docs/reference/, then make docs (a quiet machine!)
#   make reference-plan - the sweeps, frontier, core runs and harness scaling the docs' plan reads (quiet, ~1.5 h)
SHELL := /bin/bash
# Python caches the bytecode of what it imports in the virtualenv, the first importer of a module writing it for
# every later process: where PYTHONDONTWRITEBYTECODE is set (as on some machines), each of the few hundred
# processes of a run or of the tests would compile its imports again.  Only what is imported is compiled.
unexport PYTHONDONTWRITEBYTECODE
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SCENARIO ?= bin-packing
ENGINES ?= spark,risingwave,arrow-floor
RUN_ARGS ?=
APT_PACKAGES := openjdk-17-jre-headless
TEST_APT_PACKAGES := chromium

.PHONY: engines setup system-deps test-deps test-apt checkov test-cds checks test-collect run test docs reference reference-plan clean-warehouse

# Debian packages: Java for Iceberg's JVMs (their jars come from Maven Central at `bench setup`).
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The packages are not compiled at install (pip compiles every file, one at a time, most never imported): each
# module is compiled when first imported (see PYTHONDONTWRITEBYTECODE above).
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --no-compile -e '.[test]'
	touch $@

setup: system-deps $(VENV)/.installed
	$(BIN)/bench setup

# Engines that run in an environment of their own (another Python, pins the harness cannot hold): built once from
# the package registry into the harness's cache, engines/<name>/ (bench.engines.environment); `make run` needs none of them.
ENGINE_ENVS ?= repark,gluten,spark-3.5
engines: setup
	$(BIN)/bench setup --engines $(ENGINE_ENVS)

RUN_ID ?= $(shell date -u +%Y%m%d-%H%M%S)-$(SCENARIO)

run: setup
	$(BIN)/bench run $(SCENARIO) --engines $(ENGINES) --run-id $(RUN_ID) --results-dir results $(RUN_ARGS)
	$(BIN)/bench report results/$(RUN_ID)

# The test tools: the browser (a Debian package: after the harness's, apt installs one at a time) and checkov
# (in its own virtualenv).  `test-deps` makes them beside `setup`: most of each is waiting on a package registry.
test-apt: system-deps
	@missing=""; for p in $(TEST_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# checkov's virtualenv lives in the harness's cache (one per machine and lock, as the jars): the tests ask for the same
checkov: $(VENV)/.installed
	CHECKOV_HOME=$$($(BIN)/python -c 'from tests.helpers import checkov_home; print(checkov_home())') \
	  bash terraform/ci/install-checkov.sh >/dev/null

# The archive of the classes the tests' Spark JVMs share (tests/jvm_cds.py), trained once per virtualenv: here, beside
# the checks, instead of in the tests' first step where nothing else runs (about 40 s of one core).
test-cds: setup
	$(BIN)/python -m tests.jvm_cds --ensure

TEST_DEPS := setup test-apt checkov engines
test-deps:
	$(MAKE) --no-print-directory -j3 --output-sync=target $(TEST_DEPS)

# The layer contract (import-linter), lint (ruff) and types (mypy): they need the installed packages only, so
# `make test` runs them beside the rest of the set-up (the harness's jars, the browser, checkov).
checks: $(VENV)/.installed
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/mypy

# The tests collected once, while the archive above trains: the test modules' rewritten asserts and the modules they
# import are compiled then (10 s of one core on a fresh clone), not by each of the three workers at once as the tests
# start.  After the checks: until mypy ends, the set-up's two cores are busy.
test-collect: checks
	$(BIN)/pytest --collect-only -q >/dev/null

# The set-up and the checks, then the tests: the independent ones on pytest-xdist's workers, then the few
# marked `serial` (they time something) alone, so that no worker waits for them (a plain `pytest` runs all,
# serial ones under a lock: tests/conftest.py).
test:
	$(MAKE) --no-print-directory -j4 --output-sync=target $(TEST_DEPS) test-cds checks test-collect
	$(BIN)/pytest -q -m "not serial"
	$(BIN)/pytest -q -m serial -n 0

# The docs' measured tables (docs/results.md) are rendered from the reference runs kept in docs/reference/.
docs: $(VENV)/.installed
	$(BIN)/bench docs

# The reference runs: REF_SCALE, REF_REPS, REF_ENGINES and REF_SCENARIOS as below; each replaces the
# earlier reference run of its scenario.
REF_SCALE ?= 0.005
REF_REPS ?= 3
# the engines of the bin-packing and deletes-high reference runs (those with an own environment: make engines)
REF_ENGINES ?= spark,spark-3.5,risingwave,arrow-floor,gluten,repark
REF_SCENARIOS ?= bin-packing deletes-high
reference: engines
	REF_SCALE=$(REF_SCALE) REF_REPS=$(REF_REPS) REF_ENGINES=$(REF_ENGINES) BENCH=$(BIN)/bench \
	  scripts/reference.sh $(REF_SCENARIOS)

# The measurements behind the docs' full-reproduction plan (docs/aws.md), kept in docs/reference/plan/.
reference-plan: setup
	BENCH=$(BIN)/bench scripts/plan-reference.sh

clean-warehouse:
	rm -rf warehouse
