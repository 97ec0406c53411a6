"""`foundry-bridge traces` at scale: 1,000,000 spans (250,000 requests of 4 spans) read within 500 MiB.

    python benchmarks/bench_traces.py                   # 1,000,000 spans
    python benchmarks/bench_traces.py --spans 100000    # a quick look

The requests are the scale benchmark's rows (``bench_scale.generate``: 10 documents, a 3-passage context, a
response), written as OpenTelemetry GenAI spans — a server span, a ``retrieval`` span (the ranking as a JSON string),
a ``chat`` span (the context as system instructions, the question, the answer) and an HTTP client span — in OTLP JSON
lines of 100 traces each, as a collector's file exporter batches them (``benchmarks/data/traces/``, git-ignored).

Whole processes, measured like ``bench_scale.py`` (wall, CPU, peak RSS of the process): ``traces`` without and with
``--sample 1000`` (twice: the two samples must be equal), next to the reference floor of the same run — one process
that only parses every line of the file with orjson (what any reader of OTLP JSON must pay). Printed: each step's
numbers, the ratio of its wall time to the floor's, and whether the 500 MiB target and the reproducibility hold.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import DATA as SCALE_DATA  # noqa: E402  — the project's generator and whole-process measure
from bench_scale import generate, measure  # noqa: E402

DATA = HERE / "data" / "traces"
TARGET_MIB = 500.0
T0 = 1_796_029_200 * 10**9


def _kv(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


def _spans(i: int, row: dict) -> list[dict]:
    import orjson

    trace, ids = f"{i + 1:032x}", [f"{i * 4 + j + 1:016x}" for j in range(4)]
    t = T0 + i * 10**9

    def span(n: int, name: str, attrs: list[dict], parent: str | None, dt: int) -> dict:
        s = {"traceId": trace, "spanId": ids[n], "name": name, "kind": 3, "startTimeUnixNano": str(t + dt),
             "endTimeUnixNano": str(t + dt + 10**6), "attributes": attrs}  # fmt: skip
        return {**s, "parentSpanId": parent} if parent else s

    docs = [{"id": d["document_id"], "score": d["relevance_score"]} for d in row["retrieved_documents"]]
    sent = [{"role": "user", "parts": [{"type": "text", "content": row["query"]}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": row["response"]}], "finish_reason": "stop"}]
    return [
        span(1, "retrieval kb", [
            _kv("gen_ai.operation.name", "retrieval"), _kv("gen_ai.retrieval.query.text", row["query"]),
            _kv("gen_ai.retrieval.documents", orjson.dumps(docs).decode())], ids[0], 1000),
        span(3, "POST", [_kv("http.request.method", "POST"), _kv("url.full", "https://llm.example/v1/chat")],
             ids[2], 3000),
        span(2, "chat gpt-4o-mini", [
            _kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", "gpt-4o-mini"),
            _kv("gen_ai.response.id", f"chatcmpl-{i}"),
            _kv("gen_ai.system_instructions", orjson.dumps([{"type": "text", "content": row["context"]}]).decode()),
            _kv("gen_ai.input.messages", orjson.dumps(sent).decode()),
            _kv("gen_ai.output.messages", orjson.dumps(answer).decode())], ids[0], 2000),
        span(0, "POST /ask", [_kv("http.route", "/ask"), _kv("app.tier", "gold" if i % 5 == 0 else "free")], None, 0),
    ]  # fmt: skip


def write_traces(n_spans: int) -> Path:
    """The OTLP JSON file of ``n_spans`` spans (made once), from ``bench_scale.generate``'s rows."""
    import orjson

    path = DATA / f"genai_{n_spans}.jsonl"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rows_path = DATA / f"rows_{n_spans // 4}.jsonl"
    generate(rows_path, n_spans // 4, seed=0, variant=0)
    resource = {"attributes": [_kv("service.name", "bench")]}
    tmp = path.with_suffix(".tmp")
    with open(rows_path, "rb") as rows, open(tmp, "wb") as out:
        batch: list[dict] = []
        for i, line in enumerate(rows):
            batch += _spans(i, orjson.loads(line))
            if len(batch) >= 400:
                out.write(orjson.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": batch}]}]}))
                out.write(b"\n")
                batch = []
        if batch:
            out.write(orjson.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": batch}]}]}))
            out.write(b"\n")
    tmp.replace(path)
    rows_path.unlink()
    return path


FLOOR = "import orjson,sys\nfor line in open(sys.argv[1], 'rb'): orjson.loads(line)\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--max-mib", type=int, default=4000, help="cap of each step's heap (RLIMIT_DATA)")
    ap.add_argument("--worker-write", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_write:
        write_traces(args.spans)
        return
    # written by a child: a forked step starts with its parent's resident pages, so the parent stays small
    subprocess.run([sys.executable, __file__, "--worker-write", "--spans", str(args.spans)], check=True)
    src = write_traces(args.spans)
    SCALE_DATA.mkdir(parents=True, exist_ok=True)  # measure()'s working folder
    print(f"{src.name}: {src.stat().st_size / 1e6:.0f} MB, {args.spans:,} spans")
    fb = [sys.executable, "-m", "foundry_bridge", "traces", str(src)]
    steps = {
        "orjson floor": [sys.executable, "-c", FLOOR, str(src)],
        "traces": [*fb, "--out", str(DATA / "all.jsonl")],
        "traces --sample 1000": [*fb, "--out", str(DATA / "s1.jsonl"), "--sample", "1000", "--seed", "7"],
        "traces --sample 1000 again": [*fb, "--out", str(DATA / "s2.jsonl"), "--sample", "1000", "--seed", "7"],
    }
    floor = None
    print(f"{'step':<28} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9} {'× floor':>8}")
    for name, cmd in steps.items():
        wall, cpu, rss, error = measure(cmd, DATA / f"{name.replace(' ', '_')}.log", args.max_mib)
        floor = floor or wall
        ok = "" if error is None else f"  FAILED {error}"
        target = "" if name == "orjson floor" or rss <= TARGET_MIB else f"  over {TARGET_MIB:.0f} MiB"
        print(f"{name:<28} {wall:8.1f} {cpu:8.1f} {rss:9.0f} {wall / floor:8.2f}{target}{ok}")
    same = [hashlib.sha256((DATA / f).read_bytes()).hexdigest() for f in ("s1.jsonl", "s2.jsonl")]
    rows = (DATA / "all.jsonl").read_bytes().count(b"\n")
    print(f"rows rebuilt: {rows:,}; --sample 1000 --seed 7 reproducible: {same[0] == same[1]}")
    log = (DATA / "traces.log").read_text()
    print(f"progress lines on stderr: {log.count('reading spans')}")


if __name__ == "__main__":
    main()
