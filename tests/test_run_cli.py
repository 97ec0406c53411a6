"""``foundry-bridge run`` on the mock backend: exit codes, messages, run folder, reuse, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foundry_bridge._io import loads
from foundry_bridge.cli import main

Capture = pytest.CaptureFixture[str]


def run_cli(args: list[str], capsys: Capture) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["run", *args])
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_run_on_the_mock_writes_a_run_folder(benefits_jsonl: Path, tmp_path: Path, capsys: Capture) -> None:
    out_dir = tmp_path / "run"
    code, out, err = run_cli([str(benefits_jsonl), "--backend", "mock", "--out", str(out_dir)], capsys)
    assert code == 0, err
    assert out.strip() == str(out_dir)
    assert "rows: 14" in err and "document_retrieval, retrieval, groundedness, relevance" in err
    assert "errored" in err and "WARNING" not in err
    state = loads((out_dir / "state.json").read_bytes())
    assert state["status"] == "completed" and state["backend"] == "mock"
    assert (out_dir / "results.jsonl").is_file() and (out_dir / "manifest.json").is_file()


def test_quiet_prints_only_the_run_folder(benefits_jsonl: Path, tmp_path: Path, capsys: Capture) -> None:
    code, out, err = run_cli([str(benefits_jsonl), "--backend", "mock", "--out", str(tmp_path / "r"), "-q"], capsys)
    assert code == 0 and out.strip() == str(tmp_path / "r") and err == ""


def test_failed_run_exits_non_zero_with_the_service_message(
    benefits_jsonl: Path, tmp_path: Path, capsys: Capture
) -> None:
    args = [str(benefits_jsonl), "--backend", "mock", "--out", str(tmp_path / "r"), "--mock-fault", "failed_runs=0"]
    code, _, err = run_cli(args, capsys)
    assert code == 1
    assert "Error: evaluation run evalrun_" in err and "failed: FAILED_EXECUTION: The evaluation run failed" in err


def test_errored_rows_are_reported_loudly(benefits_jsonl: Path, tmp_path: Path, capsys: Capture) -> None:
    args = [str(benefits_jsonl), "--backend", "mock", "--out", str(tmp_path / "r"), "--mock-fault", "errored_rows=1,2"]
    code, _, err = run_cli(args, capsys)
    assert code == 0
    assert "WARNING: 8 of 56 (row, criterion) results ERRORED (FAILED_EXECUTION" in err


def test_retries_are_shown_as_warnings(benefits_jsonl: Path, tmp_path: Path, capsys: Capture) -> None:
    args = [
        str(benefits_jsonl),
        "--backend",
        "mock",
        "--out",
        str(tmp_path / "r"),
        "--mock-fault",
        "rate_limit_every=2",
    ]
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "warning: " in err and "-> 429; retry 1/" in err


def test_default_folder_and_reuse_of_a_finished_run(
    benefits_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli([str(benefits_jsonl), "--backend", "mock"], capsys)
    assert code == 0
    first = Path(out.strip())
    assert first.parent == Path("runs") and first.name.startswith("rag_eval-mock-")
    code, out, err = run_cli([str(benefits_jsonl), "--backend", "mock"], capsys)
    assert code == 0 and Path(out.strip()) == first and "reused" in err
    code, out, err = run_cli([str(benefits_jsonl), "--backend", "mock", "--force"], capsys)
    assert code == 0 and "reused" not in err


def test_resuming_a_mock_run_in_another_process_explains_why_not(benefits_jsonl: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out_dir = tmp_path / "r"
    code, _, _ = run_cli([str(benefits_jsonl), "--backend", "mock", "--out", str(out_dir), "-q"], capsys)
    state = loads((out_dir / "state.json").read_bytes())
    state["status"] = "submitted"  # pretend the process died while polling
    (out_dir / "state.json").write_bytes(json.dumps(state).encode())
    code, _, err = run_cli(["--resume", str(out_dir)], capsys)
    assert code == 2  # said before any request: no raw 404 from an empty emulator
    assert "HTTP 404" not in err and "GET " not in err
    assert "no other process can resume it" in err and f"--force --out {out_dir}" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "mock"], "give DATA"),
        ([], "choose a backend"),
        (["--backend", "mock", "--mock-fault", "nonsense=1"], "expected FIELD=VALUE"),
        (["--backend", "cloud", "--mock-fault", "failed_runs=0"], "only applies to --backend mock"),
        (["--backend", "cloud", "--endpoint", "http://example.com/api/projects/p"], "https"),
    ],
)
def test_usage_errors_exit_2(
    benefits_jsonl: Path, args: list[str], message: str, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_AI_PROJECT_ENDPOINT", raising=False)
    full = args if args[:2] == ["--backend", "mock"] and len(args) == 2 else [str(benefits_jsonl), *args]
    code, _, err = run_cli(full, capsys)
    assert code == 2 and message in err


def test_resume_continues_without_a_second_submission(
    benefits_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    from foundry_bridge import runner
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import build_plan, load_mapping
    from foundry_bridge.mock import FoundryEmulator

    emu = FoundryEmulator(polls_to_complete=3)
    real_get_backend = runner.get_backend
    monkeypatch.setattr(runner, "get_backend", lambda name, **kw: real_get_backend(name, emulator=emu, **kw))
    mapping = load_mapping(None)
    plan = build_plan(read_records(benefits_jsonl, mapping), mapping, dataset_path=benefits_jsonl)

    def crash(stage: str, done: int, total: int | None) -> None:
        if stage == "polling":
            raise KeyboardInterrupt

    out_dir = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        runner.run_evaluation(plan, out_dir, runner.get_backend("mock"), progress=crash)
    code, out, err = run_cli([str(benefits_jsonl), "--backend", "mock", "--out", str(out_dir)], capsys)
    assert code == 2 and f"--resume {out_dir}" in err  # an unfinished run is never submitted twice by accident
    code, out, err = run_cli(["--resume", str(out_dir)], capsys)
    assert code == 0, err
    assert out.strip() == str(out_dir) and "rows: 14" in err
    assert len(emu.store.evals) == 1 and len(emu.store.runs) == 1
    assert loads((out_dir / "state.json").read_bytes())["status"] == "completed"
