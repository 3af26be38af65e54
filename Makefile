# The two commands of the README. Each sets itself up, idempotently:
#   make demo   the README's quickstart (pulumi up) on a real node, a RayJob to Complete, teardown
#   make test   lint, then every test tier (unit, components, integration, e2e)
#   make image  the operator's OCI image, without a container daemon (dist/image/)
# Built binaries live in ~/.cache/pulumi-ray (override with PULUMI_RAY_CACHE).
#
# Everything that needs the package registries (pip, the Go builds) runs in the targets
# before the sandbox; tests, the demo and benchmarks then run inside it (hack/sandbox),
# where kwok's addresses lead to this machine and nothing can leave it.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
SANDBOX := $(PY) -m hack.sandbox --
# The suite runs on pytest-xdist workers: its tests mostly wait (on the operator, a Ray head,
# the Pulumi engine), so more workers than cores keep two cores busy. Measured on clean
# clones (2026-11-30), seconds in pytest: 3 workers 1,647 and 1,756; 4 workers 1,476,
# 1,733, 1,652 and 1,758. The two CPUs are then 96% busy for the whole run (the report at
# its end, tests/cputime.py), so a fifth worker would only share them.
# tests/conftest.py orders and groups the tests (one group per module, slowest tier first).
TEST_WORKERS ?= 4

.PHONY: test bytecode demo node-compare kuberay-e2e kuberay-e2e-build bench shell lint venv policy-venv floor-venv localcluster localcluster-1.36 node node-1.36 pulumi-engine sdk-deps kuberay kueue gang-schedulers cert-manager prometheus image ray-image ray-image-newer redis-image crds permissions dashboards schema clean

venv: $(STAMP)

# uv makes the three virtualenvs and installs their packages: on a fresh clone with the
# wheel caches warm and the machine idle, `python -m venv` and pip took 61 s for the
# three (ensurepip some 10 s of each), uv takes 20 s, and the same versions land (pip
# freeze of each compared). Both compile every module's bytecode as they install: a
# shell with PYTHONDONTWRITEBYTECODE set would otherwise compile Ray, Pulumi and the
# Kubernetes client again in every process that imports them. `--seed` puts pip,
# setuptools and wheel in each (ensurepip put pip and setuptools): Pulumi's Python
# language host and people's habits expect pip there. uv itself comes from PyPI once,
# into the build cache; a venv's bin/uv is a static binary, so the venv may move.
UV_VERSION := 0.13.9
CACHE := $(or $(PULUMI_RAY_CACHE),$(HOME)/.cache/pulumi-ray)
UV_HOME := $(CACHE)/uv-$(UV_VERSION)
UV := $(UV_HOME)/bin/uv

$(UV):
	@rm -rf $(UV_HOME).tmp
	$(PYTHON) -m venv $(UV_HOME).tmp
	$(UV_HOME).tmp/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	@rm -rf $(UV_HOME) && mv $(UV_HOME).tmp $(UV_HOME)

# pyproject.toml says which versions work (ranges); constraints.txt which ones the tests
# run with (exact), so every machine tests the same thing.
$(STAMP): pyproject.toml constraints.txt | $(UV)
	@test -x $(PY) || $(UV) venv --quiet --seed --no-python-downloads --python $(PYTHON) $(VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(PY) -c constraints.txt -e '.[test]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# The policy pack's own virtualenv (policy/requirements.txt): pulumi-policy pins protobuf 5,
# the test environment above needs protobuf 6, so the pack cannot share it.
POLICY_VENV := .venv-policy
POLICY_STAMP := $(POLICY_VENV)/.installed
policy-venv: $(POLICY_STAMP)

$(POLICY_STAMP): policy/requirements.txt pyproject.toml | $(UV)
	@test -x $(POLICY_VENV)/bin/python || $(UV) venv --quiet --seed --no-python-downloads --python $(PYTHON) $(POLICY_VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(POLICY_VENV)/bin/python -r policy/requirements.txt -e .
	@touch $@

# The base install alone (no `operator` extra) at the lowest versions pyproject.toml
# allows (constraints-floor.txt): tests/components/test_dependency_floors.py renders every
# example in it and compares the bytes with the pinned environment's. Regenerate the pins
# after moving a floor with:
#   .venv-floor/bin/pip freeze --exclude-editable | grep -v '^pulumi-ray' > constraints-floor.txt
FLOOR_VENV := .venv-floor
FLOOR_STAMP := $(FLOOR_VENV)/.installed-$(shell cat pyproject.toml constraints-floor.txt | cksum | cut -d' ' -f1)
floor-venv: $(FLOOR_STAMP)

$(FLOOR_STAMP): pyproject.toml constraints-floor.txt | $(UV)
	@test -x $(FLOOR_VENV)/bin/python || $(UV) venv --quiet --seed --no-python-downloads --python $(PYTHON) $(FLOOR_VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(FLOOR_VENV)/bin/python -c constraints-floor.txt -e .
	@rm -f $(FLOOR_VENV)/.installed-*
	@touch $@

localcluster: venv
	$(PY) -m hack.localcluster build

# The second control-plane version (hack/localcluster/versions.py KUBERNETES_1_36), for
# the tests in tests/integration/kubernetes136; its own cache stamp beside the default's.
localcluster-1.36: venv
	$(PY) -m hack.localcluster build --kubernetes v1.36.3

node: venv
	$(PY) -m hack.node build

# The real node's kubelet and kube-proxy at the second control-plane version, for
# tests/node136 (the rest of the node is make node's).
node-1.36: venv node
	$(PY) -m hack.node kubelet v1.36.3

pulumi-engine: venv
	$(PY) -m hack.pulumi build

# What the TypeScript and Go SDK tests build with (hack/pulumi/sdk.py): the TypeScript
# example's npm packages (its package-lock.json) into the cache, and the Go example's
# modules into the module cache, compiled into the build cache (cold: minutes). Once
# done, a run costs seconds (a warm build).
sdk-deps: pulumi-engine
	$(PY) -m hack.pulumi sdk-deps

kuberay: venv
	$(PY) -m hack.kuberay build

# KubeRay's own e2e test packages (hack/kuberay_e2e), built as test binaries from the
# ray-operator Go module; the real-node tier runs them against our operator.
kuberay-e2e-build: venv
	$(PY) -m hack.kuberay_e2e build

# Kueue's controller manager, CRDs and webhook manifest (hack/kueue): the batch-scheduling
# tests (tests/integration/batch) run it beside the local control plane in the sandbox.
kueue: venv
	$(PY) -m hack.kueue build

# cert-manager's certificate and issuer controllers and CRDs (hack/certmanager), built from
# its Go module: the RayClusterMTLS tests (tests/integration/mtls) run it beside the local
# control plane in the sandbox.
cert-manager: venv
	$(PY) -m hack.certmanager build

# The gang schedulers that build from their Go modules here (hack/gang), for the
# gang-scheduling tests in tests/integration/batch.
gang-schedulers: venv
	$(PY) -m hack.gang build

# Debian's Prometheus and promtool (hack/prometheus/debian.lock), extracted into the cache:
# the observability tests load the operator's alert rules into it in the sandbox.
prometheus: venv
	$(PY) -m hack.prometheus fetch

# The operator's OCI image into dist/image/ (hack/image): Debian packages, wheels and the
# Go tool are fetched here, so the image tests can run in the sandbox.
image: venv
	$(PY) -m hack.image build

# The real node's Ray image into dist/ray-image/ (hack/image/ray): a stand-in for
# rayproject/ray at constraints.txt's ray pin, built here from the ray wheel and loaded
# on the node as rayproject/ray:<version>; its .debs and wheels are fetched here.
ray-image: venv
	$(PY) -m hack.image.ray build

# A newer Ray's image into dist/ray-image-newer/ (hack/image/ray NEWER): the stand-in's
# layers with Ray 2.60.0's wheel, for the scenario that needs a newer Ray (the GCS's own
# storage on a volume, tests/node/test_gcs_embedded_storage_on_the_node.py).
ray-image-newer: venv
	$(PY) -m hack.image.ray build --newer

# The real node's Redis into dist/redis-image/ (hack/image/redis): Debian bookworm's
# redis-server and redis-tools, extracted from locked .debs (fetched here), loaded on the
# node as redis:<version> for the GCS fault-tolerance scenarios.
redis-image: venv
	$(PY) -m hack.image.redis build

# mypy's cache lives in the build cache, not the checkout: a clean clone (CI) otherwise
# checks every module from scratch, 14 s of one core, where a kept cache takes under a
# second. mypy checks each cached module's hash when its path or mtime differs (another
# clone), so a cache made by another checkout never passes a changed file unchecked.
MYPY_CACHE := $(CACHE)/mypy

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy --cache-dir $(MYPY_CACHE)
	$(VENV)/bin/lint-imports
	$(PY) -m hack.deadcode
	$(PY) -m operator_runtime.controllers.permission_table --check
	$(PY) -m components.statustypes --check
	$(PY) -m components.schema --check
	$(PY) -m hack.schemadocs --check
	$(PY) -m hack.dashboards --check

# Our own sources' bytecode, written once before the suite's four workers and the few
# hundred Python processes its tests start (operators, Pulumi programs, benchmarks) import
# them. In a shell with PYTHONDONTWRITEBYTECODE set (as `venv` notes) each of those would
# compile the same sources again, and each worker would rewrite every test module's
# asserts again, since pytest keeps its rewrite only where bytecode may be written: a
# worker's collection took 10.2 CPU-s, and 3.8 with the rewrites kept. compileall leaves
# the test modules to pytest's rewrite, which a collection run writes. Both go to
# __pycache__, which git ignores.
bytecode: venv
	$(PY) -m compileall -q -x '/(test_[^/]*|conftest)\.py$$' components operator_runtime hack tests benchmarks
	env -u PYTHONDONTWRITEBYTECODE $(SANDBOX) $(PY) -m pytest --collect-only -q > /dev/null

# Every test's time also goes to dist/test-results.xml (JUnit): where the suite's budget
# goes, per tier, when --durations' fifty are not enough to tell.
test: venv policy-venv floor-venv localcluster localcluster-1.36 pulumi-engine sdk-deps kuberay kuberay-e2e-build kueue gang-schedulers cert-manager prometheus image ray-image redis-image node lint bytecode
	$(SANDBOX) $(PY) -m pytest -n $(TEST_WORKERS) --durations=50 --junitxml=dist/test-results.xml

# The real node's whole tier: every scenario with KubeRay's side of it (make test runs
# them under our operator alone, tests/node/harness.py operators(), so that two cores do
# not run two sets of Ray pods beside the other tiers), and the alpha gates' proofs make
# test leaves out (tests/tierscope.py NODE_COMPARE_ONLY: a newer Ray, cert-manager, the
# firewall, a node of Kubernetes 1.36); about an hour.
node-compare: venv localcluster localcluster-1.36 node node-1.36 kuberay cert-manager image ray-image ray-image-newer redis-image
	PULUMI_RAY_NODE_COMPARE=1 $(SANDBOX) $(PY) -m pytest -p no:randomly -s tests/node tests/node136

# KubeRay's own e2e suite (its sampleyaml, e2e, e2erayjob, e2erayservice and e2eautoscaler
# packages) on the real node under both operators, one after the other; the per-test
# table goes to dist/kuberay-e2e/report.md (tests/node/kuberay_e2e.py). Hours, not minutes:
# make test runs two of its samples.
# KUBERAY_E2E=sampleyaml,e2erayjob runs those packages alone.
KUBERAY_E2E_DIR := dist/kuberay-e2e
KUBERAY_E2E ?= all
kuberay-e2e: venv localcluster node kuberay kuberay-e2e-build image ray-image redis-image
	mkdir -p $(KUBERAY_E2E_DIR) && rm -f $(KUBERAY_E2E_DIR)/results.jsonl
	PULUMI_RAY_KUBERAY_E2E=$(KUBERAY_E2E) PULUMI_RAY_KUBERAY_E2E_REPORT=$(KUBERAY_E2E_DIR)/results.jsonl \
		$(SANDBOX) $(PY) -m pytest -p no:randomly -s tests/node/test_kuberay_e2e.py; \
	status=$$?; \
	$(PY) -m tests.node.kuberay_e2e $(KUBERAY_E2E_DIR)/results.jsonl | tee $(KUBERAY_E2E_DIR)/report.md; \
	exit $$status

# The README's quickstart through the engine built here, on one real node with our
# operator's image and the Ray stand-in loaded (hack/demo.py). The binaries come from
# the cache; the two images are rebuilt from cached packages (some 40 s on two cores).
demo: venv localcluster node pulumi-engine image ray-image
	$(SANDBOX) $(PY) -m hack.demo

# KUBERAY_CHART=DIR adds KubeRay's Helm chart (a local copy, benchmarks/README.md) beside
# the stack template's preview and state.
bench: venv localcluster kuberay pulumi-engine
	$(SANDBOX) $(PY) -m benchmarks.operator_rss
	$(SANDBOX) $(PY) -m benchmarks.stack_template $(if $(KUBERAY_CHART),--kuberay-chart $(KUBERAY_CHART))
	$(SANDBOX) $(PY) -m benchmarks.scale
	$(SANDBOX) $(PY) -m benchmarks.workloads_scale

shell: venv localcluster
	$(PY) -m hack.sandbox --shell

crds: venv
	$(PY) -m operator_runtime.api.crds

permissions: venv
	$(PY) -m operator_runtime.controllers.permission_table

# The Grafana boards (components/operator/boards/*.json), from the panel queries.
dashboards: venv
	$(PY) -m hack.dashboards

# The components' Pulumi package schema (components/schema.json), from their annotations,
# and the reference in docs/components.md, from the schema.
schema: venv
	$(PY) -m components.statustypes
	$(PY) -m components.schema
	$(PY) -m hack.schemadocs

clean:
	rm -rf $(VENV) $(FLOOR_VENV) .localcluster .pytest_cache .mypy_cache .ruff_cache dist/image dist/ray-image dist/ray-image-newer dist/redis-image
