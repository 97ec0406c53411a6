"""The cloud path on a first try (issue #22, item 10): a credential that fails is reported once, without a claim
that anything can be resumed when nothing was created, and the same command after signing in starts again; a judge
deployment the mapping only guessed (``${AZURE_AI_MODEL_DEPLOYMENT_NAME:-gpt-4o-mini}`` with the variable unset) is
refused on the cloud backend, with the fix, while the emulator keeps running offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.cli import main
from foundry_bridge.dataset import read_records
from foundry_bridge.errors import MappingError
from foundry_bridge.foundry import StaticTokenCredential
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.mock import FoundryEmulator, serve
from foundry_bridge.mock._server import MockServer
from foundry_bridge.runner import get_backend, run_evaluation

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
CLOUD = "https://acct.services.ai.azure.com/api/projects/p"
CHAIN_FAILED = "DefaultAzureCredential failed to retrieve a token"
DEPLOYMENT = "AZURE_AI_MODEL_DEPLOYMENT_NAME"


def _cli_subprocess(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command line in its own process, as a user runs it: azure-identity's logger has no handler configured
    (so Python's last-resort handler prints its warnings), and the real ``DefaultAzureCredential`` is limited to
    the environment credential (``AZURE_TOKEN_CREDENTIALS``), which fails at once and offline without
    ``AZURE_CLIENT_*``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_CLIENT_", "AZURE_TENANT_", "AZURE_USER"))}
    env.update(PYTHONPATH=str(ROOT), AZURE_TOKEN_CREDENTIALS="EnvironmentCredential", **{DEPLOYMENT: "my-judge"})
    env.pop("AZURE_AI_PROJECT_ENDPOINT", None)
    cmd = [sys.executable, "-m", "foundry_bridge", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockServer]:
    """The emulator on 127.0.0.1: the cloud backend's code over a real socket."""
    with serve(FoundryEmulator(polls_to_complete=0), "127.0.0.1", 0) as running:
        yield running


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_a_failed_sign_in_is_said_once_and_the_same_command_starts_again_after_az_login(
    server: MockServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    command = ("run", SAMPLE, "--backend", "cloud", "--endpoint", server.endpoint, "--out", out)
    first = _cli_subprocess(*command)
    assert first.returncode == 1, first.stderr
    assert first.stderr.count(CHAIN_FAILED) == 1, first.stderr  # the credential list, printed once
    assert "Traceback" not in first.stderr
    assert "--resume" not in first.stderr and "keeps the ids" not in first.stderr  # nothing was created
    assert "nothing was created" in first.stderr and "run the same command again" in first.stderr
    assert server.emulator.store.evals == {}

    again = _cli_subprocess(*command)  # still not signed in: the same failure, not a refusal of the folder
    assert again.returncode == 1 and "already holds" not in again.stderr, again.stderr
    assert again.stderr.count(CHAIN_FAILED) == 1

    import foundry_bridge.foundry as foundry  # `az login`: the credential chain now gives a token

    monkeypatch.setattr(foundry, "default_credential", lambda **_: StaticTokenCredential("signed-in"))
    monkeypatch.setenv(DEPLOYMENT, "my-judge")
    code, stdout, err = _cli(capsys, *command, "-q")
    assert code == 0, err
    assert stdout.strip() == str(out) and len(server.emulator.store.evals) == 1
    assert json.loads((out / "state.json").read_text())["status"] == "completed"


def test_a_run_that_created_something_still_points_to_resume(
    server: MockServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other side of the rule: once the eval exists, the failure message names --resume and a second plain run
    is refused (so nothing is submitted twice)."""
    import foundry_bridge.foundry as foundry

    class ExpiresAfterTheEval(StaticTokenCredential):
        def get_token(self, *scopes: str, **kwargs: Any) -> Any:
            from azure.core.exceptions import ClientAuthenticationError

            if self.calls >= 1:
                raise ClientAuthenticationError("the refresh token has expired")
            return super().get_token(*scopes, **kwargs)

    monkeypatch.setattr(foundry, "default_credential", lambda **_: ExpiresAfterTheEval(lifetime=0))
    monkeypatch.setenv(DEPLOYMENT, "my-judge")
    out = tmp_path / "run"
    command = ("run", SAMPLE, "--backend", "cloud", "--endpoint", server.endpoint, "--out", out)
    code, _, err = _cli(capsys, *command)
    assert code == 1 and "the refresh token has expired" in err
    assert f"--resume {out}" in err and len(server.emulator.store.evals) == 1
    code, _, err = _cli(capsys, *command)
    assert code == 2 and "already holds an unfinished run of this plan" in err


def test_the_cloud_backend_refuses_a_judge_deployment_the_mapping_only_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import foundry_bridge.foundry as foundry

    credential = StaticTokenCredential()
    monkeypatch.setattr(foundry, "default_credential", lambda **_: credential)
    monkeypatch.delenv(DEPLOYMENT, raising=False)
    out = tmp_path / "cloud"
    code, _, err = _cli(capsys, "run", SAMPLE, "--backend", "cloud", "--endpoint", CLOUD, "--out", out)
    assert code == 1, err
    assert "Error: " in err and "gpt-4o-mini" in err and "Traceback" not in err
    assert f"set {DEPLOYMENT} to your judge deployment's name" in err
    assert not (out / "state.json").exists() and credential.calls == 0  # refused before any request

    code, _, err = _cli(capsys, "run", SAMPLE, "--backend", "mock", "--out", tmp_path / "mock", "-q")
    assert code == 0, err  # the emulator needs no deployment: offline, as before


def test_a_set_deployment_or_one_written_out_is_no_guess(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mapping = load_mapping(None)
    records = list(read_records(SAMPLE, mapping))
    guessed = build_plan(records, mapping, dataset_path=SAMPLE, environ={})
    backend = get_backend("cloud", endpoint=CLOUD, credential=StaticTokenCredential())
    with pytest.raises(MappingError, match=f"set {DEPLOYMENT} to your judge deployment's name"):
        run_evaluation(guessed, tmp_path / "guessed", backend)
    assert not (tmp_path / "guessed" / "state.json").exists()

    named = build_plan(records, mapping, dataset_path=SAMPLE, environ={DEPLOYMENT: "my-judge"})
    backend.preflight(named)  # no refusal: the deployment was named
    assert [c.init.get("deployment_name") for c in named.criteria if "deployment_name" in c.init] == ["my-judge"] * 3
