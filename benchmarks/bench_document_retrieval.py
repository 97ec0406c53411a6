"""Benchmark: foundry_bridge's document_retrieval_batch against azure-ai-evaluation's DocumentRetrievalEvaluator.

    python benchmarks/bench_document_retrieval.py [--quick] [--sizes 10000 100000] [--evaluate-max 100000]

Data: seeded synthetic JSONL, each query 10 ground-truth labels (0-4) and 10 retrieved documents (~30 % holes),
written to benchmarks/data/. Every mode runs in its own child process (peak RSS is the child's own); the parent
prints times, rows/s, ratios, and checks that every mode produced identical numbers (a digest of the per-row
``document_retrieval_properties`` dicts, floats compared bit for bit).

Modes:
  loop      the library evaluator called once per in-memory row (rows parsed beforehand, not timed)
  evaluate  azure.ai.evaluation.evaluate() on the JSONL file (its own reading included)
  batch     document_retrieval_batch on the same in-memory rows
  jsonl     end to end from the file: document_retrieval_jsonl (read + decode per line + batch)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
MODES = ("loop", "evaluate", "batch", "jsonl")


def make_data(n: int, seed: int = 20261129) -> Path:
    """Write (once) n queries: 10 labels 0-4 and 10 retrieved docs drawn from 14 candidates (~30 % holes)."""
    import orjson

    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"docret_{n}.jsonl"
    if path.exists():
        return path
    rng = random.Random(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        for q in range(n):
            docs = [f"q{q}-d{i}" for i in range(14)]
            gt = [{"document_id": d, "query_relevance_label": rng.randint(0, 4)} for d in docs[:10]]
            ret = [{"document_id": d, "relevance_score": round(rng.random(), 4)} for d in rng.sample(docs, 10)]
            fh.write(orjson.dumps({"query_id": f"q{q}", "retrieval_ground_truth": gt, "retrieved_documents": ret}))
            fh.write(b"\n")
    os.replace(tmp, path)
    return path


def _read_rows(path: Path) -> list[dict[str, Any]]:
    import orjson

    with open(path, "rb") as fh:
        return [orjson.loads(line) for line in fh]


def _digest(props: list[Any]) -> str:
    import orjson

    h = hashlib.sha256()
    for p in props:
        h.update(orjson.dumps(p, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY))
        h.update(repr([(k, type(v).__name__, repr(v)) for k, v in p.items()]).encode())
    return h.hexdigest()[:16]


def _props(result: Any) -> Any:
    return result["document_retrieval_properties"] if isinstance(result, dict) else repr(result)


def child(mode: str, path: Path) -> dict[str, Any]:
    """Run one mode; return its timing, digest and own peak RSS."""
    out: dict[str, Any] = {"mode": mode}
    if mode in ("loop", "evaluate"):
        t = time.perf_counter()
        from azure.ai.evaluation import DocumentRetrievalEvaluator, evaluate

        out["import_s"] = time.perf_counter() - t
    if mode == "loop":
        rows = _read_rows(path)
        ev = DocumentRetrievalEvaluator()
        t = time.perf_counter()
        results = [
            ev(retrieval_ground_truth=r["retrieval_ground_truth"], retrieved_documents=r["retrieved_documents"])
            for r in rows
        ]
        out["seconds"] = time.perf_counter() - t
        out["digest"] = _digest([_props(r) for r in results])
    elif mode == "evaluate":
        ev = DocumentRetrievalEvaluator()
        with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as devnull:
            saved = sys.stdout
            sys.stdout = devnull  # evaluate() prints a run summary
            try:
                t = time.perf_counter()
                res = evaluate(data=str(path), evaluators={"docret": ev}, output_path=str(Path(tmp) / "out.json"))
                out["seconds"] = time.perf_counter() - t
            finally:
                sys.stdout = saved
        out["digest"] = _digest([row["outputs.docret.document_retrieval_properties"] for row in res["rows"]])
        out["mean_ndcg"] = res["metrics"].get("docret.document_retrieval")
    elif mode == "batch":
        from foundry_bridge._io import gc_paused
        from foundry_bridge.metrics import document_retrieval_batch

        rows = _read_rows(path)
        t = time.perf_counter()
        with gc_paused():  # as the local backend calls it (the numeric core leaves the GC alone)
            results = document_retrieval_batch(rows)
        out["seconds"] = time.perf_counter() - t
        out["digest"] = _digest([_props(r) for r in results])
    elif mode == "jsonl":
        t = time.perf_counter()
        import orjson  # noqa: F401

        from foundry_bridge.dataset.docret_jsonl import document_retrieval_jsonl

        out["import_s"] = time.perf_counter() - t
        t = time.perf_counter()
        results = document_retrieval_jsonl(path)
        out["seconds"] = time.perf_counter() - t
        out["digest"] = _digest([_props(r) for r in results])
        out["mean_ndcg"] = sum(r["document_retrieval"] for r in results) / len(results)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_child(mode: str, path: Path) -> dict[str, Any]:
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--path", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(ROOT),
    )
    wall = time.perf_counter() - t
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"mode": mode, "error": (proc.stderr or proc.stdout)[-2000:]}
    result = json.loads(lines[-1])
    result["process_wall_s"] = wall
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 queries only")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--evaluate-max", type=int, default=100_000, help="skip evaluate() above this many rows")
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--path", type=Path)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.path)))
        return 0
    sizes = args.sizes or ([1_000, 10_000] if args.quick else [10_000, 100_000])
    ok = True
    for n in sizes:
        path = make_data(n)
        print(f"\n== {n:,} queries ({path.stat().st_size / 1e6:.1f} MB JSONL), 10 labels + 10 retrieved each")
        results: dict[str, dict[str, Any]] = {}
        for mode in MODES:
            if mode == "evaluate" and n > args.evaluate_max:
                print(f"  {mode:<11} skipped (n > --evaluate-max)")
                continue
            res = run_child(mode, path)
            results[mode] = res
            if "error" in res or "skipped" in res:
                print(f"  {mode:<11} {res.get('skipped') or 'FAILED: ' + res['error']}")
                continue
            extra = ""
            print(
                f"  {mode:<11} {res['seconds']:8.3f} s  {n / res['seconds']:>11,.0f} rows/s  "
                f"peak RSS {res['peak_rss_mb']:6.0f} MB  process {res['process_wall_s']:6.2f} s{extra}"
            )
        digests = {m: r["digest"] for m, r in results.items() if "digest" in r}
        same = len(set(digests.values())) == 1
        ok &= same
        print(f"  identical numbers across {sorted(digests)}: {same} {'' if same else digests}")
        if "mean_ndcg" in results.get("jsonl", {}):
            print(f"  mean ndcg@3: {results['jsonl']['mean_ndcg']:.5f}")

        def ratio(a: str, b: str, target: float, results: dict[str, dict[str, Any]] = results) -> None:
            if "seconds" in results.get(a, {}) and "seconds" in results.get(b, {}):
                r = results[a]["seconds"] / results[b]["seconds"]
                print(f"  {b} is {r:6.1f}x faster than {a} (target >= {target:g}x): {'OK' if r >= target else 'MISS'}")

        ratio("loop", "batch", 20)
        ratio("evaluate", "jsonl", 15)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
