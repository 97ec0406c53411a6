"""The report's and the comparison's numbers on a generated run, for the before/after test (test_report_scale.py).

``report_numbers`` / ``compare_numbers`` take what ``build_report`` / ``compare_runs`` return and keep what the
streaming rewrite must not change: every aggregate, coverage, stage counts, the negative-query aggregate, canaries,
warnings, the first ``LISTED`` ids of each list, the top 20 of the labelling queue, the first 10 got-worse queries
and a SHA-256 of the per-query rows (each ``QueryRow`` as compact JSON, one per line, in dataset order). The
golden file was written by the code before the rewrite (see its ``_provenance``); regenerate only if a number is
meant to change: ``python tests/scale_helpers.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from report_helpers import write_synthetic_run

GOLDEN = Path(__file__).resolve().parent / "data" / "report_scale" / "numbers.json"
N_QUERIES = 3000
LISTED = 100  # ids kept of each list (the streaming report keeps the first 100 of each)
# negative:hit@10 can never fire (hit is undefined without a relevant label): kept, as a skipped check (#26)
COMPARE = {"n_resamples": 1000, "fail_on": ["groundedness:0.1", "negative:hit@10"], "allow_empty_gate": True}


def rows_sha256(rows: Iterable[dict[str, Any]]) -> str:
    """SHA-256 of per-query rows as sorted-key compact JSON lines (independent of key order and whitespace)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    return h.hexdigest()


def report_numbers(report: dict[str, Any], rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The numbers of a report (its JSON as a dict) and of its per-query rows."""
    neg = report["negative_queries"]
    return {
        "params": report["params"],
        "metrics": report["metrics"],
        "coverage": report["coverage"],
        "positive": report["positive"],
        "negative": report["negative"],
        "stages": {"counts": report["stages"]["counts"], "queries": _first(report["stages"]["queries"])},
        "negative_queries": {
            **_first({k: v for k, v in neg.items() if k not in ("local", "counts")}),  # counts: new in issue 13
            "aggregate": neg["local"].get("aggregate"),
            "per_query": neg["local"].get("per_query", [])[:LISTED],
        },
        "canaries": report["canaries"],
        "labelling_queue": [{**h, "queries": h["queries"][:LISTED]} for h in report["labelling_queue"][:20]],
        "warnings": report["warnings"],
        "queries_sha256": rows_sha256(_without(rows, "search_partial")),  # the flag is new in issue 22
    }


def _without(rows: Iterable[dict[str, Any]], key: str) -> Iterator[dict[str, Any]]:
    """The rows without a field added since the golden file was written (what it held stays compared)."""
    return ({k: v for k, v in row.items() if k != key} for row in rows)


def _first(lists: dict[str, Any]) -> dict[str, Any]:
    return {k: v[:LISTED] if isinstance(v, list) else v for k, v in lists.items()}


def compare_numbers(comparison: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a comparison (its JSON as a dict); run folders' paths left out."""
    runs = [{k: v for k, v in r.items() if k != "run_dir"} for r in comparison["runs"]]
    metrics = [
        {**m, "got_worse": m["got_worse"][:10], "n_got_worse": m.get("n_got_worse", len(m["got_worse"]))}
        for m in comparison["metrics"]
    ]
    return {**{k: v for k, v in comparison.items() if k not in ("runs", "metrics")}, "runs": runs, "metrics": metrics}


def synthetic_runs(tmp: Path) -> tuple[Path, Path]:
    """Two generated runs over the same query ids (different labels, documents and scores)."""
    return write_synthetic_run(tmp / "a", N_QUERIES, 1), write_synthetic_run(tmp / "b", N_QUERIES, 2)


def _today(tmp: Path) -> dict[str, Any]:  # the code before the streaming rewrite
    from foundry_bridge.comparison import compare_runs, render_comparison_json
    from foundry_bridge.report import build_report, render_json

    a, b = synthetic_runs(tmp)
    report = build_report(a)
    rows = [q.model_dump(mode="json") for q in report.queries]
    comparison = compare_runs([a, b], **COMPARE, correction="none")  # type: ignore[arg-type]  # as the test calls it
    return {
        "report": report_numbers(json.loads(render_json(report)), rows),
        "compare": compare_numbers(json.loads(render_comparison_json(comparison))),
    }


if __name__ == "__main__":
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as d:
        numbers = _today(Path(d))
    numbers["_provenance"] = (
        f"written by `python tests/scale_helpers.py` with the report code of commit {commit} (before the streaming "
        f"report of issue 13), on two runs of write_synthetic_run({N_QUERIES}, seed 1 and 2); compare {COMPARE}"
    )
    GOLDEN.write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)
