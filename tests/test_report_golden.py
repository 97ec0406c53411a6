"""The report and compare outputs on the benefits sample, byte for byte as the code wrote them before the report
and compare pipelines were split into steps (tests/data/golden, written by ``tests/golden_helpers.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_helpers import GOLDEN, golden_outputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return golden_outputs(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("name", ["report.json", "report.md", "report.html", "compare.json", "compare.md"])
def test_output_is_unchanged(outputs: dict[str, str], name: str) -> None:
    assert outputs[name] == (GOLDEN / name).read_text(encoding="utf-8")


def test_every_golden_file_is_checked() -> None:
    assert sorted(p.name for p in Path(GOLDEN).iterdir()) == sorted(
        ["report.json", "report.md", "report.html", "compare.json", "compare.md"]
    )
