# The two commands of the README. Everything they need is installed or built here.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
.PHONY: setup lock run serve-extender test lint build-control-plane build-helm install-chromium bench bench-compare bench-perf diff clean


# The dependencies as locked, every file checked against its hash; kubesched itself resolves nothing (--no-deps);
# then the dev tools, locked alike (requirements-dev.lock pins the runtime ones to the same versions).
$(STAMP): pyproject.toml requirements.lock requirements-dev.lock
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --require-hashes -r requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip install -q --require-hashes -r requirements-dev.lock
	touch $(STAMP)

setup: $(STAMP)

# After a change to the dependencies of pyproject.toml: both locks again, with pip-tools in a venv of its own
# (tests/unit/test_lock.py fails until they agree). UPGRADE=1 moves every pin to the newest release.
LOCK_VENV := .venv-lock
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile -q --generate-hashes --strip-extras \
	--no-emit-find-links --no-emit-index-url $(if $(UPGRADE),--upgrade)
lock:
	test -x $(LOCK_VENV)/bin/pip-compile || ($(PY) -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/pip install -q pip-tools==7.6.2)
	$(PIP_COMPILE) --output-file requirements.lock pyproject.toml
	$(PIP_COMPILE) --extra dev --constraint requirements.lock --output-file requirements-dev.lock pyproject.toml

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

# Debian's Chromium for the HTML reports' browser tests (tests/unit/scheduler/report): apt-get, once.
install-chromium:
	bash scripts/install-chromium

test: lint build-control-plane build-helm install-chromium
	$(BIN)/pytest -q -rs

bench: setup
	sh scripts/bench-extender

# Before/after in one run: make bench-compare REF=<git ref>
bench-compare: setup
	$(BIN)/python benchmarks/side_by_side.py $(REF)

# kube-scheduler's scheduler_perf workloads in memory (default: the inter-pod affinity set):
# make bench-perf PERF="--scale 0.2 --before main"
bench-perf: setup build-control-plane
	$(BIN)/python benchmarks/scheduler_perf.py $(PERF)

# The differential run against kube-scheduler, larger than the test's: make diff SEEDS=0-19 PODS=30
SEEDS ?= 0-19
PODS ?= 30
diff: setup build-control-plane
	$(BIN)/python benchmarks/differential.py --seeds $(SEEDS) --pods $(PODS) $(if $(K8S),--kubernetes-version $(K8S))

clean:
	rm -rf $(VENV) $(LOCK_VENV) .mypy_cache .ruff_cache .pytest_cache
