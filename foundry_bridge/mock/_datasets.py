"""Datasets and blobs: the upload flow (startPendingUpload, blob PUT, PATCH version), reads, lists, deletes."""

from __future__ import annotations

import base64
import codecs
import hashlib
import re
import time
import uuid
from email.utils import formatdate
from typing import Any

import httpx

from .._io import loads
from ..mapping.plan import RowSpool
from ._common import (
    _BLOB_PATH,
    MOCK_USER,
    EmulatorBase,
    Store,
    _bad,
    _blob_key,
    _copy,
    _HttpError,
    _json_response,
    _not_found,
)

__all__ = ["DatasetRoutes", "rows_from_dataset"]


_DATASET_ID = re.compile(r"/data/(?P<name>[^/]+)/versions/(?P<version>[^/?#]+)$")


class DatasetRoutes(EmulatorBase):
    """Datasets and blobs: the upload flow (startPendingUpload, blob PUT, PATCH version), reads, lists, deletes."""

    def _blob_container_url(self, request: httpx.Request, container: str) -> str:
        """In-process: ``https://mock.blob.core.windows.net/<c>``; on loopback: ``<server>/_blob/<c>``."""
        host = request.url.host
        if host.endswith(".services.ai.azure.com") or host.endswith(".azure.com"):
            return f"https://mock.blob.core.windows.net/{container}"
        return f"{request.url.scheme}://{request.url.netloc.decode()}{_BLOB_PATH}{container}"

    def _blob_reference(self, container_url: str, blob_uri: str, permissions: str) -> dict[str, Any]:
        return {
            "blobUri": blob_uri,
            "storageAccountArmId": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mock-rg/"
            "providers/Microsoft.Storage/storageAccounts/mockstorage",
            "credential": {
                "type": "SAS",
                "credentialType": "SAS",
                "sasUri": f"{container_url}?sv=mock&sr=c&sp={permissions}&sig=mock",
            },
        }

    def _start_pending_upload(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        body = self._body(request) or {}
        if not isinstance(body, dict):
            raise _bad("The request body must be a JSON object.")
        kind = body.get("pendingUploadType", "BlobReference")
        if kind != "BlobReference":
            raise _bad(f"pendingUploadType must be 'BlobReference', got {kind!r}", "pendingUploadType")
        if (name, version) in self.store.datasets:
            raise _HttpError(409, "Conflict", f"Dataset '{name}' version '{version}' already exists.")
        container = f"mock-{uuid.uuid5(uuid.NAMESPACE_URL, f'{name}/{version}/{uuid.uuid4()}')}"
        url = self._blob_container_url(request, container)
        ref = self._blob_reference(url, url, "rcwl")
        out = {
            "blobReference": ref,
            "blobReferenceForConsumption": _copy(ref),
            "pendingUploadId": None,
            "pendingUploadType": "BlobReference",
            "version": version,
        }
        return _json_response(200, out)

    def _patch_dataset_version(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        body = self._object_body(request)
        existing = self.store.datasets.get((name, version))
        data_uri = body.get("dataUri") or (existing or {}).get("dataUri")
        if not isinstance(data_uri, str) or not data_uri:
            raise _bad("dataUri is required (the blob URL the data was uploaded to).", "dataUri")
        kind = body.get("type") or (existing or {}).get("type") or "uri_file"
        if kind not in ("uri_file", "uri_folder"):
            raise _bad(f"type must be 'uri_file' or 'uri_folder', got {kind!r}", "type")
        if _blob_key(data_uri) is None:
            raise _bad(f"dataUri {data_uri!r} is not a blob URL of this project's storage.", "dataUri")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.0000000+00:00", time.gmtime(self._clock()))
        created = (existing or {}).get("systemData", {}).get("createdAt", stamp)
        dataset = {
            "id": self._dataset_id(request, name, version),
            "name": name,
            "version": version,
            "displayName": name,
            "description": body.get("description", (existing or {}).get("description")),
            "tags": body.get("tags", (existing or {}).get("tags", {})) or {},
            "type": kind,
            "isReference": False,
            "dataUri": data_uri.split("?", 1)[0],
            "isSingleFile": kind == "uri_file",
            "connectionName": body.get("connectionName"),
            "systemData": {
                "createdAt": created,
                "createdBy": MOCK_USER,
                "createdByType": None,
                "lastModifiedAt": stamp,
            },
        }
        self.store.datasets[(name, version)] = dataset
        return _json_response(200, {**dataset, "isSingleFile": False})  # as recorded: true only on later GETs

    def _get_dataset_version(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        dataset = self.store.datasets.get((name, version))
        if dataset is None:
            raise _not_found("Dataset version", f"{name}/{version}")
        return _json_response(200, dataset)

    def _delete_dataset_version(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        self.store.datasets.pop((name, version), None)
        return httpx.Response(204)

    def _list_dataset_versions(self, request: httpx.Request, name: str, **_: Any) -> httpx.Response:
        versions = [d for (n, _v), d in self.store.datasets.items() if n == name]
        return _json_response(200, {"value": versions[::-1]})  # newest first, as recorded

    def _list_datasets(self, request: httpx.Request, **_: Any) -> httpx.Response:
        latest: dict[str, dict[str, Any]] = {}
        for (n, _v), d in self.store.datasets.items():
            latest[n] = d
        return _json_response(200, {"value": list(latest.values())})

    def _dataset_credentials(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        dataset = self.store.datasets.get((name, version))
        if dataset is None:
            raise _not_found("Dataset version", f"{name}/{version}")
        uri = dataset["dataUri"]
        container = uri.rsplit("/", 1)[0] if dataset["type"] == "uri_file" else uri
        ref = self._blob_reference(container, uri, "rl")
        return _json_response(200, {"blobReference": ref, "blobReferenceForConsumption": _copy(ref)})

    def _blob(self, request: httpx.Request, **_: Any) -> httpx.Response:
        key = _blob_key(str(request.url))
        if key is None or "/" not in key:
            raise _HttpError(400, "InvalidUri", f"Not a blob URL: {request.url.path}")
        if request.method in ("GET", "HEAD"):
            data = self.store.blobs.get(key)
            if data is None:
                raise _HttpError(404, "BlobNotFound", f"The specified blob does not exist: {key}")
            return httpx.Response(
                200,
                content=data if request.method == "GET" else b"",
                headers={"content-type": "application/octet-stream", "x-ms-blob-type": "BlockBlob"},
            )
        if request.headers.get("if-none-match") == "*" and key in self.store.blobs:
            raise _HttpError(409, "BlobAlreadyExists", f"The specified blob already exists: {key}")
        data = request.content
        self.store.blobs[key] = data
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        return httpx.Response(
            201,
            headers={
                "ETag": f'"0x{hashlib.sha1(data).hexdigest()[:15].upper()}"',
                "Last-Modified": formatdate(self._clock(), usegmt=True),
                "Content-MD5": md5,
                "x-ms-request-server-encrypted": "true",
                "x-ms-version": request.headers.get("x-ms-version", "2025-11-05"),
            },
        )


def rows_from_dataset(store: Store, dataset_id: str, spool: RowSpool) -> None:
    """The rows of an uploaded dataset version (one JSON object a line; ``{"item": ...}`` lines unwrapped), read a
    line at a time from its blobs and appended to ``spool``."""
    m = _DATASET_ID.search(dataset_id)
    version = store.datasets.get((m.group("name"), m.group("version"))) if m else None
    if version is None:
        raise _bad(
            f"data_source.source.id: dataset '{dataset_id}' was not found in this project "
            "(upload it first: startPendingUpload, PUT the blob, PATCH the version).",
            "data_source.source.id",
        )
    key = _blob_key(version["dataUri"])
    if version.get("type") == "uri_folder" and key is not None:
        prefix = key.rstrip("/") + "/"
        blobs = [store.blobs.path(k) for k in sorted(store.blobs) if k.startswith(prefix)]
    else:
        blobs = [store.blobs.path(key)] if key is not None and key in store.blobs else []
    if not blobs:
        raise _bad(f"data_source.source.id: dataset '{dataset_id}' has no uploaded data at {version['dataUri']}.")
    for blob in blobs:
        with open(blob, "rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if lineno == 1:
                    line = line.removeprefix(codecs.BOM_UTF8)
                if not line.strip():
                    continue
                try:
                    row = loads(line)
                except ValueError:
                    raise _bad(f"dataset '{dataset_id}' line {lineno} is not valid JSON.") from None
                if not isinstance(row, dict):
                    raise _bad(f"dataset '{dataset_id}' line {lineno} is not a JSON object.")
                if isinstance(row.get("item"), dict) and set(row) <= {"item", "sample"}:
                    row = row["item"]
                spool.append(row)
