"""The failures on docs/quickstart-cloud.md's path — no credential, a wrong endpoint, a missing role — are each one
screen naming the fix, with no traceback. `catalog diff` and `run --backend cloud` against the emulator on
127.0.0.1; the 403 and 401 (which the emulator does not answer: no recording shows the service's body for them)
through the client against the Azure error envelope the reference documents (foundry-evals-api.md §5). The missing
judge deployment is tests/test_run_first_try.py's."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from azure.core.exceptions import ClientAuthenticationError, ServiceRequestError

from foundry_bridge.cli import main
from foundry_bridge.foundry import FoundryClient, StaticTokenCredential
from foundry_bridge.mock import FoundryEmulator, serve
from foundry_bridge.mock._server import MockServer

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "benefits" / "rag_eval.jsonl"
SCREEN = 24  # lines a message may take


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[MockServer]:
    monkeypatch.setenv("AZURE_AI_MODEL_DEPLOYMENT_NAME", "my-judge")
    monkeypatch.delenv("AZURE_AI_PROJECT_ENDPOINT", raising=False)
    monkeypatch.chdir(tmp_path)
    with serve(FoundryEmulator(polls_to_complete=0), "127.0.0.1", 0) as running:
        yield running


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    _, err = capsys.readouterr()
    return int(done.value.code or 0), err


def _one_screen(err: str) -> None:
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= SCREEN, err


class NotSignedIn:
    """What DefaultAzureCredential raises with nobody signed in: a first line, then every credential it tried."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        tried = "\n".join(f"    {name}: not available." for name in ["EnvironmentCredential"] * 40)
        raise ClientAuthenticationError(f"DefaultAzureCredential failed to retrieve a token.\nAttempted:\n{tried}")


@pytest.mark.parametrize("command", ["catalog", "run"])
def test_no_credential_is_one_screen_naming_az_login(
    command: str, server: MockServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import foundry_bridge.foundry as foundry

    monkeypatch.setattr(foundry, "default_credential", lambda **_: NotSignedIn())
    args = ["catalog", "diff"] if command == "catalog" else ["run", SAMPLE, "--backend", "cloud", "--out", "r"]
    code, err = _cli(capsys, *args, "--endpoint", server.endpoint)
    assert code == 1
    assert "DefaultAzureCredential failed to retrieve a token" in err and "az login" in err
    assert "EnvironmentCredential" not in err  # the chain's list stays behind --debug
    _one_screen(err)


def test_an_endpoint_that_is_not_a_project_names_the_endpoints_form(
    server: MockServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import foundry_bridge.foundry as foundry

    monkeypatch.setattr(foundry, "default_credential", lambda **_: StaticTokenCredential("t"))
    wrong = server.endpoint.replace("/api/projects/", "/api/project/")  # the emulator answers 404 NotFound
    code, err = _cli(capsys, "catalog", "diff", "--endpoint", wrong)
    assert code == 1 and "HTTP 404" in err
    assert (
        "https://<account>.services.ai.azure.com/api/projects/<project>" in err and "AZURE_AI_PROJECT_ENDPOINT" in err
    )
    _one_screen(err)


def test_no_endpoint_names_the_variable(server: MockServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _cli(capsys, "catalog", "diff")
    assert code != 0 and "AZURE_AI_PROJECT_ENDPOINT" in err
    _one_screen(err)


def test_a_404_for_an_unknown_eval_id_does_not_blame_the_endpoint(server: MockServer) -> None:
    client = FoundryClient(server.endpoint, StaticTokenCredential("t"))
    with client, pytest.raises(Exception, match="was not found") as raised:
        client.get_eval("eval_nosuch")
    assert "project endpoint" not in str(raised.value)


def _refusing(status: int, code: str, message: str) -> FoundryClient:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"code": code, "message": message}})

    endpoint = "https://acct.services.ai.azure.com/api/projects/p"
    return FoundryClient(
        endpoint, StaticTokenCredential("t"), transport=httpx.MockTransport(answer), sleep=lambda _: None
    )


def test_a_missing_role_names_the_foundry_user_role_and_its_old_name() -> None:
    client = _refusing(403, "PermissionDenied", "The principal does not have permission to perform the action.")
    with client, pytest.raises(ClientAuthenticationError) as raised:
        list(client.list_evaluators("builtin"))
    text = str(raised.value)
    assert "HTTP 403" in text and "Foundry User" in text and "Azure AI User" in text
    assert "az role assignment create" in text


def test_a_refused_token_names_the_tenant() -> None:
    client = _refusing(401, "Unauthorized", "The access token is invalid.")
    with client, pytest.raises(ClientAuthenticationError) as raised:
        list(client.list_evaluators("builtin"))
    assert "HTTP 401" in str(raised.value) and "az login --tenant" in str(raised.value)


def test_an_unreachable_endpoint_names_the_endpoint_to_check() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed once the block ends: nothing listens there
    client = FoundryClient(f"http://127.0.0.1:{port}/api/projects/p", StaticTokenCredential("t"), sleep=lambda _: None)
    with client, pytest.raises(ServiceRequestError) as raised:
        list(client.list_evaluators("builtin"))
    assert "could not reach the service" in str(raised.value) and "AZURE_AI_PROJECT_ENDPOINT" in str(raised.value)
