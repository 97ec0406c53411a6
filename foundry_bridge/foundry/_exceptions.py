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
    "SIGN_IN_FIX",
    "RunFailedError",
    "credential_error",
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


SIGN_IN_FIX = (
    "sign in with `az login` (or `azd auth login`), or set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET "
    "for a service principal"
)
ENDPOINT_FIX = (
    "check the project endpoint (--endpoint or AZURE_AI_PROJECT_ENDPOINT): "
    "https://<account>.services.ai.azure.com/api/projects/<project>, as the project's overview page in the Foundry "
    "portal shows it"
)
# The fix for a refusal of the project itself, by status. 404 only on a project-level route (``/evals``,
# ``/evaluators``...): a 404 for an eval or run id is about that id, not the endpoint.
_STATUS_FIX = {
    401: "the service refused the token: sign in to the tenant that holds the project (`az login --tenant <id>`)",
    403: (
        "the signed-in identity has no data access to the project: assign it the Foundry User role (named Azure AI "
        "User before the rename) on the project, in the Azure portal's Access control (IAM) or with `az role "
        'assignment create --role "Foundry User" --assignee <you> --scope <project resource id>`; wait a few '
        "minutes, run again"
    ),
    404: ENDPOINT_FIX,
}
_PROJECT_ROUTES = frozenset({"evals", "evaluators", "datasets", "insights", "files"})


def credential_error(exc: Exception, scope: str) -> ClientAuthenticationError:
    """The credential chain gave no token: its first line (azure-identity then lists every credential it tried,
    several screens long) and how to sign in. The chained exception keeps the whole text for ``--debug``."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return ClientAuthenticationError(message=f"could not get a token for {scope}: {first} (fix: {SIGN_IN_FIX})")


def _fix(response: httpx.Response) -> str:
    status = response.status_code
    if status == 404:
        request = response.request
        last = request.url.path.rstrip("/").rsplit("/", 1)[-1] if request is not None else ""
        if last not in _PROJECT_ROUTES:
            return ""
    return _STATUS_FIX.get(status, "")


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
    if fix := _fix(response):
        text += f" (fix: {fix})"
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
    text += f" (fix: {ENDPOINT_FIX}; and that this machine reaches it)"
    return ServiceRequestError(text, error=exc)
