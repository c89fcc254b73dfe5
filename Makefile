# Fleet: the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
# uv installs in parallel and resolves in a fraction of pip's time (ray and grpcio are large);
# UV_PYTHON keeps it on this venv even when another one is active.
PIP    := UV_PYTHON=$(PY) $(VENV)/bin/uv pip
UV_VERSION ?= 0.13.9
# Every install takes its versions from constraints.txt (`make constraints` writes it), so a fresh
# machine gets the versions CI ran, and a linter release that changes scores arrives on purpose.
CONSTRAINTS := -c constraints.txt

.PHONY: run test setup setup-dev constraints neo4j proto lint typecheck clean

## run: set everything up and run Fleet's main job on the embedded default (one deliberation)
run: setup
	$(VENV)/bin/fleet demo

## test: install the test dependencies and run the whole test suite
test: setup-dev
	$(PY) -m pytest $(PYTEST_ARGS)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/bin/uv: $(VENV)/bin/python
	$(VENV)/bin/pip install -q --disable-pip-version-check uv==$(UV_VERSION)

# Every dependency is a prebuilt wheel (llama.cpp too: xllamacpp), so nothing compiles.
setup: $(VENV)/bin/uv
	bash scripts/system-deps.sh
	$(PIP) install -q $(CONSTRAINTS) -e '.[llm]'

setup-dev: $(VENV)/bin/uv
	bash scripts/system-deps.sh --dev
	$(PIP) install -q $(CONSTRAINTS) -e '.[llm,dev]'
	FLEET_PYTHON=$(PY) bash scripts/neo4j-jars.sh

## constraints: re-resolve every dependency (core and extras) to exact versions, on purpose
constraints: $(VENV)/bin/uv
	$(VENV)/bin/uv pip compile pyproject.toml --extra llm --extra dev --extra otel \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 -q -o constraints.txt

## neo4j: resolve Neo4j Community's jars (Maven) and compile its launcher into ~/.cache/fleet, once
neo4j:
	FLEET_PYTHON=$(PY) bash scripts/neo4j-jars.sh

## proto: regenerate the gRPC stubs from proto/ (a test fails when they are stale)
proto:
	$(PY) -m fleet.protogen

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

typecheck:
	$(VENV)/bin/mypy aggregates natsio lifecycle application eventstore dispatchers projectors agent_runtime fleet fleet_testing bench tests/support/doubles.py

clean:
	rm -rf .fleet .pytest_cache .ruff_cache .mypy_cache
