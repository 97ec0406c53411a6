"""Serve an emulator over HTTP (or HTTPS) on a loopback port, for SDKs that respx cannot patch (openai 3.x uses
httpx2) and for azure-core clients that send a bearer token only over TLS (azure-ai-projects' ``datasets`` and
``evaluators`` operations refuse plain http with ``ServiceRequestError``).

TLS: ``loopback_certificate(folder)`` writes a private CA (``ca.pem``, the file to trust) and a server certificate
for ``localhost``, ``127.0.0.1`` and ``::1`` signed by it (``cert.pem``, ``key.pem``), each file atomically; a set
still valid for a day is reused, so the trust set-up survives restarts. Trusting it: ``SSL_CERT_FILE`` (httpx,
httpx2: the openai SDK) and ``REQUESTS_CA_BUNDLE`` (requests: azure-core's default transport) pointed at ``ca.pem``.
"""

from __future__ import annotations

import datetime as dt
import http.server
import ipaddress
import logging
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from .._io import dumps
from ..errors import redact
from ._emulator import FoundryEmulator

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.x509 import Certificate

__all__ = ["LoopbackCertificate", "MockServer", "loopback_certificate", "serve", "trust_instructions"]

log = logging.getLogger("foundry_bridge.mock")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}
MAX_BODY = 100 << 20  # bytes of one request body (a dataset upload); a larger one is refused (413) unread
READ_TIMEOUT = 30.0  # seconds a connection may stay silent (mid-request or idle between requests)
_INT64 = 2**63 - 1


class _BadRequest(Exception):
    """A request refused before its body is read: ``status`` (400, 413) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.read_timeout)  # every read and write of the connection

    def _handle(self) -> None:
        try:
            body = self._body()
        except _BadRequest as exc:
            self._refuse(exc.status, str(exc))
            return
        address = self.server.server_address
        host = self.headers.get("Host") or f"{address[0]!s}:{address[1]!s}"
        request = httpx.Request(
            self.command,
            f"{self.server.scheme}://{host}{self.path}",
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

    def _body(self) -> bytes:
        """The request's body, read only once its announced size is known to be a size and within the limit."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        values = set(self.headers.get_all("Content-Length") or ())
        if not values:
            return b""
        value = values.pop().strip()
        if values or not value.isascii() or not value.isdigit() or int(value) > _INT64:
            raise _BadRequest(400, "Content-Length must be one whole number of bytes (0 or more)")
        length = int(value)
        self._within_limit(length)
        return self.rfile.read(length) if length else b""

    def _within_limit(self, size: int) -> None:
        if size > self.server.max_body:
            raise _BadRequest(413, f"request body of {size} bytes is above this server's limit of "
                              f"{self.server.max_body} bytes")  # fmt: skip

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            head = self.rfile.readline(1024).split(b";", 1)[0].strip() or b"0"
            try:
                size = int(head, 16)
            except ValueError:
                raise _BadRequest(400, "bad chunk size in a chunked request body") from None
            if size < 0:
                raise _BadRequest(400, "bad chunk size in a chunked request body")
            total += size
            self._within_limit(total)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with the service's JSON error shape and close the connection (its unread body would
        otherwise be taken for the next request)."""
        content = dumps({"error": {"code": "BadRequest" if status == 400 else "RequestEntityTooLarge",
                                   "message": message}})  # fmt: skip
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(content)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), redact(format % args))


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the listen backlog: parallel SDK clients and pytest-xdist workers connect at once
    emulator: FoundryEmulator
    scheme = "http"
    tls_context: ssl.SSLContext | None = None
    max_body = MAX_BODY
    read_timeout = READ_TIMEOUT

    def finish_request(self, request: Any, client_address: Any) -> None:
        """With TLS, the handshake happens here, in the connection's own thread (a client that stalls it, or
        speaks plain http, holds up only itself, for at most the read timeout)."""
        request.settimeout(self.read_timeout)
        if self.tls_context is not None:
            request = self.tls_context.wrap_socket(request, server_side=True)
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


@dataclass(frozen=True)
class LoopbackCertificate:
    """The files of a loopback TLS set-up: ``ca`` (trust this one), ``cert`` (server chain) and ``key``."""

    folder: Path
    ca: Path
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        """A server-side TLS context with this certificate."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx


_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _still_valid(files: LoopbackCertificate, margin: dt.timedelta) -> bool:
    from cryptography import x509

    if not all(p.is_file() for p in (files.ca, files.cert, files.key)):
        return False
    try:
        cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    except ValueError:
        return False
    return cert.not_valid_after_utc - margin > dt.datetime.now(dt.UTC)


def _issue(
    subject: str,
    issuer_key: EllipticCurvePrivateKey,
    issuer: Certificate | None,
    key: EllipticCurvePrivateKey,
    days: int,
    ca: bool,
) -> Certificate:
    """One X.509 certificate: a CA (self-signed when ``issuer`` is None) or a server certificate for the loopback
    names; the extensions Python's strict verification (3.13+) asks for are set."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    public = key.public_key()
    issuer_name = name if issuer is None else issuer.subject
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    usage = dict.fromkeys(
        ("content_commitment", "data_encipherment", "key_agreement", "encipher_only", "decipher_only"), False
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, key_encipherment=False, **usage),
            critical=True,
        )
    else:
        names: list[x509.GeneralName] = [x509.DNSName("localhost")]
        names += [x509.IPAddress(ipaddress.ip_address(h)) for h in _LOOPBACK_NAMES[1:]]
        builder = (
            builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, key_cert_sign=False, crl_sign=False, key_encipherment=True, **usage
                ),
                critical=True,
            )
        )
    return builder.sign(issuer_key, hashes.SHA256())


def loopback_certificate(folder: str | Path, *, days: int = 30) -> LoopbackCertificate:
    """A private CA and a server certificate for localhost/127.0.0.1/::1 in ``folder`` (reused while valid for at
    least another day; else written anew, each file atomically, the keys 0600)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from .._io import atomic_open

    root = Path(folder).expanduser()
    files = LoopbackCertificate(root, root / "ca.pem", root / "cert.pem", root / "key.pem")
    if _still_valid(files, dt.timedelta(days=1)):
        return files
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _issue("foundry-bridge mock CA", ca_key, None, ca_key, days, ca=True)
    cert = _issue("localhost", ca_key, ca, key, days, ca=False)
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    for path, data, private in (
        (files.key, key_pem, True),
        (files.cert, cert.public_bytes(pem) + ca.public_bytes(pem), False),
        (files.ca, ca.public_bytes(pem), False),
    ):
        with atomic_open(path, private=private) as fh:
            fh.write(data)
    return files


def trust_instructions(files: LoopbackCertificate) -> list[str]:
    """How a client process trusts the emulator's certificate (printed by ``mock-server --tls``)."""
    return [
        f"TLS certificate authority: {files.ca}",
        "trust it in the client's shell (the openai SDK and httpx read SSL_CERT_FILE; azure-core's requests transport",
        "reads REQUESTS_CA_BUNDLE); this replaces the system trust store for that process only:",
        f"  export SSL_CERT_FILE={files.ca} REQUESTS_CA_BUNDLE={files.ca}",
    ]


class MockServer:
    """A running loopback server: ``.url`` (``http://host:port``, ``https://`` with ``tls``), ``.endpoint``
    (project endpoint), ``.openai_base_url``; ``shutdown()`` stops it; usable as a context manager.

    ``max_body``: the largest request body in bytes (a larger one is answered 413 without being read; a
    Content-Length that is no size, 400); ``read_timeout``: the seconds a connection may stay silent, mid-request
    or idle between requests, before it is closed (a client that connects and sends nothing holds no thread)."""

    def __init__(
        self,
        emulator: FoundryEmulator,
        host: str,
        port: int,
        project: str = "mock-project",
        *,
        tls: LoopbackCertificate | None = None,
        max_body: int = MAX_BODY,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        self.emulator = emulator
        self.tls = tls
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.emulator = emulator
        self._httpd.max_body, self._httpd.read_timeout = max_body, read_timeout
        if tls is not None:
            self._httpd.tls_context = tls.context()
            self._httpd.scheme = "https"
        bound_host, bound_port = self._httpd.server_address[:2]
        self.host = str(bound_host)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.port = int(bound_port)
        self.url = f"{self._httpd.scheme}://{shown}:{self.port}"
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
    emulator: FoundryEmulator | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    start: bool = True,
    tls: LoopbackCertificate | None = None,
) -> MockServer:
    """Serve ``emulator`` (a new default one if None) on ``host:port`` (0 = a free port), in a background thread.

    ``with serve(emu) as server: ...`` shuts it down on exit; pass ``start=False`` to call ``serve_forever``
    yourself (the ``mock-server`` command does); ``tls=loopback_certificate(folder)`` serves HTTPS.
    """
    server = MockServer(emulator or FoundryEmulator(), host, port, tls=tls)
    return server.start() if start else server
