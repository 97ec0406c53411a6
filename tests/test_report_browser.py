"""The HTML report in a real headless browser (Debian's chromium).

Install on Debian/Ubuntu: ``apt-get update && apt-get install -y chromium`` (the binary is /usr/bin/chromium).
Skipped, with that message, only when no chromium binary can be found.

The test prepends a probe script to the page that records every ``window.onerror`` / unhandled rejection into a
DOM attribute, clicks a header of the per-query table after load, and writes the resulting first row into the DOM;
``--dump-dom`` then serializes the DOM after the page's scripts ran.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from report_helpers import write_run

from foundry_bridge.report import build_report, render_html

pytestmark = pytest.mark.browser

INJECTED = (
    "<script>document.documentElement.setAttribute('data-pwned','1')</script>"
    "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','2')\">"
)

PROBE = """<script>
window.__errors = [];
function __record(msg) {
  window.__errors.push(String(msg));
  document.documentElement.setAttribute('data-errors', window.__errors.join(' || '));
}
window.onerror = function (msg, src, line) { __record(msg + ' @' + line); };
window.addEventListener('unhandledrejection', function (e) { __record('rejection: ' + e.reason); });
window.addEventListener('load', function () {
  try {
    var table = document.getElementById('queries');
    var th = table.tHead.rows[0].cells[1];  // "query id"
    th.click(); th.click();                 // ascending, then descending
    document.documentElement.setAttribute('data-first-desc', table.tBodies[0].rows[0].getAttribute('data-query-id'));
    document.documentElement.setAttribute('data-probe', 'done');
  } catch (e) { __record('probe: ' + e); }
});
</script>"""


def with_probe(page: str, probe: str = PROBE) -> str:
    """The page with ``probe`` first in its head, and its hash added to the page's script-src (the page's CSP runs
    only scripts it lists by hash)."""
    body = probe.removeprefix("<script>").removesuffix("</script>")
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    page = page.replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    return page.replace("<head>", "<head>" + probe, 1)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _dump_dom(html_path: Path, profile: Path, *extra: str) -> str:
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium not found: install it with `apt-get update && apt-get install -y chromium`")
    cmd = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        *extra,
        "--dump-dom",
        html_path.as_uri(),
    ]
    env = {**os.environ, "HOME": str(profile)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def rendered_dom(page: str, tmp_path: Path, probe: str = PROBE, *extra: str) -> tuple[str, str]:
    """``page`` with the probe, loaded in headless Chromium (``extra``: more flags, e.g. the window size): (the DOM
    after scripts ran, its ``<html>`` tag)."""
    html_path = tmp_path / "report.html"
    html_path.write_text(with_probe(page, probe), encoding="utf-8")
    dom = _dump_dom(html_path, tmp_path / "profile", *extra)
    root = re.search(r"<html[^>]*>", dom)
    assert root is not None
    return dom, root.group(0)


def _inject(records):
    return [r.model_copy(update={"response": INJECTED}) if r.query_id == "q04" else r for r in records]


def test_html_report_renders_in_chromium(tmp_path: Path) -> None:
    report = build_report(write_run(tmp_path / "run", edit_records=_inject))
    dom, root_tag = rendered_dom(render_html(report), tmp_path)
    assert "data-errors" not in root_tag, root_tag  # no script error at all
    assert 'data-report-ready="1"' in root_tag  # the page's own script ran to the end
    assert 'data-probe="done"' in root_tag
    assert "data-pwned" not in root_tag  # the injected <script> / onerror did not execute
    # the injected markup is text inside the response cell, not elements
    assert "&lt;script&gt;document.documentElement.setAttribute('data-pwned','1')&lt;/script&gt;" in dom
    table = dom[dom.index('<table id="queries"') :]
    table = table[: table.index("</table>")]
    assert len(re.findall(r"<tr data-query-id=", table)) == len(report.queries) == 14
    assert "<img" not in table
    # sorting works: descending by query id puts q11 first
    assert 'data-first-desc="q11"' in root_tag


SEARCH_PROBE = """<script>
window.addEventListener('load', function () {
  var box = document.getElementById('query-search');
  box.value = 'Q0';  // case-insensitive: the rows of q01..q09
  box.dispatchEvent(new Event('input'));
  var rows = document.getElementById('queries').tBodies[0].rows, shown = [];
  Array.prototype.forEach.call(rows, function (r) { if (!r.hidden) { shown.push(r.getAttribute('data-query-id')); } });
  document.documentElement.setAttribute('data-shown', shown.join(','));
});
</script>"""


def test_the_search_box_hides_the_rows_without_the_text(tmp_path: Path) -> None:
    report = build_report(write_run(tmp_path / "run"))
    _, root_tag = rendered_dom(render_html(report), tmp_path, SEARCH_PROBE)
    shown = re.search(r'data-shown="([^"]*)"', root_tag)
    assert shown is not None, root_tag
    worst = ["q07", "q06", "q04", "q03", "q05", "q08", "q02"]  # the table lists each failing stage's worst first
    expected = [*worst, *(q.query_id for q in report.queries if q.query_id not in worst)]
    expected = [q for q in expected if q.startswith("q0")]
    assert shown.group(1).split(",") == expected and len(expected) == 9


FIRST_SCREEN = (1400, 900)  # a laptop's browser window: the verdict must be there without scrolling
BOX_PROBE = """<script>
window.addEventListener('load', function () {
  var chart = document.getElementById('stage-chart'), box = chart.getBoundingClientRect();
  var trust = document.querySelector('.trust-line'), table = document.querySelector('#verdict table');
  var root = document.documentElement;
  root.setAttribute('data-viewport', window.innerWidth + 'x' + window.innerHeight);
  root.setAttribute('data-chart', [box.left, box.top, box.right, box.bottom].map(Math.round).join(','));
  root.setAttribute('data-segments', chart.querySelectorAll('rect title').length);
  root.setAttribute('data-table-bottom', Math.round(table.getBoundingClientRect().bottom));
  root.setAttribute('data-trust-bottom', trust ? Math.round(trust.getBoundingClientRect().bottom) : -1);
});
</script>"""


def _screenshot(html_path: Path, profile: Path, png: Path) -> None:
    binary = _chromium()
    assert binary is not None
    width, height = FIRST_SCREEN
    cmd = [
        *(binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"),
        *(f"--user-data-dir={profile}", f"--window-size={width},{height}", f"--screenshot={png}", html_path.as_uri()),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(profile)})
    assert proc.returncode == 0 and png.is_file(), proc.stderr[-2000:]


def test_the_first_screen_at_1400_px_shows_the_stage_picture(tmp_path: Path) -> None:
    """The verdict answers first: at 1400 x 900 px, before any scrolling, the stage picture (one segment per stage
    with queries), its table and the judge-trust headline are on screen; the screenshot shows the bar's colours."""
    report = build_report(write_run(tmp_path / "run"))
    failing = {s for s in ("search", "assembly", "generation") if report.stages.counts.get(s)}
    assert len(failing) >= 2, report.stages.counts  # the picture has something to show
    width, height = FIRST_SCREEN
    _, root_tag = rendered_dom(render_html(report), tmp_path, BOX_PROBE, f"--window-size={width},{height}")
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', root_tag))
    assert attrs.get("data-viewport", "").startswith(f"{width}x"), root_tag
    viewport_h = int(attrs["data-viewport"].split("x")[1])
    left, top, right, bottom = map(int, attrs["data-chart"].split(","))
    assert 0 <= top < bottom <= viewport_h and 0 <= left < right <= width, (attrs, viewport_h)
    assert int(attrs["data-segments"]) == sum(1 for n in report.stages.counts.values() if n)
    assert int(attrs["data-table-bottom"]) <= viewport_h and 0 < int(attrs["data-trust-bottom"]) <= viewport_h, attrs

    png = tmp_path / "first-screen.png"
    page = tmp_path / "plain.html"
    page.write_text(render_html(report), encoding="utf-8")
    _screenshot(page, tmp_path / "profile-shot", png)
    if os.environ.get("FOUNDRY_BRIDGE_KEEP_SCREENSHOT"):
        shutil.copy(png, os.environ["FOUNDRY_BRIDGE_KEEP_SCREENSHOT"])
    image = pytest.importorskip("PIL.Image").open(png).convert("RGB")
    assert image.size[0] == width
    inside = image.crop((left, top, right, bottom))
    colours = {rgb for _, rgb in inside.getcolors(maxcolors=1 << 20) or []}
    for stage in failing:  # each failing stage's segment is drawn in its own colour, on the first screen
        assert _STAGE_RGB[stage] in colours, stage


_STAGE_RGB = {"search": (0xC6, 0x28, 0x28), "assembly": (0xEF, 0x8F, 0x00), "generation": (0xAD, 0x14, 0x57)}
