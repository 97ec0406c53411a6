"""Benchmark ``foundry-bridge run`` on the in-process emulator: 10,000 queries, all four RAG evaluators.

    python benchmarks/bench_run.py            # 10,000 queries
    python benchmarks/bench_run.py --quick    # 1,000 queries (well under a minute)

Each measurement runs in its own subprocess so that peak memory (``ru_maxrss``) belongs to it alone:

* ``baseline``: imports + reading the dataset + building the plan (what every backend pays);
* ``run``: the same, then ``run_evaluation`` on the mock backend (eval create, split into runs, dataset upload,
  polling, paging through every output item, normalization, run-folder writes). After the run, the output items
  are paged again twice, over the same emulator: with ``FoundryClient.list_output_items`` and, as the reference,
  with the openai SDK's ``client.evals.runs.output_items.list`` (openai 3.x talks httpx2, bridged to the
  emulator's handler as in the wire reference §10). Both read the same pages of 100.

Printed: wall times, items/s, peak RSS of each subprocess and the run's extra memory over the baseline, and the
collection throughput ratio ours / openai SDK. Data goes to ``benchmarks/data/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def make_dataset(n: int) -> Path:
    """``n`` queries cycling through the benefits sample, with unique ids."""
    out = HERE / "data" / f"bench_run_{n}.jsonl"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    with out.open("w") as fh:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["query_id"] = f"{row['query_id']}-{i:06d}"
            fh.write(json.dumps(row) + "\n")
    return out


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _plan(data: Path):  # type: ignore[no-untyped-def]
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import build_plan, load_mapping

    mapping = load_mapping(None)
    return build_plan(read_records(data, mapping), mapping, dataset_path=data)


def child_baseline(data: Path) -> dict:
    t0 = time.perf_counter()
    plan = _plan(data)
    return {"plan_seconds": time.perf_counter() - t0, "items": len(plan.items), "peak_mib": _peak_mib()}


def _openai_client(handler, base_url: str):  # type: ignore[no-untyped-def]
    import httpx
    import httpx2
    import openai

    class Bridge(httpx2.BaseTransport):
        def handle_request(self, request):  # type: ignore[no-untyped-def]
            req = httpx.Request(
                request.method, str(request.url), headers=list(request.headers.multi_items()), content=request.read()
            )
            resp = handler(req)
            resp.read()
            return httpx2.Response(resp.status_code, headers=list(resp.headers.multi_items()), content=resp.content)

    return openai.OpenAI(base_url=base_url, api_key="mock", http_client=httpx2.Client(transport=Bridge()))


def child_run(data: Path) -> dict:
    from foundry_bridge.mock import FoundryEmulator
    from foundry_bridge.runner import MOCK_ENDPOINT, get_backend, run_evaluation

    t0 = time.perf_counter()
    plan = _plan(data)
    t_plan = time.perf_counter() - t0
    emu = FoundryEmulator(polls_to_complete=1, record_calls=False)
    backend = get_backend("mock", emulator=emu, sleep=lambda s: None)
    with tempfile.TemporaryDirectory() as tmp:
        t1 = time.perf_counter()
        summary = run_evaluation(plan, Path(tmp) / "run", backend)
        t_run = time.perf_counter() - t1
        manifest = json.loads((Path(tmp) / "run" / "manifest.json").read_text())
        results_bytes = (Path(tmp) / "run" / "results.jsonl").stat().st_size
    peak_after_run = _peak_mib()
    eval_id = summary.eval_id
    client = backend.client  # type: ignore[attr-defined]

    t2 = time.perf_counter()
    ours = sum(1 for run_id in summary.run_ids for _ in client.list_output_items(eval_id, run_id, page_size=100))
    t_ours = time.perf_counter() - t2

    sdk = _openai_client(emu.handler, MOCK_ENDPOINT + "/openai/v1")
    t3 = time.perf_counter()
    theirs = sum(
        1 for run_id in summary.run_ids for _ in sdk.evals.runs.output_items.list(run_id, eval_id=eval_id, limit=100)
    )
    t_sdk = time.perf_counter() - t3
    return {
        "items": len(plan.items),
        "criteria": len(plan.criteria),
        "results": summary.results,
        "runs": len(summary.run_ids),
        "data_sources": manifest.get("data_sources"),
        "plan_seconds": t_plan,
        "run_seconds": t_run,
        "timings": manifest.get("timings", {}),
        "requests": manifest.get("requests_sent"),
        "results_mib": results_bytes / 2**20,
        "peak_mib": peak_after_run,
        "collect_ours": {"items": ours, "seconds": t_ours},
        "collect_openai": {"items": theirs, "seconds": t_sdk},
    }


def _spawn(mode: str, data: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--data", str(data)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 queries instead of 10,000")
    parser.add_argument("-n", type=int, default=None, help="number of queries")
    parser.add_argument("--child", choices=["baseline", "run"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        fn = child_baseline if args.child == "baseline" else child_run
        print(json.dumps(fn(args.data)))
        return

    n = args.n or (1_000 if args.quick else 10_000)
    data = make_dataset(n)
    print(f"dataset: {data} ({n} queries, {data.stat().st_size / 2**20:.1f} MiB)")
    base = _spawn("baseline", data)
    run = _spawn("run", data)
    t = run["timings"]
    items_per_s = run["items"] / run["run_seconds"]
    print(f"criteria: {run['criteria']}  runs: {run['runs']} ({', '.join(run['data_sources'])})")
    print(f"result rows: {run['results']}  results.jsonl: {run['results_mib']:.1f} MiB  requests: {run['requests']}")
    print(f"plan build:        {run['plan_seconds']:8.2f} s")
    print(
        f"run_evaluation:    {run['run_seconds']:8.2f} s  = {items_per_s:,.0f} items/s "
        f"({run['items'] * run['criteria'] / run['run_seconds']:,.0f} item×criterion/s)"
    )
    print(
        f"  submit {t.get('submit_seconds', 0):.2f} s (eval, upload, runs)  wait {t.get('wait_seconds', 0):.2f} s "
        f"(emulator scoring on first poll)  collect {t.get('collect_seconds', 0):.2f} s"
    )
    ours, ref = run["collect_ours"], run["collect_openai"]
    ours_rate = ours["items"] / ours["seconds"]
    ref_rate = ref["items"] / ref["seconds"]
    print(f"page all output items, FoundryClient: {ours_rate:10,.0f} items/s ({ours['items']} items)")
    print(f"page all output items, openai SDK:    {ref_rate:10,.0f} items/s ({ref['items']} items)  [reference]")
    print(f"  ratio ours / openai SDK: {ours_rate / ref_rate:.2f}x")
    print(
        f"peak RSS: baseline (imports + plan) {base['peak_mib']:.0f} MiB, run {run['peak_mib']:.0f} MiB "
        f"(+{run['peak_mib'] - base['peak_mib']:.0f} MiB for the run, emulator store included)"
    )


if __name__ == "__main__":
    main()
