"""Which reader should the ``metrics`` command read a JSONL dataset with? Side by side, alternating, peak RSS too.

    python benchmarks/bench_readers.py                      # 100,000 and 1,000,000 queries, 3 rounds
    python benchmarks/bench_readers.py --sizes 10000 --rounds 1

Data: ``bench_scale.py``'s generator (seed 13, the packaged mapping's field names, 10 retrieved documents with
contents, 5 labels, a context and a response: ~2.3 KB a query), read through the packaged mapping at depth 10.
Each reader runs in a fresh child process (its peak RSS from ``wait4``: its own), the readers alternating within
each round; the table shows the median wall time and the largest peak RSS. Every reader produces the same arrays
(their query ids, labels and scores are digested and compared) and the assembly rows:

- **fast**: ``dataset.columnar.load_dataset`` (the file memory-mapped, each line decoded in place by msgspec into
  structs generated from the mapping's paths);
- **fast-1**: the same with ``jobs=1`` (one process) — only the releases that split files between two processes
  take ``jobs`` (run this file from such a tree: ``--readers fast fast-1 duckdb``); since issue 35 the fast reader
  is one process, one pass;
- **records**: ``read_records`` (one pydantic ``QueryRecord`` per row) into ``arrays_from_records``;
- **duckdb**: DuckDB's ``read_ndjson_objects`` with the mapping's paths as JSON path expressions (the top 10
  documents' ids, scores and contents, the labels, kind, context and response), fetched in Arrow batches of 10,000
  rows and fed to the same per-query adder and assembly check.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
READERS = ("fast", "fast-1", "records", "duckdb")
DEFAULT_READERS = ["fast", "records", "duckdb"]
DEPTH, THRESHOLD = 10, 1


def _digest(arrays: Any, assembly: list[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    h.update("\n".join(arrays.query_ids).encode())
    for name in ("labels", "scores", "length", "qrels"):  # n_ret: the fast reader may leave it uncounted (-1)
        value = getattr(arrays, name, None)
        if value is not None:
            h.update(value.tobytes())
    h.update(json.dumps(assembly, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _duckdb(path: Path, mapping: Any) -> Any:
    """The DuckDB prototype: the mapping's paths as SQL, each batch's columns to the one adder."""
    import duckdb

    from foundry_bridge.dataset.records import derive_kind
    from foundry_bridge.metrics._arrays import ArraysBuilder
    from foundry_bridge.metrics.abstention import is_abstention
    from foundry_bridge.metrics.assembly import check_query

    f = mapping.dataset.fields
    d, g = f.retrieved_documents, f.retrieval_ground_truth

    def jp(*segs: str) -> str:
        return "'$." + ".".join(s for seg in segs for s in seg.split(".") if s) + "'"

    docs = f"json_extract(json, {jp(d.path)})"
    sql = (
        (
            f"SELECT json_extract_string(json, {jp(f.query_id)}) AS qid, json_extract_string(json, {jp(f.kind_path)}) "
            f"AS kind, json_extract_string({docs}, '$[*].{d.document_id}')[1:{DEPTH}] AS ids, "
            f"CAST(json_extract({docs}, '$[*].{d.relevance_score}')[1:{DEPTH}] AS DOUBLE[]) AS scores, "
            f"json_extract_string({docs}, '$[*].{d.content}')[1:{DEPTH}] AS contents, json_array_length({docs}) AS n, "
            f"json_extract_string(json, {jp(g.path, '[*]', g.document_id)}) AS lab_ids, "
            f"CAST(json_extract(json, {jp(g.path, '[*]', g.query_relevance_label)}) AS BIGINT[]) AS labs, "
            f"json_extract_string(json, {jp(f.context)}) AS context, "
            f"json_extract_string(json, {jp(f.response)}) AS resp "
            f"FROM read_ndjson_objects('{path}')"
        )
        .replace("$.[*]", "$[*]")
        .replace(".[*]", "[*]")
    )
    con = duckdb.connect()
    con.execute("SET memory_limit='1GB'; SET threads=1")
    builder = ArraysBuilder(DEPTH, THRESHOLD)
    add = builder.adder()
    assembly: list[dict[str, Any]] = []
    reader = con.sql(sql).to_arrow_reader(10_000)
    for batch in reader:
        cols = batch.to_pydict()
        for qid, kind, ids, scores, contents, n, lab_ids, labs, context, resp in zip(*cols.values(), strict=True):
            qrels = None if lab_ids is None else dict(zip(lab_ids, labs, strict=True))
            k, source = derive_kind(kind, None if qrels is None else qrels.values(), THRESHOLD)
            abst = -1 if resp is None else int(is_abstention(resp, None))
            add(qid, k, source, ids, scores, qrels, n, abst)
            if context is not None:
                relevant = [(i, c) for i, c in zip(ids, contents, strict=True) if qrels and qrels.get(i, 0) >= 1]
                assembly.append(check_query(qid, context, relevant))
    return builder.build(), assembly


def worker(reader: str, path: Path) -> None:
    from foundry_bridge.mapping.loader import load_mapping

    mapping = load_mapping(None)
    if reader in ("fast", "fast-1"):
        from foundry_bridge.dataset.columnar import load_dataset

        kwargs: dict[str, Any] = {"jobs": 1} if reader == "fast-1" else {}
        arrays, assembly = load_dataset(path, mapping, depth=DEPTH, relevance_threshold=THRESHOLD, **kwargs)
    elif reader == "records":
        from foundry_bridge.dataset import read_records
        from foundry_bridge.dataset.columnar import arrays_from_records

        records = read_records(path, mapping, relevance_threshold=THRESHOLD, require_ranking=True)
        arrays, assembly = arrays_from_records(records, depth=DEPTH, relevance_threshold=THRESHOLD)
    else:
        arrays, assembly = _duckdb(path, mapping)
    print(json.dumps({"queries": arrays.n_queries, "digest": _digest(arrays, assembly)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--readers", nargs="+", default=DEFAULT_READERS, choices=READERS)
    parser.add_argument("--worker", choices=READERS, help=argparse.SUPPRESS)
    parser.add_argument("file", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, Path(args.file))
    sys.path.insert(0, str(HERE))
    from bench_scale import dataset  # the same generator and files as the scale benchmark

    print("| queries | reader | wall s (median) | peak RSS MiB (max) | digest |")
    print("|---:|---|---:|---:|---|")
    for n in args.sizes:
        path = dataset(n, 13, 0)
        path.read_bytes() if path.stat().st_size < 4 << 30 else None  # warm the page cache
        runs: dict[str, list[dict[str, Any]]] = {r: [] for r in args.readers}
        for _ in range(args.rounds):
            for reader in args.readers:
                runs[reader].append(_timed(reader, path))
        for reader, results in runs.items():
            if any("error" in r for r in results):
                print(f"| {n:,} | {reader} | failed: {results[0].get('error', '')!r} | | |")
                continue
            wall = statistics.median(r["wall"] for r in results)
            rss = max(r["rss_mib"] for r in results)
            digests = {r["digest"] for r in results}
            print(f"| {n:,} | {reader} | {wall:.2f} | {rss:.0f} | {','.join(digests)} |", flush=True)


def _timed(reader: str, path: Path) -> dict[str, Any]:
    """One child: wall time, peak RSS (``wait4``) and its digest."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", reader, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        return {"error": err.decode()[-300:]}
    return {"wall": wall, "rss_mib": usage.ru_maxrss / 1024, **json.loads(out)}


if __name__ == "__main__":
    main()
