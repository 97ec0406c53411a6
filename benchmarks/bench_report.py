"""Time and memory of `report` and `compare` on generated run folders.

    python benchmarks/bench_report.py [--quick]

Generates two run folders (N queries × 10 retrieved documents, 3 labels each, three LLM judges and one errored
row in 500), then runs each step in its own subprocess and prints wall time and the subprocess's peak RSS:
build_report, JSON / Markdown / HTML rendering, and compare_runs on the two runs. For the paired test the
reference is scipy's permutation_test on the same differences (same number of resamples), measured in the same run.
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

STEP = r"""
import resource, sys, time
sys.path.insert(0, {root!r})
from foundry_bridge.report import build_report, compare_runs, render_html, render_json, render_markdown
t = time.perf_counter()
step = {step!r}
if step == "build":
    r = build_report({a!r})
elif step in ("json", "md", "html"):
    r = build_report({a!r})
    t = time.perf_counter()
    out = {{"json": render_json, "md": render_markdown, "html": render_html}}[step](r)
elif step == "compare":
    c = compare_runs([{a!r}, {b!r}], metrics=["rr@10", "ndcg@10", "groundedness", "relevance"], n_resamples=2000)
elif step == "scipy":
    import numpy as np
    from scipy import stats
    from foundry_bridge.report import build_report
    ra, rb = build_report({a!r}), build_report({b!r})
    t = time.perf_counter()
    for key in ("rr@10", "ndcg@10"):
        x = np.array([q.local[key] for q in ra.queries if q.kind == "positive"])
        y = np.array([q.local[key] for q in rb.queries if q.kind == "positive"])
        stats.permutation_test((y - x,), np.mean, permutation_type="samples", n_resamples=2000,
                               random_state=np.random.default_rng(42))
elif step == "ours_test":
    import numpy as np
    from foundry_bridge.report._stats import sign_flip_test, paired_generator
    ra, rb = build_report({a!r}), build_report({b!r})
    t = time.perf_counter()
    for key in ("rr@10", "ndcg@10"):
        x = np.array([q.local[key] for q in ra.queries if q.kind == "positive"])
        y = np.array([q.local[key] for q in rb.queries if q.kind == "positive"])
        sign_flip_test(y - x, n_resamples=2000, rng=paired_generator(42, key))
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def generate(run_dir: Path, n: int, seed: int) -> None:
    from foundry_bridge._io import write_json, write_jsonl
    from foundry_bridge.dataset import QueryRecord
    from foundry_bridge.mapping import build_plan, load_mapping
    from foundry_bridge.results import RUN_FILES

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
            for crit in ("retrieval", "groundedness", "relevance"):
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

    write_jsonl(run_dir / RUN_FILES["results"], rows())
    write_json(run_dir / RUN_FILES["manifest"], {"backend": "bench"})


def measure(step: str, a: Path, b: Path) -> tuple[float, float, float]:
    code = STEP.format(root=str(ROOT), step=step, a=str(a), b=str(b))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), time.perf_counter() - t0, float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    sizes = [2_000] if args.quick else [10_000, 50_000]
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "a", Path(tmp) / "b"
            t = time.perf_counter()
            generate(a, n, 1)
            generate(b, n, 2)
            print(f"\n{n} queries (generated in {time.perf_counter() - t:.1f}s)")
            results = {}
            for step in ("build", "json", "md", "html", "compare", "ours_test", "scipy"):
                step_s, wall, rss = measure(step, a, b)
                results[step] = step_s
                print(f"  {step:10s} step {step_s:7.2f}s  process {wall:7.2f}s  peak RSS {rss:7.0f} MiB")
            print(
                f"  paired test (2 metrics, 2000 resamples): ours {results['ours_test']:.3f}s vs scipy "
                f"{results['scipy']:.3f}s → {results['scipy'] / max(results['ours_test'], 1e-9):.1f}× "
            )
            print(json.dumps({"n": n, **{k: round(v, 3) for k, v in results.items()}}))


if __name__ == "__main__":
    main()
