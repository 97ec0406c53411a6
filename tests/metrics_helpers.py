"""Generated ranking data for the metrics tests: records plus the same data as reference-library dicts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from foundry_bridge.dataset.records import GroundTruthLabel, QueryRecord, RetrievedDocument


@dataclass
class Generated:
    records: list[QueryRecord]
    # query id → {doc: score}, deduplicated (first occurrence), scores strictly following the list order
    run: dict[str, dict[str, float]]
    # query id → ranked doc ids after deduplication (computed here independently of the package)
    ranked: dict[str, list[str]]
    qrels: dict[str, dict[str, int]]


def trec_order(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Score descending, ties by document id descending (byte-wise), as trec_eval sorts."""
    return sorted(pairs, key=lambda p: (p[1], p[0].encode()), reverse=True)


def generate(
    seed: int, n_queries: int = 150, *, label_range: tuple[int, int] = (0, 4), max_docs: int = 30
) -> Generated:
    """Queries with score ties (list order = trec_eval order), duplicates, graded labels, runs shorter and longer
    than typical k, empty runs, queries without labels and with only non-relevant labels."""
    rng = np.random.default_rng(seed)
    records: list[QueryRecord] = []
    run: dict[str, dict[str, float]] = {}
    ranked: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    lo, hi = label_range
    for q in range(n_queries):
        qid = f"q{q}"
        n = int(rng.integers(0, max_docs + 1)) if q % 10 else 0  # every tenth run is empty
        ids = [f"d{j}" for j in rng.choice(80, size=n, replace=False)]
        scores = (rng.integers(0, 6, size=n) / 5.0).tolist()  # few distinct values: many ties
        ordered = trec_order(list(zip(ids, scores, strict=True)))
        listed = list(ordered)
        if n > 2 and rng.random() < 0.4:  # duplicates: an earlier document repeated later in the list
            for _ in range(int(rng.integers(1, 4))):
                src = int(rng.integers(0, len(listed) - 1))
                dst = int(rng.integers(src + 1, len(listed) + 1))
                listed.insert(dst, listed[src])
        dedup: dict[str, float] = {}
        for doc, score in listed:
            dedup.setdefault(doc, score)
        ranked[qid] = list(dedup)
        run[qid] = {doc: float(len(dedup) - i) for i, doc in enumerate(dedup)}  # strictly decreasing, same order
        # labels: some retrieved, some not; every 7th query has none at all, every 11th an empty list
        labels: list[GroundTruthLabel] | None
        if q % 7 == 3:
            labels = None
        elif q % 11 == 5:
            labels = []
        else:
            pool = list(dict.fromkeys(ids[: int(rng.integers(0, n + 1))] + [f"d{j}" for j in rng.choice(80, 5)]))
            chosen = pool[: int(rng.integers(1, len(pool) + 1))]
            values = rng.integers(lo, hi + 1, size=len(chosen))
            if q % 13 == 4:
                values = np.minimum(values, 0) if lo <= 0 else values  # only non-relevant labels
            labels = [
                GroundTruthLabel(document_id=d, query_relevance_label=int(v))
                for d, v in zip(chosen, values, strict=True)
            ]
        if labels:
            qrels[qid] = {g.document_id: g.query_relevance_label for g in labels}
        records.append(
            QueryRecord(
                query_id=qid,
                kind="positive",
                retrieved_documents=[RetrievedDocument(document_id=d, relevance_score=s) for d, s in listed],
                retrieval_ground_truth=labels,
            )
        )
    return Generated(records, run, ranked, qrels)
