"""`run --eval-id`: the runs go into an existing eval, checked first — a missing eval or one with other testing
criteria is refused before anything is sent or written, naming the eval and what differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.dataset import read_records
from foundry_bridge.errors import UsageError
from foundry_bridge.foundry import StaticTokenCredential
from foundry_bridge.foundry._backend import criteria_differences
from foundry_bridge.foundry._models import TestingCriterion
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.mapping.plan import Plan
from foundry_bridge.mock import FoundryEmulator
from foundry_bridge.runner import get_backend, run_evaluation


@pytest.fixture
def plan(benefits_jsonl: Path) -> Plan:
    mapping = load_mapping(None)
    return build_plan(read_records(benefits_jsonl, mapping), mapping, dataset_path=benefits_jsonl)


def _backend(emu: FoundryEmulator, **kw: object):  # type: ignore[no-untyped-def]
    return get_backend("mock", emulator=emu, credential=StaticTokenCredential(), sleep=lambda s: None, **kw)


def test_a_second_run_joins_the_eval_and_a_rerun_reuses_it(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0)
    first = run_evaluation(plan, tmp_path / "a", _backend(emu))
    second = run_evaluation(plan, tmp_path / "b", _backend(emu, eval_id=first.eval_id))
    assert second.eval_id == first.eval_id and len(emu.store.evals) == 1 and len(emu.store.runs) == 2
    assert {r["eval_id"] for r in emu.store.runs.values()} == {first.eval_id}
    state = json.loads((tmp_path / "b" / "state.json").read_text())
    assert state["eval_id"] == first.eval_id and state["backend_identity"]["eval_id"] == first.eval_id
    again = run_evaluation(plan, tmp_path / "b", _backend(emu, eval_id=first.eval_id))
    assert again.reused and len(emu.store.runs) == 2


def test_other_criteria_are_refused_before_anything_is_sent(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0)
    body = json.loads(json.dumps(plan.eval_body))
    dropped = body["testing_criteria"].pop()["name"]
    body["testing_criteria"][0]["data_mapping"]["query"] = "{{item.question}}"
    changed = body["testing_criteria"][0]["name"]
    eval_id = _backend(emu).client.create_eval(body).id
    calls = len(emu.router.calls)
    with pytest.raises(UsageError) as err:
        run_evaluation(plan, tmp_path / "b", _backend(emu, eval_id=eval_id))
    message = str(err.value)
    assert f"eval {eval_id}" in message and f"criterion {dropped!r} is not in the eval" in message
    assert f"{changed}: data_mapping" in message and "{{item.question}}" in message and "drop --eval-id" in message
    sent = [(c.request.method, c.request.url.path.rsplit("/", 2)[-2:]) for c in emu.router.calls[calls:]]
    assert sent == [("GET", ["evals", eval_id])]  # one look at the eval, no run
    assert emu.store.runs == {} and not (tmp_path / "b").exists()  # nothing written either


def test_an_unknown_eval_names_it_and_the_mock_server_way(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0)
    with pytest.raises(UsageError, match=r"eval eval_nope on .* does not exist") as err:
        run_evaluation(plan, tmp_path / "b", _backend(emu, eval_id="eval_nope"))
    assert "foundry-bridge mock-server" in str(err.value) and emu.store.runs == {} and emu.store.evals == {}


def test_criteria_differences_compare_only_what_the_service_echoes() -> None:
    planned = [
        {"name": "g", "evaluator_name": "builtin.groundedness", "data_mapping": {"query": "{{item.query}}"}},
        {"name": "r", "evaluator_name": "builtin.relevance", "evaluator_version": "3"},
    ]
    echoed = [
        TestingCriterion(name="g", evaluator_name="builtin.groundedness", evaluator_version=""),  # no mapping echoed
        TestingCriterion(name="r", evaluator_name="builtin.coherence", evaluator_version="4"),
    ]
    assert criteria_differences(planned, echoed) == [
        "r: evaluator 'builtin.relevance' in the plan, 'builtin.coherence' in the eval",
        "r: version '3' in the plan, '4' in the eval",
    ]
    assert criteria_differences(planned[:1], echoed[:1]) == []


def test_eval_id_is_refused_for_the_local_backend(benefits_jsonl: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["run", str(benefits_jsonl), "--backend", "local", "--eval-id", "eval_1", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code != 0 and "--eval-id applies to --backend cloud or mock" in str(result.exception)
