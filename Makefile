# The two commands of the README. Everything they need is installed or built here.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
.PHONY: setup run serve-extender test lint build-control-plane build-helm bench bench-compare diff clean


$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# The custom scheduler on the embedded default: the example cluster, in memory.
run: setup
	$(BIN)/kubesched scheduler run --cluster examples/cluster.yaml

# Serve the custom-label policy as an extender on the example node file: no cluster needed.
serve-extender: setup
	$(BIN)/kubesched extender serve --policy custom-label --nodes examples/nodes.yaml --listen 127.0.0.1:8888 --log-format text

lint: setup
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy
	$(BIN)/lint-imports

build-control-plane: setup
	$(BIN)/python -m kubesched.testing.build

# helm for the chart's tests (deploy/helm), from the Go module proxy; cached beside the control plane.
build-helm: setup
	$(BIN)/python -m kubesched.testing.build helm

test: lint build-control-plane build-helm
	$(BIN)/pytest -q -rs

bench: setup
	sh scripts/bench-extender

# Before/after in one run: make bench-compare REF=<git ref>
bench-compare: setup
	$(BIN)/python benchmarks/side_by_side.py $(REF)

# The differential run against kube-scheduler, larger than the test's: make diff SEEDS=0-19 PODS=30
SEEDS ?= 0-19
PODS ?= 30
diff: setup build-control-plane
	$(BIN)/python benchmarks/differential.py --seeds $(SEEDS) --pods $(PODS) $(if $(K8S),--kubernetes-version $(K8S))

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
