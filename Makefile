# Fleet: the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip

.PHONY: run test setup setup-dev neo4j proto lint typecheck clean

## run: set everything up and run Fleet's main job on the embedded default (one deliberation)
run: setup
	$(VENV)/bin/fleet demo

## test: install the test dependencies and run the whole test suite
test: setup-dev
	$(PY) -m pytest $(PYTEST_ARGS)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip wheel

# The llm extra compiles llama.cpp (about 5 minutes on 2 cores, once; pip caches the wheel).
setup: $(VENV)/bin/python
	bash scripts/system-deps.sh
	$(PIP) install -q -e '.[llm]'

setup-dev: $(VENV)/bin/python
	bash scripts/system-deps.sh
	$(PIP) install -q -e '.[llm,dev]'
	bash scripts/neo4j-jars.sh

## neo4j: resolve Neo4j Community's jars (Maven) and compile its launcher into ~/.cache/fleet, once
neo4j:
	bash scripts/neo4j-jars.sh

## proto: regenerate the gRPC stubs from proto/ (a test fails when they are stale)
proto:
	$(PY) -m fleet.protogen

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

typecheck:
	$(VENV)/bin/mypy aggregates natsio lifecycle application eventstore dispatchers projectors agent_runtime fleet fleet_testing bench

clean:
	rm -rf .fleet .pytest_cache .ruff_cache .mypy_cache
