"""Read local RAG datasets (JSONL, TREC) into canonical ``QueryRecord``s, streaming.

Names are imported lazily from their modules, so the fast readers (``columnar``) start without the record models.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "GroundTruthLabel": "records",
    "Problem": "problems",
    "QueryRecord": "records",
    "RetrievedDocument": "records",
    "derive_kind": "records",
    "iter_jsonl": "reader",
    "read_records": "reader",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
