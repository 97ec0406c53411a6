"""Traces → dataset: one evaluation row per request, rebuilt from the spans a RAG app already emits.

Input is OTLP JSON (``{"resourceSpans": [...]}`` documents, one per line or one per file, gzip or not) in either
convention, OpenTelemetry GenAI or OpenInference, told apart by attribute names. docs/traces.md tables the
attributes read and the rules of a row: the last retrieval span's ranking (earlier ones in ``earlier_retrievals``),
the last inference span as the request (``query_id`` = ``<trace id>:<its span id>``), the query, the context as
sent (never rebuilt from the ranking) and the response. A trace that cannot give a row becomes a located problem
with its trace id and the fix, counted and written beside the dataset: no row is ever built with an empty context.

Traces are closed when their root span arrives (exporters write a span when it ends, the root last), so memory holds
the traces in flight, not the file; traces never closed are built at the end (``no_root``). ``sample`` keeps the n
rows with the smallest seeded hash of their query id per stratum (a simple random sample without replacement,
independent of file order), so only n rows per stratum are held.
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast

from ._io import atomic_open, dumps, loads, write_json
from .errors import DatasetError, UsageError, redact

__all__ = ["CAPTURE_ENV", "REDACTABLE", "TracesSummary", "rebuild_dataset", "side_files"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_LENGTH_HINT = (
    "raise the SDK's attribute limits (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT) or "
    "the collector's truncation, and export again"
)
_FIXES = {
    "no_retrieval": "instrument the retriever: a span with gen_ai.operation.name=retrieval "
    "(or openinference.span.kind=RETRIEVER) in the request's trace",
    "no_document_ids": "record gen_ai.retrieval.documents as [{id, score}] (OpenInference: "
    "retrieval.documents.{i}.document.id) on the retrieval span",
    "no_inference": "instrument the model call: a span with gen_ai.operation.name=chat (or "
    "openinference.span.kind=LLM) in the request's trace",
    "content_capture_off": f"turn content capture on: {CAPTURE_ENV}=true (SPAN_ONLY in the newer SDKs); "
    "OpenInference: unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS",
    "truncated": _LENGTH_HINT,
    "invalid": "emit the attribute as its JSON schema says (semantic-conventions-genai docs/gen-ai/*.json)",
    "no_query": "record gen_ai.retrieval.query.text on the retrieval span, or the user message",
    "no_context": "send the retrieved passages to the model (system instructions, a message's text or a tool "
    "response) with content capture on: the context is what was sent, never rebuilt from the ranking",
    "document_without_id": "give every retrieved document its id (gen_ai.retrieval.documents[i].id)",
    "empty_response": "the answer has no text part: check that the output messages carry the answer as text",
    "late_span": "give the files in the order they were written, so a trace's spans come before its root span",
    "no_root": "give every file of the time range: the trace's root span was not in the files read",
    "unreadable": 'each line must be one OTLP JSON document: {"resourceSpans": [...]}',
}
NOTES = ("no_root", "split_across_files", "document_without_id", "empty_response")  # counted, shown, row built
REDACTABLE = ("query", "context", "response", "content")
_RETRIEVAL_OPS = {"retrieval"}
_INFERENCE_OPS = {"chat", "text_completion", "generate_content"}
_SCHEMA_KEYS = {"gen_ai.retrieval.documents", "gen_ai.input.messages", "gen_ai.output.messages",
                "gen_ai.system_instructions"}  # fmt: skip
_TEXT_FIELD = {"text": "content", "tool_call_response": "response"}  # message parts that carry text sent
_OI_KIND = "openinference.span.kind"
_OI_DOC = re.compile(r"^(retrieval\.documents|reranker\.output_documents)\.(\d+)\.document\.(id|score|content)$")
_OI_MSG = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(role|content)$")


@dataclass
class TracesSummary:
    """What one ``rebuild_dataset`` read and wrote."""

    spans: int = 0
    traces: int = 0
    rows: int = 0  # rows rebuilt (before sampling)
    written: int = 0  # rows in the dataset
    problems: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    files: dict[str, str] = field(default_factory=dict)


class _Problem(Exception):
    def __init__(
        self,
        kind: str,
        message: str,
        span: dict[str, Any] | None = None,
        attr: str | None = None,
        errors: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind, self.message, self.span, self.attr, self.errors = kind, message, span, attr, errors


def side_files(out: Path) -> dict[str, Path]:
    """The files written beside ``out``: its problems (always) and its sampling design (with ``sample``)."""
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return {"problems": out.with_name(f"{stem}.problems.jsonl"), "design": out.with_name(f"{stem}.sampling.json")}


# -- reading OTLP JSON ----------------------------------------------------------------------------------------------
def _open(path: Path) -> IO[bytes]:
    """``path`` for reading bytes, gunzipped when it starts with gzip's magic number (whatever its name)."""
    with open(path, "rb") as fh:
        zipped = fh.read(2) == b"\x1f\x8b"
    return cast("IO[bytes]", gzip.open(path, "rb")) if zipped else open(path, "rb")


def _documents(path: Path, problem: Callable[[str, str, int | None], None]) -> Iterator[tuple[int | None, Any]]:
    """``(line, document)`` for each OTLP JSON document of ``path``: one per line, or the whole file as one (a
    pretty-printed ``.json``: line None)."""
    with _open(path) as fh:
        first = fh.readline()
        lines: Iterable[bytes] = fh
        try:
            doc = loads(first) if first.strip() else None
        except ValueError as exc:
            rest = fh.read()
            try:
                yield None, loads(first + rest)  # one document over several lines
                return
            except ValueError:
                doc, lines = None, rest.splitlines()
                problem("unreadable", f"not JSON ({exc})", 1)
        if doc is not None:
            yield 1, doc
        for n, line in enumerate(lines, 2):
            if not line.strip():
                continue
            try:
                yield n, loads(line)
            except ValueError as exc:
                problem("unreadable", f"not JSON ({exc})", n)


def _value(v: dict[str, Any]) -> Any:
    """An OTLP ``AnyValue`` as Python (``intValue`` is a string in OTLP JSON)."""
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return _attributes(v["kvlistValue"].get("values", []))
    return v.get("bytesValue")


def _attributes(kvs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: _value(kv.get("value") or {}) for kv in kvs}


def _hex_id(raw: str | None) -> str:
    """Trace and span ids are hex in OTLP JSON; protobuf's JSON mapping writes them base64: both read as hex."""
    if not raw:
        return ""
    if len(raw) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in raw):
        return raw.lower()
    import base64

    return base64.b64decode(raw).hex()


def _text(value: Any) -> str:
    """An attribute value as ``--where`` compares it: booleans as JSON spells them, the rest as ``str``."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _role(attrs: dict[str, Any]) -> str | None:
    op, oi = attrs.get("gen_ai.operation.name"), attrs.get(_OI_KIND)
    if op in _RETRIEVAL_OPS or oi in ("RETRIEVER", "RERANKER"):
        return "retrieval"
    if op in _INFERENCE_OPS or oi == "LLM":
        return "inference"
    return None


# -- one trace → one row -------------------------------------------------------------------------------------------
def _json_attr(span: dict[str, Any], key: str) -> Any:
    """A structured attribute, or one recorded as a JSON string (the SDKs' usual form); a string cut off by a
    length limit is ``truncated``, any other bad JSON ``invalid``, a value against its JSON schema ``invalid`` with
    every error located."""
    value = span["attrs"].get(key)
    if isinstance(value, str):
        try:
            value = loads(value)
        except ValueError as exc:
            cut = getattr(exc, "pos", 0) >= len(value.rstrip()) - 1
            kind = "truncated" if cut else "invalid"
            raise _Problem(kind, f"is not complete JSON ({len(value)} characters)", span, key) from None
    errors = [] if value is None else _schema_errors(key, value)
    if errors:
        located = [(f"{key}{path}", message) for path, message in errors]
        raise _Problem("invalid", "; ".join(f"{f}: {m}" for f, m in located), span, located[0][0], located)
    return value


def _schema_errors(key: str, value: Any) -> list[tuple[str, str]]:
    """``(path, message)`` for each way ``value`` breaks the JSON schema of the GenAI attribute ``key``
    (semantic-conventions-genai docs/gen-ai/gen-ai-{retrieval-documents,input-messages,output-messages,
    system-instructions}.json), limited to what those schemas constrain: the types of the fields that are present
    and the required ``role``, ``parts`` and part ``type``. ``id`` and ``score`` of a document are optional; a part
    of an unknown ``type`` is valid (a generic part)."""
    if key not in _SCHEMA_KEYS:
        return []
    if not isinstance(value, list):
        return [("", "is not an array")]
    errors: list[tuple[str, str]] = []

    def typed(item: dict[str, Any], at: str, name: str, want: type | tuple[type, ...], what: str) -> None:
        v = item.get(name)
        if name in item and (isinstance(v, bool) or not isinstance(v, want)):
            errors.append((f"{at}.{name}", f"{v!r} is not {what}"))

    def parts(items: Any, at: str) -> None:
        if not isinstance(items, list):
            errors.append((at, f"{items!r} is not an array"))
            return
        for j, part in enumerate(items):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                errors.append((f"{at}[{j}].type", "a part needs a string 'type'"))
            else:
                typed(part, f"{at}[{j}]", "generic_type", str, "a string")

    if key == "gen_ai.system_instructions":  # a list of parts
        parts(value, "")
        return errors
    for i, item in enumerate(value):
        at = f"[{i}]"
        if not isinstance(item, dict):
            errors.append((at, f"{item!r} is not an object"))
        elif key == "gen_ai.retrieval.documents":
            typed(item, at, "id", str, "a string")
            typed(item, at, "score", (int, float), "a number")
        else:
            for name in ("role", "parts"):
                if name not in item:
                    errors.append((at, f"'{name}' is a required property"))
            typed(item, at, "role", str, "a string")
            typed(item, at, "finish_reason", str, "a string")
            if "parts" in item:
                parts(item["parts"], f"{at}.parts")
    return errors


def _ranking(span: dict[str, Any], notes: list[_Problem]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(query text, documents)`` of one retrieval span, in either convention; what is left out goes to
    ``notes``."""
    attrs = span["attrs"]
    if "gen_ai.retrieval.documents" in attrs or attrs.get("gen_ai.operation.name") in _RETRIEVAL_OPS:
        key = "gen_ai.retrieval.documents"
        raw = _json_attr(span, key)
        if raw is None or raw == []:
            raise _Problem("no_document_ids", "the retrieval span has no documents", span, key)
        docs, without = [], []
        for i, d in enumerate(raw):  # id and score are optional in the schema; a document needs its id here
            if d.get("id"):
                docs.append(_doc(d["id"], d.get("score"), d.get("content")))
            else:
                without.append(f"{key}[{i}].id")
        if not docs:
            raise _Problem("no_document_ids", f"none of the {len(raw)} documents has an id", span, without[0])
        if without:
            notes.append(_Problem("document_without_id", f"{len(without)} document(s) without id left out of the "
                                  "ranking", span, without[0], [(w, "no id") for w in without]))  # fmt: skip
        return attrs.get("gen_ai.retrieval.query.text"), docs
    found: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = _OI_DOC.match(k)
        if m:
            found.setdefault(int(m.group(2)), {})[m.group(3)] = v
    prefix = "reranker.output_documents" if attrs.get(_OI_KIND) == "RERANKER" else "retrieval.documents"
    if not found:
        raise _Problem("no_document_ids", "the retriever span has no documents", span, f"{prefix}.0.document.id")
    if sorted(found) != list(range(len(found))):
        missing = min(set(range(max(found) + 1)) - set(found))
        raise _Problem("truncated", f"document {missing} is missing", span, f"{prefix}.{missing}.document.id")
    docs = []
    for i in range(len(found)):
        d = found[i]
        if d.get("id") in (None, ""):
            raise _Problem("no_document_ids", f"document {i} has no id", span, f"{prefix}.{i}.document.id")
        score = d.get("score")
        docs.append(_doc(str(d["id"]), score if isinstance(score, (int, float)) else None, d.get("content")))
    query = attrs.get("reranker.query") if prefix.startswith("reranker") else attrs.get("input.value")
    return query, docs


def _doc(doc_id: str, score: float | None, content: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"document_id": doc_id, "relevance_score": score}
    if isinstance(content, str):
        doc["content"] = content
    return doc


def _texts(parts: Any) -> list[str]:
    """The text of a message's ``parts`` or of a plain string content: GenAI ``text`` parts' ``content`` and
    ``tool_call_response`` parts' string ``response`` (a retrieval tool's passages, as sent); other parts (tool
    calls, reasoning, blobs, generic provider blocks) are not text sent as such."""
    if isinstance(parts, str):
        return [parts]
    out = []
    for p in parts or []:
        field = _TEXT_FIELD.get(str(p.get("type"))) if isinstance(p, dict) else None
        if field and isinstance(p.get(field), str):
            out.append(p[field])
    return out


def _exchange(span: dict[str, Any]) -> tuple[list[tuple[str, list[str]]], str]:
    """``([(role, texts)] sent, response text)`` of one inference span: system instructions first."""
    attrs = span["attrs"]
    if attrs.get(_OI_KIND) == "LLM":
        msgs: dict[tuple[str, int], dict[str, Any]] = {}
        for k, v in attrs.items():
            m = _OI_MSG.match(k)
            if m:
                msgs.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = v
        sent = [(msgs[k].get("role", ""), _texts(msgs[k].get("content"))) for k in sorted(msgs) if k[0] == "input"]
        out = [msgs[k] for k in sorted(msgs) if k[0] == "output"]
        if not sent:
            raise _Problem("content_capture_off", "the LLM span has no input messages", span, "llm.input_messages")
        if not out:
            raise _Problem("content_capture_off", "the LLM span has no output messages", span, "llm.output_messages")
        return sent, "".join(_texts(out[0].get("content")))
    key = "gen_ai.input.messages"
    if key not in attrs:
        raise _Problem("content_capture_off", "absent: message content was not captured", span, key)
    sent = [("system", _texts(_json_attr(span, "gen_ai.system_instructions")))]
    sent += [(m["role"], _texts(m["parts"])) for m in _json_attr(span, key) or []]
    if "gen_ai.output.messages" not in attrs:
        raise _Problem(
            "content_capture_off", "absent: message content was not captured", span, "gen_ai.output.messages"
        )
    out = _json_attr(span, "gen_ai.output.messages") or []
    return sent, "".join(_texts(out[0].get("parts"))) if out and isinstance(out[0], dict) else ""


def _row(trace_id: str, trace: dict[str, Any], notes: list[_Problem]) -> dict[str, Any]:
    spans = sorted(trace["spans"], key=lambda s: (s["start"], s["seq"]))
    for s in spans:
        if s["dropped"]:
            raise _Problem("truncated", f"{s['dropped']} attribute(s) dropped by the SDK's limits", s, "attributes")
    retrievals = [s for s in spans if s["role"] == "retrieval"]
    inferences = [s for s in spans if s["role"] == "inference"]
    if not retrievals:
        raise _Problem("no_retrieval", "the trace has no retrieval span")
    if not inferences:
        raise _Problem("no_inference", "the trace has no inference span (no model call)")
    rankings = [_ranking(s, notes) for s in retrievals]
    request = inferences[-1]
    sent, response = _exchange(request)
    query = rankings[0][0]
    if not query:
        users = [texts for role, texts in sent if role == "user" and texts]
        query = users[-1][-1] if users else None
    if not query:
        raise _Problem("no_query", "no query text on the retrieval span nor a user message", retrievals[0])
    parts = [t for _, texts in sent for t in texts if t != query]
    if not "".join(parts).strip():
        raise _Problem("no_context", "nothing but the query was sent to the model: no context to judge", request)
    if not response:
        notes.append(_Problem("empty_response", "the first output message has no text part", request))
    attrs = request["attrs"]
    return {
        "query_id": f"{trace_id}:{request['span_id']}",
        "query": query,
        "retrieved_documents": rankings[-1][1],
        "earlier_retrievals": [docs for _, docs in rankings[:-1]],
        "context": "\n\n".join(parts),
        "response": response,
        "response_id": attrs.get("gen_ai.response.id"),
        "model": attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or attrs.get("llm.model_name"),
        "conversation_id": attrs.get("gen_ai.conversation.id") or attrs.get("session.id"),
        "time": datetime.fromtimestamp(trace["start"] / 1e9, tz=UTC).isoformat(timespec="microseconds")[:-6] + "Z",
        "service": trace["service"],
        "trace_id": trace_id,
        "span_id": request["span_id"],
    }


def _last_user_text(span: dict[str, Any]) -> str | None:
    """The last user message's text of an inference span, or None when it cannot be read."""
    try:
        sent, _ = _exchange(span)
    except _Problem:
        return None
    users = [texts for role, texts in sent if role == "user" and texts]
    return "\n".join(users[-1]) if users else None


def _turns(spans: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A trace's spans (start order) cut into conversation turns: a new turn starts with a model call whose last
    user message differs from the turn's; its retrieval spans are those after the previous turn's last model call.
    Model calls with the same user message (an agent's planning call, the call after a tool) stay in one turn."""
    spans = sorted(spans, key=lambda s: (s["start"], s["seq"]))
    turns: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    key: str | None = None
    for s in spans:
        if s["role"] == "inference":
            k = _last_user_text(s)
            if k is not None and key is not None and k != key:
                last = max(i for i, x in enumerate(current) if x["role"] == "inference")
                turns.append(current[: last + 1])
                current = current[last + 1 :]
            key = k if k is not None else key
        current.append(s)
    return [*turns, current]


def _clean(row: dict[str, Any], hashed: Sequence[str]) -> dict[str, Any]:
    """Secret-looking text redacted (``errors.redact``), then the ``hashed`` user text fields replaced by
    ``sha256:<hex>`` of their text (the same text always gives the same hash, so rows can still be joined)."""

    def scrub(name: str, text: Any) -> Any:
        if not isinstance(text, str):
            return text
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest() if name in hashed else redact(text)

    for name in ("query", "context", "response", "model"):
        row[name] = scrub(name, row[name])
    for docs in (row["retrieved_documents"], *row["earlier_retrievals"]):
        for d in docs:
            if "content" in d:
                d["content"] = scrub("content", d["content"])
    return row


# -- sampling --------------------------------------------------------------------------------------------------------
def _allocation(strata: Counter[str], n: int) -> dict[str, int]:
    """Proportional allocation of ``n`` draws over ``strata`` (sizes), by largest remainder (ties: stratum name);
    a stratum never gets more than its size."""
    total = sum(strata.values())
    if total <= n:
        return dict(strata)
    exact = {s: n * size / total for s, size in strata.items()}
    alloc = {s: int(x) for s, x in exact.items()}
    for s in sorted(exact, key=lambda s: (alloc[s] - exact[s], s))[: n - sum(alloc.values())]:
        alloc[s] += 1
    return alloc


class _Sampler:
    """Per stratum, the ``n`` rows with the smallest ``blake2b(seed:query_id)``: a simple random sample without
    replacement of each stratum (order of the files does not matter), holding at most ``n`` rows per stratum."""

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.seed = n, seed
        self.sizes: Counter[str] = Counter()
        self.heaps: dict[str, list[tuple[float, int, dict[str, Any]]]] = {}

    def add(self, stratum: str, seq: int, row: dict[str, Any]) -> None:
        self.sizes[stratum] += 1
        digest = hashlib.blake2b(f"{self.seed}:{row['query_id']}".encode(), digest_size=8).digest()
        item = (-int.from_bytes(digest, "big") / 2.0**64, seq, row)
        heap = self.heaps.setdefault(stratum, [])
        if len(heap) < self.n:
            heapq.heappush(heap, item)
        elif item[0] > heap[0][0]:
            heapq.heapreplace(heap, item)

    def draw(self) -> tuple[list[tuple[int, str, dict[str, Any]]], dict[str, int]]:
        """``([(seq, stratum, row)] in reading order, {stratum: drawn})``."""
        alloc = _allocation(self.sizes, self.n)
        drawn = [(seq, s, row) for s, heap in self.heaps.items() for _, seq, row in heapq.nlargest(alloc[s], heap)]
        return sorted(drawn, key=lambda d: d[0]), alloc


# -- reading spans ---------------------------------------------------------------------------------------------------
Report = Callable[..., None]


def _spans(paths: Sequence[Path], report: Report) -> Iterator[tuple[str, int | None, dict[str, Any], dict[str, Any]]]:
    """``(file, line, resource attributes, span)`` for every span of ``paths``, in file order."""
    for path in paths:
        name = str(path)

        def unreadable(kind: str, message: str, line: int | None, name: str = name) -> None:
            report(kind, message, None, name, line)

        try:
            for line, doc in _documents(path, unreadable):
                if not isinstance(doc, dict) or "resourceSpans" not in doc:
                    report("unreadable", "no resourceSpans: not an OTLP JSON trace export", None, name, line)
                    continue
                for rs in doc["resourceSpans"]:
                    resource = _attributes((rs.get("resource") or {}).get("attributes", []))
                    for ss in rs.get("scopeSpans", []):
                        for raw in ss.get("spans", []):
                            yield name, line, resource, raw
        except OSError as exc:
            raise DatasetError(f"cannot read: {exc.strerror or exc}", file=name, hint="check the path") from exc
        except ValueError as exc:
            raise DatasetError(f"not OTLP JSON ({exc})", file=name, hint=_FIXES["unreadable"]) from exc


def _instant(text: str | None, name: str) -> int | None:
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{name} {text!r} is not an ISO 8601 time such as 2026-11-30T00:00:00Z") from None
    return int((t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp() * 1e9)


def _conditions(where: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for w in where:
        key, eq, value = w.partition("=")
        if not eq or not key:
            raise UsageError(f"--where {w!r} is not ATTR=VALUE (e.g. --where gen_ai.request.model=gpt-4o)")
        out.append((key, value))
    return out


class _Rebuild:
    """The state of one ``rebuild_dataset``: traces in flight, closed trace ids, problems, the sink of rows."""

    def __init__(
        self, keep_keys: set[str], wanted: Callable[[dict[str, Any]], bool], redact_fields: Sequence[str], group: str
    ) -> None:
        self.summary, self.group = TracesSummary(), group
        self.problems: list[dict[str, Any]] = []
        self.open: dict[str, dict[str, Any]] = {}
        self.closed: set[str] = set()
        self.keep_keys, self.wanted, self.redact_fields = keep_keys, wanted, redact_fields

    def report(self, kind: str, message: str, trace_id: str | None, file: str, line: int | None, **at: Any) -> None:
        (self.summary.notes if kind in NOTES else self.summary.problems)[kind] += 1
        self.problems.append(
            {"kind": kind, "trace_id": trace_id, "file": file, "line": line, **at, "message": message,
             "fix": _FIXES.get(kind)}
        )  # fmt: skip

    def add(self, file: str, line: int | None, resource: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any] | None:
        """Take one span; the trace when this span closed it (its root), else None."""
        trace_id = _hex_id(raw.get("traceId"))
        if trace_id in self.closed:
            what = f"span {raw.get('name')!r} came after its trace's root span: it is not in the row"
            self.report("late_span", what, trace_id, file, line, span_id=_hex_id(raw.get("spanId")))
            return None
        trace = self.open.get(trace_id)
        if trace is None:
            trace = self.open[trace_id] = {"id": trace_id, "spans": [], "files": [], "seen": {}, "service": None,
                                           "start": 2**63}  # fmt: skip
        if file not in trace["files"]:
            trace["files"].append(file)
        attrs = _attributes(raw.get("attributes", []))
        start = int(raw.get("startTimeUnixNano") or 0)
        trace["start"] = min(trace["start"], start)
        root = not _hex_id(raw.get("parentSpanId"))
        if root or trace["service"] is None:
            trace["service"] = resource.get("service.name", trace["service"])
        for key in self.keep_keys:
            for source in (attrs, resource):
                if key in source:
                    trace["seen"].setdefault(key, []).append(_text(source[key]))
        role = _role(attrs)
        if role:
            trace["spans"].append(
                {"role": role, "attrs": attrs, "span_id": _hex_id(raw.get("spanId")), "name": raw.get("name"),
                 "start": start, "seq": self.summary.spans, "file": file, "line": line,
                 "dropped": int(raw.get("droppedAttributesCount") or 0)}
            )  # fmt: skip
        if not root:
            return None
        del self.open[trace_id]
        self.closed.add(trace_id)
        return trace

    def rows(self, trace: dict[str, Any]) -> list[dict[str, Any]]:
        """The trace's rows (secrets redacted, fields hashed): one, or one per turn with ``group="turn"``; none
        when filtered out, or for a problem (reported)."""
        self.summary.traces += 1
        if len(trace["files"]) > 1:
            self.report("split_across_files", f"spans in {len(trace['files'])} files, merged", trace["id"],
                        " + ".join(trace["files"]), None)  # fmt: skip
        if not self.wanted(trace):
            return []
        turns = _turns(trace["spans"]) if self.group == "turn" else [trace["spans"]]
        rows = []
        for n, spans in enumerate(turns, 1):
            part = trace
            if self.group == "turn":  # the turn's spans; its time is its first span's
                part = {**trace, "spans": spans, "start": min((s["start"] for s in spans), default=trace["start"])}
            notes: list[_Problem] = []
            try:
                row = _row(trace["id"], part, notes)
            except _Problem as p:
                self.located(part, p)
                continue
            for note in notes:
                self.located(part, note)
            if self.group == "turn":
                row["turn"] = n
            self.summary.rows += 1
            rows.append(_clean(row, self.redact_fields))
        return rows

    def located(self, trace: dict[str, Any], p: _Problem) -> None:
        s = p.span or (trace["spans"][0] if trace["spans"] else None)
        at: dict[str, Any] = {"span_id": s["span_id"], "span": s["name"]} if s else {}
        file, line = (s["file"], s["line"]) if s else (trace["files"][0], None)
        if p.attr:
            at["field"] = p.attr
        if p.errors:
            at["errors"] = [{"field": f, "message": m} for f, m in p.errors]
        located = p.kind == "invalid" and p.errors  # the message already names each field
        message = f"{p.attr}: {p.message}" if p.attr and not located else p.message
        self.report(p.kind, message, trace["id"], file, line, **at)


def rebuild_dataset(
    files: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    since: str | None = None,
    until: str | None = None,
    services: Sequence[str] = (),
    where: Sequence[str] = (),
    sample: int | None = None,
    seed: int = 0,
    stratify: str | None = None,
    redact_fields: Sequence[str] = (),
    group: str = "trace",
    progress: Callable[[str, int, int | None], None] | None = None,
) -> TracesSummary:
    """Rebuild a dataset (JSONL in Foundry's field names: read it with ``mappings/traces.yaml``) from the traces in
    ``files``; write it to ``out``, with ``<out>.problems.jsonl`` beside it (one located problem per line, with its
    fix) and, with ``sample``, the sampling design ``<out>.sampling.json`` (each drawn row with its inclusion
    probability).

    Args:
        since, until: ISO 8601 times; a trace is kept when its first span started in ``[since, until)``.
        services: keep the traces whose root span's ``service.name`` (resource attribute) is one of these.
        where: ``ATTR=VALUE`` conditions, all to hold: some span (or its resource) of the trace has ``ATTR`` with
            that value (compared as text).
        sample, seed: keep ``sample`` rows drawn uniformly without replacement, reproducibly by ``seed``;
            ``stratify``: an attribute whose values are strata (proportional allocation, largest remainder).
        redact_fields: of ``REDACTABLE``: these texts are written as their SHA-256 (``content``: the documents').
        group: ``"trace"``: one row per trace (its last model call); ``"turn"``: one row per conversation turn
            of the trace (``_turns``), numbered in ``turn``.
        progress: ``progress("reading spans", spans read, None)`` every 10,000 spans.

    Returns:
        What was read, built, written and found wrong (``TracesSummary``).
    """
    unknown = [f for f in redact_fields if f not in REDACTABLE]
    if unknown:
        raise UsageError(f"--redact {unknown[0]!r} is not a text field; choose among {', '.join(REDACTABLE)}")
    if group not in ("trace", "turn"):
        raise UsageError(f"--group {group!r}: choose trace or turn")
    if stratify and not sample:
        raise UsageError("--stratify needs --sample N")
    lo, hi = _instant(since, "--since"), _instant(until, "--until")
    conds = _conditions(where)

    def wanted(trace: dict[str, Any]) -> bool:
        if (lo is not None and trace["start"] < lo) or (hi is not None and trace["start"] >= hi):
            return False
        if services and trace["service"] not in services:
            return False
        return all(value in trace["seen"].get(key, ()) for key, value in conds)

    state = _Rebuild({k for k, _ in conds} | ({stratify} if stratify else set()), wanted, redact_fields, group)
    summary, out = state.summary, Path(out)
    sampler = _Sampler(sample, seed) if sample is not None else None
    targets = side_files(out)
    with atomic_open(out) as fh:

        def take(trace: dict[str, Any]) -> None:
            for row in state.rows(trace):
                if sampler is None:
                    fh.write(dumps(row) + b"\n")
                    summary.written += 1
                    continue
                stratum = next(iter(trace["seen"].get(stratify, ())), "(none)") if stratify else "all"
                sampler.add(stratum, summary.rows, row)

        for file, line, resource, raw in _spans([Path(f) for f in files], state.report):
            summary.spans += 1
            if progress and summary.spans % 10_000 == 0:
                progress("reading spans", summary.spans, None)
            closed = state.add(file, line, resource, raw)
            if closed is not None:
                take(closed)
        for trace in list(state.open.values()):
            state.report("no_root", "no root span in the files read: built from the spans found", trace["id"],
                         trace["files"][0], None)  # fmt: skip
            take(trace)
        if progress:
            progress("reading spans", summary.spans, summary.spans)
        if summary.spans == 0:
            raise DatasetError(
                "no spans in the files given", file=", ".join(map(str, files)), hint=_FIXES["unreadable"]
            )
        if sampler is not None:
            drawn, alloc = sampler.draw()
            for _, _, row in drawn:
                fh.write(dumps(row) + b"\n")
            summary.written = len(drawn)
    with atomic_open(targets["problems"]) as ph:
        for p in state.problems:
            ph.write(dumps(p) + b"\n")
    summary.files = {"dataset": str(out), "problems": str(targets["problems"])}
    if sampler is not None:
        sizes = sampler.sizes
        design = {
            "design": "stratified simple random sampling without replacement" if stratify
            else "simple random sampling without replacement",
            "stratify": stratify, "seed": seed, "sample": sample, "population": sum(sizes.values()),
            "drawn": summary.written,
            "strata": {s: {"population": n, "drawn": alloc[s], "inclusion_probability": alloc[s] / n}
                       for s, n in sorted(sizes.items())},
            "rows": [{"query_id": row["query_id"], "stratum": s, "inclusion_probability": alloc[s] / sizes[s]}
                     for _, s, row in drawn],
        }  # fmt: skip
        write_json(targets["design"], design)
        summary.files["design"] = str(targets["design"])
    return summary
