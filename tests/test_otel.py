"""`report --otel` and `emit_evaluation_events`: gen_ai.evaluation.result events through the real OpenTelemetry SDK.

The run folder's judge scores are hand-chosen (tests/report_helpers.JUDGE_SCORES): groundedness errored on q02,
scored 2 on q03 (fail, threshold 3); relevance has no result for n03. Two receivers: the SDK's in-memory exporter,
and an OTLP/HTTP receiver on 127.0.0.1 that decodes the protobuf export request (the `foundry-bridge` process
exports to it with the standard OTLP exporter).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from otlp_helpers import events, otlp_receiver, track_receiver
from report_helpers import write_run

from foundry_bridge.integrations.otel import emit_evaluation_events, resource_attributes
from foundry_bridge.report import build_report

ROOT = Path(__file__).resolve().parent.parent
N_QUERIES = 14  # the benefits sample
FOUNDRY_KEYS = ("document_retrieval/ndcg@3", "retrieval", "groundedness", "relevance")
LOCAL_KEYS = 14  # rr, recall, precision, hit, distracting, ndcg, ndcg_exp at k = 3 and 10


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(tmp_path_factory.mktemp("otel") / "run")


def _emit(run_dir: Path, **kwargs: Any) -> tuple[list[Any], int]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create(resource_attributes(build_report(run_dir))))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    n = emit_evaluation_events(build_report(run_dir), logger_provider=provider, **kwargs)
    return list(exporter.get_finished_logs()), n


def _event(records: list[Any], query_id: str, name: str) -> dict[str, Any]:
    (found,) = [
        dict(r.log_record.attributes)
        for r in records
        if r.log_record.attributes["foundry_bridge.query_id"] == query_id
        and r.log_record.attributes["gen_ai.evaluation.name"] == name
    ]
    return found


def test_one_event_per_query_and_metric_named_by_the_semantic_conventions(run_dir: Path) -> None:
    records, n = _emit(run_dir)
    # 14 queries × 14 local metrics, and 4 Foundry metrics on every query but n03's missing relevance row, which
    # still gets its event (missing is reported, not dropped)
    assert n == len(records) == N_QUERIES * LOCAL_KEYS + N_QUERIES * len(FOUNDRY_KEYS)
    assert {r.log_record.event_name for r in records} == {"gen_ai.evaluation.result"}
    q03 = _event(records, "q03", "groundedness")
    assert q03["gen_ai.evaluation.score.value"] == 2.0
    assert q03["gen_ai.evaluation.score.label"] == "fail"
    assert q03["gen_ai.evaluation.explanation"] == "hand-chosen 2"
    assert q03["foundry_bridge.evaluator"] == "builtin.groundedness"
    assert q03["foundry_bridge.query.kind"] == "positive"
    assert "error.type" not in q03


def test_errored_and_missing_scores_carry_error_type_and_no_value(run_dir: Path) -> None:
    records, _ = _emit(run_dir)
    q02 = _event(records, "q02", "groundedness")
    assert q02["error.type"] == "FAILED_EXECUTION"
    assert "gen_ai.evaluation.score.value" not in q02
    assert q02["gen_ai.evaluation.explanation"] == "FAILED_EXECUTION: the judge's output could not be parsed"
    n03 = _event(records, "n03", "relevance")
    assert n03["error.type"] == "missing" and "gen_ai.evaluation.score.value" not in n03
    assert n03["foundry_bridge.query.kind"] == "negative"


def test_local_metrics_are_events_too_and_undefined_has_no_value(run_dir: Path) -> None:
    records, _ = _emit(run_dir)
    # q07: the relevant passage was never retrieved (samples/benefits/README.md): reciprocal rank 0 at 10
    assert _event(records, "q07", "rr@10")["gen_ai.evaluation.score.value"] == 0.0
    assert _event(records, "q01", "rr@10")["gen_ai.evaluation.score.value"] == 1.0
    # a negative query has no relevant label: its rank metrics are undefined, sent without a value
    n01 = _event(records, "n01", "rr@10")
    assert "gen_ai.evaluation.score.value" not in n01 and n01["foundry_bridge.metric.source"] == "local"


def test_the_label_is_the_verdict_read_for_the_query_kind(tmp_path: Path) -> None:
    """quality_grader fails every abstention; on a negative query that abstained (n01) the report counts it as
    passed (docs/report.md): the event says pass, and keeps the service's fail beside it. On q08, a positive query
    that abstained, the fail stays a fail."""
    import json

    from foundry_bridge.catalog import get_evaluator
    from foundry_bridge.results import RUN_FILES, ResultRow

    run = write_run(tmp_path / "run")
    grader = get_evaluator("quality_grader").name
    rows = [
        ResultRow(
            row=i,
            query_id=q,
            criterion="quality_grader",
            evaluator=grader,
            metric="quality_grader",
            score=0.0,
            label="fail",
            passed=False,
            reason="judged",
        )
        for i, q in ((7, "q08"), (11, "n01"))
    ]
    with (run / RUN_FILES["results"]).open("a", encoding="utf-8") as f:
        f.writelines(json.dumps(r.model_dump(mode="json")) + "\n" for r in rows)
    records, _ = _emit(run, sources=("foundry",))
    n01 = _event(records, "n01", "quality_grader")
    assert n01["gen_ai.evaluation.score.label"] == "pass" and n01["foundry_bridge.service_label"] == "fail"
    assert n01["gen_ai.evaluation.score.value"] == 0.0  # the score stays as the service gave it
    q08 = _event(records, "q08", "quality_grader")
    assert q08["gen_ai.evaluation.score.label"] == "fail" and "foundry_bridge.service_label" not in q08


def test_sources_and_response_ids_select_and_correlate(run_dir: Path) -> None:
    records, n = _emit(run_dir, sources=("foundry",), response_ids={"q01": "chatcmpl-abc"})
    assert n == N_QUERIES * len(FOUNDRY_KEYS)
    assert _event(records, "q01", "relevance")["gen_ai.response.id"] == "chatcmpl-abc"
    assert "gen_ai.response.id" not in _event(records, "q03", "relevance")


def test_the_run_ids_are_resource_attributes_and_on_every_event(run_dir: Path) -> None:
    records, _ = _emit(run_dir)
    resource = dict(records[0].resource.attributes)
    assert resource["service.name"] == "foundry-bridge"
    assert resource["foundry_bridge.eval.id"] == "eval_fixture"
    assert tuple(resource["foundry_bridge.run.ids"]) == ("evalrun_fixture",)
    assert resource["foundry_bridge.backend"] == "fixture"
    for record in records:  # the caller's provider has no such resource: each event carries the run (#27)
        assert record.log_record.attributes["foundry_bridge.eval.id"] == "eval_fixture"
        assert tuple(record.log_record.attributes["foundry_bridge.run.ids"]) == ("evalrun_fixture",)


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[Any]]]:
    with otlp_receiver() as got:
        yield got


def test_report_otel_exports_over_otlp_http_to_a_local_receiver(
    run_dir: Path, receiver: tuple[str, list[Any]], tmp_path: Path
) -> None:
    url, requests = receiver
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"{url}/v1/logs"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    out = tmp_path / "r.md"
    done = subprocess.run(
        [sys.executable, "-m", "foundry_bridge", "report", str(run_dir), "--out", str(out), "--otel", "otlp"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"emitted {N_QUERIES * (LOCAL_KEYS + len(FOUNDRY_KEYS))} gen_ai.evaluation.result events" in done.stderr
    assert {(path, ctype) for path, ctype, _ in requests} == {("/v1/logs", "application/x-protobuf")}
    received = events(requests)
    assert {resource["foundry_bridge.eval.id"] for resource, _, _ in received} == {"eval_fixture"}
    events_ = [(name, attrs) for _, name, attrs in received]
    assert len(events_) == N_QUERIES * (LOCAL_KEYS + len(FOUNDRY_KEYS))
    assert {name for name, _ in events_} == {"gen_ai.evaluation.result"}
    (q04,) = [
        a for _, a in events_ if a["foundry_bridge.query_id"] == "q04" and a["gen_ai.evaluation.name"] == "groundedness"
    ]
    assert q04["gen_ai.evaluation.score.value"] == 1.0 and q04["gen_ai.evaluation.score.label"] == "fail"


def test_events_the_collector_refuses_are_an_error_not_a_silent_loss(run_dir: Path) -> None:
    with otlp_receiver(status=400) as (url, requests):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"{url}/v1/logs"}
        env.pop("GITHUB_STEP_SUMMARY", None)
        done = subprocess.run(
            [sys.executable, "-m", "foundry_bridge", "report", str(run_dir), "--otel", "otlp"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
    n = N_QUERIES * (LOCAL_KEYS + len(FOUNDRY_KEYS))
    assert requests and done.returncode == 1
    assert f"Error: {n} of {n} gen_ai.evaluation.result events could not be exported (otlp)" in done.stderr
    assert done.stdout.startswith("## foundry-bridge report")  # the report itself was printed first


def test_report_otel_console_writes_events_to_stderr_not_into_the_report(run_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(
        [sys.executable, "-m", "foundry_bridge", "report", str(run_dir), "--otel", "console"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "gen_ai.evaluation.result" not in done.stdout and done.stdout.startswith("#")
    assert '"gen_ai.evaluation.name": "groundedness"' in done.stderr
    assert f"emitted {N_QUERIES * (LOCAL_KEYS + len(FOUNDRY_KEYS))} gen_ai.evaluation.result events" in done.stderr
    judges_only = subprocess.run(
        [
            sys.executable,
            "-m",
            "foundry_bridge",
            "report",
            str(run_dir),
            "--otel",
            "console",
            "--otel-metrics",
            "foundry",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert f"emitted {N_QUERIES * len(FOUNDRY_KEYS)} gen_ai.evaluation.result events" in judges_only.stderr
    assert '"gen_ai.evaluation.name": "rr@10"' not in judges_only.stderr


def test_azure_monitor_without_its_package_is_a_usage_error(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from foundry_bridge.errors import UsageError

    monkeypatch.setitem(sys.modules, "azure.monitor.opentelemetry.exporter", None)  # as if not installed
    with pytest.raises(UsageError, match="azure-monitor-opentelemetry-exporter"):
        emit_evaluation_events(build_report(run_dir), exporter="azure-monitor")


def test_report_otel_azure_monitor_files_custom_events_at_a_local_ingestion_endpoint(
    run_dir: Path, tmp_path: Path
) -> None:
    """Azure Monitor's own exporter, pointed by its connection string at an ingestion endpoint on 127.0.0.1
    (statsbeat and offline retry storage off: nothing else is contacted)."""
    pytest.importorskip("azure.monitor.opentelemetry.exporter")
    with track_receiver() as (url, envelopes):
        conn = f"InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint={url}"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "APPLICATIONINSIGHTS_CONNECTION_STRING": conn}
        env.update(APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL="true", TMPDIR=str(tmp_path))
        env.pop("GITHUB_STEP_SUMMARY", None)
        done = subprocess.run(
            [sys.executable, "-m", "foundry_bridge", "report", str(run_dir), "--otel", "azure-monitor"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    n = N_QUERIES * (LOCAL_KEYS + len(FOUNDRY_KEYS))
    assert f"emitted {n} gen_ai.evaluation.result events (azure-monitor)" in done.stderr
    assert {path for path, _ in envelopes} == {"/v2.1/track"}
    events = [e for _, e in envelopes if e["name"] == "Microsoft.ApplicationInsights.Event"]
    assert len(events) == n  # customEvents, not traces (MessageData)
    # besides them only the exporter's own usage metrics, sent to the same (local) endpoint
    assert {e["name"] for _, e in envelopes} <= {
        "Microsoft.ApplicationInsights.Event",
        "Microsoft.ApplicationInsights.Metric",
    }
    data = [e["data"]["baseData"] for e in events]
    assert {d["name"] for d in data} == {"gen_ai.evaluation.result"}
    (q03,) = [
        d["properties"]
        for d in data
        if d["properties"]["foundry_bridge.query_id"] == "q03"
        and d["properties"]["gen_ai.evaluation.name"] == "groundedness"
    ]
    assert q03["gen_ai.evaluation.score.label"] == "fail" and q03["gen_ai.evaluation.explanation"] == "hand-chosen 2"


def test_the_package_exports_the_calls_lazily() -> None:
    import foundry_bridge.integrations as integrations
    from foundry_bridge.integrations import junit, otel

    assert integrations.emit_evaluation_events is otel.emit_evaluation_events
    assert integrations.write_junit is junit.write_junit


def test_importing_the_cli_loads_no_opentelemetry() -> None:
    code = "import foundry_bridge.cli, foundry_bridge.integrations.otel, foundry_bridge.commands._ci, sys\n"
    code += "print(*sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert [m for m in out.split() if m.startswith("opentelemetry")] == []


@pytest.mark.parametrize("per_query", ["parquet", "jsonl"])
def test_a_large_report_streams_its_rows_back_from_the_per_query_file(
    run_dir: Path, tmp_path: Path, per_query: str
) -> None:
    """A report that keeps only its worst rows in memory (more queries than ``table_rows``) sends the same events,
    read back from its per-query file (Parquet, the default, or JSON lines); one that wrote no such file sends them
    all too, built again from its run folder (never a few rows)."""
    import inspect

    if "table_rows" not in inspect.signature(build_report).parameters:
        pytest.skip("needs the streaming report (per-query JSONL beside it)")
    everything, n = _emit(run_dir)
    queries = tmp_path / f"r.queries.{per_query}"
    large = build_report(run_dir, queries_out=queries, per_query=per_query, table_rows=3)  # type: ignore[arg-type]
    assert not large.per_query.complete  # type: ignore[attr-defined]
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create(resource_attributes(large)))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    assert emit_evaluation_events(large, logger_provider=provider) == n
    streamed = [dict(r.log_record.attributes) for r in exporter.get_finished_logs()]
    assert streamed == [dict(r.log_record.attributes) for r in everything]
    exporter.clear()
    assert emit_evaluation_events(build_report(run_dir, table_rows=3), logger_provider=provider) == n
    assert [dict(r.log_record.attributes) for r in exporter.get_finished_logs()] == streamed


def test_events_carry_the_time_they_were_emitted(run_dir: Path) -> None:
    """docs/ci.md: timestamped when emitted — the event's own time, not only the time the SDK observed it."""
    import time

    before = time.time_ns()
    records, _ = _emit(run_dir, sources=("foundry",))
    after = time.time_ns()
    assert records and all(before <= r.log_record.timestamp <= after for r in records)
    assert all(before <= r.log_record.observed_timestamp <= after for r in records)


TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
ENV_TRACE_ID, ENV_SPAN_ID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


@pytest.fixture(scope="module")
def mapped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The custom-fields sample run on the emulator with a mapping whose ``response_id`` names the item field
    ``completion_id`` (read from each row's ``completion.id``); q02's row has no completion id."""
    import json

    import yaml

    root = tmp_path_factory.mktemp("mapped")
    rows = [json.loads(line) for line in (ROOT / "samples/custom_fields/rag_eval.jsonl").read_text().splitlines()]
    for row in rows:
        if row["id"] != "q02":
            row["completion"] = {"id": f"chatcmpl-{row['id']}"}
    data = root / "rag_eval.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    mapping = yaml.safe_load((ROOT / "mappings/custom_fields.yaml").read_text())
    mapping["dataset"]["fields"]["extra"]["completion_id"] = "completion.id"
    mapping["response_id"] = "completion_id"
    (root / "mapping.yaml").write_text(yaml.safe_dump(mapping))
    run = root / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["run", str(data), "--mapping", str(root / "mapping.yaml"), "--backend", "mock", "--out", str(run)]
    subprocess.run([sys.executable, "-m", "foundry_bridge", *args], capture_output=True, env=env, check=True)
    return run


def _report_otlp(run: Path, *args: str, **env_: str) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """``report RUN --otel otlp --otel-metrics foundry ARGS`` to a local receiver: the process, and every received
    protobuf LogRecord."""
    with otlp_receiver() as (url, requests):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"{url}/v1/logs", **env_}
        env.pop("GITHUB_STEP_SUMMARY", None)
        cmd = [sys.executable, "-m", "foundry_bridge", "report", str(run), "--otel", "otlp", "--otel-metrics"]
        done = subprocess.run([*cmd, "foundry", *args], capture_output=True, text=True, env=env, check=False)
    logs = [r for req in requests for rl in req[2].resource_logs for sl in rl.scope_logs for r in sl.log_records]
    return done, logs


def _attrs(record: Any) -> dict[str, Any]:
    from otlp_helpers import any_value

    return {kv.key: any_value(kv.value) for kv in record.attributes}


def test_report_otel_correlates_events_by_the_mappings_response_id_and_a_traceparent(mapped_run: Path) -> None:
    """The ids a collector joins on: gen_ai.response.id from the field the mapping names, and the traceparent (the
    option, else TRACEPARENT) as every event's parent — with a real event time on the wire."""
    option = f"00-{TRACE_ID}-{SPAN_ID}-01"
    done, logs = _report_otlp(
        mapped_run, "--otel-traceparent", option, TRACEPARENT=f"00-{ENV_TRACE_ID}-{ENV_SPAN_ID}-01"
    )
    assert done.returncode == 0, done.stderr
    assert logs and {(r.trace_id.hex(), r.span_id.hex(), r.flags & 0xFF) for r in logs} == {(TRACE_ID, SPAN_ID, 1)}
    assert all(r.time_unix_nano > 0 for r in logs)
    by_query: dict[str, set[Any]] = {}
    for r in logs:
        a = _attrs(r)
        by_query.setdefault(a["foundry_bridge.query_id"], set()).add(a.get("gen_ai.response.id"))
    assert by_query["q01"] == {"chatcmpl-q01"} and by_query["n01"] == {"chatcmpl-n01"}
    assert by_query["q02"] == {None}  # that row has no completion id: the attribute is left out
    from_env, logs = _report_otlp(mapped_run, TRACEPARENT=f"00-{ENV_TRACE_ID}-{ENV_SPAN_ID}-00")
    assert from_env.returncode == 0, from_env.stderr
    assert {(r.trace_id.hex(), r.span_id.hex(), r.flags & 0xFF) for r in logs} == {(ENV_TRACE_ID, ENV_SPAN_ID, 0)}


def test_an_invalid_traceparent_is_a_usage_error(run_dir: Path) -> None:
    from click.testing import CliRunner

    from foundry_bridge.cli import cli
    from foundry_bridge.errors import UsageError

    args = ["report", str(run_dir), "--otel", "console"]
    env = {"GITHUB_STEP_SUMMARY": "", "TRACEPARENT": ""}
    bad = CliRunner().invoke(cli, [*args, "--otel-traceparent", f"00-{TRACE_ID}-{SPAN_ID}"], env=env)
    assert isinstance(bad.exception, UsageError) and bad.exception.exit_code == 2
    message = str(bad.exception)
    assert message.startswith(f"--otel-traceparent: '00-{TRACE_ID}-{SPAN_ID}' is not a W3C traceparent")
    assert "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" in message  # the form it should have
    assert "## foundry-bridge report" not in bad.output  # refused while parsing, before the report is built
    zeros = CliRunner().invoke(cli, args, env={**env, "TRACEPARENT": f"00-{'0' * 32}-{SPAN_ID}-01"})
    assert isinstance(zeros.exception, UsageError) and str(zeros.exception).startswith("TRACEPARENT: ")
    # without --otel the variable is none of report's business
    plain = CliRunner().invoke(cli, ["report", str(run_dir)], env={**env, "TRACEPARENT": "garbage"})
    assert plain.exit_code == 0, plain.output


def test_the_mappings_response_id_must_name_an_extra_field(tmp_path: Path) -> None:
    """`validate` knows the key: naming a declared extra field passes; anything else is an error at its line with
    the fix."""
    from click.testing import CliRunner

    from foundry_bridge.cli import cli

    base = (ROOT / "mappings/custom_fields.yaml").read_text()
    data = str(ROOT / "samples/custom_fields/rag_eval.jsonl")
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(base + "response_id: canary\n")
    bad.write_text(base + "response_id: completion_id\n")
    ok = CliRunner().invoke(cli, ["validate", data, "--mapping", str(good)])
    assert ok.exit_code == 0, ok.output
    refused = CliRunner().invoke(cli, ["validate", data, "--mapping", str(bad)])
    assert refused.exit_code == 1
    line = len(base.splitlines()) + 1
    assert (
        f"{bad}:{line}: response_id: 'completion_id' is not an extra item field of this mapping (fix: declare it "
        "under dataset.fields.extra: {completion_id: <dotted path in a row>})" in refused.output
    )


def test_response_ids_come_from_the_run_columns_not_a_second_read_of_the_records(
    mapped_run: Path, tmp_path: Path
) -> None:
    """The report's events carry the mapping's response ids from the run's columns (``RunColumns``): once the report
    is built, ``records.jsonl`` is not read again (here it is gone) and every id is still there."""
    import shutil

    from foundry_bridge.integrations.otel import evaluation_attributes

    run = tmp_path / "run"
    shutil.copytree(mapped_run, run)
    report = build_report(run)
    (run / "records.jsonl").unlink()
    ids: dict[str, set[Any]] = {}
    for a in evaluation_attributes(report, sources=("foundry",)):
        ids.setdefault(a["foundry_bridge.query_id"], set()).add(a.get("gen_ai.response.id"))
    assert ids["q01"] == {"chatcmpl-q01"} and ids["n01"] == {"chatcmpl-n01"} and ids["q02"] == {None}
