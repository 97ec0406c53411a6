"""End-to-end speed and memory of `foundry-bridge metrics` against pytrec_eval and ranx on the same JSONL file.

    python benchmarks/bench_metrics.py            # 50,000 and 100,000 queries × 100 retrieved documents
    python benchmarks/bench_metrics.py --quick    # 5,000 and 10,000 queries (under a minute)
    python benchmarks/bench_metrics.py --repeat 3 # each command 3 times, interleaved; medians in the table

Each measurement is a whole fresh process reading the same file (page cache warmed first), timed from start to
exit, with its CPU time (user + system) and peak RSS from ``wait4`` (waited-for children included):

- **foundry_bridge**: ``python -m foundry_bridge metrics FILE --k 10 -o OUT`` (rr, recall, precision, hit,
  distracting, ndcg, ndcg_exp at 10, the negative-query report and the assembly check, per-query JSON written);
- **pytrec_eval**: parses each line with ``json``, builds qrels and a run cut to each query's top 10 (trec_eval's
  recip_rank has no cutoff; the @10 measures only look at the top 10, so the cut is both correct and the cheapest
  input), evaluates recip_rank, P_10, recall_10, success_10, ndcg_cut_10 and averages;
- **ranx**: parses with ``json``, builds ``Qrels``/``Run`` from the same top-10 dicts, evaluates mrr@10,
  precision@10, recall@10, hit_rate@10, ndcg@10 (its numba cache is warmed by an untimed run first);
- **bare decode** (the practical limit for this JSON): one process, the file memory-mapped and decoded by msgspec
  (``Decoder(Row).decode_lines``) into structs holding only what the metrics read — the query id, the kind, the
  first 10 documents' ids and scores (an array-like struct: the other 90 are skipped, as the command's reader
  skips them) and the labels — and nothing else: no metric, no output. Its ratio to the command is how much of the
  command is not JSON decoding (start-up, per-query Python, the arrays, the metrics, the per-query output).

The data: every query positive, 100 retrieved documents with strictly decreasing scores (so every library ranks them
in list order), 10 labels 0–3 (at least one relevant), 6 of them on retrieved documents. The MRR@10 of the three
must agree to 1e-9.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


# -- data -----------------------------------------------------------------------------------------------------
def generate(path: Path, n_queries: int, seed: int = 7) -> None:
    import numpy as np
    import orjson

    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        for start in range(0, n_queries, 10_000):
            n = min(10_000, n_queries - start)
            perm = rng.permuted(np.tile(np.arange(200), (n, 1)), axis=1)  # 100 retrieved + 100 never retrieved
            ret = np.sort(perm[:, :100], axis=1)
            rng.permuted(ret, axis=1, out=ret)
            scores = np.round(1.0 - (np.arange(100) + 0.5 * rng.random((n, 100))) / 100.0, 6)
            lab_pos = rng.permuted(np.tile(np.arange(100), (n, 1)), axis=1)[:, :6]
            labels = rng.integers(0, 4, size=(n, 10))
            labels[:, 0] = np.maximum(labels[:, 0], 1)
            out = []
            for i in range(n):
                q = start + i
                ids = [f"d{q}-{x}" for x in ret[i].tolist()]
                labelled = [ids[p] for p in lab_pos[i].tolist()] + [f"d{q}-{x}" for x in perm[i, 100:104].tolist()]
                row = {
                    "query_id": f"q{q}",
                    "kind": "positive",
                    "retrieved_documents": [
                        {"document_id": d, "relevance_score": s} for d, s in zip(ids, scores[i].tolist(), strict=True)
                    ],
                    "retrieval_ground_truth": [
                        {"document_id": d, "query_relevance_label": v}
                        for d, v in zip(labelled, labels[i].tolist(), strict=True)
                    ],
                }
                out.append(orjson.dumps(row))
            fh.write(b"\n".join(out) + b"\n")
    os.replace(tmp, path)


# -- the reference workers (run in their own process) ----------------------------------------------------------
def _read_top10(path: str) -> tuple[dict, dict]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            qid = row["query_id"]
            qrels[qid] = {g["document_id"]: g["query_relevance_label"] for g in row["retrieval_ground_truth"]}
            run[qid] = {d["document_id"]: d["relevance_score"] for d in row["retrieved_documents"][:10]}
    return qrels, run


def worker_pytrec(path: str) -> dict:
    import pytrec_eval

    qrels, run = _read_top10(path)
    measures = {"recip_rank", "P.10", "recall.10", "success.10", "ndcg_cut.10"}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=1).evaluate(run)
    n = len(res)
    return {
        "queries": n,
        "mrr@10": sum(v["recip_rank"] for v in res.values()) / n,
        "ndcg@10": sum(v["ndcg_cut_10"] for v in res.values()) / n,
        "recall@10": sum(v["recall_10"] for v in res.values()) / n,
    }


def worker_ranx(path: str) -> dict:
    from ranx import Qrels, Run, evaluate

    qrels, run = _read_top10(path)
    scores = evaluate(Qrels(qrels), Run(run), ["mrr@10", "precision@10", "recall@10", "hit_rate@10", "ndcg@10"])
    return {
        "queries": len(qrels),
        "mrr@10": scores["mrr@10"],
        "ndcg@10": scores["ndcg@10"],
        "recall@10": scores["recall@10"],
    }


def worker_decode(path: str) -> dict:
    """The bare msgspec decode of the file (see the module docstring); returns the query count."""
    import mmap

    import msgspec

    # defstruct with type objects: local classes' string annotations (this module's __future__ import) would not resolve
    doc = msgspec.defstruct("Doc", [("document_id", str), ("relevance_score", float)], gc=False)
    top = msgspec.defstruct("Top", [(f"r{i}", doc | None, None) for i in range(10)], array_like=True, gc=False)
    label = msgspec.defstruct("Label", [("document_id", str), ("query_relevance_label", int)], gc=False)
    fields = [("query_id", str), ("retrieved_documents", top), ("retrieval_ground_truth", list[label])]  # type: ignore[valid-type]
    row = msgspec.defstruct("Row", [*fields, ("kind", str | None, None)], gc=False)

    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        rows = msgspec.json.Decoder(row).decode_lines(mm)
        n = len(rows)
        del rows
    return {"queries": n}


# -- measuring -----------------------------------------------------------------------------------------------
def measure(cmd: list[str], stdout_path: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one whole process, its waited-for children included (``wait4``).

    The parent stays small (data are generated in a subprocess), so the RSS a child inherits before ``exec`` is
    negligible.
    """
    with open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, env=child_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code != 0:
        raise SystemExit(f"command failed ({code}): {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def child_env() -> dict[str, str]:
    """This checkout's package first; bytecode cached (under benchmarks/data/pycache) as in an installed package,
    even when the caller's environment sets ``PYTHONDONTWRITEBYTECODE``."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(DATA / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), *filter(None, [env.get("PYTHONPATH")])])
    return env


def warm(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


def print_table(rows: list[tuple[int, dict[str, dict[str, float]]]], names: list[str]) -> None:
    """wall / CPU / peak RSS per command, then the ratios: each reference's time ÷ ours (how many times faster we
    are), and ours ÷ the bare decode (how many times the practical limit we take; 1.0 would be the limit)."""
    refs = names[1:-1]
    print(f"{'queries':>8} | " + " | ".join(f"{k:>22}" for k in names) + " |   wall ratio | CPU ratio")
    print(
        f"{'':>8} | "
        + " | ".join(f"{'wall / CPU s / MiB':>22}" for _ in names)
        + " | "
        + " ".join(f"{k.split('_')[0][:6]:>6}" for k in refs)
        + "   ÷bare"
    )
    for n, r in rows:
        cells = [f"{r[k]['wall']:5.2f} / {r[k]['cpu']:5.2f} / {r[k]['rss']:4.0f}" for k in names]
        ours, bare = r["foundry_bridge"], r["bare decode"]
        ratios = []
        for key in ("wall", "cpu"):
            ratios.append(" ".join(f"{r[k][key] / ours[key]:5.1f}×" for k in refs) + f" {ours[key] / bare[key]:5.2f}×")
        print(f"{n:>8} | " + " | ".join(f"{c:>22}" for c in cells) + " | " + " | ".join(ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 and 10,000 queries")
    parser.add_argument(
        "--repeat", type=int, default=1, help="measure each command this many times, interleaved; report the median"
    )
    parser.add_argument("--sizes", type=int, nargs="+", help="query counts (default: 50,000 and 100,000)")
    parser.add_argument("--no-ranx", action="store_true", help="leave ranx out (its runs take the longest)")
    parser.add_argument("--worker", choices=["pytrec", "ranx", "decode", "generate"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("file", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "generate":
        generate(Path(args.file), args.n)
        return
    if args.worker:
        fn = {"pytrec": worker_pytrec, "ranx": worker_ranx, "decode": worker_decode}[args.worker]
        sys.stdout.write(json.dumps(fn(args.file)) + "\n")
        return

    sizes = args.sizes or ((5_000, 10_000) if args.quick else (50_000, 100_000))
    DATA.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    me = str(Path(__file__).resolve())
    # warm ranx's numba cache on a tiny file, untimed
    tiny = DATA / "metrics_tiny.jsonl"
    if not tiny.exists():
        subprocess.run([py, me, "--worker", "generate", "--n", "20", str(tiny)], check=True)
    if not args.no_ranx:
        subprocess.run([py, me, "--worker", "ranx", str(tiny)], check=True, stdout=subprocess.DEVNULL, env=child_env())
    names = ["foundry_bridge", "pytrec_eval", *([] if args.no_ranx else ["ranx"]), "bare decode"]

    load = os.getloadavg()
    print(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    rows: list[tuple[int, dict[str, dict[str, float]]]] = []
    best_rows: list[tuple[int, dict[str, dict[str, float]]]] = []
    for n in sizes:
        path = DATA / f"metrics_{n}.jsonl"
        if not path.exists():
            t0 = time.perf_counter()
            subprocess.run([py, me, "--worker", "generate", "--n", str(n), str(path)], check=True)
            print(f"generated {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        runs: dict[str, list[dict]] = {}
        for _ in range(max(1, args.repeat)):
            commands = {
                "foundry_bridge": [
                    py,
                    "-m",
                    "foundry_bridge",
                    "metrics",
                    str(path),
                    "--k",
                    "10",
                    "-o",
                    str(DATA / "out.json"),
                ],
                "pytrec_eval": [py, me, "--worker", "pytrec", str(path)],
                "ranx": [py, me, "--worker", "ranx", str(path)],
                "bare decode": [py, me, "--worker", "decode", str(path)],
            }
            for name in names:
                cmd = commands[name]
                warm(path)
                stdout = DATA / f"stdout_{name.replace(' ', '_')}.txt"
                wall, cpu, rss = measure(cmd, stdout)
                if name == "foundry_bridge":
                    # read in a subprocess: the parent's peak RSS is inherited by every later child (see measure)
                    code = (
                        "import json,sys; s=json.load(open(sys.argv[1]))['summary']['positive'];"
                        "print(json.dumps({'mrr@10': s['rr@10'], 'ndcg@10': s['ndcg@10'], "
                        "'recall@10': s['recall@10']}))"
                    )
                    value = json.loads(subprocess.check_output([py, "-c", code, str(DATA / "out.json")]))
                else:
                    value = json.loads(stdout.read_text())
                runs.setdefault(name, []).append({"wall": wall, "cpu": cpu, "rss": rss, **value})
                mrr = f"MRR@10 {value['mrr@10']:.6f}" if "mrr@10" in value else f"{value['queries']} rows decoded"
                print(
                    f"  {n:>7} queries  {name:<15} wall {wall:6.2f} s  CPU {cpu:6.2f} s  peak {rss:6.0f} MiB  {mrr}",
                    flush=True,
                )
        # the median of each measure over the repeats (the values checked below are the same in every run)
        results = {name: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for name, rs in runs.items()}
        # and the best run of each command: on a shared machine the run least disturbed by other jobs
        best = {name: {key: min(r[key] for r in rs) for key in ("wall", "cpu", "rss")} for name, rs in runs.items()}
        ours = results["foundry_bridge"]
        for ref in names[1:-1]:
            for key in ("mrr@10", "ndcg@10", "recall@10"):
                if abs(results[ref][key] - ours[key]) > 1e-9:
                    raise SystemExit(f"{key} disagrees with {ref}: {ours[key]} vs {results[ref][key]}")
        rows.append((n, results))
        best_rows.append((n, best))

    print()
    if args.repeat > 1:
        print(f"median of {args.repeat} interleaved runs per command")
    print_table(rows, names)
    if args.repeat > 1:
        print(f"\nbest of {args.repeat} (each command's least disturbed run: the minimum wall, CPU and RSS)")
        print_table(best_rows, names)
    print(f"MRR@10, nDCG@10 and recall@10 agree across {', '.join(names[:-1])} (to 1e-9).")
    load = os.getloadavg()
    print(
        f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
        f"this process's peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
