"""The official clients, unchanged, against ``mock-server --tls`` on loopback: azure-ai-projects (bearer token
over TLS only: its ``datasets`` and ``evaluators`` operations refuse plain http) and the ``openai`` SDK it hands
out, through a full RAG flow: the evaluator catalog, a dataset upload, an eval, a run inline and one by dataset id,
polling, paged output items, a cancel and the deletes. Trust comes from the environment only (``SSL_CERT_FILE``,
``REQUESTS_CA_BUNDLE``), as ``mock-server --tls`` prints it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mock_helpers import eval_body, inline_source, sample_rows

from foundry_bridge.mock import FoundryEmulator
from foundry_bridge.mock._server import MockServer, loopback_certificate, serve

projects = pytest.importorskip("azure.ai.projects")


class FakeCredential:
    """An azure-core TokenCredential: the emulator checks no token, the SDK insists on sending one."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken("fake-token", int(time.time()) + 3600)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MockServer]:
    tls = loopback_certificate(tmp_path / "tls")
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls.ca))
    with serve(FoundryEmulator(polls_to_complete=2), tls=tls) as running:
        yield running


def _wait(client: Any, eval_id: str, run: Any) -> tuple[Any, list[str]]:
    seen = []
    while run.status in ("queued", "in_progress"):
        run = client.evals.runs.retrieve(run.id, eval_id=eval_id)
        seen.append(run.status)
    return run, seen


def test_the_server_is_https_with_a_certificate_for_the_loopback_names(server: MockServer, tmp_path: Path) -> None:
    from cryptography import x509

    assert server.url.startswith("https://127.0.0.1:")
    cert = x509.load_pem_x509_certificate((tmp_path / "tls" / "cert.pem").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    assert (tmp_path / "tls" / "key.pem").stat().st_mode & 0o077 == 0
    assert loopback_certificate(tmp_path / "tls").ca.read_bytes() == (tmp_path / "tls" / "ca.pem").read_bytes()


def test_a_full_rag_flow_through_azure_ai_projects_and_openai(server: MockServer, tmp_path: Path) -> None:
    project = projects.AIProjectClient(endpoint=server.endpoint, credential=FakeCredential())

    builtins = list(project.evaluators.list(type="builtin"))  # nextLink paging, past the empty first page
    assert len(builtins) == 44 and {e.name for e in builtins} >= {"builtin.document_retrieval", "builtin.violence"}
    docret = project.evaluators.get_version("builtin.document_retrieval", "3")
    assert docret.version == "3" and list(docret.definition["metrics"]) == ["document_retrieval"]

    rows = sample_rows()
    data = tmp_path / "rag.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows[:5]))
    dataset = project.datasets.upload_file(name="rag", version="1", file_path=str(data))
    assert dataset.id.endswith("/data/rag/versions/1")
    assert [d.version for d in project.datasets.list_versions(name="rag")] == ["1"]

    client = project.get_openai_client()
    assert str(client.base_url).startswith(server.endpoint)
    ev = client.evals.create(**eval_body())
    assert len(ev.testing_criteria) == 4

    inline = client.evals.runs.create(ev.id, name="inline", data_source=inline_source(rows))
    inline, polls = _wait(client, ev.id, inline)
    assert polls == ["in_progress", "in_progress", "completed"] and inline.result_counts.total == len(rows)
    items = list(client.evals.runs.output_items.list(inline.id, eval_id=ev.id, limit=5))
    assert [it.id for it in items] == [str(i) for i in range(1, len(rows) + 1)]
    assert items[0].datasource_item["query_id"] == rows[0]["query_id"]
    docret_result = next(r for r in items[0].results if r.name == "document_retrieval")
    assert docret_result.metric == "document_retrieval" and "ndcg@3" in docret_result.model_dump()["properties"]

    by_id = client.evals.runs.create(
        ev.id, data_source={"type": "jsonl", "source": {"type": "file_id", "id": dataset.id}}
    )
    by_id, _ = _wait(client, ev.id, by_id)
    assert by_id.status == "completed" and by_id.result_counts.total == 5

    other = client.evals.runs.create(ev.id, data_source=inline_source(rows[:2]))
    assert client.evals.runs.cancel(other.id, eval_id=ev.id).status == "canceled"
    assert [r.id for r in client.evals.runs.list(ev.id, status="canceled").data] == [other.id]

    assert client.evals.runs.delete(by_id.id, eval_id=ev.id).deleted is True
    assert client.evals.delete(ev.id).eval_id == ev.id
    project.datasets.delete(name="rag", version="1")
    assert list(project.datasets.list_versions(name="rag")) == []


def test_plain_http_is_what_the_sdk_refuses() -> None:
    from azure.core.exceptions import ServiceRequestError

    with serve(FoundryEmulator()) as plain:
        project = projects.AIProjectClient(endpoint=plain.endpoint, credential=FakeCredential(), retry_total=0)
        with pytest.raises(ServiceRequestError, match="https"):
            list(project.datasets.list())


def test_mock_server_tls_prints_the_https_endpoint_and_how_to_trust_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from foundry_bridge.cli import cli

    def stop_at_once(self: MockServer) -> None:
        self.shutdown()
        raise KeyboardInterrupt

    monkeypatch.setattr(MockServer, "serve_forever", stop_at_once)
    folder = tmp_path / "certs"
    result = CliRunner().invoke(cli, ["mock-server", "--tls", "--tls-dir", str(folder)], catch_exceptions=False)
    assert result.exit_code == 0
    assert "project endpoint: https://127.0.0.1:" in result.output
    assert f"export SSL_CERT_FILE={folder / 'ca.pem'} REQUESTS_CA_BUNDLE={folder / 'ca.pem'}" in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["ca.pem", "cert.pem", "key.pem"]
