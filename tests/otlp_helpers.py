"""An OTLP/HTTP logs receiver on 127.0.0.1 for the tests: decodes each protobuf export request it is sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

__all__ = ["any_value", "events", "otlp_receiver", "track_receiver"]


class _Receiver(BaseHTTPRequestHandler):
    requests: list[Any]
    status: int

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportLogsServiceRequest()
        request.ParseFromString(body)
        type(self).requests.append((self.path, self.headers.get("Content-Type"), request))
        self.send_response(self.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def otlp_receiver(status: int = 200) -> Iterator[tuple[str, list[Any]]]:
    """``(base URL, requests)``: every request as (path, content type, ExportLogsServiceRequest); answered with
    ``status`` (400: the collector refuses them)."""
    handler = type("Receiver", (_Receiver,), {"requests": [], "status": status})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.requests
    finally:
        server.shutdown()
        server.server_close()


def any_value(v: Any) -> Any:
    return getattr(v, v.WhichOneof("value"))


def events(requests: list[Any]) -> list[tuple[dict[str, Any], str, dict[str, Any]]]:
    """Every log record received: (resource attributes, event name, attributes)."""
    out = []
    for _, _, request in requests:
        for rl in request.resource_logs:
            resource = {a.key: any_value(a.value) for a in rl.resource.attributes}
            for sl in rl.scope_logs:
                for lr in sl.log_records:
                    out.append((resource, lr.event_name, {a.key: any_value(a.value) for a in lr.attributes}))
    return out


class _Track(BaseHTTPRequestHandler):
    """Application Insights' ingestion API: POST /v2.1/track, JSON envelopes (gzip when so encoded)."""

    envelopes: list[Any]

    def do_POST(self) -> None:
        import gzip
        import json

        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        items = json.loads(body)
        items = items if isinstance(items, list) else [items]
        type(self).envelopes.extend((self.path, item) for item in items)
        reply = json.dumps({"itemsReceived": len(items), "itemsAccepted": len(items), "errors": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def track_receiver() -> Iterator[tuple[str, list[Any]]]:
    """``(base URL, envelopes)``: an Application Insights ingestion endpoint on 127.0.0.1."""
    handler = type("Track", (_Track,), {"envelopes": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", handler.envelopes
    finally:
        server.shutdown()
        server.server_close()
