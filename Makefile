# The two commands: `make run` and `make test`. Everything else is a helper for them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
API_PORT ?= 8000
APP_PORT ?= 8501
WORKERS  ?= 2
SANDBOX_PORT ?= 8600
# run-fleet's control endpoint (GET /fleet); 0: a free port, printed at start
CONTROL_PORT ?= 0
# make test's parallel workers, one per core: many tests wait on servers and subprocesses,
# but the drills time things, so the load stays near the core count (3 is not yet measured
# on a quiet machine)
TEST_WORKERS ?= 2
export LOOKUP_DATA_DIR ?= $(CURDIR)/data

.PHONY: run run-fleet test test-fast venv lint bench clean help

help:
	@echo "make run   - set up .venv, build missing data sets, start the API (:$(API_PORT)) and dashboard (:$(APP_PORT))"
	@echo "make run-fleet - the same on PostgreSQL + Redis: local servers under data/servers/, $(WORKERS) API processes (:$(API_PORT)..), aggregators, dashboard"
	@echo "make test  - set up .venv with dev tools and run the whole suite ($(TEST_WORKERS) parallel workers)"
	@echo "make test-fast - the inner loop: every test but the slow ones (servers, browser, notebooks, drills)"
	@echo "make bench - run every benchmark in benchmarks/ (quick mode; outside the suite)"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-app: pyproject.toml | $(BIN)/python
	@echo "make: installing the Python packages into $(VENV) (once; about 5 minutes on a fresh machine, pip lists each package as it goes)"
	$(BIN)/python -m pip install --progress-bar off -e '.[app]'
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	@echo "make: installing the Python packages and test tools into $(VENV) (once; about 6 minutes on a fresh machine, pip lists each package as it goes)"
	$(BIN)/python -m pip install --progress-bar off -e '.[app,dev]'
	@touch $@ $(VENV)/.installed-app

venv: $(VENV)/.installed-app

run: $(VENV)/.installed-app
	$(BIN)/lookup up --api-port $(API_PORT) --app-port $(APP_PORT) --sandbox-port $(SANDBOX_PORT)

run-fleet: $(VENV)/.installed-app
	$(BIN)/lookup up --backend postgres,redis --workers $(WORKERS) --api-port $(API_PORT) --app-port $(APP_PORT) --sandbox-port $(SANDBOX_PORT) --control-port $(CONTROL_PORT)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=25

test-fast: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check lookup app tests benchmarks scripts
	$(BIN)/ruff format --check lookup app tests benchmarks scripts

bench: $(VENV)/.installed-dev
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache
