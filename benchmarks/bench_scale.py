"""How `run`, `report` and `compare` grow with the dataset: whole `foundry-bridge` processes at 10k, 100k, 1M queries.

    python benchmarks/bench_scale.py                         # 10,000 and 100,000 queries, both paths
    python benchmarks/bench_scale.py --quick                 # 1,000 and 5,000 queries (a minute or two)
    python benchmarks/bench_scale.py --sizes 100000 1000000 --paths local   # the done-when growth check
    python benchmarks/bench_scale.py --sizes 10000 --steps run report      # a subset of the steps
    python benchmarks/bench_scale.py --tables a.json b.json    # growth and targets of runs saved with --json

Two paths, each measured as whole fresh processes on generated data (``benchmarks/data/scale/``, git-ignored):

- **mock**: ``validate DATA``, ``run DATA --backend mock`` (the packaged mapping: document_retrieval + the three
  judges, scored by the in-process emulator), then ``report RUN`` as json, md and html, then ``compare RUN RUN_B``
  (json and md) against a second run of a variant dataset (same queries and labels, other rankings); ``--steps
  validate report compare`` (without ``run``) measures the run folders an earlier call left. Skipped above
  ``--mock-max`` queries (default 100,000): the emulator spools its blobs and rows to temporary files, but it
  scores every row in this process, which takes long at 1M.
- **local**: the same steps with ``run DATA --backend local`` and a mapping holding only
  ``builtin.document_retrieval`` (computed locally: no judge, no network) — the path a search team sweeps.

Printed per step: wall time, CPU time (user + system), peak RSS (``ru_maxrss`` from ``os.wait4``: the process
and every child it waited for) and the output's size; then, between consecutive sizes, the growth of time and
of peak RSS next to the growth of the data; and the targets of issues 13 and 23 (every step ≤ 500 MiB at 100k and
at 1M, peak RSS grows ≤ 1.5× from 100k to 1M on the local path, the HTML report < 10 MB at 1M). A step that fails
is shown as failed (its exit code and the last line of its stderr) and the rest go on. ``--json FILE`` keeps the
table.
``--max-mib`` (default 12,000) caps each step's heap (``RLIMIT_DATA``), so a step that does not stream fails with a
MemoryError rather than taking a shared machine's memory.

The data are deterministic (numpy ``default_rng`` seeded per block of 10,000 queries; ``--seed``): 10 retrieved
documents with ~60-character contents, 5 labels 0–3 (10 % of the queries negative: no relevant label), a context
joining the top 3 contents, a response (some negatives abstain) — about 2.3 KB per query (23 MB at 10k, 2.3 GB at
1M). The parent process stays small (data are generated in a child), so the children's peak RSS is their own.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data" / "scale"
STEPS = ("validate", "run", "report", "compare")
TARGET_MIB_AT_100K = 500.0
TARGET_MIB_AT_1M = 500.0  # issue 23: every step at 1M, the engine's memory limit set
TARGET_GROWTH_100K_1M = 1.5
TARGET_HTML_MB_AT_1M = 10.0

_WORDS = tuple(
    [
        "leave",
        "policy",
        "salary",
        "bonus",
        "travel",
        "expense",
        "laptop",
        "badge",
        "parking",
        "remote",
        "office",
        "holiday",
        "pension",
        "dental",
        "vision",
        "training",
        "mentor",
        "review",
        "promotion",
        "contract",
        "notice",
        "relocation",
        "visa",
        "payroll",
        "overtime",
        "shift",
        "security",
        "privacy",
    ]
)


# -- data (run in a child process) -----------------------------------------------------------------------------
def generate(path: Path, n_queries: int, *, seed: int, variant: int) -> None:
    """``n_queries`` rows in the packaged mapping's field names; ``variant`` reorders the rankings only."""
    import numpy as np
    import orjson

    tmp = path.with_suffix(".tmp")
    n_docs = max(1000, n_queries * 2)
    with open(tmp, "wb") as fh:
        for block, start in enumerate(range(0, n_queries, 10_000)):
            n = min(10_000, n_queries - start)
            rng = np.random.default_rng([seed, block])  # the queries and labels: the same in every variant
            # 12 distinct candidate documents per query (offsets 131 apart in a corpus of at least 2,000)
            docs = (rng.integers(0, n_docs, size=(n, 1)) + 131 * np.arange(12)) % n_docs
            labels = rng.integers(0, 4, size=(n, 5))
            negative = rng.random(n) < 0.1
            labels[negative] = 0
            labels[~negative, 0] = np.maximum(labels[~negative, 0], 1)
            words = rng.integers(0, len(_WORDS), size=(n, 8))
            order = np.random.default_rng([seed, block, variant]).permuted(np.tile(np.arange(12), (n, 1)), axis=1)
            cols = zip(docs.tolist(), labels.tolist(), negative.tolist(), words.tolist(), order.tolist(), strict=True)
            rows = [orjson.dumps(_row(start + i, *col)) for i, col in enumerate(cols)]
            fh.write(b"\n".join(rows) + b"\n")
    os.replace(tmp, path)


def _row(q: int, d: list[int], lab: list[int], negative: bool, w: list[int], o: list[int]) -> dict:
    """Query ``q``: candidate documents ``d`` (the first 5 labelled ``lab``), words ``w``, ranking order ``o``."""
    topic = " ".join(_WORDS[x] for x in w[:3])
    ranked = [d[j] for j in o[:10]]  # 10 of the 12 candidate documents, in this variant's order
    retrieved: list[dict[str, str | float]] = [
        {
            "document_id": f"doc-{x}",
            "relevance_score": round(0.95 - 0.07 * r, 4),
            "title": f"{_WORDS[x % len(_WORDS)]} {x}",
            "content": f"Doc {x}: the {_WORDS[x % len(_WORDS)]} rules for {topic}, section {x % 97}.",
        }
        for r, x in enumerate(ranked)
    ]
    truth = [{"document_id": f"doc-{x}", "query_relevance_label": v} for x, v in zip(d[:5], lab, strict=True)]
    abstain = negative and q % 2 == 0
    return {
        "query_id": f"q{q:07d}",
        "kind": "negative" if negative else "positive",
        "query": f"What are the {topic} rules ({q})?",
        "retrieved_documents": retrieved,
        "retrieval_ground_truth": truth,
        "context": "\n\n".join(str(doc["content"]) for doc in retrieved[:3]),
        "response": "I don't know." if abstain else f"The {topic} rules are in document {ranked[0]}.",
        "ground_truth": "" if negative else f"See document {d[0]}.",
    }


def docret_mapping(path: Path) -> None:
    """The packaged mapping with only ``builtin.document_retrieval`` among its evaluators."""
    text = (ROOT / "mappings" / "default.yaml").read_text()
    head = text[: text.index("\nevaluators:")]
    path.write_text(head + "\nevaluators:\n  - evaluator: builtin.document_retrieval\n")


# -- measuring -------------------------------------------------------------------------------------------------
@dataclass
class Step:
    path: str
    size: int
    step: str
    wall: float | None = None
    cpu: float | None = None
    rss_mib: float | None = None
    output_mb: float | None = None
    error: str | None = None


def measure(cmd: list[str], log: Path, max_mib: int) -> tuple[float, float, float, str | None]:
    """(wall s, CPU s, peak RSS MiB, error or None) of one whole process and the children it waited for.

    The child's data segment (heap and private mappings, ``RLIMIT_DATA``; a memory-mapped input does not count) is
    capped at ``max_mib``: a step that would take the machine's memory fails with a MemoryError instead.
    """
    import resource

    def cap() -> None:
        limit = max_mib << 20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    with open(log, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=DATA, preexec_fn=cap)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    error = None
    if code != 0:
        lines = log.read_text(errors="replace").strip().splitlines()
        error = f"exit {code}: {lines[-1][:200] if lines else '(no stderr)'}"
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, error


def _size_mb(path: Path) -> float | None:
    if path.is_file():
        return path.stat().st_size / 1e6
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
    return None


def dataset(n: int, seed: int, variant: int) -> Path:
    path = DATA / f"scale_{n}_{seed}_{variant}.jsonl"
    if not path.exists():
        t0 = time.perf_counter()
        me = str(Path(__file__).resolve())
        args = ["--worker-generate", str(path), "--n", str(n), "--seed", str(seed), "--variant", str(variant)]
        subprocess.run([sys.executable, me, *args], check=True)
        print(f"  generated {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f} s")
    return path


def run_path(kind: str, n: int, steps: tuple[str, ...], seed: int, max_mib: int) -> list[Step]:
    """Every step of one path at one size; the run folders are made fresh (a reused run would measure nothing)."""
    import shutil

    fb = [sys.executable, "-m", "foundry_bridge"]
    work = DATA / f"{kind}_{n}"
    if "run" in steps:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    mapping: list[str] = []
    if kind == "local":
        docret_mapping(work / "docret.yaml")
        mapping = ["--mapping", str(work / "docret.yaml")]
    out: list[Step] = []

    def step(name: str, cmd: list[str], output: Path, *, listed: bool = True) -> None:
        wall, cpu, rss, error = measure(cmd, work / f"{name.replace(' ', '_')}.stderr", max_mib)
        s = Step(kind, n, name, wall, cpu, rss, _size_mb(output), error)
        if listed:  # the variant's run is only an input of compare
            out.append(s)
        status = f"FAILED {error}" if error else f"{s.output_mb or 0:8.1f} MB out"
        print(f"  {kind:<5} {n:>9,} {name:<14} wall {wall:8.1f} s  CPU {cpu:8.1f} s  peak {rss:7.0f} MiB  {status}")

    runs = {"a": work / "run_a", "b": work / "run_b"}
    if "validate" in steps:
        step("validate", [*fb, "validate", str(dataset(n, seed, 0)), *mapping], work / "validate.stderr")
    for label, variant in (("a", 0), ("b", 1)):
        if (label == "b" and "compare" not in steps) or (runs[label].is_dir() and "run" not in steps):
            continue  # without the run step: the run folders kept from an earlier call are measured
        data = dataset(n, seed, variant)
        cmd = [*fb, "run", str(data), "--backend", kind, *mapping, "--out", str(runs[label]), "-q"]
        name = "run" if label == "a" else "run (variant)"
        step(name, cmd, runs[label] / "results.jsonl", listed=label == "a" and "run" in steps)
    if "report" in steps:
        for fmt in ("json", "md", "html"):
            target = work / f"report.{fmt}"
            step(f"report {fmt}", [*fb, "report", str(runs["a"]), "--format", fmt, "--out", str(target)], target)
    if "compare" in steps:
        for fmt in ("json", "md"):
            target = work / f"compare.{fmt}"
            cmd = [*fb, "compare", str(runs["a"]), str(runs["b"]), "--format", fmt, "--out", str(target)]
            step(f"compare {fmt}", cmd, target)
    return out


# -- the summary -----------------------------------------------------------------------------------------------
def growth_table(results: list[Step]) -> list[str]:
    """Between consecutive sizes of the same path and step: ×data, ×wall, ×CPU, ×peak RSS."""
    lines = []
    keys = sorted({(r.path, r.step) for r in results})
    for path, name in keys:
        rows = sorted((r for r in results if (r.path, r.step) == (path, name) and not r.error), key=lambda r: r.size)
        for a, b in itertools.pairwise(rows):
            assert a.wall and b.wall and a.cpu and b.cpu and a.rss_mib and b.rss_mib
            lines.append(
                f"  {path:<5} {name:<14} {a.size:>9,} → {b.size:>9,}  data ×{b.size / a.size:5.1f}  "
                f"wall ×{b.wall / a.wall:6.2f}  CPU ×{b.cpu / a.cpu:6.2f}  peak RSS ×{b.rss_mib / a.rss_mib:5.2f}"
            )
    return lines


def targets(results: list[Step]) -> list[str]:
    """The done-when lines of issues 13 and 23 that these results can decide."""
    lines = []
    for size, label, cap in ((100_000, "100k", TARGET_MIB_AT_100K), (1_000_000, "1M", TARGET_MIB_AT_1M)):
        for r in (r for r in results if r.size == size):
            ok = r.error is None and r.rss_mib is not None and r.rss_mib <= cap
            rss = "failed" if r.error else f"{r.rss_mib:.0f} MiB"
            lines.append(f"  {'ok  ' if ok else 'MISS'} {r.path} {r.step} at {label}: {rss} (≤ {cap:.0f})")
    by_key = {(r.path, r.step, r.size): r for r in results if not r.error}
    for (path, name, size), r in sorted(by_key.items()):
        if path == "local" and size == 1_000_000 and (path, name, 100_000) in by_key:
            base = by_key[(path, name, 100_000)]
            assert base.rss_mib and r.rss_mib
            g = r.rss_mib / base.rss_mib
            verdict = "ok  " if g <= TARGET_GROWTH_100K_1M else "MISS"
            lines.append(f"  {verdict} local {name} peak RSS 100k → 1M: ×{g:.2f} (≤ {TARGET_GROWTH_100K_1M})")
        if name == "report html" and size == 1_000_000 and r.output_mb is not None:
            verdict = "ok  " if r.output_mb < TARGET_HTML_MB_AT_1M else "MISS"
            lines.append(f"  {verdict} {path} HTML report at 1M: {r.output_mb:.1f} MB (< {TARGET_HTML_MB_AT_1M:.0f})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", help="query counts (default: 10,000 and 100,000)")
    parser.add_argument("--quick", action="store_true", help="1,000 and 5,000 queries")
    parser.add_argument("--paths", nargs="+", choices=["mock", "local"], default=["mock", "local"])
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    parser.add_argument("--mock-max", type=int, default=100_000, help="largest size the mock path runs at")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--max-mib", type=int, default=12_000, help="cap on each step's data segment (MiB; default 12,000)"
    )
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument(
        "--tables", type=Path, nargs="+", metavar="JSON", help="only print the growth and target tables of --json files"
    )
    parser.add_argument("--worker-generate", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--variant", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker_generate:
        generate(args.worker_generate, args.n, seed=args.seed, variant=args.variant)
        return
    if args.tables:  # e.g. a 10k run and a 100k run made separately
        print_tables([Step(**row) for path in args.tables for row in json.loads(path.read_text())])
        return
    sizes = sorted(args.sizes or ((1_000, 5_000) if args.quick else (10_000, 100_000)))
    DATA.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    print(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    results: list[Step] = []
    for n in sizes:
        for kind in args.paths:
            if kind == "mock" and n > args.mock_max:
                print(f"  mock  {n:>9,} skipped (above --mock-max {args.mock_max:,})")
                continue
            results += run_path(kind, n, tuple(args.steps), args.seed, args.max_mib)
    print_tables(results)
    walls = [r.wall for r in results if r.wall]
    load = os.getloadavg()
    print(
        f"\n{len(results)} steps, {sum(walls):.0f} s in all (median {statistics.median(walls) if walls else 0:.1f} s); "
        f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")


def print_tables(results: list[Step]) -> None:
    """The growth between sizes and the targets (issues 13 and 23) these results decide."""
    print("\ngrowth between sizes:")
    print("\n".join(growth_table(results)) or "  (one size only)")
    lines = targets(results)
    if lines:
        print("\ntargets (issues 13 and 23):")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
