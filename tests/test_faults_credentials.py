"""Credentials: user-info in an endpoint is refused before anything is stored or sent; the report's CSP runs only
its own script (by hash), so an injected inline script does not run even if it reached the page."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_helpers import RELEVANCE_MAPPING as MAPPING
from report_helpers import write_run
from test_report_browser import rendered_dom

from foundry_bridge.errors import UsageError
from foundry_bridge.local import LocalBackend
from foundry_bridge.local.fake_judge import FakeJudgeServer
from foundry_bridge.report import build_report, render_html
from foundry_bridge.runner import MOCK_ENDPOINT, get_backend

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
SECRET = "hunter2-s3cret"

# every way user-info can be written: user:password, user only, password only, empty, encoded, IPv6 host
USERINFO_URLS = [
    f"https://alice:{SECRET}@{{host}}",
    "https://alice@{host}",
    f"https://:{SECRET}@{{host}}",
    "https://@{host}",
    f"https://alice%40corp:{SECRET}%2F@{{host}}",
    f"HTTPS://alice:{SECRET}@{{host}}",
]


def _cloud(template: str) -> str:
    return template.format(host="acct.services.ai.azure.com") + "/api/projects/p"


@pytest.mark.parametrize("template", USERINFO_URLS)
def test_project_endpoint_with_userinfo_is_refused_on_the_emulator_path(template: str) -> None:
    """The mock backend is the cloud client over the emulator's transport: the refusal happens in the client."""
    url = template.format(host=MOCK_ENDPOINT.removeprefix("https://").split("/")[0]) + "/api/projects/mock-project"
    with pytest.raises(UsageError) as err:
        get_backend("mock", endpoint=url)
    assert SECRET not in str(err.value) and "***@" in str(err.value)


@pytest.mark.parametrize("template", USERINFO_URLS)
def test_project_endpoint_with_userinfo_is_refused_on_the_cloud_path(template: str) -> None:
    with pytest.raises(UsageError) as err:
        get_backend("cloud", endpoint=_cloud(template), credential=object())
    assert SECRET not in str(err.value)


@pytest.mark.parametrize("template", USERINFO_URLS)
def test_judge_endpoint_with_userinfo_is_refused(template: str, tmp_path: Path) -> None:
    url = template.format(host="127.0.0.1:9") + "/v1"
    with pytest.raises(UsageError) as err:
        LocalBackend(judge_endpoint=url, judge_model="m", cache_dir=tmp_path)
    assert SECRET not in str(err.value) and "judge endpoint" in str(err.value)


def test_an_at_sign_in_the_path_is_not_userinfo(tmp_path: Path) -> None:
    backend = LocalBackend(judge_endpoint="http://127.0.0.1:9/v1/@team", judge_model="m", cache_dir=tmp_path)
    assert backend.judge_endpoint == "http://127.0.0.1:9/v1/@team"


# a query string may hold any secret (api-key=, code=, sig=...): refused on every endpoint, and never echoed
QUERY_SECRET = "C0DE-s3cret-value"
QUERY_URLS = [f"?api-key=A&code={QUERY_SECRET}", f"?code={QUERY_SECRET}", f"#{QUERY_SECRET}", "?"]


@pytest.mark.parametrize("tail", QUERY_URLS)
def test_judge_endpoint_with_a_query_string_is_refused_and_not_echoed(tail: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        LocalBackend(judge_endpoint="http://127.0.0.1:9/v1" + tail, judge_model="m", cache_dir=tmp_path)
    message = str(err.value)
    assert "judge endpoint" in message and "query string" in message
    assert QUERY_SECRET not in message and "api-key" not in message and "http://127.0.0.1:9/v1" in message


@pytest.mark.parametrize("tail", QUERY_URLS)
def test_project_endpoint_refusals_never_echo_the_query_string(tail: str) -> None:
    for name, url in (("cloud", _cloud("https://{host}")), ("cloud", "http://example.com/api/projects/p")):
        with pytest.raises(UsageError) as err:
            get_backend(name, endpoint=url + tail, credential=object())
        assert QUERY_SECRET not in str(err.value) and "api-key" not in str(err.value)


@pytest.fixture
def judge() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer() as server:
        yield server


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test-not-a-secret"}
    env.pop("AZURE_AI_PROJECT_ENDPOINT", None)
    cmd = [sys.executable, "-m", "foundry_bridge", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def _nothing_holds_the_secret(folder: Path) -> None:
    for path in folder.rglob("*") if folder.exists() else ():
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_cli_mock_and_cloud_refuse_userinfo_and_store_nothing(tmp_path: Path) -> None:
    for backend, url in (
        ("mock", f"https://alice:{SECRET}@mock.services.ai.azure.com/api/projects/mock-project"),
        ("cloud", _cloud(USERINFO_URLS[0])),
    ):
        out = tmp_path / backend
        proc = _cli("run", SAMPLE, "--backend", backend, "--endpoint", url, "--out", out)
        assert proc.returncode == 2, proc.stderr
        assert SECRET not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
        assert "user name or password" in proc.stderr
        assert not (out / "state.json").exists()
        _nothing_holds_the_secret(out)


def test_cli_local_refuses_a_judge_endpoint_with_userinfo_and_sends_nothing(
    judge: FakeJudgeServer, tmp_path: Path
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"query_id": "q1", "query": "q?", "response": "a."}) + "\n")
    (tmp_path / "m.yaml").write_text(MAPPING)
    url = judge.base_url.replace("http://", f"http://alice:{SECRET}@")
    out = tmp_path / "run"
    proc = _cli(
        "run", data, "--mapping", tmp_path / "m.yaml", "--backend", "local", "--judge-endpoint", url, "--out", out
    )
    assert proc.returncode == 2, proc.stderr
    assert SECRET not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
    assert judge.calls == 0  # no request, so no Authorization: Basic either
    assert not (out / "state.json").exists()
    _nothing_holds_the_secret(out)


def test_cli_local_refuses_a_judge_endpoint_with_a_query_string_and_stores_nothing(
    judge: FakeJudgeServer, tmp_path: Path
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"query_id": "q1", "query": "q?", "response": "a."}) + "\n")
    (tmp_path / "m.yaml").write_text(MAPPING)
    out, cache = tmp_path / "run", tmp_path / "cache"
    url = f"{judge.base_url}?api-key=A&code={QUERY_SECRET}"
    proc = _cli(
        "run", data, "--mapping", tmp_path / "m.yaml", "--backend", "local", "--judge-endpoint", url,
        "--out", out, "--cache-dir", cache,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert QUERY_SECRET not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
    assert "query string" in proc.stderr and "--judge-endpoint" not in proc.stdout
    assert judge.calls == 0 and not (out / "state.json").exists()
    for folder in (out, cache):
        for path in folder.rglob("*") if folder.exists() else ():
            assert not path.is_file() or QUERY_SECRET not in path.read_text(errors="replace"), path


# -- the report's Content-Security-Policy ---------------------------------------------------------------------------
def _page_script(page: str) -> str:
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 1
    return scripts[0]


def test_csp_lists_the_hash_of_the_page_script_and_no_unsafe_inline(tmp_path: Path) -> None:
    page = render_html(build_report(write_run(tmp_path / "run")))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    script_src = next(d for d in csp.group(1).split(";") if d.strip().startswith("script-src")).split()[1:]
    digest = base64.b64encode(hashlib.sha256(_page_script(page).encode()).digest()).decode()
    assert script_src == [f"'sha256-{digest}'"]  # computed here independently of the renderer


INJECTED_RAW = (
    "<script>document.documentElement.setAttribute('data-pwned','raw')</script>"
    "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','attr')\">"
)


@pytest.mark.browser
def test_in_chromium_the_page_script_runs_and_an_injected_one_does_not(tmp_path: Path) -> None:
    """As if the escaping had failed: raw script markup is pasted into the body after rendering."""
    page = render_html(build_report(write_run(tmp_path / "run")))
    page = page.replace("<main>", "<main>" + INJECTED_RAW, 1)
    _, tag = rendered_dom(page, tmp_path)
    assert 'data-report-ready="1"' in tag  # the page's own, hashed script ran
    assert 'data-probe="done"' in tag and 'data-first-desc="q11"' in tag  # sorting by a header click works
    assert "data-pwned" not in tag  # neither the inline script nor the onerror attribute


# -- a key echoed back by the judge -----------------------------------------------------------------------------------
ECHOED_KEY = "sk-proj-Ech0ed-K3y-0123456789abcdef"


def _all_text(folder: Path) -> str:
    """Every file under ``folder`` as text, Parquet tables read back as values (compressed pages hide strings)."""
    import pyarrow.parquet as pq

    parts = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.suffix == ".parquet":
            parts.append(str(pq.read_table(path).to_pylist()))
        else:
            parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


def test_a_key_echoed_by_the_judge_is_stored_nowhere(judge: FakeJudgeServer, tmp_path: Path) -> None:
    """A judge answering 401 ``Incorrect API key provided: <key>`` (no ``key=`` shape for a pattern to catch):
    the errored rows say HTTP 401, and the key is in no file of the run folder, its tables, the reports or the
    per-query file."""
    from foundry_bridge.local.fake_judge import FakeAnswer

    judge.rule = lambda r: FakeAnswer(content=f"Incorrect API key provided: {ECHOED_KEY}.", status=401)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"query_id": f"q{i}", "query": "q?", "response": "a."}) + "\n" for i in (1, 2)))
    (tmp_path / "m.yaml").write_text(MAPPING)
    out, reports = tmp_path / "run", tmp_path / "reports"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": ECHOED_KEY}
    cmd = [sys.executable, "-m", "foundry_bridge"]
    run = [*cmd, "run", str(data), "--mapping", str(tmp_path / "m.yaml"), "--backend", "local", "--no-cache"]
    run += ["--judge-endpoint", judge.base_url, "--judge-retries", "0", "--out", str(out)]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert judge.requests[0].headers["authorization"] == f"Bearer {ECHOED_KEY}"  # the key was sent, and echoed
    outputs = [proc.stdout + proc.stderr]
    for fmt in ("json", "html", "md"):
        target = reports / f"r.{fmt}"
        done = subprocess.run([*cmd, "report", str(out), "--out", str(target)], capture_output=True, text=True,
                              timeout=120, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout + done.stderr)
    assert (reports / "r.html.queries.parquet").is_file()
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["error"].split(" (")[0] for r in rows] == ["JUDGE_HTTP_ERROR: HTTP 401 from the judge"] * 2
    assert "Incorrect API key provided: ***" in rows[0]["error"]
    for text in (_all_text(out), _all_text(reports), *outputs):
        assert ECHOED_KEY not in text
