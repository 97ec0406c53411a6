"""Bearer tokens from a duck-typed azure-identity credential, cached and refreshed before expiry.

The token is only ever placed in the ``Authorization`` header of requests to the project endpoint; it is never
logged, never part of an error message, never written to a file.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from azure.core.exceptions import ClientAuthenticationError

from ..errors import remember_secret
from ._exceptions import credential_error

__all__ = [
    "FOUNDRY_SCOPE",
    "AccessToken",
    "StaticTokenCredential",
    "TokenCredential",
    "TokenProvider",
    "default_credential",
]

FOUNDRY_SCOPE = "https://ai.azure.com/.default"


class AccessToken(NamedTuple):
    """Same shape as ``azure.core.credentials.AccessToken``."""

    token: str
    expires_on: int


class TokenCredential(Protocol):
    """Anything with azure-identity's ``get_token(*scopes) -> AccessToken``."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any: ...


class StaticTokenCredential:
    """A fixed token (the emulator, tests). Never use it against the cloud."""

    def __init__(self, token: str = "mock-token", *, lifetime: int = 3600) -> None:
        self._token = token
        self._lifetime = lifetime
        self.calls = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.calls += 1
        return AccessToken(self._token, int(time.time()) + self._lifetime)

    def __repr__(self) -> str:
        return "StaticTokenCredential(token=***)"


class TokenProvider:
    """Caches one token for ``scope`` and asks the credential again ``refresh_margin`` seconds before expiry."""

    def __init__(
        self,
        credential: TokenCredential,
        scope: str = FOUNDRY_SCOPE,
        *,
        refresh_margin: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not callable(getattr(credential, "get_token", None)):
            raise TypeError("credential must have a get_token(*scopes) method (an azure-identity credential)")
        self._credential = credential
        self._scope = scope
        self._margin = refresh_margin
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_on: float = 0.0

    def token(self, *, force_refresh: bool = False) -> str:
        """A valid bearer token (fetched or refreshed when missing, expiring, or forced)."""
        with self._lock:
            if force_refresh or self._token is None or self._clock() >= self._expires_on - self._margin:
                try:
                    result = self._credential.get_token(self._scope)
                except ClientAuthenticationError as exc:  # the chain has no signed-in identity
                    raise credential_error(exc, self._scope) from exc
                self._token = str(result.token)
                remember_secret(self._token)  # echoed back by a service, it is redacted by value
                self._expires_on = float(result.expires_on)
            return self._token

    def authorization(self, *, force_refresh: bool = False) -> str:
        return "Bearer " + self.token(force_refresh=force_refresh)

    def __repr__(self) -> str:
        return f"TokenProvider(scope={self._scope!r})"


def default_credential(**kwargs: Any) -> TokenCredential:
    """``azure.identity.DefaultAzureCredential`` (imported here: azure-identity is heavy)."""
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential(**kwargs)
