# kube-tailor: `make demo` runs the recommender on the built-in fleet,
# `make test` runs every test (including the real-cluster ones).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: venv demo test test-fast lint docs bench chaos controlplane helm cluster-up cluster-down clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(BIN)/tailor recommend --demo

controlplane:
	tests/cluster/build-controlplane.sh

helm:
	tests/deploy/build-helm.sh

test: venv controlplane helm
	$(BIN)/pytest -q

test-fast: venv
	$(BIN)/pytest -q -m "not cluster and not prometheus"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/nbstripout --verify --keep-id notebooks/*.ipynb  # stored without outputs
	$(BIN)/mypy tailor recommender updater admission benchmarks tests
	$(BIN)/lint-imports

docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

bench: venv
	$(BIN)/python -m benchmarks.run_all --out bench-results

# Attacks and bad days on loopback only, each bounded in time (tests/chaos).
chaos: venv controlplane
	TAILOR_CHAOS_OUT=chaos-results $(BIN)/pytest -q -s -m chaos tests/chaos

cluster-up: venv controlplane
	$(BIN)/python -m tests.cluster.up start

cluster-down:
	$(BIN)/python -m tests.cluster.up stop

clean:
	rm -rf $(VENV) site bench-results .cluster .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
