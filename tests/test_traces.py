"""`foundry-bridge traces`: a dataset rebuilt from OpenTelemetry GenAI / OpenInference spans (OTLP JSON).

The bundled traces (samples/traces/, written by samples/traces/make_traces.py with the OpenTelemetry SDK from
samples/benefits) must give back the benefits rows, and the report on the rebuilt dataset must equal the report on
the rows. The bad-trace cases below are our own spans, shaped as the GenAI JSON schemas (semantic-conventions v1.41
docs/gen-ai/gen-ai-{retrieval-documents,input-messages,output-messages,system-instructions}.json) and the
OpenInference spec describe them: schema-valid variants are rebuilt, invalid ones become located problems.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import runpy
import shutil
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.cli import main
from foundry_bridge.traces import _Sampler, rebuild_dataset

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "samples" / "traces"
BENEFITS = [json.loads(x) for x in (ROOT / "samples" / "benefits" / "rag_eval.jsonl").read_text().splitlines() if x]
MAPPING = ROOT / "mappings" / "traces.yaml"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x]


# -- a small OTLP JSON writer for hand-made cases --------------------------------------------------------------------
def _any(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_any(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _any(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def _span(trace: int, span: int, name: str, attrs: dict[str, Any], parent: int | None = 1, t: int = 0, **extra: Any):
    return {
        "traceId": f"{trace:032x}",
        "spanId": f"{span:016x}",
        **({"parentSpanId": f"{parent:016x}"} if parent else {}),
        "name": name,
        "startTimeUnixNano": str(1_796_029_200 * 10**9 + trace * 60 * 10**9 + t),
        "attributes": [{"key": k, "value": _any(v)} for k, v in attrs.items()],
        **extra,
    }


def _doc(*spans: dict[str, Any], service: str = "app") -> str:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": list(spans)}]}]}) + "\n"


DOCS = [{"id": "d1", "score": 0.9}, {"id": "d2", "score": 0.5}]


def _retrieval(trace: int, docs: Any = None, **attrs: Any) -> dict[str, Any]:
    a = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": f"question {trace}"}
    a["gen_ai.retrieval.documents"] = json.dumps(DOCS) if docs is None else docs
    return _span(trace, 2, "retrieval kb", {**a, **attrs}, t=1)


def _chat(trace: int, **attrs: Any) -> dict[str, Any]:
    a: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": f"passage {trace}"}]),
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": f"question {trace}"}]}]
        ),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ans"}]}]),
    }
    a.update(attrs)
    return _span(trace, 3, "chat m", {k: v for k, v in a.items() if v is not None}, t=2)


def _root(trace: int, **attrs: Any) -> dict[str, Any]:
    return _span(trace, 1, "POST /ask", attrs, parent=None)


# -- the bundled samples --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["genai.jsonl", "openinference.json", "genai.jsonl.gz"])
def test_bundled_traces_rebuild_the_benefits_rows(name: str, tmp_path: Path) -> None:
    source = TRACES / name.removesuffix(".gz")
    if name.endswith(".gz"):
        source = tmp_path / name
        source.write_bytes(gzip.compress((TRACES / "genai.jsonl").read_bytes()))
    s = rebuild_dataset([source], tmp_path / "d.jsonl")
    rows = _rows(tmp_path / "d.jsonl")
    assert (s.spans, s.traces, s.written, sum(s.problems.values())) == (s.spans, 14, 14, 0)
    assert [r["query"] for r in rows] == [b["query"] for b in BENEFITS]
    assert [r["context"] for r in rows] == [b["context"] for b in BENEFITS]  # byte for byte
    assert [r["response"] for r in rows] == [b["response"] for b in BENEFITS]
    with_content = name.startswith("openinference")  # GenAI documents carry ids and scores only
    keys = ("document_id", "relevance_score", "content") if with_content else ("document_id", "relevance_score")
    for r, b in zip(rows, BENEFITS, strict=True):
        assert r["retrieved_documents"] == [{k: d[k] for k in keys} for d in b["retrieved_documents"]]
        assert r["query_id"] == f"{r['trace_id']}:{r['span_id']}" and len(r["trace_id"]) == 32
    assert rows[0]["time"] == "2026-11-30T09:00:00.000000Z" and rows[1]["time"] == "2026-11-30T09:01:00.000000Z"
    if name.startswith("genai"):
        assert rows[0]["model"] == "gpt-4o-mini-2024-07-18" and rows[0]["response_id"].startswith("chatcmpl-")
        q02 = rows[1]  # a keyword search, then the reranker: the last ranking is the row's, the first kept
        first = sorted(BENEFITS[1]["retrieved_documents"], key=lambda d: d["document_id"])
        assert q02["earlier_retrievals"] == [[{k: d[k] for k in keys} for d in first]]
        assert [len(r["earlier_retrievals"]) for r in rows].count(1) == 2


def _run_report(data: Path, run_dir: Path) -> dict[str, Any]:
    from foundry_bridge import runner
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import build_plan, load_mapping
    from foundry_bridge.report import build_report

    mapping = load_mapping(MAPPING)
    plan = build_plan(list(read_records(data, mapping)), mapping, name="traces", dataset_path=str(data))
    runner.run_evaluation(plan, run_dir, runner.get_backend("mock"))
    return json.loads(build_report(run_dir).model_dump_json())


@pytest.mark.parametrize("name", ["genai.jsonl", "openinference.json"])
def test_report_on_the_rebuilt_dataset_equals_the_report_on_the_rows(name: str, tmp_path: Path) -> None:
    rebuild_dataset([TRACES / name], tmp_path / "d.jsonl")
    rebuilt = _run_report(tmp_path / "d.jsonl", tmp_path / "run_t")
    original = _run_report(ROOT / "samples" / "benefits" / "rag_eval.jsonl", tmp_path / "run_b")
    text = json.dumps(rebuilt)
    for r, b in zip(_rows(tmp_path / "d.jsonl"), BENEFITS, strict=True):  # the report links queries to traces
        assert r["trace_id"] in text
        text = text.replace(r["query_id"], b["query_id"])
    rebuilt = json.loads(text)
    assert rebuilt["positive"]["metrics"]["groundedness"]["scored"] == 14  # the judges ran
    for section in ("metrics", "coverage", "positive", "negative", "stages", "distributions", "canaries"):
        _assert_close(rebuilt[section], original[section], section)


def _assert_close(a: Any, b: Any, where: str) -> None:
    """Equal structures; numbers to 1e-9 relative (1e-12 absolute)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), where
    else:
        assert a == b, where


def test_the_committed_sample_traces_are_what_the_script_writes(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    copy = tmp_path / "samples"
    shutil.copytree(ROOT / "samples" / "benefits", copy / "benefits")
    (copy / "traces").mkdir()
    shutil.copy(TRACES / "make_traces.py", copy / "traces")
    runpy.run_path(str(copy / "traces" / "make_traces.py"), run_name="__main__")
    for name in ("genai.jsonl", "openinference.json"):
        assert (copy / "traces" / name).read_bytes() == (TRACES / name).read_bytes(), "run make_traces.py"


def test_the_sample_traces_are_otlp_json(tmp_path: Path) -> None:
    """Checked: every export of the bundled files parses as OTLP's ExportTraceServiceRequest (unknown fields fail)."""
    pytest.importorskip("opentelemetry.proto")
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    docs = [*(TRACES / "genai.jsonl").read_text().splitlines(), (TRACES / "openinference.json").read_text()]
    spans = [len(Parse(d, ExportTraceServiceRequest()).resource_spans[0].scope_spans[0].spans) for d in docs[:1]]  # q01
    assert spans == [3] and all(Parse(d, ExportTraceServiceRequest()).resource_spans for d in docs)


# -- schema-valid variants, and bad traces ---------------------------------------------------------------------------
def test_schema_valid_variants_are_rebuilt(tmp_path: Path) -> None:
    structured = [{"id": "d1", "score": 1, "source": "wiki"}, {"id": "d2", "score": 0.25}]  # extra keys allowed
    parts = [{"type": "text", "content": "p1"}, {"type": "text", "content": "p2"}]
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "question 1"}, {"type": "blob", "modality": "image",
                                                                                "content": "AAAA"}]},
    ]  # fmt: skip
    out = [
        {"role": "assistant", "parts": [{"type": "text", "content": "a"}, {"type": "text", "content": "b"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "second choice"}]},
    ]
    f = tmp_path / "t.jsonl"
    f.write_text(
        _doc(
            _retrieval(1, docs=structured),
            _chat(
                1,
                **{
                    "gen_ai.system_instructions": parts,
                    "gen_ai.input.messages": messages,
                    "gen_ai.output.messages": out,
                    "gen_ai.response.id": "r1",
                    "gen_ai.conversation.id": "c1",
                },
            ),
            _root(1),
        )
    )
    s = rebuild_dataset([f], tmp_path / "d.jsonl")
    (row,) = _rows(tmp_path / "d.jsonl")
    assert s.written == 1 and not s.problems
    assert row["retrieved_documents"] == [
        {"document_id": "d1", "relevance_score": 1},
        {"document_id": "d2", "relevance_score": 0.25},
    ]
    assert row["context"] == "p1\n\np2\n\nbe brief" and row["query"] == "question 1"  # the question is not context
    assert (row["response"], row["response_id"], row["conversation_id"]) == ("ab", "r1", "c1")


SEMCONV_CASES = sorted((ROOT / "tests" / "data" / "semconv_cases").glob("*.yaml"))


@pytest.mark.parametrize("case", SEMCONV_CASES, ids=[c.stem for c in SEMCONV_CASES])
def test_semconv_schema_cases_valid_rebuilt_invalid_located(case: Path, tmp_path: Path) -> None:
    """semantic-conventions-genai's schema test cases (ours, after theirs: tests/data/semconv_cases/): a
    schema-valid attribute gives a row, an invalid one an ``invalid`` problem locating each field in error."""
    import yaml

    c = yaml.safe_load(case.read_text())
    value = json.dumps(c["document"])
    spans = [_retrieval(1, docs=value), _chat(1)] if c["attribute"] == "gen_ai.retrieval.documents" else None
    f = tmp_path / "t.jsonl"
    f.write_text(_doc(*(spans or [_retrieval(1), _chat(1, **{c["attribute"]: value})]), _root(1)))
    s = rebuild_dataset([f], tmp_path / "d.jsonl")
    problems = _rows(tmp_path / "d.problems.jsonl")
    if c["errors"]:
        assert s.written == 0 and s.problems == {"invalid": 1}
        (p,) = problems
        assert [e["field"] for e in p["errors"]] == [c["attribute"] + e for e in c["errors"]]
        assert (p["trace_id"], p["line"], p["field"]) == (f"{1:032x}", 1, c["attribute"] + c["errors"][0])
        assert all(e["field"] in p["message"] for e in p["errors"])
    else:
        (row,) = _rows(tmp_path / "d.jsonl")
        assert {k: row[k] for k in c["row"]} == c["row"] and not s.problems
        assert [p["kind"] for p in problems] == c["notes"] and s.notes == dict.fromkeys(c["notes"], 1)


BAD = {
    "no_retrieval": lambda t: [_chat(t), _root(t)],
    "no_inference": lambda t: [_retrieval(t), _root(t)],
    "no_document_ids": lambda t: [_retrieval(t, docs=json.dumps([{"score": 0.3}])), _chat(t), _root(t)],
    "invalid": lambda t: [_retrieval(t, docs=json.dumps([{"id": "d1", "score": "high"}])), _chat(t), _root(t)],
    "content_capture_off": lambda t: [_retrieval(t), _chat(t, **{"gen_ai.input.messages": None}), _root(t)],
    "truncated": lambda t: [_retrieval(t, docs=json.dumps(DOCS)[:20]), _chat(t), _root(t)],
    "no_context": lambda t: [_retrieval(t), _chat(t, **{"gen_ai.system_instructions": None}), _root(t)],
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_trace_is_a_located_problem_and_the_good_ones_still_rows(kind: str, tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(
        _doc(_retrieval(1), _chat(1), _root(1)) + _doc(*BAD[kind](2)) + _doc(_retrieval(3), _chat(3), _root(3))
    )
    s = rebuild_dataset([f], tmp_path / "d.jsonl")
    assert [r["trace_id"][-1] for r in _rows(tmp_path / "d.jsonl")] == ["1", "3"]
    assert s.problems == {kind: 1} and s.traces == 3
    (p,) = _rows(tmp_path / "d.problems.jsonl")
    assert (p["kind"], p["trace_id"], p["file"], p["line"]) == (kind, f"{2:032x}", str(f), 2)
    assert p["fix"]
    if kind == "content_capture_off":
        assert (
            p["field"] == "gen_ai.input.messages" and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in p["fix"]
        )
    if kind == "truncated":
        assert "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in p["fix"]


def test_dropped_attributes_and_openinference_gaps_are_truncation(tmp_path: Path) -> None:
    oi = {"openinference.span.kind": "RETRIEVER", "input.value": "q", "retrieval.documents.0.document.id": "a",
          "retrieval.documents.2.document.id": "c"}  # fmt: skip
    f = tmp_path / "t.jsonl"
    f.write_text(
        _doc(_retrieval(1), _chat(1) | {"droppedAttributesCount": 2}, _root(1))
        + _doc(_span(2, 2, "retrieve", oi), _chat(2), _root(2))
    )
    s = rebuild_dataset([f], tmp_path / "d.jsonl")
    assert s.problems == {"truncated": 2} and s.written == 0
    assert [p["field"] for p in _rows(tmp_path / "d.problems.jsonl")] == [
        "attributes",
        "retrieval.documents.1.document.id",
    ]


def test_a_trace_split_across_files_is_merged_and_noted_a_late_span_is_a_problem(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    a.write_text(_doc(_retrieval(1)) + _doc(_retrieval(2), _chat(2), _root(2)))
    b.write_bytes(gzip.compress((_doc(_chat(1), _root(1)) + _doc(_span(2, 9, "late", {}))).encode()))
    s = rebuild_dataset([a, b], tmp_path / "d.jsonl")
    assert s.written == 2 and s.notes == {"split_across_files": 1} and s.problems == {"late_span": 1}
    no_root = tmp_path / "c.jsonl"
    no_root.write_text(_doc(_retrieval(5), _chat(5)))
    s = rebuild_dataset([no_root], tmp_path / "e.jsonl")
    assert s.written == 1 and s.notes == {"no_root": 1}


def test_openinference_reranker_after_retriever(tmp_path: Path) -> None:
    ret = {"openinference.span.kind": "RETRIEVER", "input.value": "q",
           **{f"retrieval.documents.{i}.document.{k}": v for i, d in enumerate(("a", "b"))
              for k, v in (("id", d), ("score", 1.0 - i))}}  # fmt: skip
    rr = {
        "openinference.span.kind": "RERANKER",
        "reranker.query": "q",
        "reranker.output_documents.0.document.id": "b",
        "reranker.output_documents.0.document.score": 3.5,
        "reranker.output_documents.0.document.content": "B",
    }
    llm = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
           "llm.input_messages.0.message.content": "context\n\nq", "llm.output_messages.0.message.content": "ok",
           "llm.model_name": "m2"}  # fmt: skip
    f = tmp_path / "t.jsonl"
    f.write_text(_doc(_span(1, 2, "r", ret, t=1), _span(1, 4, "rr", rr, t=2), _span(1, 3, "llm", llm, t=3), _root(1)))
    rebuild_dataset([f], tmp_path / "d.jsonl")
    (row,) = _rows(tmp_path / "d.jsonl")
    assert row["retrieved_documents"] == [{"document_id": "b", "relevance_score": 3.5, "content": "B"}]
    assert row["earlier_retrievals"] == [[{"document_id": "a", "relevance_score": 1.0},
                                          {"document_id": "b", "relevance_score": 0.0}]]  # fmt: skip
    assert (row["query"], row["context"], row["response"], row["model"]) == ("q", "context\n\nq", "ok", "m2")


def _msgs(*turns: tuple[str, str]) -> str:
    return json.dumps([{"role": r, "parts": [{"type": "text", "content": t}]} for r, t in turns])


def test_group_by_turn_splits_a_conversation_trace(tmp_path: Path) -> None:
    """One trace holding a conversation: turn 1 (retrieval, answer), turn 2 (a planning call, a retrieval, the
    answer: one turn, same user message), turn 3 (small talk, no retrieval: a located problem)."""

    def chat(span: int, t: int, sent: str, answer: str | None, system: str | None = None) -> dict[str, Any]:
        a = {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "c9", "gen_ai.input.messages": sent,
             "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [] if answer is None else
                                                    [{"type": "text", "content": answer}]}])}  # fmt: skip
        if system:
            a["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": system}])
        return _span(1, span, "chat", a, t=t * 10**6)  # t in ms

    def retrieval(span: int, t: int, query: str, doc: str) -> dict[str, Any]:
        a = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": query,
             "gen_ai.retrieval.documents": json.dumps([{"id": doc, "score": 1.0}])}  # fmt: skip
        return _span(1, span, "retrieval", a, t=t * 10**6)

    history = [("user", "question A"), ("assistant", "answer A"), ("user", "question B")]
    spans = [
        retrieval(2, 1, "question A", "dA"),
        chat(3, 2, _msgs(("user", "question A")), "answer A", system="passage A"),
        chat(4, 3, _msgs(*history), None),  # the agent plans a search: same user message, same turn
        retrieval(5, 4, "question B", "dB"),
        chat(6, 5, _msgs(*history), "answer B", system="passage B"),
        chat(7, 6, _msgs(*history, ("assistant", "answer B"), ("user", "thanks")), "you're welcome", system="hi"),
        _root(1),
    ]
    f = tmp_path / "t.jsonl"
    f.write_text(_doc(*spans))
    s = rebuild_dataset([f], tmp_path / "d.jsonl", group="turn")
    rows = _rows(tmp_path / "d.jsonl")
    assert [(r["turn"], r["query"], r["response"], r["span_id"]) for r in rows] == [
        (1, "question A", "answer A", f"{3:016x}"),
        (2, "question B", "answer B", f"{6:016x}"),
    ]
    assert rows[1]["context"] == "passage B\n\nquestion A\n\nanswer A"  # what was sent, history included
    assert [d["document_id"] for d in rows[1]["retrieved_documents"]] == ["dB"] and not rows[1]["earlier_retrievals"]
    assert rows[0]["conversation_id"] == rows[1]["conversation_id"] == "c9"
    assert [r["time"][-7:] for r in rows] == ["001000Z", "003000Z"]  # a turn's first span (turn 2: the planning)
    (p,) = _rows(tmp_path / "d.problems.jsonl")
    assert (p["kind"], p["span_id"], s.rows, s.traces) == ("no_retrieval", f"{7:016x}", 2, 1)
    rebuild_dataset([f], tmp_path / "e.jsonl", group="trace")  # by trace: the last call, every ranking
    (whole,) = _rows(tmp_path / "e.jsonl")
    assert whole["span_id"] == f"{7:016x}" and len(whole["earlier_retrievals"]) == 1 and "turn" not in whole


# -- filters, sampling, redaction -----------------------------------------------------------------------------------
def _many(path: Path, n: int) -> Path:
    with open(path, "w") as fh:
        for t in range(1, n + 1):
            tier = "gold" if t % 3 == 0 else "free"
            fh.write(
                _doc(
                    _retrieval(t),
                    _chat(t),
                    _root(t, **{"app.tier": tier, "app.cached": t % 4 == 0}),
                    service=f"svc{t % 2}",
                )
            )
    return path


def test_filters(tmp_path: Path) -> None:
    f = _many(tmp_path / "t.jsonl", 12)

    def traces(**kw: Any) -> list[int]:
        rebuild_dataset([f], tmp_path / "d.jsonl", **kw)
        return [int(r["trace_id"], 16) for r in _rows(tmp_path / "d.jsonl")]

    assert traces(since="2026-11-30T09:03:00Z", until="2026-11-30T09:06:00") == [3, 4, 5]  # [since, until)
    assert traces(services=["svc0"]) == [2, 4, 6, 8, 10, 12]
    assert traces(where=["app.tier=gold"]) == [3, 6, 9, 12]
    assert traces(where=["app.cached=true"]) == [4, 8, 12]  # a boolean as JSON spells it
    assert traces(where=["app.tier=gold", "gen_ai.request.model=m"], services=["svc1"]) == [3, 9]


def test_uniform_sample_is_reproducible_and_its_design_is_written(tmp_path: Path) -> None:
    f = _many(tmp_path / "t.jsonl", 30)
    rebuild_dataset([f], tmp_path / "a.jsonl", sample=7, seed=3)
    rebuild_dataset([f], tmp_path / "b.jsonl", sample=7, seed=3)
    rebuild_dataset([f], tmp_path / "c.jsonl", sample=7, seed=4)
    a, b, c = (_rows(tmp_path / f"{x}.jsonl") for x in "abc")
    assert a == b and len(a) == 7 and a != c
    design = json.loads((tmp_path / "a.sampling.json").read_text())
    assert (design["population"], design["drawn"]) == (30, 7)
    assert [r["query_id"] for r in design["rows"]] == [r["query_id"] for r in a]
    assert all(r["inclusion_probability"] == pytest.approx(7 / 30) for r in design["rows"])


def test_cli_sample_1000_is_reproducible_by_seed(tmp_path: Path) -> None:
    f = _many(tmp_path / "t.jsonl", 1500)
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        with pytest.raises(SystemExit) as exit_:
            main(["traces", str(f), "--out", str(tmp_path / f"{name}.jsonl"), "--sample", "1000", "--seed", str(seed),
                  "--quiet"])  # fmt: skip
        assert exit_.value.code in (None, 0)
    a, b, c = ((tmp_path / f"{x}.jsonl").read_bytes() for x in "abc")
    assert a == b and a != c and len(a.splitlines()) == 1000
    design = json.loads((tmp_path / "a.sampling.json").read_text())
    assert (design["seed"], design["population"], design["drawn"]) == (5, 1500, 1000)


def test_the_sampler_draws_each_row_with_probability_n_over_N() -> None:
    """Simulation with known truth: over 4000 seeds, each of 20 rows is drawn 4000·5/20 = 1000 times (±4σ)."""
    hits = [0] * 20
    for seed in range(4000):
        sampler = _Sampler(5, seed)
        for i in range(20):
            sampler.add("all", i, {"query_id": f"q{i}"})
        for seq, _, _ in sampler.draw()[0]:
            hits[seq] += 1
    sigma = (4000 * 0.25 * 0.75) ** 0.5
    assert all(abs(h - 1000) < 4 * sigma for h in hits) and sum(hits) == 20_000


def test_stratified_sample_allocates_in_proportion(tmp_path: Path) -> None:
    f = _many(tmp_path / "t.jsonl", 30)  # 10 gold, 20 free
    rebuild_dataset([f], tmp_path / "d.jsonl", sample=6, seed=1, stratify="app.tier")
    design = json.loads((tmp_path / "d.sampling.json").read_text())
    assert design["strata"] == {
        "free": {"population": 20, "drawn": 4, "inclusion_probability": 0.2},
        "gold": {"population": 10, "drawn": 2, "inclusion_probability": 0.2},
    }
    gold = {f"{t:032x}" for t in range(3, 31, 3)}
    rows = _rows(tmp_path / "d.jsonl")
    assert sum(r["trace_id"] in gold for r in rows) == 2 and len(rows) == 6


def test_redact_hashes_fields_and_secrets_are_redacted(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "use api_key=sk-abcdef1234567890"}]}]
    f.write_text(_doc(_retrieval(1), _chat(1, **{"gen_ai.output.messages": json.dumps(answer)}), _root(1)))
    rebuild_dataset([f], tmp_path / "d.jsonl", redact_fields=["query", "context"])
    (row,) = _rows(tmp_path / "d.jsonl")
    assert row["query"] == "sha256:" + hashlib.sha256(b"question 1").hexdigest()
    assert row["context"] == "sha256:" + hashlib.sha256(b"passage 1").hexdigest()
    assert row["response"] == "use api_key=***"
    assert "sk-abcdef" not in (tmp_path / "d.jsonl").read_text()


# -- the command line ----------------------------------------------------------------------------------------------
def test_cli_writes_the_dataset_and_names_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(_doc(_retrieval(1), _chat(1), _root(1)) + _doc(*BAD["content_capture_off"](2)))
    with pytest.raises(SystemExit) as exit_:
        main(["traces", str(f), "--out", str(tmp_path / "d.jsonl"), "--quiet"])
    assert exit_.value.code in (None, 0)
    out, err = capsys.readouterr()
    assert "2 traces: 1 requests rebuilt, 1 written" in out
    assert f"{f}:2: trace {2:032x}: gen_ai.input.messages: absent" in err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in err


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(_doc(*BAD["no_retrieval"](1)))
    for argv, code, text in [
        (["traces", str(f), "--out", str(tmp_path / "d.jsonl")], 1, "no request could be rebuilt from 1 trace(s)"),
        (["traces", str(f), "--out", str(f)], 2, "would overwrite its own input"),
        (["traces", str(f), "--out", str(tmp_path / "d.jsonl"), "--redact", "name"], 2, "--redact 'name'"),
        (["traces", str(f), "--out", str(tmp_path / "d.jsonl"), "--where", "x"], 2, "is not ATTR=VALUE"),
        (["traces", str(f), "--out", str(tmp_path / "d.jsonl"), "--stratify", "x"], 2, "--stratify needs"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == code, argv
        assert text in capsys.readouterr().err, argv
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": []}\nnot json\n{"x": 1}\n')
    with pytest.raises(SystemExit) as exit_:
        main(["traces", str(bad), "--out", str(tmp_path / "d.jsonl")])
    assert exit_.value.code == 1 and "no spans in the files given" in capsys.readouterr().err
    bad.write_text("not json\n" + _doc(_retrieval(1), _chat(1), _root(1)) + '{"x": 1}\n')
    s = rebuild_dataset([bad], tmp_path / "d.jsonl")
    assert s.written == 1 and s.problems == {"unreadable": 2}
    assert [(p["line"], p["kind"]) for p in _rows(tmp_path / "d.problems.jsonl")] == [
        (1, "unreadable"),
        (3, "unreadable"),
    ]
