"""Regenerate samples/custom_fields/ and samples/trec/ from samples/benefits/rag_eval.jsonl (same queries).

python samples/derive_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    rows = [json.loads(line) for line in (HERE / "benefits" / "rag_eval.jsonl").read_text().splitlines() if line]

    # A dataset with its own field names (see mappings/custom_fields.yaml).
    with open(HERE / "custom_fields" / "rag_eval.jsonl", "w", encoding="utf-8") as out:
        for r in rows:
            meta = {k: r[k] for k in ("kind", "canary") if k in r}
            custom = {
                "id": r["query_id"],
                "question": r["query"],
                "meta": meta,
                "docs": [
                    {"id": d["document_id"], "score": d["relevance_score"], "heading": d["title"], "text": d["content"]}
                    for d in r["retrieved_documents"]
                ],
                "judgments": [
                    {"doc": g["document_id"], "grade": g["query_relevance_label"]} for g in r["retrieval_ground_truth"]
                ],
                "prompt_context": r["context"],
                "answer": r["response"],
                "reference": {"answer": r["ground_truth"]},
            }
            out.write(json.dumps(custom, ensure_ascii=False) + "\n")

    # TREC files (see mappings/trec.yaml): qrels, run (rank column written, ignored on read), queries, responses.
    trec = HERE / "trec"
    with open(trec / "qrels.txt", "w", encoding="utf-8") as fh:
        for r in rows:
            for g in r["retrieval_ground_truth"]:
                fh.write(f"{r['query_id']} 0 {g['document_id']} {g['query_relevance_label']}\n")
    with open(trec / "run.txt", "w", encoding="utf-8") as fh:
        for r in rows:
            for rank, d in enumerate(r["retrieved_documents"], 1):
                fh.write(f"{r['query_id']} Q0 {d['document_id']} {rank} {d['relevance_score']} benefits-search\n")
    with open(trec / "queries.tsv", "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(f"{r['query_id']}\t{r['query']}\n")
    with open(trec / "responses.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            keep = {k: r[k] for k in ("query_id", "kind", "context", "response", "ground_truth", "canary") if k in r}
            fh.write(json.dumps(keep, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
