"""OpenTelemetry: one ``gen_ai.evaluation.result`` event per query × metric of a report.

The event and its attributes follow the OpenTelemetry GenAI semantic conventions (``gen_ai.evaluation.name``,
``.score.value``, ``.score.label``, ``.explanation``, ``gen_ai.response.id``, ``error.type``), with
``microsoft.custom_event.name`` for Azure Monitor's customEvents, namespaced ``foundry_bridge.*`` attributes for
the query and the run's identity, and as parent the span a W3C ``traceparent`` names (else the current context).
A score is never invented: an errored or missing judge score is an event without a value, with ``error.type``;
the label is the verdict as the report reads it for the query's kind. docs/ci.md lists every attribute.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..errors import BackendError, UsageError, option, spelled

if TYPE_CHECKING:
    from ..report import QueryRow, Report

__all__ = [
    "EVENT_NAME",
    "EXPORTERS",
    "emit_evaluation_events",
    "evaluation_attributes",
    "parent_context",
    "report_rows",
    "resource_attributes",
    "run_identity",
]

EVENT_NAME = "gen_ai.evaluation.result"
NAME, VALUE, LABEL = "gen_ai.evaluation.name", "gen_ai.evaluation.score.value", "gen_ai.evaluation.score.label"
EXPLANATION, RESPONSE_ID, ERROR_TYPE = "gen_ai.evaluation.explanation", "gen_ai.response.id", "error.type"
EXPORTERS = ("otlp", "console", "azure-monitor")
AZURE_EVENT_NAME = "microsoft.custom_event.name"  # Azure Monitor files a log record under customEvents by it
Exporter = Literal["otlp", "console", "azure-monitor"]
Source = Literal["local", "foundry"]
_FLUSH_EVERY = 4096  # events queued before a flush: the batch processor drops what overflows its queue
_SKIPPED = {"n_rel"}  # a count of labels, not an evaluation


def report_rows(report: Report) -> Iterator[QueryRow]:
    """Every query row of ``report``: ``report.queries`` when it kept every row, else read back as the report's
    tables read them (its per-query file, or the rows built again from its run folder)."""
    if report.per_query.complete:
        yield from report.queries
        return
    from ..report import QueryRow
    from ..report._frames import _row_lines

    yield from map(QueryRow.model_validate, _row_lines(report))


def run_identity(report: Report) -> dict[str, Any]:
    """The run's identity as attributes of each event (None left out): ``foundry_bridge.eval.id``,
    ``foundry_bridge.run.ids``, ``foundry_bridge.dataset.sha256``, ``foundry_bridge.run.dir``."""
    p = report.provenance
    attrs = {
        "foundry_bridge.eval.id": p.eval_id,
        "foundry_bridge.run.ids": list(p.run_ids) or None,
        "foundry_bridge.dataset.sha256": p.dataset_sha256,
        "foundry_bridge.run.dir": p.run_dir,
    }
    return {k: v for k, v in attrs.items() if v is not None}


def resource_attributes(report: Report) -> dict[str, Any]:
    """The run's identity as resource attributes: set once per export, not on every event. ``service.name`` is
    ``foundry-bridge`` unless ``OTEL_SERVICE_NAME`` says otherwise."""
    p = report.provenance
    attrs: dict[str, Any] = {"service.version": p.tool_version, **run_identity(report)}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attrs["service.name"] = "foundry-bridge"
    optional = {
        "foundry_bridge.backend": p.backend,
        "foundry_bridge.report_url": p.report_url,
        "foundry_bridge.plan.fingerprint": p.plan_fingerprint,
        "foundry_bridge.run.status": p.run_status,
    }
    attrs.update({k: v for k, v in optional.items() if v is not None})
    return attrs


def _error_type(error: str | None) -> str:
    """``"CODE: message"`` → ``CODE``; anything else → ``_OTHER`` (the semantic conventions' fallback)."""
    head = (error or "").split(":", 1)[0].strip()
    return head if head and " " not in head and len(head) <= 64 else "_OTHER"


def _foundry_attributes(score: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if score.status == "scored":
        if score.score is not None and math.isfinite(score.score):
            attrs[VALUE] = float(score.score)
        label = score.label if score.passed is None else ("pass" if score.passed else "fail")
        if label:
            attrs[LABEL] = label
        if score.label and score.label != label:  # the report read the verdict for the query's kind
            attrs["foundry_bridge.service_label"] = score.label
        if score.reason:
            attrs[EXPLANATION] = score.reason
    elif score.status == "errored":
        attrs[ERROR_TYPE] = _error_type(score.error)
        attrs[EXPLANATION] = score.error or "the evaluator failed on this row"
    else:
        attrs[ERROR_TYPE] = "missing"
        attrs[EXPLANATION] = "no result for this row (or a null score without an error)"
    return attrs


class _ResponseIds:
    """Each report row's response id, read from the run's columns (``columns.RunColumns``, the ``response_id``
    column: the item field the mapping names) a block of rows at a time: the report's rows come in dataset order
    (``QueryRow.row`` is the row), so memory stays flat."""

    BLOCK = 65_536

    def __init__(self, run: Any) -> None:  # columns.RunColumns
        self._run = run
        self._lo = self._hi = 0
        self._ids: list[Any] = []
        self._values: list[Any] = []

    def __call__(self, row: QueryRow) -> str | None:
        if not self._lo <= row.row < self._hi:
            if not 0 <= row.row < self._run.n_queries:
                return None
            self._lo = row.row - row.row % self.BLOCK
            self._hi = min(self._run.n_queries, self._lo + self.BLOCK)
            self._ids = self._run.texts("query_id", self._lo, self._hi)
            self._values = self._run.texts("response_id", self._lo, self._hi)
        at = row.row - self._lo
        return self._values[at] if self._ids[at] == row.query_id else None


def _response_ids(report: Report, given: Mapping[str, str] | None) -> Callable[[QueryRow], str | None] | None:
    """Each row's response id: from ``given`` (query id → id) when the caller gives it; else from the item field
    the run's mapping names as ``response_id``, as the run's columns hold it (the report's own ``RunColumns`` when it
    was built here, else the run folder's, when it is at hand)."""
    if given is not None:
        return lambda row: given.get(row.query_id)
    from ..columns import RunColumns
    from ..runfolder import RunFolder

    columns = getattr(report, "_columns", None)
    run = getattr(columns, "run", None)
    if run is None:
        folder = RunFolder(report.provenance.run_dir)
        if not folder.file("plan").is_file():
            return None
        plan = folder.read_plan(items=False, records=False)
        if plan.mapping.response_id is None:
            return None
        run = RunColumns.open(folder.path, stage_k=report.params.stage_k, plan=plan)
    return None if run.params.response_id is None else _ResponseIds(run)


def evaluation_attributes(
    report: Report,
    *,
    rows: Iterable[QueryRow] | None = None,
    sources: Sequence[Source] = ("foundry", "local"),
    response_ids: Mapping[str, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """The attributes of every ``gen_ai.evaluation.result`` event: one per query × metric of ``sources``, in query
    order then the report's metric order. ``gen_ai.response.id`` from ``response_ids`` (query id → id), else from
    the field the run's mapping names (``response_id``). No OpenTelemetry import (the events' content, testable
    alone)."""
    infos = [m for m in report.metrics if m.source in sources and m.key not in _SKIPPED]
    response_id = _response_ids(report, response_ids)
    for row in report_rows(report) if rows is None else rows:
        common: dict[str, Any] = {
            "foundry_bridge.query_id": row.query_id,
            "foundry_bridge.query.kind": row.kind,
            "foundry_bridge.stage": row.stage,
        }
        if response_id is not None and (rid := response_id(row)) is not None:
            common[RESPONSE_ID] = rid
        for info in infos:
            attrs: dict[str, Any] = {NAME: info.key, **common, "foundry_bridge.metric.source": info.source}
            if info.source == "foundry":
                score = row.foundry.get(info.key)
                if score is None:
                    continue  # the criterion does not apply to this row's shape: nothing was expected
                attrs.update({"foundry_bridge.criterion": info.criterion, "foundry_bridge.evaluator": info.evaluator})
                attrs.update(_foundry_attributes(score))
            else:
                value = row.local.get(info.key)
                if value is not None and math.isfinite(value):
                    attrs[VALUE] = float(value)
                else:
                    attrs[EXPLANATION] = "undefined: no label reaches the relevance threshold"
            yield {k: v for k, v in attrs.items() if v is not None}


_TRACEPARENT_FORM = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"  # the W3C recommendation's example


def parent_context(traceparent: str, *, origin: str = "traceparent") -> Any:
    """The OpenTelemetry context whose (remote) span is the one a W3C ``traceparent`` header names, parsed by the
    SDK's own ``TraceContextTextMapPropagator``: ``version-traceid-parentid-flags``, 32 and 16 lowercase hex digits,
    ids not all zeros. Anything else is a ``UsageError`` naming ``origin`` (the option or variable it came from)."""
    try:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError as exc:
        raise UsageError("a traceparent needs OpenTelemetry: pip install 'foundry-bridge[otel]'") from exc
    context = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    if not trace.get_current_span(context).get_span_context().is_valid:
        raise UsageError(
            f"{origin}: {traceparent!r} is not a W3C traceparent (version-traceid-parentid-flags, e.g. "
            f"{_TRACEPARENT_FORM}: 32 and 16 lowercase hex digits, not all zeros); pass the traceparent of the "
            "span the events belong to, or none"
        )
    return context


_ENDPOINT = spelled("endpoint=", "--otel-endpoint")


def _wanted(kind: str) -> str:
    """The exporter as the caller chose it: ``exporter='otlp'`` in Python, ``--otel otlp`` on the command line."""
    return option("exporter", kind, cli=f"--otel {kind}")


def _exporter(kind: Exporter, endpoint: str | None) -> Any:
    """A standard SDK log exporter. OTLP over HTTP/protobuf reads the usual ``OTEL_EXPORTER_OTLP_*`` variables
    when ``endpoint`` is None; Azure Monitor reads ``APPLICATIONINSIGHTS_CONNECTION_STRING``."""
    if kind == "console":
        import sys

        from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter

        return ConsoleLogRecordExporter(out=sys.stderr)
    if kind == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        except ImportError as exc:
            raise UsageError(
                f"{_wanted('otlp')} needs the OTLP exporter: pip install 'foundry-bridge[otel]' "
                "(opentelemetry-exporter-otlp-proto-http)"
            ) from exc
        return OTLPLogExporter(endpoint=endpoint) if endpoint else OTLPLogExporter()
    try:
        from azure.monitor.opentelemetry.exporter import AzureMonitorLogExporter
    except ImportError as exc:
        raise UsageError(
            f"{_wanted('azure-monitor')} needs Azure Monitor's exporter: pip install "
            "azure-monitor-opentelemetry-exporter"
        ) from exc
    conn = endpoint or os.environ.get("APPLICATIONINSIGHTS_CONNECTION_STRING")
    if not conn:
        raise UsageError(
            f"{_wanted('azure-monitor')} needs the Application Insights connection string: set "
            f"APPLICATIONINSIGHTS_CONNECTION_STRING (or pass it as {_ENDPOINT})"
        )
    return AzureMonitorLogExporter(connection_string=conn)


def _counting(inner: Any) -> Any:
    """``inner`` wrapped to count the records its exports failed on (the batch processor only logs them)."""
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

    class Counting(LogRecordExporter):
        failed = 0

        def export(self, batch: Any) -> Any:
            result = inner.export(batch)
            if result != LogRecordExportResult.SUCCESS:
                self.failed += len(batch)
            return result

        def shutdown(self) -> None:
            inner.shutdown()

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return bool(inner.force_flush(timeout_millis))

    return Counting()


def _provider(report: Report, exporter: Exporter, endpoint: str | None) -> tuple[Any, Any]:
    """A logger provider with the run's resource attributes and a batch processor on ``exporter``, and the
    counting wrapper of that exporter."""
    try:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
    except ImportError as exc:
        raise UsageError(
            f"{spelled('emit_evaluation_events()', '--otel')} needs the OpenTelemetry SDK: pip install "
            "'foundry-bridge[otel]'"
        ) from exc
    provider = LoggerProvider(resource=Resource.create(resource_attributes(report)))
    counted = _counting(_exporter(exporter, endpoint))
    provider.add_log_record_processor(BatchLogRecordProcessor(counted, max_queue_size=2 * _FLUSH_EVERY))
    return provider, counted


def emit_evaluation_events(
    report: Report,
    *,
    exporter: Exporter = "otlp",
    endpoint: str | None = None,
    logger_provider: Any = None,
    sources: Sequence[Source] = ("foundry", "local"),
    response_ids: Mapping[str, str] | None = None,
    traceparent: str | None = None,
) -> int:
    """Emit one ``gen_ai.evaluation.result`` event per query × metric; return how many were emitted.

    With ``logger_provider`` (an SDK ``LoggerProvider`` the caller configured, e.g. with an in-memory exporter)
    the events go there and the provider is flushed, not shut down; otherwise a provider with the run's resource
    attributes and ``exporter`` is made, flushed every few thousand events (the batch queue never overflows) and
    shut down; if its exporter failed on any event, a ``BackendError`` says how many (nothing is lost silently).
    Each event's timestamp is its emission time (ns since the epoch). ``traceparent`` (a W3C header) makes the
    span it names every event's parent (``parent_context``: checked before anything is sent); without it the
    events' parent is the current context, i.e. the caller's active span if any.
    """
    from .. import __version__

    parent = parent_context(traceparent) if traceparent is not None else None
    own = logger_provider is None
    if own and exporter not in EXPORTERS:  # before anything is made
        accepted = ", ".join(repr(e) for e in EXPORTERS)
        raise UsageError(f"unknown OpenTelemetry exporter {exporter!r} for {spelled('exporter=', '--otel')}: "
                         f"choose one of {accepted}")  # fmt: skip
    provider, counted = _provider(report, exporter, endpoint) if own else (logger_provider, None)
    from opentelemetry._logs import SeverityNumber

    logger = provider.get_logger("foundry_bridge", __version__)
    marker = {AZURE_EVENT_NAME: EVENT_NAME, **run_identity(report)}  # on every event, whichever the provider
    n = 0
    try:
        for attrs in evaluation_attributes(report, sources=sources, response_ids=response_ids):
            attrs.update(marker)
            logger.emit(
                timestamp=time.time_ns(),
                context=parent,
                event_name=EVENT_NAME,
                severity_number=SeverityNumber.INFO,
                attributes=attrs,
            )
            n += 1
            if n % _FLUSH_EVERY == 0:
                provider.force_flush()
        provider.force_flush()
    finally:
        if own:
            provider.shutdown()
    if counted is not None and counted.failed:
        raise BackendError(
            f"{counted.failed} of {n} gen_ai.evaluation.result events could not be exported ({exporter}); "
            f"check the endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, {_ENDPOINT}) and the collector's log"
        )
    return n
