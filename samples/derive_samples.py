"""Regenerate the samples derived from samples/benefits/rag_eval.jsonl (same queries), deterministically:

- custom_fields/rag_eval.jsonl: the rows under their own field names (mappings/custom_fields.yaml);
- trec/: qrels, run, queries and responses as TREC files (mappings/trec.yaml);
- degraded/rag_eval.jsonl (and run.txt, its ranking as a TREC run): the same answers behind a worse retriever
  (each ranking reversed), for `compare`;
- beir/: a small BEIR collection (corpus, queries, qrels/test.tsv) with a TREC run (mappings/beir.yaml);
- parquet/rag_eval.parquet: the rows as a parquet table (needs pyarrow, in the `test` extra).

python samples/derive_samples.py     (tests/test_samples_derived.py checks the committed files are what it writes)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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

    degraded(rows, HERE / "degraded" / "rag_eval.jsonl")
    beir(rows, HERE / "beir")
    parquet(rows, HERE / "parquet" / "rag_eval.parquet")


def degraded(rows: list[dict[str, Any]], path: Path) -> None:
    """The same queries, contexts and answers behind a worse retriever: every ranking reversed, the scores kept in
    descending order (so list order and ``relevance_score`` still agree). Relevant passages sink: MRR, NDCG and
    recall@k drop; the judges' scores, read from the unchanged context and answer, do not."""
    path.parent.mkdir(exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for r in rows:
            docs = r["retrieved_documents"]
            scores = [d["relevance_score"] for d in docs]
            reranked = [{**d, "relevance_score": s} for d, s in zip(reversed(docs), scores, strict=True)]
            out.write(json.dumps({**r, "retrieved_documents": reranked}, ensure_ascii=False) + "\n")
    with open(path.parent / "run.txt", "w", encoding="utf-8") as fh:  # the same ranking as a TREC run file
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            for rank, d in enumerate(r["retrieved_documents"], 1):
                fh.write(f"{r['query_id']} Q0 {d['document_id']} {rank} {d['relevance_score']} degraded-search\n")


def beir(rows: list[dict[str, Any]], base: Path) -> None:
    """BEIR's layout: ``corpus.jsonl`` (every retrieved passage once, in first-seen order), ``queries.jsonl``,
    ``qrels/test.tsv`` under its header line, plus ``run.txt``. mappings/beir.yaml reads labels 0-2, so the
    sample's grade 3 is written as 2."""
    (base / "qrels").mkdir(parents=True, exist_ok=True)
    corpus: dict[str, dict[str, str]] = {}
    for r in rows:
        for d in r["retrieved_documents"]:
            corpus.setdefault(d["document_id"], {"_id": d["document_id"], "title": d["title"], "text": d["content"]})
    with open(base / "corpus.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(doc, ensure_ascii=False) + "\n" for doc in corpus.values())
    with open(base / "queries.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": r["query_id"], "text": r["query"]}, ensure_ascii=False) + "\n" for r in rows)
    with open(base / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for r in rows:
            for g in r["retrieval_ground_truth"]:
                fh.write(f"{r['query_id']}\t{g['document_id']}\t{min(g['query_relevance_label'], 2)}\n")
    with open(base / "run.txt", "w", encoding="utf-8") as fh:
        for r in rows:
            for rank, d in enumerate(r["retrieved_documents"], 1):
                fh.write(f"{r['query_id']} Q0 {d['document_id']} {rank} {d['relevance_score']} benefits-search\n")


def parquet(rows: list[dict[str, Any]], path: Path) -> None:
    """The rows as one parquet table (nested lists of structs kept), written without statistics or a
    ``created_by`` that would change with the pyarrow version; a missing ``kind`` stays null."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(exist_ok=True)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    table = pa.Table.from_pylist([{k: r.get(k) for k in columns} for r in rows])
    pq.write_table(table, path, write_statistics=False, compression="zstd")


if __name__ == "__main__":
    main()
