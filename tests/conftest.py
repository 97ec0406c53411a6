"""Shared fixtures: paths to the bundled samples and mappings."""

from __future__ import annotations

from pathlib import Path

import pytest

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
