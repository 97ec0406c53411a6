"""The report at scale: the same numbers as before the streaming rewrite, on a generated 3,000-query run.

The golden file (tests/data/report_scale/numbers.json) was written by the report code before issue 13's rewrite
(its ``_provenance`` names the commit): every aggregate, coverage count, stage count, the negative-query aggregate,
canaries, warnings, the first ids of each list, the top of the labelling queue, every comparison number (delta,
CI, p, verdict, wins/ties/losses) and a SHA-256 of the per-query rows must come out identical; fields added since
are allowed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scale_helpers import COMPARE, GOLDEN, compare_numbers, report_numbers, synthetic_runs

from foundry_bridge.report import build_report, compare_runs, render_comparison_json, render_json


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return synthetic_runs(tmp_path_factory.mktemp("scale"))


def test_report_numbers_are_unchanged(runs: tuple[Path, Path], golden: dict[str, Any], tmp_path: Path) -> None:
    report = build_report(runs[0], queries_out=tmp_path / "queries.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == report.per_query.rows == 3000
    numbers = json.loads(json.dumps(report_numbers(json.loads(render_json(report)), rows), sort_keys=True))
    for key, expected in golden["report"].items():
        assert _holds(numbers[key], expected), key


def test_compare_numbers_are_unchanged(runs: tuple[Path, Path], golden: dict[str, Any]) -> None:
    comparison = compare_runs(list(runs), **COMPARE)  # type: ignore[arg-type]
    numbers = json.loads(json.dumps(compare_numbers(json.loads(render_comparison_json(comparison))), sort_keys=True))
    assert _holds(numbers, golden["compare"])


def _holds(new: Any, old: Any) -> bool:
    """``new`` has every value of ``old``, identical (fields added since, e.g. coverage's hole counts, allowed)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _holds(new[k], v) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(new) == len(old) and all(map(_holds, new, old))
    return bool(new == old and type(new) is type(old))
