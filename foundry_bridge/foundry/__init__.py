"""The Foundry evaluation REST client: wire models, auth, retries, upload, create, poll, collect output items.

``FoundryClient(endpoint, credential, *, transport=None, api_version=None)`` is the one client; the emulator
(``foundry_bridge.mock``) plugs in as its httpx transport. HTTP failures raise azure-core's
``HttpResponseError`` family; failed runs raise ``RunFailedError``.
"""

from ._auth import FOUNDRY_SCOPE, AccessToken, StaticTokenCredential, TokenProvider, default_credential
from ._backend import INLINE_MAX_BYTES, MAX_ROWS_PER_RUN, FoundryBackend, chunk_ranges
from ._client import ENDPOINT_ENV, FoundryClient, validate_endpoint
from ._exceptions import ERROR_MAP, RunFailedError
from ._models import DatasetVersion, Eval, EvalRun, OutputItem, OutputResult
from ._normalize import normalize_item
from ._paging import ItemPaged
from ._poller import RunPoller
from ._retry import RetryPolicy

__all__ = [
    "ENDPOINT_ENV",
    "ERROR_MAP",
    "FOUNDRY_SCOPE",
    "INLINE_MAX_BYTES",
    "MAX_ROWS_PER_RUN",
    "AccessToken",
    "DatasetVersion",
    "Eval",
    "EvalRun",
    "FoundryBackend",
    "FoundryClient",
    "ItemPaged",
    "OutputItem",
    "OutputResult",
    "RetryPolicy",
    "RunFailedError",
    "RunPoller",
    "StaticTokenCredential",
    "TokenProvider",
    "chunk_ranges",
    "default_credential",
    "normalize_item",
    "validate_endpoint",
]
