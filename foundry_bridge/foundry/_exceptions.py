"""HTTP failures → azure-core's ``HttpResponseError`` family, with the service's own message.

    azure.core.exceptions.AzureError
    ├── ServiceRequestError          the request could not be sent (connection refused, DNS, retries exhausted)
    └── HttpResponseError            the service answered with an error status
        ├── ClientAuthenticationError   401, 403
        ├── ResourceNotFoundError       404
        ├── ResourceExistsError         409 (after retries)
        └── ...                         every other status: HttpResponseError itself

Run-level failures (a ``failed`` or ``canceled`` run) are ``RunFailedError``, a ``BackendError``.
"""

from __future__ import annotations

from typing import Any

import httpx
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
    ServiceRequestError,
)

from ..errors import BackendError, redact

__all__ = [
    "ERROR_MAP",
    "RunFailedError",
    "http_error",
    "request_error",
    "service_message",
]

ERROR_MAP: dict[int, type[HttpResponseError]] = {
    401: ClientAuthenticationError,
    403: ClientAuthenticationError,
    404: ResourceNotFoundError,
    409: ResourceExistsError,
}


class RunFailedError(BackendError):
    """A run ended ``failed`` or ``canceled``; ``run`` holds the last run object."""

    def __init__(self, message: str, run: Any = None) -> None:
        super().__init__(message)
        self.run = run


def service_message(response: httpx.Response) -> tuple[str | None, str]:
    """``(code, message)`` from an Azure-style ``{"error": {"code", "message"}}`` body (or the raw text)."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return None, redact(text[:500]) if text else (response.reason_phrase or "")
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        code = err.get("code")
        message = err.get("message") or response.reason_phrase or ""
        return (str(code) if code is not None else None), redact(str(message))
    return None, redact(str(err)[:500])


def http_error(
    response: httpx.Response, *, attempts: int = 1, note: str = "", cause: BaseException | None = None
) -> HttpResponseError:
    """The azure-core exception for an error response: ``METHOD URL → status CODE: message``."""
    code, message = service_message(response)
    request = response.request
    url = redact(str(request.url.copy_with(query=None))) if request is not None else "?"
    method = request.method if request is not None else "?"
    text = f"{method} {url} failed with HTTP {response.status_code}"
    text += f" ({code}): {message}" if code else f": {message}"
    if attempts > 1:
        text += f" (after {attempts} attempts)"
    if note:
        text += f"; {note}"
    cls = ERROR_MAP.get(response.status_code, HttpResponseError)
    exc = cls(message=text)
    exc.status_code = response.status_code
    exc.reason = response.reason_phrase
    exc.response = response  # type: ignore[assignment]
    exc.error_code = code  # type: ignore[attr-defined]
    exc.service_message = message  # type: ignore[attr-defined]
    return exc


def request_error(request: httpx.Request, exc: httpx.TransportError, *, attempts: int) -> ServiceRequestError:
    """The azure-core exception for a request that never got an answer."""
    url = redact(str(request.url.copy_with(query=None)))
    text = f"{request.method} {url} could not reach the service after {attempts} attempt(s): "
    text += redact(f"{type(exc).__name__}: {exc}")
    return ServiceRequestError(text, error=exc)
