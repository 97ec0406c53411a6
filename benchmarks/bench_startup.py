"""Fixed start-up of the ``foundry-bridge`` command line: whole processes on tiny inputs, and what they import.

    python benchmarks/bench_startup.py               # 15 interleaved runs of each case; min and median
    python benchmarks/bench_startup.py --repeat 40   # steadier numbers on a busy machine
    python benchmarks/bench_startup.py --importtime  # also the `-X importtime` self time per top-level package
    python benchmarks/bench_startup.py --baseline /tmp/main-copy   # the same cases on another checkout,
                                                   # interleaved with this one (e.g. `git archive main | tar -x`)

Every case is a fresh process (CPU = user + system from ``wait4``; wall from start to exit). The inputs are tiny
(the 14-query sample, the TREC sample), so what is measured is the cost every run pays before reading data:
the interpreter, the imports, the mapping. Two floors are measured the same way: ``python -c pass`` and
``python -c "import numpy, msgspec, click"`` (what the metrics path cannot do without).

Bytecode is cached as in an installed package: ``PYTHONDONTWRITEBYTECODE`` is removed from the children's
environment and ``PYTHONPYCACHEPREFIX`` points at ``benchmarks/data/pycache`` (nothing is written beside the
sources); one untimed run of each case fills the cache.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"


def child_env(root: Path = ROOT) -> dict[str, str]:
    """The children's environment: the package of ``root`` first, bytecode cached under benchmarks/data."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(DATA / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    return env


def cases(py: str) -> list[tuple[str, list[str]]]:
    out = str(DATA / "startup_out.json")
    fb = [py, "-m", "foundry_bridge"]
    trec = ROOT / "samples" / "trec"
    return [
        ("python -c pass", [py, "-c", "pass"]),
        ("import numpy, msgspec, click", [py, "-c", "import numpy, msgspec, click"]),
        ("foundry-bridge --help", [*fb, "--help"]),
        ("foundry-bridge metrics --help", [*fb, "metrics", "--help"]),
        ("metrics DATA (14 queries)", [*fb, "metrics", str(ROOT / "samples/benefits/rag_eval.jsonl"), "-o", out]),
        (
            "metrics --qrels --run (sample)",
            [*fb, "metrics", "--qrels", str(trec / "qrels.txt"), "--run", str(trec / "run.txt"), "-o", out],
        ),
    ]


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU s, wall s) of one whole process."""
    t0 = time.perf_counter()
    # cwd outside any checkout: `python -m` puts the working directory first on sys.path, before PYTHONPATH
    proc = subprocess.Popen(cmd, env=env, cwd=DATA, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return usage.ru_utime + usage.ru_stime, wall


def importtime(cmd: list[str], env: dict[str, str], top: int = 14) -> None:
    """``-X importtime`` of one run: self time summed per top-level package (``foundry_bridge`` per subpackage)."""
    argv = [cmd[0], "-X", "importtime", *cmd[1:]]
    proc = subprocess.run(argv, env=env, cwd=DATA, capture_output=True, text=True, check=True)
    total: collections.Counter[str] = collections.Counter()
    modules = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        parts = name.strip().split(".")
        total[".".join(parts[:2]) if parts[0] == "foundry_bridge" else parts[0]] += int(self_us)
        modules += 1
    spent = sum(total.values()) / 1000
    print(f"\n-X importtime of `{' '.join(cmd[3:5])}`: {modules} modules, {spent:.1f} ms self time")
    for name, us in total.most_common(top):
        print(f"  {us / 1000:7.1f} ms  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs of each case, interleaved (default 15)")
    parser.add_argument("--importtime", action="store_true", help="also print the import time per package")
    parser.add_argument("--baseline", type=Path, help="another checkout's root, measured interleaved with this one")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    roots = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    envs, todo = {label: child_env(root) for label, root in roots.items()}, cases(sys.executable)
    for env in envs.values():
        for _, cmd in todo:  # fill the bytecode cache, untimed
            run_once(cmd, env)
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(max(1, args.repeat)):
        for name, cmd in todo:
            for label, env in envs.items():
                times.setdefault((name, label), []).append(run_once(cmd, env))
    load = os.getloadavg()
    print(f"{args.repeat} runs each; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    print(f"{'case':<34} {'tree':<8} {'CPU min':>8} {'CPU med':>8} {'wall min':>9} {'wall med':>9}")
    for (name, label), rs in times.items():
        cpu, wall = [r[0] * 1000 for r in rs], [r[1] * 1000 for r in rs]
        print(
            f"{name:<34} {label:<8} {min(cpu):6.0f}ms {statistics.median(cpu):6.0f}ms "
            f"{min(wall):7.0f}ms {statistics.median(wall):7.0f}ms"
        )
    if args.importtime:
        for label, env in envs.items():
            print(f"\n[{label}: {roots[label]}]", end="")
            importtime(todo[4][1], env)


if __name__ == "__main__":
    main()
