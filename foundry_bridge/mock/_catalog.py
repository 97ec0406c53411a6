"""The evaluator catalog API: ``GET /evaluators``, one evaluator's versions, one version; served from the published
contracts (``foundry_bridge.contracts``), in the live spelling (``contracts.live_entry``).

Paging as recorded (``eval_catalog.json``): ``?type=builtin`` answers ``{"value", "continuationToken",
"nextLink"}``; the first page is empty but carries a token, later pages hold up to ``CATALOG_PAGE_SIZE`` entries,
and the last page has no ``continuationToken`` and an empty ``nextLink``. A client that stops at the first empty
page sees no evaluators, against the service and against the emulator alike. ``type=custom`` lists nothing (the
emulator registers no custom evaluators); an unknown ``type`` is a 400. Tokens are opaque (the offset, base64).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

import httpx

from .._text import did_you_mean
from ..contracts import live_entry, published_contracts
from ._common import _bad, _HttpError, _json_response, _not_found

__all__ = ["CATALOG_PAGE_SIZE", "CatalogRoutes"]

CATALOG_PAGE_SIZE = 20
_TYPES = ("builtin", "custom")


def _token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _offset(token: str) -> int:
    try:
        text = base64.urlsafe_b64decode(token.encode()).decode()
        if text.startswith("offset:") and (offset := int(text.removeprefix("offset:"))) >= 0:
            return offset
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise _bad(f"continuationToken: not a token this list gave ({token[:40]!r})", "continuationToken")


def _entries(kind: str | None) -> list[dict[str, Any]]:
    if kind not in (None, *_TYPES):
        raise _bad(f"type must be one of {', '.join(_TYPES)}, got {kind!r}", "type")
    return [] if kind == "custom" else [live_entry(c) for c in published_contracts().values()]


class CatalogRoutes:
    """Handlers of the evaluator catalog routes (no state: the contracts are the store)."""

    def _catalog_routes(self) -> list[tuple[str, str, Callable[..., httpx.Response]]]:
        """``(method, path pattern, handler)`` rows for the emulator's route table."""
        one = r"/evaluators/(?P<name>[^/]+)/versions"
        return [
            ("GET", r"/evaluators", self._list_evaluators),
            ("GET", one, self._list_evaluator_versions),
            ("GET", one + r"/(?P<version>[^/]+)", self._get_evaluator_version),
        ]

    def _list_evaluators(self, request: httpx.Request, **_: Any) -> httpx.Response:
        params = request.url.params
        entries = _entries(params.get("type"))
        token = params.get("continuationToken")
        # the recorded first page: empty, with a token to the entries
        start, stop = (0, 0) if token is None else (_offset(token), _offset(token) + CATALOG_PAGE_SIZE)
        body: dict[str, Any] = {"value": entries[start:stop]}
        if token is None or stop < len(entries):
            following = _token(stop)
            body["continuationToken"] = following
            body["nextLink"] = str(
                request.url.copy_remove_param("continuationToken").copy_add_param("continuationToken", following)
            )
        else:
            body["nextLink"] = ""
        return _json_response(200, body)

    @staticmethod
    def _evaluator(name: str) -> dict[str, Any]:
        contracts = published_contracts()
        if name not in contracts:
            guess = did_you_mean(name, list(contracts))
            hint = f" Did you mean '{guess}'?" if guess else ""
            raise _HttpError(404, "NotFound", f"Evaluator '{name}' was not found.{hint}")
        return live_entry(contracts[name])

    def _list_evaluator_versions(self, request: httpx.Request, name: str, **_: Any) -> httpx.Response:
        return _json_response(200, {"value": [self._evaluator(name)], "nextLink": ""})

    def _get_evaluator_version(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        entry = self._evaluator(name)
        if version not in (entry["version"], "latest"):
            raise _not_found("Evaluator version", f"{name}/{version}")
        return _json_response(200, entry)
