"""compare's numbers where the runs do not line up row by row (a reordered candidate with a query missing, one
repeated and one of another kind; three runs, every pair; run files), against what the code before compare became
a join wrote (``tests/data/compare_join``, ``tests/compare_join_helpers.py``): texts exactly, numbers to 1e-9."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compare_join_helpers import GOLDEN, join_outputs
from test_report_golden import _differences


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return join_outputs(tmp_path_factory.mktemp("join"))


@pytest.mark.parametrize("name", ["folders.json", "files.json"])
def test_the_comparison_is_unchanged(outputs: dict[str, dict[str, Any]], name: str) -> None:
    golden = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    assert _differences(outputs[name], golden) == []


def test_the_golden_holds_what_the_join_must_answer() -> None:
    """The fixture exercises the anti-joins, the repeated id, the kind change and every pair (else it tests less)."""
    folders = json.loads((Path(GOLDEN) / "folders.json").read_text(encoding="utf-8"))
    assert folders["queries"][0]["only_in_baseline"] == ["q11"]
    assert folders["queries"][0]["kind_changed"] == ["q02"]
    assert folders["all_pairs"]["rankings"] and len(folders["all_pairs"]["pairs"]) > len(folders["metrics"])
    assert {c["kind"] for c in folders["gate"]["checks"]} == {"relative", "floor", "lost"}
