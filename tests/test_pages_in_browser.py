"""Both pages — the run report and the comparison — rendered in a real headless Chromium (issue #36 item 6).

Each page is loaded at 1400 x 900 px; a probe script (allowed by adding its SHA-256 to the page's CSP) reads what a
reader sees: the page's visible text (``innerText``), where the answer sits, and the geometry of the comparison's
delta plot. The test fails on visible raw Markdown (``**``, ``\\_``, ``|---``), a visible escaped entity (``&lt;`` or
``&amp;`` shown as text), a first screen without the answer, or an interval drawn narrower than a few pixels only
because another metric set its scale. The first screens of both pages are saved as PNGs under ``$FB_ARTIFACTS``
(else the test's tmp_path) and the directory is printed.

Skipped (with how to install it) only when no chromium binary exists: ``apt-get install -y chromium``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from report_helpers import JUDGE_SCORES, NDCG3, write_run

from foundry_bridge.comparison import compare_runs, render_comparison_html
from foundry_bridge.comparison._render import verdict_lines
from foundry_bridge.report import build_report, render_html

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1400, 900
TIMEOUT = 90  # seconds for one chromium process, then the test fails (never hangs)
FEW_PIXELS = 3.0

# b loses the relevant document on 8 queries and its answers lose groundedness on 7; a third document_retrieval
# metric on a 0–100 scale (as xdcg is) moves too, so one shared axis would squash every 0–1 interval to a dot.
WORSE_NDCG = ("q01", "q02", "q03", "q04", "q05", "q08", "q10", "q11")
WORSE_GROUNDED = ("q01", "q02", "q03", "q05", "q06", "q08", "q10", "q11")
XDCG_DROP = ("q01", "q02", "q03")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    pytest.skip("no chromium binary: install it with `apt-get update && apt-get install -y chromium`")


def _artifacts(tmp_path: Path) -> Path:
    out = Path(os.environ.get("FB_ARTIFACTS") or tmp_path / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    print(f"browser screenshots in {out}")
    return out


def _chrome(url: Path, profile: Path, *flags: str) -> str:
    cmd = [
        _chromium(),
        "--headless=new",
        "--disable-gpu",
        "--no-sandbox",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--user-data-dir={profile}",
        *flags,
        url.as_uri(),
    ]
    env = {**os.environ, "HOME": str(profile)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _with_probe(page: str, script: str) -> str:
    """``page`` with ``script`` first in its head, its hash allowed by the page's CSP."""
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    allow = f"'sha256-{digest}'"
    if "script-src " in page:
        page = page.replace("script-src ", f"script-src {allow} ", 1)
    else:  # a page with no script of its own: default-src 'none' forbids every script
        page = page.replace("default-src 'none';", f"default-src 'none'; script-src {allow};", 1)
    return page.replace("<head>", f"<head><script>{script}</script>", 1)


PROBE = """
window.addEventListener('load', function () {
  var root = document.documentElement, out = {viewport: window.innerHeight, answer: null, rows: []};
  var needle = %s, best = null;
  document.body.querySelectorAll('*').forEach(function (el) {
    if (el.textContent.indexOf(needle) >= 0) { best = el; }  // the last hit in document order is the innermost
  });
  if (best) { var r = best.getBoundingClientRect(); out.answer = [r.top, r.bottom]; }
  document.querySelectorAll('svg.deltas').forEach(function (svg, i) {
    var zero = svg.querySelector(':scope > line').getBoundingClientRect().left;
    svg.querySelectorAll('g').forEach(function (g) {
      var bar = g.querySelector('line'), dot = g.querySelector('circle').getBoundingClientRect();
      var b = bar ? bar.getBoundingClientRect() : null;
      out.rows.push({svg: i, title: g.querySelector('title').textContent, zero: zero,
                     dot: (dot.left + dot.right) / 2, low: b ? b.left : null, high: b ? b.right : null});
    });
  });
  var side = document.querySelector('.side');  // the per-query view's first query: its runs' columns
  if (side) {
    out.side = Array.prototype.map.call(side.children, function (c) {
      var r = c.getBoundingClientRect(); return [r.left, r.right];
    });
  }
  out.text = document.body.innerText;
  var link = document.querySelector('#verdict td a[href^="#drill-"]');  // the first "worst ↓" link, followed
  if (link) {
    var target = document.querySelector(link.getAttribute('href'));
    link.click();
    var box = target.getBoundingClientRect();
    out.worst = {query: target.getAttribute('data-query-id'), top: box.top, text: target.innerText};
  }
  root.setAttribute('data-probe', JSON.stringify(out));
});
"""


def _look(page: str, tmp_path: Path, name: str, answer: str) -> dict[str, Any]:
    """Load ``page`` in Chromium: save its first screen as ``name``.png in the artifacts, and return what the probe
    read (visible text, the answer's box, the delta rows' geometry)."""
    plain = tmp_path / f"{name}.html"
    plain.write_text(page, encoding="utf-8")
    png = _artifacts(tmp_path) / f"{name}-first-screen.png"
    _chrome(plain, tmp_path / f"profile-{name}-shot", f"--screenshot={png}")
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (WIDTH, HEIGHT)
    probed = tmp_path / f"{name}-probe.html"
    probed.write_text(_with_probe(page, PROBE % json.dumps(answer)), encoding="utf-8")
    dom = _chrome(probed, tmp_path / f"profile-{name}", "--virtual-time-budget=5000", "--dump-dom")
    found = re.search(r'<html[^>]*\sdata-probe="([^"]*)"', dom)
    assert found is not None, dom[:2000]
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


RAW_MARKDOWN = ("**", "\\_", "|---")
ESCAPED = ("&lt;", "&gt;", "&amp;", "&quot;", "&#")


def _assert_reads_clean(seen: dict[str, Any], answer: str) -> None:
    text = seen["text"]
    for token in (*RAW_MARKDOWN, *ESCAPED):
        at = text.find(token)
        assert at < 0, f"visible {token!r}: …{text[max(at - 60, 0) : at + 60]}…"
    assert seen["answer"] is not None, f"the answer is not on the page: {answer!r}"
    top, bottom = seen["answer"]
    assert 0 <= top < bottom <= seen["viewport"], f"{answer!r} is not on the first screen: {seen['answer']}"


def squashed_rows(rows: list[dict[str, Any]], few: float = FEW_PIXELS) -> list[str]:
    """Rows of a delta plot whose interval is drawn narrower than ``few`` px though it would be wider on its own
    scale: a row on its own scale reaches the plot's half-width (the farthest any row of the plot reaches from 0)."""
    out = []
    for svg in {r["svg"] for r in rows}:
        drawn = [r for r in rows if r["svg"] == svg and r["low"] is not None]
        reach = {id(r): max(abs(r[end] - r["zero"]) for end in ("low", "high", "dot")) for r in drawn}
        half = max(reach.values(), default=0.0)
        for r in drawn:
            width = r["high"] - r["low"]
            if width < few and reach[id(r)] > 0 and width * half / reach[id(r)] >= few:
                out.append(f"{r['title']}: {width:.1f} px (on its own scale {width * half / reach[id(r)]:.0f} px)")
    return out


def _add_metric(run: Path, metric: str, value: Any) -> None:
    """A further document_retrieval metric in the run's results (one row beside each ndcg@3 row)."""
    path = run / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    extra = [
        {**r, "metric": metric, "score": value(r["query_id"]), "passed": None, "label": None, "threshold": None}
        for r in rows
        if r["metric"] == "ndcg@3"
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + extra), encoding="utf-8")


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    worse = copy.deepcopy(JUDGE_SCORES)
    worse["groundedness"].update(dict.fromkeys(WORSE_GROUNDED, 1))
    a = write_run(tmp_path / "a")
    b = write_run(tmp_path / "b", scores=worse, ndcg3={**NDCG3, **dict.fromkeys(WORSE_NDCG, 0.0)})
    _add_metric(a, "xdcg@3", lambda q: 100.0 if q.startswith("q") else 0.0)
    _add_metric(b, "xdcg@3", lambda q: (1.0 if q in XDCG_DROP else 100.0) if q.startswith("q") else 0.0)
    return a, b


def test_the_compare_page_reads_clean_and_answers_first(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    comparison = compare_runs([a, b], fail_on=["groundedness:0.1"])
    answer = verdict_lines(comparison)[0]
    assert answer.startswith("b is worse than a on groundedness") and answer.endswith("gate FAILED")
    seen = _look(render_comparison_html(comparison), tmp_path, "compare", answer)
    _assert_reads_clean(seen, answer)
    ndcg = [r for r in seen["rows"] if r["svg"] == 0 and r["title"].startswith("document_retrieval/ndcg@3:")]
    assert len(ndcg) == 1 and ndcg[0]["high"] - ndcg[0]["low"] > 20, ndcg  # [−0.992, −0.371] is drawn, not a dot
    assert any(r["title"].startswith("document_retrieval/xdcg@3:") for r in seen["rows"])
    assert not squashed_rows(seen["rows"])
    # the queries that changed most, each run side by side: q01 first (worse on ndcg@3, xdcg@3, groundedness, pass)
    (a_left, a_right), (b_left, b_right) = seen["side"]
    assert a_left < a_right <= b_left < b_right <= WIDTH, seen["side"]
    view = seen["text"][seen["text"].index("The queries that changed most: b vs a") :]
    assert view.split("\n")[1].startswith("q01 — ")
    assert "groundedness: 5 (pass) — hand-chosen 5" in view and "groundedness: 1 (fail) — hand-chosen 1" in view


def test_the_report_page_reads_clean_and_answers_first(tmp_path: Path) -> None:
    report = build_report(write_run(tmp_path / "run"))
    answer = "negative queries answered anyway"  # the last of the headline numbers: n02 of n01–n03 answered
    seen = _look(render_html(report), tmp_path, "report", answer)
    _assert_reads_clean(seen, answer)
    headline = seen["text"][: seen["text"].index(answer)]
    assert "Where queries fail" in headline and headline.rstrip().endswith("1/3"), headline
    k = report.params.stage_k
    for name in (f"MRR@{k}", f"recall@{k}", "groundedness mean", "relevance mean", "retrieval mean"):
        assert name in headline, name
    # the first "worst" link lands on the search stage's worst query (q07, its only one): its ranked documents
    # with their labels, the context as sent, and each judge's reason, at the top of the window
    worst = seen["worst"]
    assert worst["query"] == "q07" and abs(worst["top"]) < 2, worst
    lines = worst["text"].split("\n")
    assert any(re.fullmatch(r"1\tpol-sick-01\t0\.610\t0 \(not relevant\)\tin the context", x) for x in lines)
    assert any(re.fullmatch(r"2\tpol-holiday-01\t0\.550\tunjudged\tin the context", x) for x in lines)
    assert "Labelled, not retrieved: pol-bereave-01 (label 3)" in worst["text"]
    assert "retrieval: 1 (fail) — hand-chosen 1" in worst["text"]


def test_a_shared_axis_is_caught() -> None:
    """The squash check on the geometry one shared ±60 axis gives: ndcg@3's [−0.99, −0.37] is 2 px wide."""
    half = 230.0
    row = {"svg": 0, "zero": 500.0}
    rows = [
        {**row, "title": "xdcg@3", "low": 500 - half, "high": 500 + 0.1 * half, "dot": 500 - 0.45 * half},
        {**row, "title": "ndcg@3", "low": 500 - 0.99 / 60 * half, "high": 500 - 0.37 / 60 * half, "dot": 498.0},
    ]
    assert [r.split(":")[0] for r in squashed_rows(rows)] == ["ndcg@3"]
    rows[1].update(low=500 - 0.99 * half, high=500 - 0.37 * half)  # its own scale
    assert squashed_rows(rows) == []
