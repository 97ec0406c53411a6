"""FoundryClient against a small in-process fake: exact requests, auth, retries, errors, paging, polling, upload."""

from __future__ import annotations

import base64
import json
import logging
import time

import httpx
import pytest
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
)
from foundry_helpers import ENDPOINT, TOKEN, FakeFoundry, Fault, RecordingSleep

from foundry_bridge.errors import BackendError, UsageError
from foundry_bridge.foundry import (
    AccessToken,
    FoundryClient,
    RetryPolicy,
    RunFailedError,
    RunPoller,
    StaticTokenCredential,
    validate_endpoint,
)
from foundry_bridge.foundry._retry import parse_retry_after

EVAL_BODY = {
    "data_source_config": {"type": "custom", "item_schema": {"type": "object", "properties": {}}},
    "testing_criteria": [
        {
            "type": "azure_ai_evaluator",
            "name": "relevance",
            "evaluator_name": "builtin.relevance",
            "initialization_parameters": {"deployment_name": "gpt-4o-mini"},
            "data_mapping": {"query": "{{item.query}}", "response": "{{item.response}}"},
        }
    ],
    "name": "t",
}


class CountingCredential:
    """Hands out a new token each call; expiry configurable."""

    def __init__(self, lifetime: int = 3600) -> None:
        self.lifetime = lifetime
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(f"{TOKEN}-{len(self.scopes)}", int(time.time()) + self.lifetime)


def make(fake: FakeFoundry, sleep: RecordingSleep | None = None, **kw: object) -> FoundryClient:
    return FoundryClient(
        ENDPOINT,
        kw.pop("credential", StaticTokenCredential(TOKEN)),  # type: ignore[arg-type]
        transport=fake.transport(),
        sleep=sleep or RecordingSleep(),
        poll_interval=0.0,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def fake() -> FakeFoundry:
    return FakeFoundry()


def test_create_eval_sends_the_exact_request_with_a_bearer_token(fake: FakeFoundry) -> None:
    client = make(fake)
    ev = client.create_eval(EVAL_BODY)
    (req,) = fake.requests
    assert req.method == "POST"
    assert str(req.url) == f"{ENDPOINT}/openai/v1/evals"
    assert json.loads(req.content) == EVAL_BODY
    assert req.headers["authorization"] == f"Bearer {TOKEN}"
    assert req.headers["content-type"] == "application/json"
    assert ev.id.startswith("eval_") and ev.testing_criteria[0].evaluator_version == ""


def test_unknown_fields_are_kept_not_rejected(fake: FakeFoundry) -> None:
    client = make(fake)
    ev = client.create_eval(EVAL_BODY)
    run = client.create_run(ev.id, {"type": "jsonl", "source": {"type": "file_content", "content": []}})
    assert run.model_extra is not None and run.model_extra["brand_new_field"] == {"x": 1}


def test_older_api_version_route_form() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"id": "eval_1"})

    client = FoundryClient(
        ENDPOINT, StaticTokenCredential(), transport=httpx.MockTransport(handler), api_version="2025-11-15-preview"
    )
    client.get_eval("eval_1")
    assert str(seen[0].url) == f"{ENDPOINT}/openai/evals/eval_1?api-version=2025-11-15-preview"


@pytest.mark.parametrize(
    "url",
    ["http://acct.services.ai.azure.com/api/projects/p", "ftp://x/y", "", "https://h/p?sig=abc"],
)
def test_endpoint_must_be_https(url: str) -> None:
    with pytest.raises(UsageError):
        validate_endpoint(url)


def test_loopback_http_is_allowed_and_trailing_slash_dropped() -> None:
    assert validate_endpoint("http://127.0.0.1:8765/api/projects/p/") == "http://127.0.0.1:8765/api/projects/p"
    assert validate_endpoint("http://localhost:1/api/projects/p").startswith("http://localhost")


# -- retries -----------------------------------------------------------------------------------------------------
def test_429_honours_retry_after_and_500s_back_off(fake: FakeFoundry) -> None:
    fake.faults = [
        Fault(r"POST .*/evals$", 429, headers={"Retry-After": "7"}),
        Fault(r"POST .*/evals$", 500, times=2),
    ]
    sleep = RecordingSleep()
    client = make(fake, sleep)
    client.create_eval(EVAL_BODY)
    assert len(fake.requests) == 4
    assert sleep.delays[0] == 7.0
    # attempts 1 and 2 without Retry-After: 0.5*2**n with ±25 % jitter
    assert 0.5 * 2 * 0.75 <= sleep.delays[1] <= 0.5 * 2 * 1.25
    assert 0.5 * 4 * 0.75 <= sleep.delays[2] <= 0.5 * 4 * 1.25
    # every attempt carried the token
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in fake.requests)


def test_retry_after_ms_wins_over_retry_after() -> None:
    headers = httpx.Headers({"retry-after-ms": "1500", "Retry-After": "9"})
    assert parse_retry_after(headers) == 1.5
    assert parse_retry_after(httpx.Headers({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}), now=lambda: 0) > 0
    assert parse_retry_after(httpx.Headers({})) is None


def test_connection_errors_are_retried(fake: FakeFoundry) -> None:
    fake.faults = [Fault(r"GET ", 0, connect_error=True, times=2)]
    client = make(fake)
    ev = client.create_eval(EVAL_BODY)
    assert client.get_eval(ev.id).id == ev.id


def test_retries_are_bounded_with_a_clear_message(fake: FakeFoundry) -> None:
    fake.faults = [Fault(r"POST .*/evals$", 503, times=100)]
    sleep = RecordingSleep()
    client = make(fake, sleep, retry_policy=RetryPolicy(max_retries=3, sleep=sleep))
    with pytest.raises(HttpResponseError) as info:
        client.create_eval(EVAL_BODY)
    assert len(fake.requests) == 4 and len(sleep.delays) == 3
    assert info.value.status_code == 503
    assert "gave up after 3 retries" in str(info.value) and "injected" in str(info.value)
    # not chained to httpx's HTTPStatusError, whose message holds the full URL (a SAS signature, for blobs)
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_connection_errors_exhausted_raise_service_request_error(fake: FakeFoundry) -> None:
    fake.faults = [Fault(r"POST ", 0, connect_error=True, times=100)]
    sleep = RecordingSleep()
    client = make(fake, sleep, retry_policy=RetryPolicy(max_retries=2, sleep=sleep))
    with pytest.raises(ServiceRequestError, match="could not reach the service after 3 attempt"):
        client.create_eval(EVAL_BODY)


def test_retry_after_beyond_the_cap_is_not_waited_for(fake: FakeFoundry) -> None:
    fake.faults = [Fault(r"POST .*/evals$", 429, headers={"Retry-After": "600"})]
    sleep = RecordingSleep()
    client = make(fake, sleep)
    with pytest.raises(HttpResponseError, match="retry after 600 s"):
        client.create_eval(EVAL_BODY)
    assert sleep.delays == [] and len(fake.requests) == 1


def test_400_is_not_retried_and_keeps_the_service_message(fake: FakeFoundry) -> None:
    fake.faults = [
        Fault(r"POST .*/evals$", 400, body={"error": {"code": "UserError", "message": "Invalid data_mapping"}})
    ]
    client = make(fake)
    with pytest.raises(HttpResponseError) as info:
        client.create_eval(EVAL_BODY)
    assert len(fake.requests) == 1
    assert info.value.status_code == 400 and info.value.error_code == "UserError"  # type: ignore[attr-defined]
    assert "Invalid data_mapping" in str(info.value)


def test_404_maps_to_resource_not_found(fake: FakeFoundry) -> None:
    with pytest.raises(ResourceNotFoundError, match="eval eval_nope not found"):
        make(fake).get_eval("eval_nope")


def test_401_refreshes_the_token_once_then_fails(fake: FakeFoundry) -> None:
    fake.faults = [Fault(r"GET ", 401, times=5, body={"error": {"code": "Unauthorized", "message": "no role"}})]
    cred = CountingCredential()
    client = make(fake, credential=cred)
    with pytest.raises(ClientAuthenticationError, match="no role"):
        client.get_eval("eval_1")
    assert len(cred.scopes) == 2 and len(fake.requests) == 2
    assert cred.scopes[0] == ("https://ai.azure.com/.default",)


def test_token_is_cached_and_refreshed_before_expiry(fake: FakeFoundry) -> None:
    long = CountingCredential(lifetime=3600)
    client = make(fake, credential=long)
    client.create_eval(EVAL_BODY)
    client.create_eval(EVAL_BODY)
    assert len(long.scopes) == 1
    short = CountingCredential(lifetime=60)  # inside the 5-minute refresh margin: asked every time
    client = make(fake, credential=short)
    client.create_eval(EVAL_BODY)
    client.create_eval(EVAL_BODY)
    assert len(short.scopes) == 2
    assert fake.requests[-1].headers["authorization"].endswith("-2")


def test_no_token_in_logs_or_errors(fake: FakeFoundry, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.faults = [
        Fault(r"POST .*/evals$", 429, headers={"Retry-After": "1"}),
        Fault(r"GET ", 403, body={"error": {"code": "Forbidden", "message": f"token Bearer {TOKEN} rejected"}}),
    ]
    client = make(fake)
    client.create_eval(EVAL_BODY)
    with pytest.raises(ClientAuthenticationError) as info:
        client.get_eval("eval_x")
    assert caplog.records, "requests are logged"
    assert TOKEN not in caplog.text and TOKEN not in str(info.value)
    assert TOKEN not in repr(client) and TOKEN not in repr(StaticTokenCredential(TOKEN))


# -- paging ------------------------------------------------------------------------------------------------------
def _run_with_rows(fake: FakeFoundry, client: FoundryClient, n: int) -> tuple[str, str]:
    ev = client.create_eval(EVAL_BODY)
    content = [{"item": {"query_id": f"q{i}", "query": "q", "response": "r"}} for i in range(n)]
    run = client.create_run(ev.id, {"type": "jsonl", "source": {"type": "file_content", "content": content}})
    return ev.id, run.id


def test_pagination_follows_the_last_item_id_across_many_pages(fake: FakeFoundry) -> None:
    client = make(fake)
    eval_id, run_id = _run_with_rows(fake, client, 250)
    items = list(client.list_output_items(eval_id, run_id, page_size=100))
    assert [it.id for it in items] == [str(i) for i in range(1, 251)]
    pages = [r for r in fake.requests if r.url.path.endswith("/output_items")]
    assert [r.url.params.get("after") for r in pages] == [None, "100", "200"]
    assert all(r.url.params["limit"] == "100" for r in pages)


def test_pagination_uses_item_ids_even_when_the_service_caps_the_page(fake: FakeFoundry) -> None:
    fake.max_page = 30  # the service returns fewer than asked: the cursor must still be the last item's id
    client = make(fake)
    eval_id, run_id = _run_with_rows(fake, client, 95)
    pages = list(client.list_output_items(eval_id, run_id).by_page())
    assert [len(p) for p in pages] == [30, 30, 30, 5]


def test_by_page_resumes_from_a_continuation_token(fake: FakeFoundry) -> None:
    client = make(fake)
    eval_id, run_id = _run_with_rows(fake, client, 50)
    pager = client.list_output_items(eval_id, run_id, page_size=20).by_page()
    first = next(pager)
    token = pager.continuation_token
    assert token == "20" and first[-1].id == "20"
    rest = [it.id for page in client.list_output_items(eval_id, run_id, page_size=20).by_page(token) for it in page]
    assert rest == [str(i) for i in range(21, 51)]


def test_a_cursor_that_never_advances_is_an_error_not_a_loop(fake: FakeFoundry) -> None:
    client = make(fake)
    eval_id, run_id = _run_with_rows(fake, client, 50)
    fake.stuck_cursor = True
    with pytest.raises(BackendError, match="did not advance"):
        list(client.list_output_items(eval_id, run_id, page_size=20))


# -- polling -----------------------------------------------------------------------------------------------------
def test_begin_run_poller_and_continuation_token(fake: FakeFoundry) -> None:
    fake.polls_to_complete = 3
    sleep = RecordingSleep()
    client = FoundryClient(ENDPOINT, StaticTokenCredential(), transport=fake.transport(), sleep=sleep)
    ev = client.create_eval(EVAL_BODY)
    poller = client.begin_run(ev.id, {"type": "jsonl", "source": {"type": "file_content", "content": []}})
    assert poller.status() == "in_progress" and not poller.done()
    token = poller.continuation_token()
    data = json.loads(base64.urlsafe_b64decode(token))
    assert data == {"v": 1, "endpoint": ENDPOINT, "api_version": None, "eval_id": ev.id, "run_id": poller.run_id}
    again = RunPoller.from_continuation_token(client, token)
    run = again.result()
    assert run.status == "completed" and again.done() and again.polls == 3
    assert sleep.delays == [2.0, 3.0]  # growing interval


def test_token_from_another_project_is_refused(fake: FakeFoundry) -> None:
    client = make(fake)
    other = FoundryClient("https://other.services.ai.azure.com/api/projects/x", StaticTokenCredential())
    token = RunPoller(other, "eval_1", "evalrun_1").continuation_token()
    with pytest.raises(BackendError, match="belongs to project"):
        RunPoller.from_continuation_token(client, token)
    with pytest.raises(BackendError, match="not a foundry_bridge"):
        RunPoller.from_continuation_token(client, base64.urlsafe_b64encode(b"\x80\x04pickle").decode())


def test_failed_run_raises_with_the_service_message(fake: FakeFoundry) -> None:
    fake.fail_runs = True
    client = make(fake)
    ev = client.create_eval(EVAL_BODY)
    poller = client.begin_run(ev.id, {"type": "jsonl", "source": {"type": "file_content", "content": []}})
    with pytest.raises(RunFailedError, match="failed: QuotaExceeded: judge deployment quota"):
        poller.result()


def test_result_timeout(fake: FakeFoundry) -> None:
    fake.polls_to_complete = 10**6
    client = make(fake)
    ev = client.create_eval(EVAL_BODY)
    poller = client.begin_run(ev.id, {"type": "jsonl", "source": {"type": "file_content", "content": []}})
    with pytest.raises(TimeoutError):
        poller.result(timeout=0.0)


# -- upload ------------------------------------------------------------------------------------------------------
def test_dataset_upload_flow_and_no_bearer_token_on_the_blob_put(fake: FakeFoundry) -> None:
    client = make(fake)
    data = b'{"query": "a"}\n{"query": "b"}\n'
    ds = client.upload_dataset("fb-data", "1", data, filename="fb-data-1.jsonl")
    start, put, patch = fake.requests
    assert start.method == "POST"
    assert str(start.url) == f"{ENDPOINT}/datasets/fb-data/versions/1/startPendingUpload?api-version=v1"
    assert json.loads(start.content) == {"pendingUploadType": "BlobReference"}
    assert start.headers["authorization"] == f"Bearer {TOKEN}"
    assert put.method == "PUT"
    assert str(put.url).startswith("https://acct.blob.core.windows.net/container-fb-data/fb-data-1.jsonl?sv=")
    assert "authorization" not in put.headers
    assert put.headers["x-ms-blob-type"] == "BlockBlob" and put.headers["if-none-match"] == "*"
    assert put.content == data
    assert patch.method == "PATCH" and patch.headers["content-type"] == "application/merge-patch+json"
    assert json.loads(patch.content) == {
        "dataUri": "https://acct.blob.core.windows.net/container-fb-data/fb-data-1.jsonl",
        "type": "uri_file",
    }
    assert ds.id == "azureai://accounts/acct/projects/mock-project/data/fb-data/versions/1"
    # uploading the same blob again (a resume) is not an error
    client.upload_dataset("fb-data", "1", data, filename="fb-data-1.jsonl")


def test_sas_signature_is_not_logged(fake: FakeFoundry, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    make(fake).upload_dataset("d", "1", b"{}\n")
    assert "SIGNATURE123" not in caplog.text and "PUT" in caplog.text


def test_the_recorded_in_progress_counts_without_errored_and_skipped_are_read() -> None:
    """While a run is in progress the service sends only total/passed/failed (eval_agent_target.json); the client
    polls through them to the completed run's five counts."""
    from pathlib import Path

    recording = Path(__file__).parent / "data" / "reference" / "recordings" / "eval_agent_target.json"
    gets = [
        e["ResponseBody"]
        for e in json.loads(recording.read_text())["Entries"]
        if e["RequestMethod"] == "GET" and "/runs/evalrun_" in e["RequestUri"] and "output_items" not in e["RequestUri"]
    ]
    assert [g["result_counts"] for g in gets[:3]] == [{"total": 0, "passed": 0, "failed": 0}] * 3
    answers = iter(gets)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=next(answers))

    client = FoundryClient(
        ENDPOINT, StaticTokenCredential(), transport=httpx.MockTransport(handler), sleep=lambda s: None
    )
    first = client.get_run(gets[0]["eval_id"], gets[0]["id"])
    assert first.status == "in_progress" and first.result_counts is not None
    assert (first.result_counts.errored, first.result_counts.skipped) == (None, None)
    assert first.result_counts.model_dump(exclude_none=True) == {"total": 0, "passed": 0, "failed": 0}
    done = client.run_poller(gets[0]["eval_id"], gets[0]["id"]).result()
    assert done.status == "completed" and done.result_counts is not None and done.result_counts.errored is not None


def test_an_answer_that_trickles_is_cut_off_at_the_request_deadline() -> None:
    """A server on 127.0.0.1 answering 200 with a 10 MB Content-Length, one byte every 0.5 s: each read gets a byte,
    so httpx's per-read timeout never fires; the client's total deadline ends the request, retries included, with
    a located error (before, a poll held the run for as long as the server trickled)."""
    import threading

    from test_faults_judge import TricklingServer

    from foundry_bridge.foundry import StaticTokenCredential

    server = TricklingServer()
    outcome: list[BaseException] = []
    try:
        endpoint = f"http://127.0.0.1:{server.sock.getsockname()[1]}/api/projects/p"
        client = FoundryClient(endpoint, StaticTokenCredential(), max_retries=1, sleep=lambda s: None,
                               request_deadline=1.5)  # fmt: skip

        def poll() -> None:
            try:
                client.get_run("eval_1", "run_1")
            except BaseException as exc:  # handed to the test thread
                outcome.append(exc)

        worker = threading.Thread(target=poll, daemon=True)
        worker.start()
        worker.join(60)  # a generous bound: the deadline ends it after a few seconds
        assert not worker.is_alive(), "the poll is still waiting for the trickling answer"
    finally:
        server.close()
    assert len(outcome) == 1 and isinstance(outcome[0], ServiceRequestError)
    assert "GET http://127.0.0.1" in str(outcome[0]) and "ReadTimeout" in str(outcome[0])
    assert len(server.accepted) == 2  # the first try and one retry
