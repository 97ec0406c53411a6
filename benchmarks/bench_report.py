"""Time and memory of `report` and `compare` on generated run folders.

    python benchmarks/bench_report.py [--quick] [--sizes N ...] [--lean]

Generates two run folders laid out as the runner writes them (plan.json, items.jsonl, records.jsonl,
results.jsonl, manifest.json with the plan hash): N queries × 10 retrieved documents with content, 3 labels on
nine queries in ten (the tenth is negative), 12 result rows per query (document retrieval's nine metrics and three
LLM judges; one judge row in 500 errored). ``--lean`` writes the older, smaller layout (three judge rows per query,
no items.jsonl, a manifest without the plan hash). Each step runs in its own subprocess, which prints the step's
wall and CPU time and its peak RSS: build_report, JSON / Markdown / HTML rendering, compare_runs on the two runs
(4 metrics, 2000 resamples; and every metric at the CLI default of 10,000 resamples). For the paired test the
reference is scipy's permutation_test on the same differences (same number of resamples), measured in the same run
(only up to 10,000 queries: at 50,000 it needs about 7 GB).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from foundry_bridge.metrics.docret import METRICS  # noqa: E402

STEP = r"""
import resource, sys, time
sys.path.insert(0, {root!r})
from foundry_bridge.report import build_report, compare_runs, render_html, render_json, render_markdown

def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime

t, c0 = time.perf_counter(), cpu()
step = {step!r}
if step == "build":
    r = build_report({a!r})
elif step in ("json", "md", "html"):
    r = build_report({a!r})
    t, c0 = time.perf_counter(), cpu()
    out = {{"json": render_json, "md": render_markdown, "html": render_html}}[step](r)
elif step == "compare":
    c = compare_runs([{a!r}, {b!r}], metrics=["rr@10", "ndcg@10", "groundedness", "relevance"], n_resamples=2000)
elif step == "compare_all":
    c = compare_runs([{a!r}, {b!r}])
elif step == "scipy":
    import numpy as np
    from scipy import stats
    from foundry_bridge.report import build_report
    ra, rb = build_report({a!r}), build_report({b!r})
    t, c0 = time.perf_counter(), cpu()
    for key in ("rr@10", "ndcg@10"):
        x = np.array([q.local[key] for q in ra.queries if q.kind == "positive"])
        y = np.array([q.local[key] for q in rb.queries if q.kind == "positive"])
        stats.permutation_test((y - x,), np.mean, permutation_type="samples", n_resamples=2000,
                               random_state=np.random.default_rng(42))
elif step == "ours_test":
    import numpy as np
    from foundry_bridge.report._stats import sign_flip_test, paired_generator
    ra, rb = build_report({a!r}), build_report({b!r})
    t, c0 = time.perf_counter(), cpu()
    for key in ("rr@10", "ndcg@10"):
        x = np.array([q.local[key] for q in ra.queries if q.kind == "positive"])
        y = np.array([q.local[key] for q in rb.queries if q.kind == "positive"])
        sign_flip_test(y - x, n_resamples=2000, rng=paired_generator(42, key))
print(time.perf_counter() - t, cpu() - c0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


DOCRET_METRICS = METRICS  # the nine document_retrieval metrics, in the catalog's order
JUDGES = ("retrieval", "groundedness", "relevance")


def generate(run_dir: Path, n: int, seed: int, *, lean: bool = False) -> None:
    from foundry_bridge._io import write_json, write_jsonl
    from foundry_bridge.dataset import QueryRecord
    from foundry_bridge.mapping import build_plan, load_mapping
    from foundry_bridge.results import RUN_FILES, ResultRow

    rng = random.Random(seed)
    mapping = load_mapping(None)
    records = []
    for i in range(n):
        negative = i % 10 == 0
        docs = [f"d{rng.randrange(5000)}" for _ in range(10)]
        labels = [] if negative else [{"document_id": d, "query_relevance_label": rng.randint(1, 3)} for d in docs[:3]]
        rng.shuffle(docs)
        content = {d: f"passage {d} text about topic {i}" for d in docs}
        context = "\n\n".join(content[d] for d in docs[:4])
        records.append(
            QueryRecord.model_validate(
                {
                    "query_id": f"q{i}",
                    "query": f"question {i}?",
                    "kind": "negative" if negative else "positive",
                    "retrieved_documents": [
                        {"document_id": d, "relevance_score": 1 - r / 10, "content": content[d]}
                        for r, d in enumerate(docs)
                    ],
                    "retrieval_ground_truth": labels,
                    "context": context,
                    "response": "I don't know." if rng.random() < 0.1 else f"answer {i}",
                }
            )
        )
    plan = build_plan(records, mapping, name="bench")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(run_dir / RUN_FILES["plan"], plan.model_dump(mode="json", exclude={"records", "items"}))
    write_jsonl(run_dir / RUN_FILES["records"], plan.records)

    def rows():
        for i, rec in enumerate(records):
            if not lean:
                for metric in DOCRET_METRICS:
                    value = rng.random()
                    yield {
                        "row": i,
                        "query_id": rec.query_id,
                        "criterion": "document_retrieval",
                        "evaluator": "builtin.document_retrieval",
                        "metric": metric,
                        "score": value,
                        "passed": value >= 0.5,
                        "label": "pass" if value >= 0.5 else "fail",
                        "threshold": 0.5,
                    }
            for crit in JUDGES:
                base = {
                    "row": i,
                    "query_id": rec.query_id,
                    "criterion": crit,
                    "evaluator": f"builtin.{crit}",
                    "metric": crit,
                }
                if i % 500 == 7:
                    yield {**base, "error": "FAILED_EXECUTION: x"}
                else:
                    s = rng.randint(1, 5)
                    yield {**base, "score": s, "passed": s >= 3, "threshold": 3}

    if lean:
        write_jsonl(run_dir / RUN_FILES["results"], rows())
        write_json(run_dir / RUN_FILES["manifest"], {"backend": "bench"})
        return
    # as the runner writes them: ResultRow dumps (every key present), items.jsonl, the plan hash in the manifest
    write_jsonl(run_dir / RUN_FILES["results"], (ResultRow.model_validate(r).model_dump(mode="json") for r in rows()))
    write_jsonl(run_dir / RUN_FILES["items"], plan.items)
    write_json(
        run_dir / RUN_FILES["manifest"],
        {"backend": "bench", "plan_sha256": plan.fingerprint(), "status": "completed", "tool_version": "bench"},
    )


def measure(step: str, a: Path, b: Path) -> tuple[float, float, float, float]:
    code = STEP.format(root=str(ROOT), step=step, a=str(a), b=str(b))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), time.perf_counter() - t0, float(out[2])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="2,000 queries only")
    ap.add_argument("--sizes", type=int, nargs="+", help="numbers of queries (default 10000 50000)")
    ap.add_argument("--lean", action="store_true", help="the older, smaller run folder (3 result rows per query)")
    args = ap.parse_args()
    sizes = args.sizes or ([2_000] if args.quick else [10_000, 50_000])
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "a", Path(tmp) / "b"
            t = time.perf_counter()
            generate(a, n, 1, lean=args.lean)
            generate(b, n, 2, lean=args.lean)
            print(f"\n{n} queries{' (lean)' if args.lean else ''} (generated in {time.perf_counter() - t:.1f}s)")
            results = {}
            steps = ["build", "json", "md", "html", "compare", "compare_all", "ours_test"]
            if n <= 10_000:
                steps.append("scipy")
            for step in steps:
                step_s, cpu_s, wall, rss = measure(step, a, b)
                results[step] = step_s
                print(
                    f"  {step:11s} step {step_s:7.2f}s  cpu {cpu_s:7.2f}s  process {wall:7.2f}s  "
                    f"peak RSS {rss:7.0f} MiB"
                )
            if "scipy" in results:
                print(
                    f"  paired test (2 metrics, 2000 resamples): ours {results['ours_test']:.3f}s vs scipy "
                    f"{results['scipy']:.3f}s → {results['scipy'] / max(results['ours_test'], 1e-9):.1f}× "
                )
            print(json.dumps({"n": n, "lean": args.lean, **{k: round(v, 3) for k, v in results.items()}}))


if __name__ == "__main__":
    main()
