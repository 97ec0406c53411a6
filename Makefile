# Two entry points, both from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SOURCES := $(shell find foundry_bridge -type f -not -name '*.pyc')

.PHONY: demo test lint setup setup-runtime clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The demo's venv: the package and its runtime dependencies only (a plain install: no test tools, no editable
# hook); built again when a source changes.
$(VENV)/.runtime: $(BIN)/python pyproject.toml Makefile $(SOURCES)
	$(BIN)/pip install --quiet .
	@touch $@

# The test tools on top, the package installed editable. editable_mode=compat: a plain path entry in site-packages,
# which type checkers follow (setuptools' default editable install is an import hook that mypy cannot see: `mypy
# --strict` on a user's script found no types). Built again after the runtime install replaced it.
$(VENV)/.test: $(VENV)/.runtime pyproject.toml Makefile
	$(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	@touch $@

setup-runtime: $(VENV)/.runtime

setup: $(VENV)/.test

## Validate the bundled sample, run it on the offline Foundry emulator, and print the merged report (with the
## judge-trust section read against the sample's human verdicts).
demo: setup-runtime
	$(BIN)/foundry-bridge validate samples/benefits/rag_eval.jsonl
	$(BIN)/foundry-bridge run samples/benefits/rag_eval.jsonl --backend mock --out runs/demo --force --quiet
	$(BIN)/foundry-bridge report runs/demo --format md --human-verdicts samples/benefits/human_verdicts.jsonl

## Lint, type-check and run the whole test suite (offline; two worker processes).
test: setup
	$(BIN)/ruff check foundry_bridge tests benchmarks
	$(BIN)/ruff format --check foundry_bridge tests benchmarks
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2

lint: setup
	$(BIN)/ruff check foundry_bridge tests benchmarks
	$(BIN)/ruff format --check foundry_bridge tests benchmarks

clean:
	rm -rf $(VENV) runs build *.egg-info .pytest_cache
