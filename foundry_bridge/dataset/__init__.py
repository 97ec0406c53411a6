"""Read local RAG datasets (JSONL, TREC) into canonical ``QueryRecord``s, streaming."""

from .problems import Problem
from .reader import iter_jsonl, read_records
from .records import GroundTruthLabel, QueryRecord, RetrievedDocument, derive_kind

__all__ = [
    "GroundTruthLabel",
    "Problem",
    "QueryRecord",
    "RetrievedDocument",
    "derive_kind",
    "iter_jsonl",
    "read_records",
]
