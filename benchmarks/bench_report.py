"""Time, peak memory and output size of `foundry-bridge report` (each format) and `compare` on generated runs.

    python benchmarks/bench_report.py [--sizes N ...] [--code DIR] [--steps STEP ...] [--browser]

Generates two run folders laid out as the runner writes them (``tests/report_helpers.write_synthetic_run``: plan.json,
items.jsonl, records.jsonl, results.jsonl, manifest.json; N queries × 10 retrieved documents with content, one in
ten negative, document retrieval's nine metrics and three LLM judges per query, some errored or missing). Each step
is one whole ``foundry-bridge`` command run in its own Python process, which prints its wall time and its peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) when the command returns: ``report --format json|md|html --out F``
and ``compare A B --format json --out F`` (every metric, 2,000 resamples). The size of each output is printed
(the JSON's per-query JSONL beside it too). ``--code DIR`` runs another checkout's ``foundry_bridge`` (e.g. the
code before a change, from ``git archive``) on the same folders. ``--browser`` loads the HTML report in headless
Chromium and prints the load time (until the page's script marked it ready).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

STEP = r"""
import resource, sys, time
sys.path.insert(0, {code!r})
from foundry_bridge.cli import main
t = time.perf_counter()
try:
    main({argv!r})
except SystemExit as exc:
    if exc.code not in (0, 3, None):
        raise
ru = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, file=sys.stderr)
"""

STEPS = ("json", "md", "html", "compare")


def argv_of(step: str, a: Path, b: Path, out: Path) -> list[str]:
    if step == "compare":
        return ["compare", str(a), str(b), "--format", "json", "--resamples", "2000", "--out", str(out)]
    return ["report", str(a), "--format", step, "--out", str(out)]


def measure(code: Path, argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one command in a fresh process."""
    script = STEP.format(code=str(code), argv=argv)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed:\n{proc.stderr[-3000:]}")
    wall, cpu, rss = proc.stderr.strip().splitlines()[-1].split()
    return float(wall), float(cpu), float(rss)


def browser_load_seconds(html: Path) -> float | None:
    """Seconds for headless Chromium to load ``html`` and dump its DOM (None without chromium)."""
    binary = next((p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None)
    if binary is None:
        return None
    with tempfile.TemporaryDirectory() as profile:
        cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}"]
        cmd += ["--dump-dom", html.as_uri()]
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        elapsed = time.perf_counter() - t
    ready = 'data-report-ready="1"' in proc.stdout[:4000]
    return elapsed if proc.returncode == 0 and ready else float("nan")


def _size(path: Path) -> str:
    sizes = [f"{path.stat().st_size / 2**20:.1f} MiB"]
    from foundry_bridge.report import queries_path

    side = queries_path(path)
    if side.exists():
        sizes.append(f"+ {side.name} {side.stat().st_size / 2**20:.1f} MiB")
    return " ".join(sizes)


def main() -> None:
    from report_helpers import write_synthetic_run

    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="numbers of queries")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose foundry_bridge runs the steps")
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    ap.add_argument("--browser", action="store_true", help="load the HTML report in headless Chromium")
    ap.add_argument("--keep", type=Path, help="generate the runs here and keep them (reused when present)")
    args = ap.parse_args()
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            base = (args.keep or Path(tmp)) / f"n{n}"
            a, b = base / "a", base / "b"
            t = time.perf_counter()
            if not (a / "manifest.json").exists():
                write_synthetic_run(a, n, 1)
            if "compare" in args.steps and not (b / "manifest.json").exists():
                write_synthetic_run(b, n, 2)
            mib = (a / "records.jsonl").stat().st_size / 2**20 + (a / "results.jsonl").stat().st_size / 2**20
            print(f"\n{n} queries ({mib:.0f} MiB of JSONL per run; ready in {time.perf_counter() - t:.1f}s)")
            results: dict[str, dict[str, float]] = {}
            for step in args.steps:
                out = Path(tmp) / f"out.{'json' if step == 'compare' else step}"
                wall, cpu, rss = measure(args.code, argv_of(step, a, b, out))
                results[step] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss)}
                results[step]["output_mib"] = round(out.stat().st_size / 2**20, 2)
                shown = _size(out) if step != "compare" else f"{out.stat().st_size / 2**20:.1f} MiB"
                print(f"  {step:8s} wall {wall:7.2f}s  cpu {cpu:7.2f}s  peak RSS {rss:7.0f} MiB  out {shown}")
                if step == "html" and args.browser:
                    load = browser_load_seconds(out)
                    results[step]["chromium_load_s"] = round(load, 2) if load is not None else -1
                    print(f"           headless Chromium load: {load if load is None else round(load, 2)} s")
            print(json.dumps({"n": n, **results}))


if __name__ == "__main__":
    main()
