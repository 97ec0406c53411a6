"""Serve an emulator over HTTP on a loopback port, for SDKs that respx cannot patch (openai 3.x uses httpx2)."""

from __future__ import annotations

import http.server
import logging
import threading
from types import TracebackType

import httpx

from ..errors import redact
from ._emulator import FoundryEmulator

__all__ = ["MockServer", "serve"]

log = logging.getLogger("foundry_bridge.mock")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect
    server: _HTTPServer

    def _handle(self) -> None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = self._read_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
        address = self.server.server_address
        host = self.headers.get("Host") or f"{address[0]!s}:{address[1]!s}"
        request = httpx.Request(
            self.command,
            f"http://{host}{self.path}",
            headers=[
                (k, v)
                for k, v in self.headers.items()
                if k.lower() not in ("host", "content-length", "transfer-encoding")
            ],
            content=body,
        )
        response = self.server.emulator.handler(request)
        content = response.read()
        self.send_response(response.status_code)
        for key, value in response.headers.multi_items():
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if self.command != "HEAD" and content:
            self.wfile.write(content)

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), redact(format % args))


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    emulator: FoundryEmulator


class MockServer:
    """A running loopback server: ``.url`` (``http://host:port``), ``.endpoint`` (project endpoint),
    ``.openai_base_url``; ``shutdown()`` stops it; usable as a context manager."""

    def __init__(self, emulator: FoundryEmulator, host: str, port: int, project: str = "mock-project") -> None:
        self.emulator = emulator
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.emulator = emulator
        bound_host, bound_port = self._httpd.server_address[:2]
        self.host = str(bound_host)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.port = int(bound_port)
        self.url = f"http://{shown}:{self.port}"
        self.endpoint = f"{self.url}/api/projects/{project}"
        self.openai_base_url = f"{self.endpoint}/openai/v1"
        self._thread: threading.Thread | None = None

    def start(self) -> MockServer:
        """Serve in a daemon thread (returns immediately)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="foundry-emulator", daemon=True
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until ``shutdown()`` or KeyboardInterrupt."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def shutdown(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"MockServer(url={self.url!r})"


def serve(
    emulator: FoundryEmulator | None = None, host: str = "127.0.0.1", port: int = 0, *, start: bool = True
) -> MockServer:
    """Serve ``emulator`` (a new default one if None) on ``host:port`` (0 = a free port), in a background thread.

    ``with serve(emu) as server: ...`` shuts it down on exit; pass ``start=False`` to call ``serve_forever``
    yourself (the ``mock-server`` command does).
    """
    server = MockServer(emulator or FoundryEmulator(), host, port)
    return server.start() if start else server
