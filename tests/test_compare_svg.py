"""A compare's deltas drawn: ``compare --format html`` is one page, no script, whose inline SVG shows each metric's
mean delta and its confidence interval around 0, green when significantly better, red when worse, grey otherwise."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_helpers import JUDGE_SCORES, write_run

from foundry_bridge.cli import main
from foundry_bridge.comparison import compare_runs, deltas_svg

SVG = "{http://www.w3.org/2000/svg}"


def _runs(tmp_path: Path) -> list[Path]:
    """The fixture run and a candidate whose answers the relevance judge scores 1 (of 5) on most queries."""
    worse = copy.deepcopy(JUDGE_SCORES)
    for q in ("q01", "q02", "q03", "q04", "q06", "q07", "q09", "q10", "q11"):
        worse["relevance"][q] = 1
    return [write_run(tmp_path / "base"), write_run(tmp_path / "worse", scores=worse)]


def test_the_deltas_are_drawn_with_their_intervals(tmp_path: Path) -> None:
    comparison = compare_runs(_runs(tmp_path), n_resamples=200, min_paired=2, correction="none")
    rows = [m for m in comparison.metrics if m.section == "positive" and m.delta is not None]
    svg = ET.fromstring(deltas_svg(comparison))  # well-formed SVG
    dots = svg.findall(f".//{SVG}circle")
    assert len(dots) == len(rows) > 0
    labels = [g.find(f"{SVG}text").text for g in svg.findall(f"{SVG}g")]  # type: ignore[union-attr]
    assert labels == [m.metric for m in rows]
    relevance = next(i for i, m in enumerate(rows) if m.metric == "relevance")
    assert rows[relevance].verdict == "worse" and dots[relevance].get("fill") == "#c62828"
    zero = float(svg.findall(f"{SVG}line")[0].get("x1", "nan"))
    assert float(dots[relevance].get("cx", "nan")) < zero  # a worse mean sits left of 0
    unchanged = next(i for i, m in enumerate(rows) if m.metric == "rr@3")
    assert dots[unchanged].get("fill") == "#757575" and float(dots[unchanged].get("cx", "nan")) == zero


def test_compare_format_html_is_a_page_without_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, better = _runs(tmp_path)
    out = tmp_path / "c.html"
    with pytest.raises(SystemExit) as exited:
        main(["compare", str(base), str(better), "--format", "html", "--out", str(out), "--min-paired", "2", "-q"])
    assert exited.value.code == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    assert page.count('<svg class="deltas"') >= 1 and "<script" not in page
    assert re.search(r"Content-Security-Policy\" content=\"default-src 'none'", page)


def _scales(svg: ET.Element) -> dict[str, str]:
    """Each row's name → the scale printed at its right (``±half-width``)."""
    out = {}
    for g in svg.findall(f"{SVG}g"):
        texts = g.findall(f"{SVG}text")
        out[texts[0].text or ""] = texts[-1].text or ""
    return out


def _with_xdcg(run: Path) -> Path:
    """A document_retrieval metric on a 0–100 scale (as xdcg is), 100 on every query, beside each ndcg@3 row."""
    path = run / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    extra = [{**r, "metric": "xdcg@3", "score": 100.0, "passed": None} for r in rows if r["metric"] == "ndcg@3"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + extra), encoding="utf-8")
    return run


def test_a_group_whose_deltas_are_all_zero_gets_a_sane_scale(tmp_path: Path) -> None:
    """The fixture against a copy of itself: every delta and interval is 0. 0–1 metrics are drawn on ±0.05 and
    judge scores on ±0.2 (5 % of each scale), a metric on its own scale (xdcg, 0–100) on 5 % of its largest |mean|
    (±5); never ±0."""
    a, b = _with_xdcg(write_run(tmp_path / "a")), _with_xdcg(write_run(tmp_path / "b"))
    metrics = ["rr@3", "hit@10", "relevance", "document_retrieval/xdcg@3"]
    comparison = compare_runs([a, b], n_resamples=200, min_paired=2, correction="none", metrics=metrics)
    rows = [m for m in comparison.metrics if m.section == "positive"]
    assert sorted(m.metric for m in rows) == sorted(metrics)
    assert all(m.delta == m.ci_low == m.ci_high == 0 for m in rows)
    scales = _scales(ET.fromstring(deltas_svg(comparison)))
    assert scales == {"rr@3": "±0.050", "hit@10": "±0.050", "relevance": "±0.200", "document_retrieval/xdcg@3": "±5"}
