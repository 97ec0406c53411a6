"""What a report's time is bounded by: the per-query file, made and written by the engine alone, against the report.

    python benchmarks/bench_report_floor.py benchmarks/data/scale/local_100000/run_a
    python benchmarks/bench_report_floor.py RUN --base /work/wt/base --base-run COPY_OF_RUN_WITHOUT_COLUMNS

``RUN`` is a sealed run folder of ``bench_scale.py``'s local path (``--paths local``). Whole processes, each
measured like ``bench_scale.py`` (wall, CPU = user + system, peak RSS), ``--repeats`` times alternating, medians:

- **report**: ``report RUN --format json --per-query jsonl --out R`` — the report and its per-query file
  ``R.queries.jsonl`` (the rows the engine bound below writes, and the base's format).
- **parquet**: the same report with its default per-query file, ``R.queries.parquet`` (what a user runs).
- **base** (with ``--base``): the same command from another checkout (a worktree of the commit to compare with), on
  ``--base-run`` (a copy of RUN without ``columns/``, which an older version may not read).
- **start-up**: importing what every report imports before its first row (the CLI, ``report``, DuckDB).
- **write**: copying the report's per-query file (the same bytes) to a new file: the kernel's cost of writing it.
- **engine**: DuckDB alone making the per-query rows from the sealed columns — every query's texts, local metrics,
  lists and each Foundry metric's fields pivoted from the results, as JSON, in the report's blocks of 8,192 rows
  (with 1 GB of memory, more than the product's limit: that only lowers the bound) — and writing them. No stage
  attribution, no aggregates, no Python per row: a lower bound of what writing the per-query file costs whatever
  the code around it. Its bytes are printed beside the report's per-query file's (the same fields, without the
  stages).

Then the lower bound of a report (start-up + engine) beside the budget of a 12× faster report (base / 12,
issue #35's target at 100k).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import measure  # noqa: E402  — the same whole-process measure as the scale benchmark

_BLOCK = 8192


def _engine(run_dir: Path, out: Path) -> None:
    """The per-query rows' JSON from the run's sealed columns (``RunColumns``' views), made by DuckDB alone, written
    block by block."""
    sys.path.insert(0, str(HERE.parent))
    import numpy as np

    from foundry_bridge.columns import RunColumns

    run = RunColumns.open(run_dir)
    con, n = run.con, run.n_queries
    local = ", ".join(f'"{k}" := CASE WHEN isnan(q."{k}") THEN NULL ELSE q."{k}" END' for k in run.local_keys)
    pairs = [(c, m) for c, metrics in run.observed()[0].items() for m in metrics]
    fields = "score := score, passed := passed, label := label, threshold := threshold, reason := reason"
    pivot = ", ".join(
        f"arg_max(struct_pack(status := 'scored', {fields}, error := error), seq) "
        f"FILTER (WHERE criterion = '{c}' AND metric = '{m}') AS m{i}"
        for i, (c, m) in enumerate(pairs)
    )
    foundry = ", ".join(f'"{c}/{m}" := p.m{i}' for i, (c, m) in enumerate(pairs))
    row = (
        "row := q.row, query_id := q.query_id, kind := q.kind, kind_source := q.kind_source, query := q.query, "
        f"response := q.response, canary := q.canary, local := struct_pack({local}), "
        f"foundry := struct_pack({foundry}), dropped_relevant := q.dropped_relevant, holes := q.holes"
    )
    with out.open("wb") as fh:
        for lo in range(0, n, _BLOCK):
            hi = min(n, lo + _BLOCK)
            got = con.sql(
                f"SELECT to_json(struct_pack({row})) || chr(10) AS j FROM queries q LEFT JOIN "
                f"(SELECT row, {pivot} FROM results WHERE row >= {lo} AND row < {hi} GROUP BY row) p ON p.row = q.row "
                f"WHERE q.row >= {lo} AND q.row < {hi} ORDER BY q.row"
            ).to_arrow_table()
            for chunk in got.column("j").chunks:  # the text as it lies in the Arrow buffer: no str per row
                buffers = chunk.buffers()
                ends = np.frombuffer(buffers[1], np.int32, len(chunk) + 1, chunk.offset * 4)
                fh.write(memoryview(buffers[2])[int(ends[0]) : int(ends[-1])])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, nargs="?")
    ap.add_argument("--base", type=Path, help="another checkout whose report is measured on --base-run")
    ap.add_argument("--base-run", type=Path, help="a copy of RUN without columns/ (for --base)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-mib", type=int, default=12_000)
    ap.add_argument("--worker-engine", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_engine:
        _engine(*args.worker_engine)
        return 0
    if args.run is None:
        ap.error("give RUN, a run folder (bench_scale.py --paths local makes them)")
    args.run = args.run.resolve()  # the steps run in benchmarks/data/scale/
    args.base_run = args.base_run.resolve() if args.base_run else None
    work = Path(tempfile.mkdtemp(prefix="bench-report-floor-"))
    py, me = sys.executable, str(Path(__file__).resolve())
    report = work / "r.json"
    cli = [py, "-m", "foundry_bridge", "report", str(args.run), "--format", "json", "--out"]
    steps: dict[str, list[str]] = {
        "report": [*cli, str(report), "--per-query", "jsonl"],
        "parquet": [*cli, str(work / "p.json")],
        "start-up": [py, "-c", "import foundry_bridge.cli, foundry_bridge.report, duckdb"],
        "write": [
            py,
            "-c",
            f"import shutil; shutil.copyfile({str(report) + '.queries.jsonl'!r}, {str(work / 'copy')!r})",
        ],
        # more memory than the product's limit (its per-block pivot needs more at 1M): a lower bound stays one
        "engine": ["env", "FOUNDRY_BRIDGE_DUCKDB_MEMORY=1GB", py, me, "--worker-engine", str(args.run)],
    }
    steps["engine"].append(str(work / "engine.jsonl"))
    if args.base:
        base_out = work / "base.json"
        # measure() puts this project first on PYTHONPATH; env gives the base checkout's process its own
        steps["base"] = ["env", f"PYTHONPATH={args.base}", py, "-m", "foundry_bridge", "report", str(args.base_run)]
        steps["base"] += ["--format", "json", "--out", str(base_out)]
    times: dict[str, list[tuple[float, float, float]]] = {k: [] for k in steps}
    for _ in range(args.repeats):
        for name, cmd in steps.items():
            wall, cpu, rss, error = measure(cmd, work / f"{name}.stderr", args.max_mib)
            if error:
                print(f"{name}: FAILED {error}")
                return 1
            times[name].append((wall, cpu, rss))
    med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in times.items()}
    for name, (wall, cpu, rss) in med.items():
        print(f"  {name:<9} wall {wall:7.2f} s  CPU {cpu:7.2f} s  peak {rss:6.0f} MiB")
    per_query = (report.parent / (report.name + ".queries.jsonl")).stat().st_size / 1e6
    engine = (work / "engine.jsonl").stat().st_size / 1e6
    print(f"  bytes: the report's per-query file {per_query:.0f} MB, the engine's rows {engine:.0f} MB")
    floor = med["start-up"][0] + med["engine"][0]
    print(f"  a report's lower bound (start-up + engine): {floor:.2f} s wall; the report: {med['report'][0]:.2f} s")
    if "base" in med:
        print(
            f"  base {med['base'][0]:.2f} s: the report is ×{med['base'][0] / med['report'][0]:.1f} faster "
            f"(×{med['base'][0] / med['parquet'][0]:.1f} with its default Parquet per-query file); "
            f"12× needs ≤ {med['base'][0] / 12:.2f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
