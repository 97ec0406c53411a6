"""Benchmark ``foundry-bridge run``: wall time and peak memory as the dataset grows (issue 13, items 1 and 4).

    python benchmarks/bench_run.py                    # mock at 10k and 100k, local document_retrieval at 100k
    python benchmarks/bench_run.py --quick            # 1k and 10k
    python benchmarks/bench_run.py --local 100000 1000000 --mock   # sizes of each path (no size: skip it)

Three measurements, each a whole process of its own, peak RSS read with ``os.wait4`` (``ru_maxrss``):

* ``mock``: ``foundry-bridge run DATA --backend mock`` on the benefits sample cycled to N queries, all four RAG
  evaluators. The emulator lives in the same process and keeps every run's output items, so this number includes
  the emulator's storage;
* ``client``: the same run through ``run_evaluation`` and ``FoundryBackend`` over a client whose service keeps
  nothing (eval create goes to the emulator; runs complete at once; output item pages are made on request from
  the emulator's items for the 14 sample rows). Its peak is the client side alone: plan, upload, paging,
  normalization, run folder;
* ``local``: ``foundry-bridge run DATA --backend local`` with only ``builtin.document_retrieval`` (no judge, no
  network) on N synthetic queries of 10 retrieved documents and 5 labels — the path of a retrieval sweep.

Printed per path and size: wall seconds, peak RSS, and the growth ratio of peak RSS (and wall) from the previous
size. ``--paging N`` instead pages the output items of a mock run of N queries with ``FoundryClient`` and with the
openai SDK (reference) over the same emulator, and prints both rates and their ratio. Data goes to
``benchmarks/data/`` (git-ignored). Run it under ``nice -n 10`` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
DOCRET_MAPPING = """version: 1
dataset:
  format: jsonl
  fields:
    query_id: query_id
    kind: kind
    retrieved_documents: {path: retrieved_documents, document_id: document_id, relevance_score: relevance_score}
    retrieval_ground_truth: {path: retrieval_ground_truth, document_id: document_id,
                             query_relevance_label: query_relevance_label}
labels: {min: 0, max: 4}
evaluators:
  - evaluator: builtin.document_retrieval
"""


# -- data -----------------------------------------------------------------------------------------------------
def rag_dataset(n: int) -> Path:
    """``n`` queries cycling through the benefits sample, with unique ids ``<id>-<index>``."""
    out = DATA / f"bench_run_{n}.jsonl"
    if not out.is_file():
        DATA.mkdir(parents=True, exist_ok=True)
        rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
        with out.open("w") as fh:
            for i in range(n):
                row = dict(rows[i % len(rows)])
                row["query_id"] = f"{row['query_id']}-{i:07d}"
                fh.write(json.dumps(row) + "\n")
    return out


def docret_dataset(n: int) -> tuple[Path, Path]:
    """``n`` synthetic retrieval queries (10 ranked documents, 5 graded labels, one in ten negative) and the
    document_retrieval-only mapping."""
    out = DATA / f"bench_docret_{n}.jsonl"
    mapping = DATA / "bench_docret.yaml"
    DATA.mkdir(parents=True, exist_ok=True)
    mapping.write_text(DOCRET_MAPPING)
    if not out.is_file():
        tmp = out.with_suffix(".tmp")
        with tmp.open("w") as fh:
            for q in range(n):
                docs = [
                    {"document_id": f"d{(q * 7 + j) % 5000}", "relevance_score": round(1 - j / 10, 2)}
                    for j in range(10)
                ]
                negative = q % 10 == 9
                labels = [
                    {
                        "document_id": f"d{(q * 7 + j * 3) % 5000}",
                        "query_relevance_label": 0 if negative else (q + j) % 5,
                    }
                    for j in range(5)
                ]
                row = {"query_id": f"q{q:07d}", "kind": "negative" if negative else "positive"}
                fh.write(json.dumps({**row, "retrieved_documents": docs, "retrieval_ground_truth": labels}) + "\n")
        os.replace(tmp, out)
    return out, mapping


# -- measuring a process ----------------------------------------------------------------------------------------
def measure(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of ``cmd``, a process of its own (``os.wait4``'s ``ru_maxrss``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode(errors='replace')[-3000:]}")
    return wall, usage.ru_maxrss / 1024.0  # Linux: KiB


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "foundry_bridge", *args]


# -- the client-side run (no emulator storage) ------------------------------------------------------------------
def _sample_outputs() -> tuple[Any, list[dict[str, Any]]]:
    """The emulator's output items for the 14 sample rows, and the emulator (its eval-create route is reused)."""
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import build_plan, load_mapping
    from foundry_bridge.mock import FoundryEmulator
    from foundry_bridge.runner import get_backend, run_evaluation

    mapping = load_mapping(None)
    plan = build_plan(read_records(SAMPLE, mapping), mapping, dataset_path=SAMPLE)
    emu = FoundryEmulator(polls_to_complete=1, record_calls=False)
    with tempfile.TemporaryDirectory() as tmp:
        run_evaluation(plan, Path(tmp) / "run", get_backend("mock", emulator=emu, sleep=lambda s: None))
        lines = (Path(tmp) / "run" / "output_items.jsonl").read_text().splitlines()
    return emu, [json.loads(line) for line in lines]


def child_client(data: str) -> None:
    """``run_evaluation`` over a client whose runs keep nothing: the client side's memory alone."""
    from foundry_bridge.dataset import read_records
    from foundry_bridge.foundry import FoundryBackend, FoundryClient, StaticTokenCredential
    from foundry_bridge.foundry._models import DatasetVersion, EvalRun
    from foundry_bridge.foundry._paging import ItemPaged
    from foundry_bridge.mapping import build_plan, load_mapping
    from foundry_bridge.runner import MOCK_ENDPOINT, run_evaluation

    emu, templates = _sample_outputs()

    class StorelessClient(FoundryClient):
        """Runs complete at once; an output item page is built on request from the sample's items."""

        counts: ClassVar[dict[str, tuple[int, int]]] = {}
        offset = 0
        pending = 0

        def create_run(self, eval_id: str, data_source: Any, **kwargs: Any) -> EvalRun:
            source = data_source["source"]
            count = len(source["content"]) if source["type"] == "file_content" else self.pending
            run_id = f"evalrun_{len(self.counts)}"
            self.counts[run_id] = (self.offset, count)
            self.offset += count
            return self.get_run(eval_id, run_id)

        def get_run(self, eval_id: str, run_id: str) -> EvalRun:
            return EvalRun.model_validate({"id": run_id, "eval_id": eval_id, "status": "completed"})

        def upload_dataset(self, name: str, version: str, data: bytes, **kwargs: Any) -> DatasetVersion:
            self.pending = data.count(b"\n")
            return DatasetVersion.model_validate({"id": f"azureai://datasets/{name}/versions/{version}"})

        def list_output_items_raw(self, eval_id: str, run_id: str, *, page_size: int = 100) -> Any:
            offset, count = self.counts[run_id]

            def fetch(after: str | None) -> tuple[str | None, list[dict[str, Any]]]:
                start = int(after or 0)
                page = []
                for local in range(start, min(count, start + page_size)):
                    t = templates[(offset + local) % len(templates)]
                    qid = f"{t['datasource_item']['query_id']}-{offset + local:07d}"
                    source = {**t["datasource_item"], "query_id": qid}
                    page.append({**t, "id": str(local + 1), "datasource_item_id": local, "datasource_item": source})
                return (str(start + page_size) if start + page_size < count else None), page

            return ItemPaged(fetch, lambda page: page)

    client = StorelessClient(MOCK_ENDPOINT, StaticTokenCredential("t"), transport=emu.transport(), poll_interval=0.0)
    mapping = load_mapping(None)
    plan = build_plan(read_records(Path(data), mapping), mapping, dataset_path=data)
    with tempfile.TemporaryDirectory() as tmp:
        run_evaluation(plan, Path(tmp) / "run", FoundryBackend(client, name="mock"))


# -- paging: FoundryClient against the openai SDK ---------------------------------------------------------------
def _openai_client(handler: Any, base_url: str) -> Any:
    """The openai SDK (3.x talks httpx2) over the emulator's handler, bridged as in the wire reference §10."""
    import httpx
    import httpx2
    import openai

    class Bridge(httpx2.BaseTransport):  # type: ignore[misc]
        def handle_request(self, request: Any) -> Any:
            req = httpx.Request(
                request.method, str(request.url), headers=list(request.headers.multi_items()), content=request.read()
            )
            resp = handler(req)
            resp.read()
            return httpx2.Response(resp.status_code, headers=list(resp.headers.multi_items()), content=resp.content)

    return openai.OpenAI(base_url=base_url, api_key="mock", http_client=httpx2.Client(transport=Bridge()))


def child_paging(data: str) -> None:
    """A mock run of DATA, then every output item paged again (pages of 100) by ``FoundryClient`` and by the
    openai SDK's ``client.evals.runs.output_items.list``, over the same emulator: items/s of each."""
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import build_plan, load_mapping
    from foundry_bridge.mock import FoundryEmulator
    from foundry_bridge.runner import MOCK_ENDPOINT, get_backend, run_evaluation

    mapping = load_mapping(None)
    plan = build_plan(read_records(Path(data), mapping), mapping, dataset_path=data)
    emu = FoundryEmulator(polls_to_complete=1, record_calls=False)
    backend = get_backend("mock", emulator=emu, sleep=lambda s: None)
    with tempfile.TemporaryDirectory() as tmp:
        summary = run_evaluation(plan, Path(tmp) / "run", backend)
    eval_id, client = summary.eval_id, backend.client  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    ours = sum(1 for run_id in summary.run_ids for _ in client.list_output_items(eval_id, run_id, page_size=100))
    t_ours = time.perf_counter() - t0
    sdk = _openai_client(emu.handler, MOCK_ENDPOINT + "/openai/v1")
    t1 = time.perf_counter()
    theirs = sum(
        1 for run_id in summary.run_ids for _ in sdk.evals.runs.output_items.list(run_id, eval_id=eval_id, limit=100)
    )
    t_sdk = time.perf_counter() - t1
    print(f"page all output items, FoundryClient: {ours / t_ours:10,.0f} items/s ({ours} items)")
    print(f"page all output items, openai SDK:    {theirs / t_sdk:10,.0f} items/s ({theirs} items)  [reference]")
    print(f"  ratio ours / openai SDK: {(ours / t_ours) / (theirs / t_sdk):.2f}x")


# -- the table --------------------------------------------------------------------------------------------------
def run_path(path: str, sizes: list[int]) -> list[tuple[int, float, float]]:
    """One row per size: (n, wall, peak MiB)."""
    out = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            if path == "local":
                data, mapping = docret_dataset(n)
                cmd = cli("run", str(data), "--mapping", str(mapping), "--backend", "local", "--out", tmp + "/r", "-q")
            elif path == "mock":
                cmd = cli("run", str(rag_dataset(n)), "--backend", "mock", "--out", tmp + "/r", "-q")
            else:
                cmd = [sys.executable, __file__, "--child-client", str(rag_dataset(n))]
            wall, peak = measure(cmd)
        out.append((n, wall, peak))
        prev = out[-2] if len(out) > 1 else None
        growth = f"  ×{peak / prev[2]:.2f} RSS, ×{wall / prev[1]:.2f} wall vs {prev[0]:,}" if prev else ""
        print(f"{path:7s} {n:>10,} queries  {wall:8.1f} s  peak RSS {peak:7.0f} MiB{growth}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 queries")
    parser.add_argument("--mock", type=int, nargs="*", help="sizes for the mock CLI run (and the client-side run)")
    parser.add_argument("--local", type=int, nargs="*", help="sizes for the local document_retrieval run")
    parser.add_argument("--paging", type=int, metavar="N", help="only: page N queries' items, ours vs openai SDK")
    parser.add_argument("--child-client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_client:
        child_client(args.child_client)
        return
    if args.paging:
        child_paging(str(rag_dataset(args.paging)))
        return
    default = [1_000, 10_000] if args.quick else [10_000, 100_000]
    mock = default if args.mock is None and args.local is None else (args.mock or [])
    local = ([10_000] if args.quick else [100_000]) if args.local is None and args.mock is None else (args.local or [])
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; peak RSS of each whole process")
    for path, sizes in (("client", mock), ("mock", mock), ("local", local)):
        if sizes:
            run_path(path, sizes)


if __name__ == "__main__":
    main()
