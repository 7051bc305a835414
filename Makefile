# kube-tailor: `make demo` runs the recommender on the built-in fleet,
# `make test` runs every test (including the real-cluster ones).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: venv demo demo-cluster test test-fast lint docs bench chaos controlplane helm cluster-up cluster-down clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	@echo "Demo fleet: 6 workloads (7 containers) in namespace demo, 8 days at 5 min:"
	@echo "a web service with a sidecar, a weekly cycle, a nightly batch, a memory leak"
	@echo "OOM-killed at its limit, bursts and a JVM heap. Recommendations (vpa model):"
	$(BIN)/tailor recommend --demo
	@echo "Next: tailor recommend --demo --explain (why each figure), --strategy forecast,"
	@echo "tailor schedule --demo (the 24 h plan), tailor backtest --demo (what each saves),"
	@echo "tailor recommend -n NAMESPACE (your cluster: kube context, Prometheus found)."

controlplane:
	tests/cluster/build-controlplane.sh

helm:
	tests/deploy/build-helm.sh

# Two workers, one test module each at a time: most real-cluster tests wait on processes,
# and module-scoped fixtures (an executed notebook, a started service) are built once.
test: venv controlplane helm
	$(BIN)/pytest -q -n 2 --dist loadfile --durations=30

test-fast: venv
	$(BIN)/pytest -q -m "not cluster and not prometheus"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/nbstripout --verify --keep-id notebooks/*.ipynb  # stored without outputs
	$(BIN)/mypy tailor recommender updater admission benchmarks tests docs/hooks
	$(BIN)/lint-imports

docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

bench: venv
	$(BIN)/python -m benchmarks.run_all --out bench-results

# Attacks and bad days on loopback only, each bounded in time (tests/chaos).
chaos: venv controlplane
	TAILOR_CHAOS_OUT=chaos-results $(BIN)/pytest -q -s -m chaos tests/chaos

demo-cluster: venv controlplane
	$(BIN)/python -m tests.cluster.demo

cluster-up: venv controlplane
	$(BIN)/python -m tests.cluster.up start

cluster-down:
	$(BIN)/python -m tests.cluster.up stop

clean:
	rm -rf $(VENV) site bench-results .cluster .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
