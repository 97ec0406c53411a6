"""Locally computed metrics: pure numpy, no I/O.

- ranking metrics Foundry does not report (rr/MRR, recall, precision, hit, distracting, NDCG) — ``ranking``
- the negative-query report and the abstention heuristic — ``negative``
- the context-assembly check (relevant passage retrieved but not sent) — ``assembly``
- Foundry's ``builtin.document_retrieval``, computed exactly as the service does — ``docret``

Names are imported lazily from their modules, so ``import foundry_bridge.metrics`` stays cheap.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "ranking_metrics": "ranking",
    "RankingResult": "ranking",
    "negative_query_report": "negative",
    "is_abstention": "negative",
    "assembly_check": "assembly",
    "document_retrieval": "docret",
    "document_retrieval_batch": "docret",
    "flat_output": "docret",
    "normalize_output": "docret",
    "DocumentRetrievalError": "docret",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
