"""The typed run folder: files written by the old untyped code load and round-trip; a damaged state.json or
manifest.json is a clear error naming file and field; every backend implements the whole protocol."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from foundry_bridge.cli import main
from foundry_bridge.columns import RunColumns
from foundry_bridge.errors import UsageError
from foundry_bridge.foundry import FoundryBackend, StaticTokenCredential
from foundry_bridge.local import LocalBackend
from foundry_bridge.runfolder import Manifest, RunFolder, RunFolderError, RunState
from foundry_bridge.runner import get_backend, prepare_run, run_evaluation
from foundry_bridge.runner_protocol import Backend

OLD_RUNS = Path(__file__).parent / "data" / "runs"
Capture = pytest.CaptureFixture[str]


def _json(path: Path) -> object:
    return json.loads(path.read_text())


@pytest.mark.parametrize("folder", ["mock-3rows", "mock-split-failed", "mock-split-resumed"])
def test_old_state_files_round_trip(folder: str, tmp_path: Path) -> None:
    old = OLD_RUNS / folder / "state.json"
    state = RunFolder(OLD_RUNS / folder).read_state()
    assert state is not None
    RunFolder(tmp_path).write_state(state)
    assert _json(tmp_path / "state.json") == _json(old)


@pytest.mark.parametrize("folder", ["mock-3rows", "mock-split-resumed"])
def test_old_manifest_files_round_trip(folder: str, tmp_path: Path) -> None:
    manifest = RunFolder(OLD_RUNS / folder).read_manifest()
    assert manifest is not None
    RunFolder(tmp_path).write_manifest(manifest)
    assert _json(tmp_path / "manifest.json") == _json(OLD_RUNS / folder / "manifest.json")


def test_old_state_fields_are_typed() -> None:
    failed = RunFolder(OLD_RUNS / "mock-split-failed").read_state()
    assert failed is not None and failed.status == "failed" and failed.backend == "mock"
    assert [(p.offset, p.count, p.source) for p in failed.runs or []] == [(0, 2, "file_id"), (2, 1, "file_id")]
    assert failed.runs is not None and failed.runs[1].error == {
        "code": "FAILED_EXECUTION",
        "message": "The evaluation run failed (fault injected by the foundry_bridge emulator).",
    }
    resumed = RunFolder(OLD_RUNS / "mock-split-resumed").read_state()
    assert resumed is not None and resumed.runs is not None
    assert resumed.runs[1].replaced_runs == [{"run_id": failed.runs[1].run_id, "status": "failed"}]
    assert resumed.runs[1].error is None and resumed.run_ids == [r.run_id for r in resumed.runs]


def test_resubmitting_a_failed_part_drops_its_error_like_the_old_code(tmp_path: Path) -> None:
    failed = RunFolder(OLD_RUNS / "mock-split-failed").read_state()
    assert failed is not None and failed.runs is not None
    failed.runs[1].replace_failed()
    RunFolder(tmp_path).write_state(failed)
    written = _json(tmp_path / "state.json")
    assert isinstance(written, dict)
    assert "error" not in written["runs"][1]
    assert written["runs"][1]["replaced_runs"] == [{"run_id": failed.runs[1].run_id, "status": "failed"}]


def test_an_old_folder_loads_for_the_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUNS / "mock-3rows", run_dir)
    folder = RunFolder(run_dir)
    manifest = folder.report_manifest()
    assert manifest["backend"] == "mock" and manifest["rows"] == 3 and manifest["status"] == "completed"
    assert len(folder.read_plan().items) == 3
    run = RunColumns.open(run_dir)  # the report's one reader: the old folder is converted on its first read
    assert run.texts("query_id") == ["q01", "q02", "q03"]
    # 3 rows x (document_retrieval's 9 metrics + 3 judges)
    assert run.result_counts()[0] == 3 * 12 == manifest["results"]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("state.json", "[1, 2]", "state.json: expected a JSON object, got list"),
        ("state.json", "{not json", "state.json: not valid JSON"),
        ("manifest.json", '"done"', "manifest.json: expected a JSON object, got str"),
        ("manifest.json", '{"rows": "many"}', "manifest.json: rows: Input should be a valid integer"),
    ],
)
def test_a_damaged_file_names_the_file(name: str, content: str, expected: str, tmp_path: Path) -> None:
    (tmp_path / name).write_text(content)
    folder = RunFolder(tmp_path)
    with pytest.raises(RunFolderError, match="^" + re.escape(f"{tmp_path / name}: {expected.split(': ', 1)[1]}")):
        folder.read_state() if name == "state.json" else folder.read_manifest()


def test_a_state_without_a_required_field_names_the_field(tmp_path: Path) -> None:
    state = _json(OLD_RUNS / "mock-3rows" / "state.json")
    assert isinstance(state, dict)
    del state["plan_sha256"]
    state["runs"][0].pop("offset")
    (tmp_path / "state.json").write_text(json.dumps(state))
    with pytest.raises(RunFolderError) as info:
        RunFolder(tmp_path).read_state()
    assert info.value.file == str(tmp_path / "state.json")
    assert info.value.field == "plan_sha256" and "missing" in str(info.value)


def test_resume_from_a_damaged_state_exits_1_without_a_traceback(tmp_path: Path, capsys: Capture) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUNS / "mock-3rows", run_dir)
    state = _json(run_dir / "state.json")
    assert isinstance(state, dict)
    state["runs"] = "evalrun_1"
    (run_dir / "state.json").write_text(json.dumps(state))
    with pytest.raises(SystemExit) as info:
        main(["run", "--resume", str(run_dir)])
    err = capsys.readouterr().err
    assert info.value.code == 1
    assert f"Error: {run_dir / 'state.json'}: runs: Input should be a valid list" in err
    assert "Traceback" not in err and "--force" in err


@pytest.mark.parametrize("backend_class", [FoundryBackend, LocalBackend])
def test_every_backend_class_defines_every_protocol_member(backend_class: type) -> None:
    for member in ("identity", "capabilities", "preflight", "execute"):
        assert member in vars(backend_class), f"{backend_class.__name__}.{member}"


def test_built_backends_satisfy_the_protocol() -> None:
    mock = get_backend("mock")
    local = get_backend("local", judge_endpoint="http://127.0.0.1:1/v1", judge_model="m")
    token = StaticTokenCredential("t")
    cloud = get_backend("cloud", endpoint="https://x.services.ai.azure.com/api/projects/p", credential=token)
    for backend in (mock, local, cloud):
        assert isinstance(backend, Backend), backend
    assert mock.capabilities.resume_elsewhere is False
    assert cloud.capabilities.resume_elsewhere is True and local.capabilities.resume_elsewhere is True
    assert "emulator" in mock.identity and "emulator" not in cloud.identity
    assert not hasattr(mock, "emulator")


def test_a_new_state_names_the_plan() -> None:
    loaded = RunFolder(OLD_RUNS / "mock-3rows").read_plan()
    state = RunState.for_plan(loaded, "mock", {"endpoint": "e"}, "2026-01-01T00:00:00+00:00")
    old = RunFolder(OLD_RUNS / "mock-3rows").read_state()
    assert old is not None and state.same_run(loaded, "mock", {"endpoint": "e"})
    assert state.plan_sha256 == old.plan_sha256 and state.dataset_sha256 == old.dataset_sha256
    assert Manifest().dump() == {}


# -- prepare_run: reuse / resume / new / finished twin is one decision ---------------------------------------------
def test_prepare_run_decides_new_reuse_resume_and_refusal(tmp_path: Path) -> None:
    plan = RunFolder(OLD_RUNS / "mock-3rows").read_plan()
    backend = get_backend("mock", sleep=lambda s: None)
    assert prepare_run(plan, backend, tmp_path / "run").action == "new"
    assert not (tmp_path / "run").exists()  # deciding writes nothing
    run_evaluation(plan, tmp_path / "run", backend)
    reuse = prepare_run(plan, backend, tmp_path / "run")
    assert reuse.action == "reuse" and reuse.state is not None and reuse.state.status == "completed"
    assert prepare_run(plan, backend, tmp_path / "run", force=True).action == "new"

    state = _json(tmp_path / "run" / "state.json")
    assert isinstance(state, dict)
    state["status"] = "submitted"
    (tmp_path / "run" / "state.json").write_text(json.dumps(state))
    resume = prepare_run(plan, backend, tmp_path / "run", resume=True)
    assert resume.action == "resume" and resume.state is not None and resume.state.eval_id == state["eval_id"]
    with pytest.raises(UsageError, match="already holds an unfinished run of this plan"):
        prepare_run(plan, backend, tmp_path / "run")
    other = get_backend("mock", polls_to_complete=5)
    with pytest.raises(UsageError, match="holds a run of another plan, dataset or backend"):
        prepare_run(plan, other, tmp_path / "run", resume=True)
    with pytest.raises(UsageError, match="nothing to resume"):
        prepare_run(plan, backend, tmp_path / "empty", resume=True)


def test_prepare_run_finds_a_finished_twin_under_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = Path("rag_eval.jsonl")
    data.write_text("{}\n")
    plan = RunFolder(OLD_RUNS / "mock-3rows").read_plan()
    backend = get_backend("mock", sleep=lambda s: None)
    first = prepare_run(plan, backend, None, dataset=data)
    assert first.action == "new" and first.folder.path.parent == Path("runs")
    assert first.folder.path.name.startswith("rag_eval-mock-")
    run_evaluation(plan, first.folder.path, backend)
    twin = prepare_run(plan, backend, None, dataset=data)
    assert twin.action == "reuse" and twin.folder.path == first.folder.path
    forced = prepare_run(plan, backend, None, dataset=data, force=True)
    assert forced.action == "new" and forced.folder.path != first.folder.path
    assert prepare_run(plan, get_backend("mock", docret_shape="per_metric"), None, dataset=data).action == "new"


def test_the_report_reads_the_status_from_state_when_the_manifest_has_none(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(OLD_RUNS / "mock-3rows", run_dir)
    (run_dir / "manifest.json").unlink()
    assert RunFolder(run_dir).report_manifest() == {"status": "completed"}
    with pytest.raises(RunFolderError, match="^" + re.escape(f"{tmp_path / 'missing'}: not a directory")):
        RunColumns.open(tmp_path / "missing")
    (run_dir / "records.jsonl").write_text("")
    with pytest.raises(RunFolderError, match="^" + re.escape(f"{run_dir}: no query records")):
        RunColumns.open(run_dir)
