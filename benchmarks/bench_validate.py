"""Benchmark ``foundry-bridge validate``: rows/s and peak memory on generated datasets of growing size.

    python benchmarks/bench_validate.py            # 100,000 and 1,000,000 queries
    python benchmarks/bench_validate.py --quick    # 10,000 and 100,000 queries (under a minute)

Each measurement runs in its own subprocess; its peak RSS comes from ``os.wait4`` (the child's own rusage).
The floor is the same subprocess doing only ``orjson.loads`` on every line (the cost of reading the file);
``validate`` is reported as a ratio to it. Peak memory must stay flat as rows grow: validation streams, and
duplicate query-id detection uses a fixed 16 MiB Bloom filter (a second pass runs only if some id may repeat; the
generated ids are all distinct; a last measurement adds one duplicate row to the largest file to time that second
pass). Generated files go to ``benchmarks/data/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"

FLOOR = """
import sys, orjson
n = 0
with open(sys.argv[1], 'rb') as fh:
    for line in fh:
        orjson.loads(line); n += 1
print(n)
"""

VALIDATE = """
import sys
from foundry_bridge.validate import validate
r = validate(sys.argv[1])
print(r.rows, r.errors, r.warnings)
"""

READ = """
import sys
from foundry_bridge.dataset import read_records
from foundry_bridge.mapping import load_mapping
n = sum(1 for _ in read_records(sys.argv[1], load_mapping(None)))
print(n)
"""


def generate(path: Path, n: int, docs: int = 5) -> None:
    """``n`` valid rows in Foundry field names, ``docs`` retrieved documents each (deterministic)."""
    if path.exists() and path.stat().st_size > 0:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        for i in range(n):
            ids = [f"d{(i * 7 + j) % 50_000}" for j in range(docs)]
            row = {
                "query_id": f"q{i}",
                "kind": "positive" if i % 5 else "negative",
                "query": f"What does policy {i % 997} say about leave?",
                "retrieved_documents": [
                    {"document_id": d, "relevance_score": round(1.0 - j * 0.1, 2)} for j, d in enumerate(ids)
                ],
                "retrieval_ground_truth": [
                    {"document_id": ids[0], "query_relevance_label": 0 if i % 5 == 0 else 3},
                    {"document_id": ids[2], "query_relevance_label": 0},
                ],
                "context": f"Policy {i % 997}: employees get 16 weeks of leave.",
                "response": "Sixteen weeks." if i % 5 else "I could not find that in the policies.",
            }
            fh.write(orjson.dumps(row) + b"\n")
    os.replace(tmp, path)


def measure(code: str, path: Path) -> tuple[float, int, str]:
    """(seconds, peak RSS in bytes, stdout) of ``python -c code path`` in a fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout is not None else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed ({proc.returncode})")
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return elapsed, rss, out.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10k and 100k rows instead of 100k and 1M")
    args = ap.parse_args()
    sizes = [10_000, 100_000] if args.quick else [100_000, 1_000_000]
    print(f"{'rows':>9} {'what':<9} {'seconds':>8} {'rows/s':>9} {'peak MB':>8} {'vs floor':>8}  output")
    peaks: dict[int, int] = {}
    for n in sizes:
        path = DATA / f"validate_{n}.jsonl"
        generate(path, n)
        floor_s, floor_rss, _ = measure(FLOOR, path)
        print(f"{n:>9} {'floor':<9} {floor_s:>8.2f} {n / floor_s:>9.0f} {floor_rss / 2**20:>8.1f} {1:>8.1f}")
        read_s, read_rss, _ = measure(READ, path)
        print(f"{n:>9} {'read':<9} {read_s:>8.2f} {n / read_s:>9.0f} {read_rss / 2**20:>8.1f} {read_s / floor_s:>8.1f}")
        val_s, val_rss, out = measure(VALIDATE, path)
        peaks[n] = val_rss
        print(
            f"{n:>9} {'validate':<9} {val_s:>8.2f} {n / val_s:>9.0f} {val_rss / 2**20:>8.1f} "
            f"{val_s / floor_s:>8.1f}  rows/errors/warnings = {out}"
        )
    small, large = sizes
    # the same largest file plus one row repeating the first row's query id: the second pass runs
    dup = DATA / f"validate_{large}_dup.jsonl"
    if not dup.exists():
        src = DATA / f"validate_{large}.jsonl"
        with open(src, "rb") as fh:
            first = fh.readline()
        tmp = dup.with_suffix(".tmp")
        shutil.copyfile(src, tmp)
        with open(tmp, "ab") as fh:
            fh.write(first)
        os.replace(tmp, dup)
    dup_s, dup_rss, out = measure(VALIDATE, dup)
    print(
        f"{large + 1:>9} {'+1 dup':<9} {dup_s:>8.2f} {(large + 1) / dup_s:>9.0f} {dup_rss / 2**20:>8.1f} "
        f"{dup_s / floor_s:>8.1f}  rows/errors/warnings = {out} (second pass: {dup_s - val_s:+.2f} s)"
    )
    growth = (peaks[large] - peaks[small]) / 2**20
    print(
        f"validate peak RSS: {peaks[small] / 2**20:.1f} MB at {small:,} rows, {peaks[large] / 2**20:.1f} MB at "
        f"{large:,} rows ({growth:+.1f} MB for {large - small:,} more rows; the duplicate-id filter is a fixed "
        f"{2**27 // 8 / 2**20:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
