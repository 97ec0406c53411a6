"""Benchmark: a cached re-run of the local backend against the uncached run, on the same fake judge server.

    python benchmarks/bench_local_cache.py [--quick] [--rows N] [--latency SECONDS] [--concurrency C]

Builds a synthetic plan (N rows x 3 LLM judges + document retrieval), serves a fake OpenAI-compatible judge on
127.0.0.1 (stdlib HTTP server, optional artificial latency per answer), and times in one process:

1. the uncached run (empty cache directory: every judge call is made, answers are stored),
2. the cached re-run (same plan and judge: zero judge calls),
3. a run with ``use_cache=False`` (every call again, nothing stored) for reference.

Prints wall times, judge calls, the uncached/cached ratio, the cache size on disk and the peak RSS of the process.
azure-ai-evaluation is imported (and warmed up) before any timing.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from foundry_bridge.catalog import CATALOG  # noqa: E402
from foundry_bridge.local import LocalBackend  # noqa: E402
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest, score_answer  # noqa: E402
from foundry_bridge.mapping.model import Mapping  # noqa: E402
from foundry_bridge.mapping.plan import CriterionPlan, Plan  # noqa: E402
from foundry_bridge.runner_protocol import RunContext  # noqa: E402

WORDS = [
    "leave",
    "benefit",
    "salary",
    "plan",
    "policy",
    "employee",
    "week",
    "month",
    "match",
    "vest",
    "dental",
    "transit",
    "office",
    "stipend",
]


def synthetic_plan(rows: int, seed: int = 7) -> Plan:
    rng = random.Random(seed)
    items = []
    for i in range(rows):
        docs = [f"doc-{rng.randrange(200)}" for _ in range(5)]
        items.append(
            {
                "item": {
                    "query_id": f"q{i:05d}",
                    "query": " ".join(rng.choices(WORDS, k=9)) + "?",
                    "context": "\n\n".join(" ".join(rng.choices(WORDS, k=40)) for _ in range(3)),
                    "response": " ".join(rng.choices(WORDS, k=30)) + ".",
                    "retrieved_documents": [
                        {"document_id": d, "relevance_score": round(1 - j * 0.1, 2)} for j, d in enumerate(docs)
                    ],
                    "retrieval_ground_truth": [
                        {"document_id": d, "query_relevance_label": rng.randrange(0, 5)} for d in docs[:3]
                    ],
                }
            }
        )
    judges = [spec for spec in CATALOG.values() if spec.needs_deployment and "ground_truth" not in spec.input_names]
    docret = [spec for spec in CATALOG.values() if not spec.needs_deployment and spec.sdk_class]
    criteria = [
        CriterionPlan(
            name=spec.short_name,
            evaluator=spec.name,
            init={"threshold": 3} if spec.needs_deployment else {},
            data_mapping={name: f"{{{{item.{name}}}}}" for name in spec.input_names if name != "tool_definitions"},
        )
        for spec in [docret[0], *judges]
    ]
    return Plan(name="bench", mapping=Mapping(), criteria=criteria, eval_body={}, items=items)


def timed_run(backend: LocalBackend, plan: Plan, run_dir: Path) -> tuple[float, list]:
    t0 = time.perf_counter()
    rows = list(backend.execute(RunContext(plan=plan, run_dir=run_dir)))
    return time.perf_counter() - t0, rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 rows (about 20 s)")
    parser.add_argument("--rows", type=int, default=None, help="dataset rows (default 150; --quick 40)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the fake judge waits per answer")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=None, help="repetitions, medians reported (default 3; --quick 1)")
    args = parser.parse_args(argv)
    rows = args.rows or (40 if args.quick else 150)
    repeat = args.repeat or (1 if args.quick else 3)

    plan = synthetic_plan(rows)
    latency = args.latency

    def rule(request: JudgeRequest) -> FakeAnswer:
        answer = score_answer(1 + len(request.data) % 5, "bench")
        return FakeAnswer(content=answer.content, delay=latency)

    with FakeJudgeServer(rule) as judge, tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        tmpdir = Path(tmp)

        def backend(**kw) -> LocalBackend:
            return LocalBackend(
                judge_endpoint=judge.base_url, judge_model="bench-judge", concurrency=args.concurrency, **kw
            )

        t0 = time.perf_counter()
        list(
            backend(use_cache=False).execute(
                RunContext(plan=plan.model_copy(update={"items": plan.items[:1]}), run_dir=tmpdir)
            )
        )
        warm = time.perf_counter() - t0
        judge.reset()

        times: dict[str, list[float]] = {"uncached": [], "cached": [], "nocache": []}
        same = True
        for rep in range(repeat):
            cache_dir = tmpdir / f"cache{rep}"
            t, rows_a = timed_run(backend(cache_dir=cache_dir), plan, tmpdir)
            times["uncached"].append(t)
            calls_a = judge.calls
            judge.reset()
            t, rows_b = timed_run(backend(cache_dir=cache_dir), plan, tmpdir)
            times["cached"].append(t)
            calls_b = judge.calls
            judge.reset()
            t, _ = timed_run(backend(use_cache=False), plan, tmpdir)
            times["nocache"].append(t)
            calls_c = judge.calls
            judge.reset()
            same = same and [r.model_dump() for r in rows_a] == [r.model_dump() for r in rows_b]
        size = sum(p.stat().st_size for p in cache_dir.rglob("*.json"))
        files = sum(1 for _ in cache_dir.rglob("*.json"))
        uncached, cached, nocache = (statistics.median(times[k]) for k in ("uncached", "cached", "nocache"))

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_judge = rows * (len(plan.criteria) - 1)
    print(f"rows: {rows}; criteria: {', '.join(c.name for c in plan.criteria)}; judge calls per run: {n_judge}")
    print(f"fake judge latency: {latency * 1000:.0f} ms; concurrency: {args.concurrency}; medians of {repeat}")
    print(f"warm-up (import azure-ai-evaluation + 1 row): {warm:.2f} s")
    print(f"uncached run (fills the cache):  {uncached:8.3f} s  judge calls {calls_a:5d}  ({calls_a / uncached:.0f}/s)")
    print(f"cached re-run:                    {cached:8.3f} s  judge calls {calls_b:5d}")
    print(f"use_cache=False run (reference): {nocache:8.3f} s  judge calls {calls_c:5d}")
    print(f"ratio uncached / cached: {uncached / cached:.1f}x   no-cache / cached: {nocache / cached:.1f}x")
    print(f"cache cost on the uncached run: {uncached / nocache:.2f}x the no-cache run")
    print(f"cache on disk: {files} entries, {size / 1024:.0f} KiB ({size / max(files, 1):.0f} B/entry)")
    print(f"identical results on the re-run: {same}")
    print(f"peak RSS of this process: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
