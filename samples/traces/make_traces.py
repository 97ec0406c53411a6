"""Regenerate the sample traces from samples/benefits/rag_eval.jsonl (same queries), deterministically, with the
OpenTelemetry SDK (its span model and its OTLP encoder; the ids and times are fixed so the files never change):

- genai.jsonl: OpenTelemetry GenAI semantic conventions, one OTLP JSON export (``resourceSpans``) per line and per
  request: a server span, a ``retrieval`` span (``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents`` as a
  JSON string of ``[{id, score}]``) and a ``chat`` span (the retrieved passages as ``gen_ai.system_instructions``,
  the question as ``gen_ai.input.messages``, the answer as ``gen_ai.output.messages``). q02 and q09 first retrieve
  with a keyword search, then rerank: two retrieval spans, the second one's ranking the row's;
- openinference.json: the same requests as OpenInference spans (``CHAIN`` → ``RETRIEVER`` with the documents'
  ids, scores and text, ``LLM`` with ``llm.input_messages`` / ``llm.output_messages``), one pretty-printed OTLP JSON
  document for the whole file.

The attribute names and JSON shapes follow open-telemetry/semantic-conventions (v1.41 docs/gen-ai/*.json, moved
since to semantic-conventions-genai) and Arize-ai/openinference spec/semantic_conventions.md; the spans are our
own. ``foundry-bridge traces`` rebuilds the benefits rows from either file (tests/test_traces.py checks both, and
that the committed files are what this script writes).

python samples/traces/make_traces.py     (needs opentelemetry-sdk: pip install 'foundry-bridge[otel]')
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "benefits" / "rag_eval.jsonl"
START = 1_796_029_200 * 10**9  # 2026-11-30T09:00:00Z: request i starts i minutes later
MODEL = "gpt-4o-mini-2024-07-18"
RERANKED = ("q02", "q09")


def ids(convention: str, query_id: str) -> tuple[int, list[int]]:
    """The trace id and span ids of one request: from a hash of its query id, so they never change."""
    h = hashlib.sha512(f"benefits/{convention}/{query_id}".encode()).digest()
    return int.from_bytes(h[:16], "big"), [int.from_bytes(h[16 + 8 * i : 24 + 8 * i], "big") or 1 for i in range(4)]


def main() -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import SpanKind

    rows = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines() if line]

    class FixedIds(IdGenerator):
        trace_id, span_ids = 0, [0]

        def generate_trace_id(self) -> int:
            return self.trace_id

        def generate_span_id(self) -> int:
            return self.span_ids.pop(0)

    for convention in ("genai", "openinference"):
        exporter, id_gen = InMemorySpanExporter(), FixedIds()
        provider = TracerProvider(resource=Resource({"service.name": "benefits-assistant"}), id_generator=id_gen)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("benefits-assistant", "1.0.0")
        batches = []
        for i, r in enumerate(rows):
            id_gen.trace_id, id_gen.span_ids = ids(convention, r["query_id"])
            t0 = START + i * 60 * 10**9
            ms = 10**6
            if convention == "genai":
                with tracer.start_as_current_span(
                    "POST /ask", kind=SpanKind.SERVER, start_time=t0, end_on_exit=False
                ) as root:
                    rankings = [r["retrieved_documents"]]
                    if r["query_id"] in RERANKED:  # a keyword search first, then the reranker's order
                        rankings.insert(0, sorted(r["retrieved_documents"], key=lambda d: d["document_id"]))
                    for step, docs in enumerate(rankings):
                        source = "benefits-policies" if step == len(rankings) - 1 else "benefits-keyword"
                        span = tracer.start_span(
                            f"retrieval {source}", kind=SpanKind.CLIENT, start_time=t0 + (1 + step) * ms
                        )
                        span.set_attributes(
                            {
                                "gen_ai.operation.name": "retrieval",
                                "gen_ai.data_source.id": source,
                                "gen_ai.retrieval.query.text": r["query"],
                                "gen_ai.request.top_k": float(len(docs)),
                                "gen_ai.retrieval.documents": json.dumps(
                                    [{"id": d["document_id"], "score": d["relevance_score"]} for d in docs]
                                ),
                            }
                        )
                        span.end(end_time=t0 + (2 + step) * ms)
                    chat = tracer.start_span(f"chat {MODEL}", kind=SpanKind.CLIENT, start_time=t0 + 5 * ms)
                    chat.set_attributes(
                        {
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "azure.ai.openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "gen_ai.response.model": MODEL,
                            "gen_ai.response.id": "chatcmpl-" + hashlib.sha256(r["query_id"].encode()).hexdigest()[:24],
                            "gen_ai.conversation.id": f"conv-{r['query_id']}",
                            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": r["context"]}]),
                            "gen_ai.input.messages": json.dumps(
                                [{"role": "user", "parts": [{"type": "text", "content": r["query"]}]}]
                            ),
                            "gen_ai.output.messages": json.dumps(
                                [
                                    {
                                        "role": "assistant",
                                        "parts": [{"type": "text", "content": r["response"]}],
                                        "finish_reason": "stop",
                                    }
                                ]
                            ),
                        }
                    )
                    chat.end(end_time=t0 + 900 * ms)
                    root.end(end_time=t0 + 901 * ms)
            else:
                with tracer.start_as_current_span("query", start_time=t0, end_on_exit=False) as root:
                    root.set_attributes(
                        {"openinference.span.kind": "CHAIN", "input.value": r["query"], "output.value": r["response"]}
                    )
                    span = tracer.start_span("retrieve", start_time=t0 + ms)
                    span.set_attributes({"openinference.span.kind": "RETRIEVER", "input.value": r["query"]})
                    for j, d in enumerate(r["retrieved_documents"]):
                        span.set_attributes(
                            {
                                f"retrieval.documents.{j}.document.id": d["document_id"],
                                f"retrieval.documents.{j}.document.score": d["relevance_score"],
                                f"retrieval.documents.{j}.document.content": d["content"],
                            }
                        )
                    span.end(end_time=t0 + 2 * ms)
                    llm = tracer.start_span("llm", start_time=t0 + 5 * ms)
                    llm.set_attributes(
                        {
                            "openinference.span.kind": "LLM",
                            "llm.model_name": MODEL,
                            "llm.input_messages.0.message.role": "system",
                            "llm.input_messages.0.message.content": r["context"],
                            "llm.input_messages.1.message.role": "user",
                            "llm.input_messages.1.message.content": r["query"],
                            "llm.output_messages.0.message.role": "assistant",
                            "llm.output_messages.0.message.content": r["response"],
                        }
                    )
                    llm.end(end_time=t0 + 900 * ms)
                    root.end(end_time=t0 + 901 * ms)
            batches.append(otlp_json(exporter.get_finished_spans()))
            exporter.clear()
        if convention == "genai":
            text = "".join(json.dumps(b, ensure_ascii=False) + "\n" for b in batches)
        else:
            merged = {"resourceSpans": [rs for b in batches for rs in b["resourceSpans"]]}
            text = json.dumps(merged, ensure_ascii=False, indent=2) + "\n"
        (HERE / ("genai.jsonl" if convention == "genai" else "openinference.json")).write_text(text, encoding="utf-8")


def otlp_json(spans: Any) -> dict[str, Any]:
    """Spans as an OTLP JSON export: the SDK's protobuf encoding in protobuf's JSON mapping, with the ids in hex
    (OTLP JSON's one deviation from that mapping)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=True)

    def hex_ids(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hex_ids(v)
                for k, v in node.items()
            }
        return [hex_ids(x) for x in node] if isinstance(node, list) else node

    return hex_ids(doc)  # type: ignore[no-any-return]


if __name__ == "__main__":
    main()
