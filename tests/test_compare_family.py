"""The corrected comparison of run folders (mock backend), checked against scipy and statsmodels on the per-query
values read straight from results.jsonl."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from foundry_bridge.canaries import ABSTENTION_TEXT
from foundry_bridge.report._family import compare_family_runs, render_family_markdown

scipy_stats = pytest.importorskip("scipy.stats")
sm_contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
sm_multitest = pytest.importorskip("statsmodels.stats.multitest")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _run(data: Path, out: Path) -> Path:
    cmd = [sys.executable, "-m", "foundry_bridge", "run", str(data), "--backend", "mock", "--out", str(out), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The sample (baseline), the sample again (same), and the sample with most answers replaced by abstentions."""
    tmp = tmp_path_factory.mktemp("family")
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    worse = tmp / "worse.jsonl"
    changed = [
        {**r, "response": ABSTENTION_TEXT} if i % 4 != 3 and r.get("response") else r for i, r in enumerate(rows)
    ]
    worse.write_text("".join(json.dumps(r) + "\n" for r in changed))
    return _run(SAMPLE, tmp / "base"), _run(SAMPLE, tmp / "same"), _run(worse, tmp / "worse")


def _column(run: Path, criterion: str, metric: str, field: str) -> dict[str, Any]:
    ids = [json.loads(line)["query_id"] for line in (run / "records.jsonl").read_text().splitlines()]
    out = {}
    for line in (run / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["criterion"] == criterion and r["metric"] == metric and r["error"] is None and r[field] is not None:
            out[ids[r["row"]]] = r[field]
    return out


def test_each_row_names_its_test_and_matches_scipy_and_statsmodels(runs: tuple[Path, Path, Path]) -> None:
    base, same, worse = runs
    chosen = ["groundedness", "relevance"]  # a family of 2 candidates × 4 (score and pass/fail of two judges)
    comparison = compare_family_runs(
        base, [same, worse], labels=["base", "same", "worse"], method="holm", metrics=chosen
    )
    assert len(comparison.rows) == 8
    rows = {(r.candidate, r.key): r for r in comparison.rows}
    score = rows[("worse", "relevance:relevance")]
    a, b = _column(base, "relevance", "relevance", "score"), _column(worse, "relevance", "relevance", "score")
    x = np.array([a[q] for q in a if q in b])
    y = np.array([b[q] for q in a if q in b])
    assert score.test.startswith("Wilcoxon signed-rank") and score.n == x.size
    assert score.p == pytest.approx(scipy_stats.wilcoxon(x, y).pvalue)
    assert score.delta == pytest.approx(float((y - x).mean()))
    assert score.delta_low is not None and score.delta_low < score.delta < (score.delta_high or 0)
    verdict = rows[("worse", "groundedness:groundedness:pass")]
    pa = _column(base, "groundedness", "groundedness", "passed")
    pb = _column(worse, "groundedness", "groundedness", "passed")
    pairs = [(pa[q], pb[q]) for q in pa if q in pb]
    table = [[sum(1 for u, v in pairs if u == i and v == j) for j in (True, False)] for i in (True, False)]
    assert verdict.test == "McNemar exact"
    assert verdict.p == pytest.approx(sm_contingency.mcnemar(table, exact=True).pvalue)
    tested = [r for r in comparison.rows if r.p is not None]
    holm = sm_multitest.multipletests([r.p for r in tested], method="holm")[1]
    assert [r.p_adjusted for r in tested] == pytest.approx(list(holm))
    assert all(r.verdict == "no significant change" for r in comparison.rows if r.candidate == "same")
    assert verdict.verdict == "worse" and verdict in comparison.gate_failures


def test_benjamini_hochberg_on_request_and_too_few_paired_queries(runs: tuple[Path, Path, Path]) -> None:
    base, _, worse = runs
    bh = compare_family_runs(base, [worse], method="bh")
    tested = [r for r in bh.rows if r.p is not None]
    expected = sm_multitest.multipletests([r.p for r in tested], method="fdr_bh")[1]
    assert [r.p_adjusted for r in tested] == pytest.approx(list(expected))
    assert all(r.correction == f"Benjamini-Hochberg over {len(tested)}" for r in tested)
    few = compare_family_runs(base, [worse], min_n=1000, metrics=["groundedness"])
    assert {r.key for r in few.rows} == {"groundedness:groundedness", "groundedness:groundedness:pass"}
    assert all(r.verdict == "too few paired queries" and r.p is None for r in few.rows)
    assert few.gate_failures == []


def test_a_change_inside_the_judge_noise_is_no_change(runs: tuple[Path, Path, Path]) -> None:
    base, _, worse = runs
    key = "relevance:relevance"
    noisy = compare_family_runs(base, [worse], metrics=[key], noise={key: 10.0})
    row = next(r for r in noisy.rows if r.key == key)
    assert row.significant and row.within_noise and row.verdict == "within judge noise" and not row.changed


def test_the_markdown_table_shows_the_test_interval_and_adjusted_p(runs: tuple[Path, Path, Path]) -> None:
    base, same, worse = runs
    comparison = compare_family_runs(base, [same, worse], labels=["base", "same", "worse"])
    text = render_family_markdown(comparison)
    assert "| worse | relevance:relevance:pass | McNemar exact |" in text
    assert "p adjusted \\(Holm\\)" in text and "Worse after correction: " in text  # not a gate: compare has one
    assert text.count("\n| ") == len(comparison.rows) + 1


def test_positive_and_negative_queries_are_compared_apart(runs: tuple[Path, Path, Path]) -> None:
    base, _, worse = runs
    kinds = {
        json.loads(line)["query_id"]: json.loads(line)["kind"]
        for line in (base / "records.jsonl").read_text().splitlines()
    }
    scored = _column(base, "groundedness", "groundedness", "score")
    for kind in ("positive", "negative"):
        family = compare_family_runs(base, [worse], kind=kind, metrics=["groundedness"], min_n=1)
        row = next(r for r in family.rows if r.key == "groundedness:groundedness")
        assert family.kind == kind and row.n == sum(1 for q in scored if kinds[q] == kind)
