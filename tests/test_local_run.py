"""The local backend through the runner and the CLI: a run folder like the cloud's, report and canaries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_helpers import BENEFITS, DEFAULT_MAPPING, benefits_plan, benefits_rule

from foundry_bridge import report as report_mod
from foundry_bridge import runner
from foundry_bridge.local import LocalBackend
from foundry_bridge.local.fake_judge import FakeJudgeServer
from foundry_bridge.results import RUN_FILES


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer(benefits_rule) as server:
        yield server


@pytest.fixture
def fresh_judge(judge: FakeJudgeServer) -> FakeJudgeServer:
    judge.rule = benefits_rule
    judge.reset()
    return judge


def _results(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / RUN_FILES["results"]).read_text().splitlines()]


def test_run_evaluation_writes_a_run_folder(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="m", cache_dir=tmp_path / "cache")
    summary = runner.run_evaluation(benefits_plan(), tmp_path / "run", backend)
    run_dir = tmp_path / "run"
    for name in ("plan", "items", "records", "state", "results", "manifest"):
        assert (run_dir / RUN_FILES[name]).is_file(), name
    rows = _results(run_dir)
    assert len(rows) == 14 * 12
    assert summary.backend == "local"
    # (row, criterion) pairs errored: q09 relevance (unparseable), n02 retrieval (no score)
    assert summary.errored == 2
    manifest = json.loads((run_dir / RUN_FILES["manifest"]).read_text())
    assert manifest["backend"] == "local"
    assert manifest["verdicts"]["errored"] == 2
    assert manifest["local"]["judge_calls"] == 42
    assert any("ERRORED" in w for w in summary.warnings)

    # the generic runner reuses a finished run; the cache makes a forced re-run free of judge calls
    fresh_judge.reset()
    again = runner.run_evaluation(benefits_plan(), run_dir, backend, force=True)
    assert fresh_judge.calls == 2  # only the two failed calls are tried again
    assert _results(run_dir) == rows
    assert again.errored == 2


def test_report_flags_canaries_a_lenient_judge_passed(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    # a judge that passes everything: the canaries must show up as passed
    from foundry_bridge.local.fake_judge import score_answer

    fresh_judge.rule = lambda r: score_answer(5, "looks fine")
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="lenient", cache_dir=tmp_path / "c")
    runner.run_evaluation(benefits_plan(limit=5), tmp_path / "run", backend)  # q03-q05 are the canaries
    report = report_mod.build_report(tmp_path / "run")
    flags = {c.query_id: c for c in report.canaries}
    assert set(flags) == {"q03", "q04", "q05"}
    assert all(c.caught is False and "groundedness" in c.passed_by for c in flags.values())

    # the benefits judge fails q03 and q04 on groundedness, q05 on relevance
    fresh_judge.rule = benefits_rule
    strict = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="strict", cache_dir=tmp_path / "c")
    runner.run_evaluation(benefits_plan(limit=5), tmp_path / "run2", strict)
    flags = {c.query_id: c for c in report_mod.build_report(tmp_path / "run2").canaries}
    assert all(c.caught is True for c in flags.values())
    assert "groundedness" in flags["q03"].failed_by and "relevance" in flags["q05"].failed_by


def test_cli_run_backend_local(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from foundry_bridge.cli import cli

    subset = tmp_path / "subset.jsonl"  # q01, q03, q09, n02: 4 rows, 12 judge calls per run
    keep = ("q01", "q03", "q09", "n02")
    subset.write_text(
        "".join(line for line in BENEFITS.read_text().splitlines(True) if json.loads(line)["query_id"] in keep)
    )
    args = [
        "run",
        str(subset),
        "--mapping",
        str(DEFAULT_MAPPING),
        "--backend",
        "local",
        "--judge-endpoint",
        fresh_judge.base_url,
        "--judge-model",
        "cli-model",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "run"),
        "--quiet",
    ]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert str(tmp_path / "run") in result.output
    assert fresh_judge.calls == 12
    assert {r.model for r in fresh_judge.requests} == {"cli-model"}
    rows = _results(tmp_path / "run")
    bad = [r for r in rows if r["error"]]
    assert {(r["query_id"], r["criterion"]) for r in bad} == {("q09", "relevance"), ("n02", "retrieval")}

    # --no-cache: every judge call is made again
    fresh_judge.reset()
    args2 = [a if a != str(tmp_path / "run") else str(tmp_path / "run2") for a in args] + ["--no-cache"]
    result = CliRunner().invoke(cli, args2, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert fresh_judge.calls == 12
    # with the cache: a new folder, no judge call except the two failures
    fresh_judge.reset()
    args3 = [a if a != str(tmp_path / "run") else str(tmp_path / "run3") for a in args]
    result = CliRunner().invoke(cli, args3, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert fresh_judge.calls == 2


def test_cli_without_judge_endpoint_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from foundry_bridge.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", str(BENEFITS), "--backend", "local", "--out", str(tmp_path / "run"), "--quiet"])
    assert exc.value.code == 2
    assert "--judge-endpoint" in capsys.readouterr().err


def test_preflight(tmp_path: Path) -> None:
    from foundry_bridge.errors import UsageError

    with pytest.raises(UsageError, match="judge-endpoint"):
        LocalBackend(judge_endpoint=None, judge_model="m").preflight(benefits_plan(limit=1))
    LocalBackend(judge_endpoint="http://127.0.0.1:1/v1", judge_model="m").preflight(benefits_plan(limit=1))


def test_a_finished_run_is_not_reused_for_another_judge(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    plan = benefits_plan(limit=2)
    first = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="model-a", cache_dir=tmp_path / "c")
    runner.run_evaluation(plan, tmp_path / "run", first)
    again = runner.run_evaluation(plan, tmp_path / "run", first)
    assert again.reused is True

    other = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="model-b", cache_dir=tmp_path / "c")
    with pytest.raises(runner.UsageError, match="already holds a run of another plan"):
        runner.run_evaluation(plan, tmp_path / "run", other)
    state = json.loads((tmp_path / "run" / RUN_FILES["state"]).read_text())
    assert state["backend_identity"]["judge_model"] == "model-a"


def test_a_plan_the_backend_cannot_run_leaves_no_folder(tmp_path: Path) -> None:
    backend = LocalBackend(judge_endpoint=None, judge_model=None, cache_dir=tmp_path / "c")
    with pytest.raises(runner.UsageError, match="--judge-endpoint"):
        runner.run_evaluation(benefits_plan(limit=2), tmp_path / "run", backend)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("wild", [99, -7])
def test_an_out_of_range_judge_score_is_an_errored_row_never_averaged(
    fresh_judge: FakeJudgeServer, tmp_path: Path, wild: int
) -> None:
    # issue #34 item 5: a judge answering 99 (or -7) on its 1-5 scale for one query; every other answer is 4
    from foundry_bridge.local.fake_judge import score_answer

    fresh_judge.rule = lambda r: score_answer(wild if r.kind == "relevance" and _first_query in r.data else 4, "x")
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="wild", cache_dir=tmp_path / "c")
    runner.run_evaluation(benefits_plan(limit=4), tmp_path / "run", backend)
    rows = {(r["query_id"], r["criterion"]): r for r in _results(tmp_path / "run")}
    wild_row = rows[("q01", "relevance")]
    assert wild_row["score"] is None and wild_row["passed"] is None
    assert wild_row["error"].startswith("JUDGE_SCORE_OUT_OF_RANGE:") and "1–5" in wild_row["error"]
    relevance = report_mod.build_report(tmp_path / "run").positive.metrics["relevance"]
    assert relevance.errored == 1 and relevance.scored == 3
    assert relevance.mean == 4.0 and relevance.max == 4.0 and relevance.min == 4.0
    assert relevance.pass_rate == 1.0


_first_query = json.loads(BENEFITS.read_text().splitlines()[0])["query"]
