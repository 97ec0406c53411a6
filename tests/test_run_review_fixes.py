"""Regression tests for reviewed bugs: SAS URLs in tracebacks and reprs, dataset re-upload, resume of a split run,
stale files after --force, mock reuse across fault configs, busy polling."""

from __future__ import annotations

import traceback
from pathlib import Path

import httpx
import pytest
from azure.core.exceptions import DecodeError, HttpResponseError

from foundry_bridge import cli as cli_module
from foundry_bridge._io import loads
from foundry_bridge.dataset import read_records
from foundry_bridge.errors import BackendError
from foundry_bridge.foundry import FoundryClient, StaticTokenCredential
from foundry_bridge.foundry._models import PendingUpload
from foundry_bridge.foundry._normalize import missing_rows, normalize_item
from foundry_bridge.foundry._paging import ItemPaged
from foundry_bridge.foundry._poller import MIN_POLL_INTERVAL
from foundry_bridge.foundry._retry import RetryPolicy
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.mapping.plan import CriterionPlan, Plan
from foundry_bridge.mock import FaultConfig, FoundryEmulator
from foundry_bridge.results import RUN_FILES
from foundry_bridge.runfolder import RunFolder
from foundry_bridge.runner import get_backend, read_results, run_evaluation

SIG = "SECRETSIGabc123"
SAS = f"https://acct.blob.core.windows.net/c?sv=2025-01-05&sig={SIG}"
PROJECT = "https://x.services.ai.azure.com/api/projects/p"
Capture = pytest.CaptureFixture[str]


def _plan(path: Path, limit: int | None = None) -> Plan:
    mapping = load_mapping(None)
    records = list(read_records(path, mapping))[:limit]
    return build_plan(records, mapping, dataset_path=path)


@pytest.fixture
def plan(benefits_jsonl: Path) -> Plan:
    return _plan(benefits_jsonl)


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def mock(emulator: FoundryEmulator, sleep: Sleeps | None = None, **kw: object):  # type: ignore[no-untyped-def]
    return get_backend("mock", emulator=emulator, sleep=sleep if sleep is not None else Sleeps(), **kw)


def _client(handler) -> FoundryClient:  # type: ignore[no-untyped-def]
    return FoundryClient(PROJECT, StaticTokenCredential(), transport=httpx.MockTransport(handler), sleep=lambda s: None)


# -- 1, 2: no SAS signature in a traceback or a repr ---------------------------------------------------------------
def test_blob_put_failure_traceback_holds_no_sas_signature() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("startPendingUpload"):
            return httpx.Response(
                200, json={"blobReference": {"blobUri": SAS.split("?")[0], "credential": {"sasUri": SAS}}}
            )
        return httpx.Response(403, json={"error": {"code": "AuthorizationFailure", "message": "no"}})

    with pytest.raises(Exception) as info:
        _client(handler).upload_dataset("n", "1", b"{}\n")
    text = "".join(traceback.format_exception(info.value))
    assert "AuthorizationFailure" in text and SIG not in text


def test_pending_upload_repr_hides_the_credential() -> None:
    pending = PendingUpload.model_validate({"blobReference": {"blobUri": "https://a/c", "credential": {"sasUri": SAS}}})
    assert pending.blob_reference.sas_uri == SAS  # still usable
    assert SIG not in repr(pending) and SIG not in repr(pending.blob_reference) and SIG not in str(pending)


def test_malformed_pending_upload_is_a_decode_error_without_the_sas() -> None:
    def handler(request: httpx.Request) -> httpx.Response:  # blobUri missing: the body does not validate
        return httpx.Response(200, json={"blobReference": {"credential": {"sasUri": SAS}}})

    with pytest.raises(DecodeError) as info:
        _client(handler).upload_dataset("n", "1", b"{}\n")
    text = "".join(traceback.format_exception(info.value))
    assert "blobUri" in str(info.value) and SIG not in text


def test_debug_traceback_is_redacted(monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> None:
    def failing(*args: object, **kwargs: object) -> None:
        try:
            raise RuntimeError(f"PUT {SAS} failed")
        except RuntimeError as exc:
            raise BackendError("upload failed") from exc

    monkeypatch.setattr(cli_module.cli, "main", failing)
    with pytest.raises(SystemExit) as info:
        cli_module.main(["--debug", "run"])
    err = capsys.readouterr().err
    assert info.value.code == BackendError("x").exit_code
    assert "Traceback" in err and "RuntimeError" in err and "upload failed" in err and SIG not in err


# -- 3: the same rows uploaded again reuse the dataset version ------------------------------------------------------
def test_re_uploading_the_same_plan_reuses_the_dataset_without_retries(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0)
    run_evaluation(plan, tmp_path / "a", mock(emu, inline_max_bytes=0))
    assert len(emu.store.datasets) == 1
    sleeps = Sleeps()
    backend = mock(emu, sleep=sleeps, inline_max_bytes=0)
    run_evaluation(plan, tmp_path / "b", backend)  # failed before: 409 retried, then ResourceExistsError
    assert len(emu.store.datasets) == 1 and len(emu.store.blobs) == 1
    assert len(read_results(tmp_path / "b")) == len(read_results(tmp_path / "a"))
    states = [loads((tmp_path / d / RUN_FILES["state"]).read_bytes()) for d in ("a", "b")]
    assert states[0]["runs"][0]["dataset_id"] == states[1]["runs"][0]["dataset_id"]
    conflicts = [c for c in emu.router.calls if c.response.status_code == 409]
    assert len(conflicts) == 1 and conflicts[0].request.url.path.endswith("startPendingUpload")


def test_another_split_of_the_same_plan_gets_its_own_dataset_versions(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0)
    run_evaluation(plan, tmp_path / "a", mock(emu, inline_max_bytes=0))
    run_evaluation(plan, tmp_path / "b", mock(emu, inline_max_bytes=0, max_rows_per_run=7))
    # one version for all 14 rows, then two for the halves: no version names other rows
    assert len(emu.store.datasets) == 3 and len({name for name, _v in emu.store.datasets}) == 1
    rows = read_results(tmp_path / "b")
    assert [r.query_id for r in rows if r.criterion == "retrieval"] == plan.query_ids


# -- 4: resume keeps the recorded split -------------------------------------------------------------------------------
def test_resume_keeps_the_split_recorded_in_state(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0, faults=FaultConfig(failed_runs=(1,)))
    with pytest.raises(BackendError):
        run_evaluation(plan, tmp_path / "run", mock(emu, max_rows_per_run=5))
    with pytest.raises(BackendError, match="splits the dataset differently"):  # an explicit other value: refused
        run_evaluation(plan, tmp_path / "run", mock(emu, max_rows_per_run=4), resume=True)
    summary = run_evaluation(plan, tmp_path / "run", mock(emu), resume=True)  # as `run --resume DIR`
    assert summary.errored == 0
    state = loads((tmp_path / "run" / RUN_FILES["state"]).read_bytes())
    assert [(r["offset"], r["count"]) for r in state["runs"]] == [(0, 5), (5, 5), (10, 4)]
    assert len(emu.store.runs) == 4  # 3 parts + the failed one submitted again


# -- 5: a forced run rewrites the plan files and removes stale results ----------------------------------------------
def test_resume_force_with_new_data_writes_the_new_plan(benefits_jsonl: Path, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0)
    run_evaluation(_plan(benefits_jsonl), tmp_path / "run", mock(emu))
    small = _plan(benefits_jsonl, limit=5)
    run_evaluation(small, tmp_path / "run", mock(emu), resume=True, force=True)
    saved = RunFolder(tmp_path / "run").read_plan()
    assert len(saved.items) == 5 and saved.fingerprint() == small.fingerprint()
    assert len((tmp_path / "run" / RUN_FILES["records"]).read_bytes().splitlines()) == 5


def test_failed_forced_run_leaves_no_old_results(benefits_jsonl: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_evaluation(_plan(benefits_jsonl), run_dir, mock(FoundryEmulator(polls_to_complete=0)))
    assert (run_dir / RUN_FILES["results"]).is_file() and (run_dir / RUN_FILES["manifest"]).is_file()
    failing = FoundryEmulator(polls_to_complete=0, faults=FaultConfig(failed_runs=(0,)))
    with pytest.raises(BackendError):
        run_evaluation(_plan(benefits_jsonl, limit=5), run_dir, mock(failing), force=True)
    for key in ("results", "manifest", "output_items"):
        assert not (run_dir / RUN_FILES[key]).exists(), key
    assert len(RunFolder(run_dir).read_plan().items) == 5


# -- 6: the emulator's faults are part of the reuse identity --------------------------------------------------------
def test_mock_fault_run_does_not_reuse_a_clean_run(
    benefits_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    monkeypatch.chdir(tmp_path)

    def run(*extra: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as info:
            cli_module.main(["run", str(benefits_jsonl), "--backend", "mock", *extra])
        out, err = capsys.readouterr()
        return int(info.value.code or 0), out, err

    code, _, err = run()
    assert code == 0, err
    code, out2, err = run("--mock-fault", "errored_rows=1")
    assert "reused" not in err and "errored" in err
    rows = read_results(Path(out2.strip()))
    assert any(r.row == 1 and r.error for r in rows)
    code, _, err = run("--mock-fault", "errored_rows=1")
    assert "reused" in err  # the same faults again: reused


def test_backend_identity_names_the_emulator_setup() -> None:
    plain = get_backend("mock").identity
    faulty = get_backend("mock", faults=FaultConfig(errored_rows=(1,))).identity
    shaped = get_backend("mock", docret_shape="per_metric").identity
    slow = get_backend("mock", polls_to_complete=5).identity
    assert len({repr(i) for i in (plain, faulty, shaped, slow)}) == 4
    assert plain == get_backend("mock").identity


# -- 7: no busy polling ---------------------------------------------------------------------------------------------
def test_mock_polls_wait_between_requests(plan: Plan, tmp_path: Path) -> None:
    sleeps = Sleeps()
    run_evaluation(plan, tmp_path / "run", mock(FoundryEmulator(polls_to_complete=4), sleep=sleeps))
    assert len(sleeps) >= 4 and min(sleeps) >= MIN_POLL_INTERVAL


# -- 8: cursor cycles, non-retryable 5xx, output items without a row ------------------------------------------------
def test_pagination_cycle_longer_than_one_page_is_detected() -> None:
    pages = {None: ("b", [1]), "b": ("c", [2]), "c": ("b", [3])}  # b -> c -> b -> ... forever
    fetched: list[str | None] = []

    def fetch(after: str | None) -> str | None:
        if len(fetched) > 20:  # without cycle detection: fail instead of hanging
            raise RuntimeError("pagination loops")
        fetched.append(after)
        return after

    paged = ItemPaged(fetch, lambda after: pages[after])
    with pytest.raises(BackendError, match="pagination did not advance"):
        list(paged)
    assert fetched == [None, "b", "c"]


def test_501_and_505_are_not_retried() -> None:
    policy = RetryPolicy()
    assert not policy.should_retry_status(501) and not policy.should_retry_status(505)
    assert policy.should_retry_status(500) and policy.should_retry_status(503) and policy.should_retry_status(429)
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(501, json={"error": {"code": "NotImplemented", "message": "no such route"}})

    with pytest.raises(HttpResponseError):
        _client(handler).get_eval("eval_1")
    assert len(calls) == 1


@pytest.mark.parametrize("ident", [None, "x", 2.5, True, -1])
def test_output_item_without_a_row_is_not_put_on_row_zero(ident: object) -> None:
    crit = CriterionPlan(name="f1", evaluator="builtin.f1_score")
    item = {"id": "outputitem_abc", "datasource_item_id": ident, "results": [{"name": "f1", "score": 1.0}]}
    assert normalize_item(item, offset=0, criteria=[crit], query_ids=["a", "b"]) == []
    # the row it stood for is then reported by the collector as an error row
    (missing,) = missing_rows([0], criteria=[crit], query_ids=["a", "b"])
    assert missing.error and missing.error.startswith("MISSING_ITEM") and missing.score is None
    item["datasource_item_id"] = 1
    (row,) = normalize_item(item, offset=0, criteria=[crit], query_ids=["a", "b"])
    assert row.row == 1 and row.query_id == "b" and row.score == 1.0
