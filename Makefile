# Two entry points, both from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint setup clean

# editable_mode=compat: a plain path entry in site-packages, which type checkers follow (setuptools' default
# editable install is an import hook that mypy cannot see: `mypy --strict` on a user's script found no types)
$(BIN)/foundry-bridge: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	@touch $@

setup: $(BIN)/foundry-bridge

## Validate the bundled sample, run it on the offline Foundry emulator, and print the merged report (with the
## judge-trust section read against the sample's human verdicts).
demo: setup
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
