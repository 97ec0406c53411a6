"""Locally computed metrics: pure numpy, no I/O.

- ranking metrics Foundry does not report (rr/MRR, recall, precision, hit, distracting, NDCG) — ``ranking``
- the negative-query report — ``negative``; the abstention heuristic — ``abstention``
- the context-assembly check (relevant passage retrieved but not sent) — ``assembly``
- Foundry's ``builtin.document_retrieval``, computed exactly as the service does — ``docret``

Array code only: no file, process or garbage-collector switch, no import of a package that does I/O (the readers
that fill the arrays are ``foundry_bridge.dataset.columnar`` and ``dataset.docret_jsonl``). Names are imported
lazily from their modules, so ``import foundry_bridge.metrics`` stays cheap.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "ranking_metrics": "ranking",
    "RankingResult": "ranking",
    "negative_query_report": "negative",
    "is_abstention": "abstention",
    "assembly_check": "assembly",
    "document_retrieval": "docret",
    "document_retrieval_batch": "docret",
    "flat_output": "docret",
    "normalize_output": "docret",
    "DocumentRetrievalError": "docret",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
