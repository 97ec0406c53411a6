"""Shared fixtures: paths to the bundled samples and mappings."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

# ranx's measures are numba kernels (`@njit(cache=True)`): compiled from cold, on a fresh clone, they cost about a
# minute of CPU (four minutes of wall on a busy machine) for a comparison that then takes milliseconds. The tests
# run them interpreted -- the same Python source, numba's `prange` as `range` -- so `make test` compiles nothing;
# `.ci/run` sets NUMBA_DISABLE_JIT=0 and checks the compiled kernels too (numba caches them inside the venv).
# Set here, before any test imports numba (ppi-python's few numba functions run interpreted too).
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

# NLTK binds the sys.stderr of its first import as a default argument (its downloader's `print_error_to`). First
# imported inside a CliRunner, which swaps stderr and closes its stand-in afterwards, every later download message
# in that worker raised "I/O operation on closed file" where the emulator expects NLTK's LookupError (a test-order
# failure: test_docs_commands before test_mock_contracts). Imported here, it binds the real stderr.
with contextlib.suppress(ImportError):  # nltk comes with azure-ai-evaluation, a test dependency
    import nltk.downloader  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
MAPPINGS = ROOT / "mappings"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def benefits_jsonl() -> Path:
    """The bundled benefits-assistant sample (Foundry field names)."""
    return SAMPLES / "benefits" / "rag_eval.jsonl"


@pytest.fixture
def default_mapping() -> Path:
    return MAPPINGS / "default.yaml"
