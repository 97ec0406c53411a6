"""The report and compare outputs on the benefits sample as the code wrote them before the report and compare
pipelines were split into steps (tests/data/golden, written by ``tests/golden_helpers.py``): texts exactly, the
numbers of the JSON outputs to 1e-9 relative (1e-12 absolute near zero), since the engine sums in its own order."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from golden_helpers import GOLDEN, golden_outputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return golden_outputs(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("name", ["report.json", "report.md", "report.html", "compare.json", "compare.md"])
def test_output_is_unchanged(outputs: dict[str, str], name: str) -> None:
    golden = (GOLDEN / name).read_text(encoding="utf-8")
    if name.endswith(".json"):
        assert _differences(json.loads(outputs[name]), json.loads(golden)) == []
    else:
        assert outputs[name] == golden


def _differences(new: Any, old: Any, where: str = "$") -> list[str]:
    """The paths where ``new`` differs from ``old``: keys, lengths, types and texts exactly, floats to 1e-9."""
    if isinstance(old, dict) and isinstance(new, dict):
        if sorted(new) != sorted(old):
            return [f"{where}: keys {sorted(set(new) ^ set(old))}"]
        return [d for k in old for d in _differences(new[k], old[k], f"{where}.{k}")]
    if isinstance(old, list) and isinstance(new, list):
        if len(new) != len(old):
            return [f"{where}: {len(new)} items, golden {len(old)}"]
        return [d for i, (n, o) in enumerate(zip(new, old, strict=True)) for d in _differences(n, o, f"{where}[{i}]")]
    if isinstance(old, float) and isinstance(new, float):
        return [] if math.isclose(new, old, rel_tol=1e-9, abs_tol=1e-12) else [f"{where}: {new!r} != {old!r}"]
    return [] if (new == old and type(new) is type(old)) else [f"{where}: {new!r} != {old!r}"]


def test_the_number_tolerance_catches_a_real_change() -> None:
    golden = json.loads((GOLDEN / "report.json").read_text(encoding="utf-8"))
    changed = json.loads(json.dumps(golden).replace(": 0.5,", ": 0.5000001,", 1))
    assert changed != golden and _differences(changed, golden) != []
    assert _differences(json.loads(json.dumps(golden)), golden) == []


def test_every_golden_file_is_checked() -> None:
    assert sorted(p.name for p in Path(GOLDEN).iterdir()) == sorted(
        ["report.json", "report.md", "report.html", "compare.json", "compare.md"]
    )
