"""``foundry-bridge catalog`` and ``catalog diff``: the bundled contracts printed; drift against the recorded
(older) service catalog listed with exit 1; none against the emulator, which serves ``GET /evaluators`` from the
contracts, paged as recorded; the project's client follows ``continuationToken`` across empty pages."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from foundry_bridge.cli import main
from foundry_bridge.foundry import FoundryClient, StaticTokenCredential
from foundry_bridge.mock import PROJECT_ENDPOINT, FoundryEmulator

RECORDING = Path(__file__).parent / "data" / "reference" / "recordings" / "eval_catalog.json"


@pytest.fixture
def invoke(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``foundry-bridge catalog ARGS`` as the console script does: (exit status, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            main(["catalog", *args])
        out, err = capsys.readouterr()
        return int(exc.value.code or 0), out, err

    return run


def test_catalog_prints_the_44_bundled_contracts(invoke: Callable[..., tuple[int, str, str]]) -> None:
    code, out, err = invoke()
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("builtin.")]
    assert len(heads) == 44
    i = out.splitlines().index(
        "builtin.document_retrieval  version 3  code  [quality]  (mapped by this project's catalog)"
    )
    assert out.splitlines()[i + 3] == "  metrics: document_retrieval (continuous 0–1, higher is better)"
    assert "builtin.violence  version" in out and "violence (ordinal 0–7, lower is better)" in out
    assert "44 builtin evaluators; 9 mapped" in err  # 7 builtins and the label_model / score_model graders


def test_diff_against_the_recording_reports_its_version_drift(invoke: Callable[..., tuple[int, str, str]]) -> None:
    code, out, err = invoke("diff", "--file", str(RECORDING), "--mapped")
    assert code == 1
    lines = out.splitlines()
    for expected in (
        "builtin.document_retrieval: version: bundled 3, saved 2",
        "builtin.retrieval: version: bundled 12, saved 8",
        "builtin.groundedness: version: bundled 16, saved 8",
        "builtin.relevance: version: bundled 11, saved 8",
        "builtin.response_completeness: version: bundled 9, saved 5",
        "builtin.groundedness_pro: version: bundled 7, saved 6",
        "builtin.quality_grader: evaluator: bundled present, saved absent",
        "builtin.label_model: evaluator: bundled present, saved absent",  # the recording's graders page was cut
        "builtin.score_model: evaluator: bundled present, saved absent",
        'builtin.groundedness: init parameter evaluation_level: bundled {"type": "string"}, saved absent',
        'builtin.groundedness_pro: required init: bundled [], saved ["azure_ai_project"]',
    ):
        assert expected in lines
    # v3's one metric against v2's nine
    assert sum(1 for line in lines if line.startswith("builtin.document_retrieval: metric ")) == 10
    assert "24 difference(s) in 9 evaluator(s)" in err


def test_diff_json_lists_every_bundled_evaluator_the_recording_lacks(
    invoke: Callable[..., tuple[int, str, str]],
) -> None:
    code, out, _ = invoke("diff", "--file", str(RECORDING), "--json")
    assert code == 1
    absent = [d["evaluator"] for d in json.loads(out) if d["aspect"] == "evaluator"]
    assert len(absent) == 44 - 6 and "builtin.violence" in absent


def test_diff_against_the_emulator_and_against_our_own_json_reports_no_drift(
    invoke: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    assert invoke("diff", "--emulator")[0] == 0
    code, out, _ = invoke("--json")
    saved = tmp_path / "saved.json"
    saved.write_text(out)
    code, out, err = invoke("diff", "--file", str(saved))
    assert (code, out) == (0, "") and "no drift" in err


def test_one_source_only_and_a_bad_file_are_usage_errors(
    invoke: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    assert invoke("diff", "--emulator", "--file", str(RECORDING))[0] == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    code, _, err = invoke("diff", "--file", str(bad))
    assert code == 2 and "not a GET /evaluators answer" in err


def _recorded_pages() -> dict[str | None, dict]:
    """The recorded type=builtin answers keyed by the continuationToken each request sent."""
    pages: dict[str | None, dict] = {}
    for e in json.loads(RECORDING.read_text())["Entries"]:
        if e["RequestMethod"] == "GET" and "type=builtin" in e["RequestUri"]:
            token = parse_qs(urlsplit(e["RequestUri"]).query).get("continuationToken", [None])[0]
            pages[token] = e["ResponseBody"]
    return pages


def test_the_client_pages_the_recorded_answers_by_continuation_token() -> None:
    pages, sent = _recorded_pages(), []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(dict(request.url.params))
        return httpx.Response(200, json=pages[request.url.params.get("continuationToken")])

    client = FoundryClient(PROJECT_ENDPOINT, StaticTokenCredential(), transport=httpx.MockTransport(handler))
    by_page = [len(p) for p in client.list_evaluators().by_page()]
    assert by_page == [0, 6, 0, 0]  # an empty first page with a token, then the six, then two empty pages
    assert sent[0] == {"api-version": "v1", "type": "builtin"}
    assert all(s["type"] == "builtin" and "continuationToken" in s for s in sent[1:])


def test_the_emulator_pages_as_recorded_and_serves_one_evaluator_version() -> None:
    emu = FoundryEmulator()
    http = httpx.Client(transport=emu.transport(), base_url=PROJECT_ENDPOINT + "/")
    first = http.get("evaluators", params={"api-version": "v1", "type": "builtin"}).json()
    assert first["value"] == [] and first["continuationToken"]
    assert "continuationToken=" in first["nextLink"]
    client = FoundryClient(PROJECT_ENDPOINT, StaticTokenCredential(), transport=emu.transport())
    names = [e["name"] for e in client.list_evaluators()]
    assert len(names) == 44 and len(set(names)) == 44
    assert list(client.list_evaluators("custom")) == []
    one = http.get("evaluators/builtin.document_retrieval/versions/3").json()
    assert one["version"] == "3" and list(one["definition"]["metrics"]) == ["document_retrieval"]
    assert [v["version"] for v in http.get("evaluators/builtin.relevance/versions").json()["value"]] == ["11"]
    assert http.get("evaluators/builtin.relevance/versions/8").status_code == 404
    missing = http.get("evaluators/builtin.groundednes/versions/16")
    assert missing.status_code == 404 and "Did you mean 'builtin.groundedness'?" in missing.json()["error"]["message"]
    assert http.get("evaluators", params={"type": "nonsense"}).status_code == 400


@pytest.mark.parametrize("token", ["garbage", "b2Zmc2V0Ong=", "b2Zmc2V0Oi01"])  # offset:x, offset:-5
def test_a_token_the_emulator_did_not_give_is_refused(token: str) -> None:
    http = httpx.Client(transport=FoundryEmulator().transport(), base_url=PROJECT_ENDPOINT + "/")
    assert http.get("evaluators", params={"type": "builtin", "continuationToken": token}).status_code == 400


def test_the_live_spelling_reads_back_to_the_same_contracts() -> None:
    import dataclasses

    from foundry_bridge.contracts import contract_from_live, live_entry, published_contracts

    for name, c in published_contracts().items():
        back = contract_from_live(live_entry(c))
        assert dataclasses.replace(back, levels=c.levels) == c, name  # the live answer carries no levels


def test_a_changed_direction_and_a_new_required_input_are_each_one_difference() -> None:
    from foundry_bridge.contracts import contract_from_live, diff_contracts, live_entry, published_contracts

    ours = published_contracts()
    entry = live_entry(ours["builtin.relevance"])
    entry["definition"]["metrics"]["relevance"]["desirable_direction"] = "decrease"
    entry["definition"]["data_schema"]["required"].append("context")
    theirs = {**ours, "builtin.relevance": contract_from_live(entry)}
    found = [(d.evaluator, d.aspect, d.name) for d in diff_contracts(ours, theirs)]
    assert found == [("builtin.relevance", "input groups", None), ("builtin.relevance", "metric", "relevance")]


def test_endpoint_reads_through_the_project_client_and_its_credential(
    invoke: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import foundry_bridge.foundry as foundry
    from foundry_bridge.mock import serve

    asked: list[str] = []

    def credential() -> StaticTokenCredential:
        asked.append("credential")
        return StaticTokenCredential("from-the-chain")

    monkeypatch.setattr(foundry, "default_credential", credential)
    with serve(FoundryEmulator()) as server:
        monkeypatch.setenv("AZURE_AI_PROJECT_ENDPOINT", server.endpoint)
        code, out, err = invoke("diff", "--mapped")
        sent = [c.request.headers.get("authorization") for c in server.emulator.router.calls]
    assert (code, out, asked) == (0, "", ["credential"]) and "no drift" in err and "live 44 evaluators" in err
    assert sent and set(sent) == {"Bearer from-the-chain"}


def test_an_unreachable_endpoint_is_an_error_line_not_a_traceback(invoke: Callable[..., tuple[int, str, str]]) -> None:
    code, _, err = invoke("diff", "--endpoint", "http://127.0.0.1:9/api/projects/p")
    assert code == 1 and err.startswith("Error: could not read the evaluator catalog")
