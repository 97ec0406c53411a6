"""The wiring the report will use, end to end on the sample: canaries → mock run → arrays → trust statistics.

Asserts the shapes and the bookkeeping (what was joined, counted and left out), not the emulator's scores."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from foundry_bridge.canaries import CANARY_TYPES, CanaryCase, score_canaries
from foundry_bridge.dataset.reader import read_records
from foundry_bridge.dataset.verdicts import QueueRow, human_arrays, read_verdicts, write_verdict_queue
from foundry_bridge.mapping import load_mapping
from foundry_bridge.metrics.agreement import judge_trust, qrels_check, rater_mean
from foundry_bridge.metrics.ppi import queue_order
from foundry_bridge.runfolder import RunFolder

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits"
JUDGES = ("builtin.groundedness", "builtin.relevance", "builtin.retrieval")


def _cli(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "foundry_bridge", *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def _judge_columns(run: Path, n: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """evaluator → (score, passed) per row, NaN where unscored: the only loop over results.jsonl needed."""
    cols = {e: (np.full(n, np.nan), np.full(n, np.nan)) for e in JUDGES}
    for r in RunFolder(run).iter_results():
        if r.evaluator in cols and r.metric == r.evaluator.removeprefix("builtin.") and r.score is not None:
            cols[r.evaluator][0][r.row] = r.score
            cols[r.evaluator][1][r.row] = np.nan if r.passed is None else float(r.passed)
    return cols


def _spread(cols: dict[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Where the answer judges disagree on pass/fail: 1, else 0 (NaN-safe)."""
    both = np.vstack([cols["builtin.groundedness"][1], cols["builtin.relevance"][1]])
    return (np.nan_to_num(both, nan=0.5).max(axis=0) - np.nan_to_num(both, nan=0.5).min(axis=0) == 1).astype(float)


def test_trust_statistics_wire_onto_a_run_in_a_few_lines(tmp_path: Path) -> None:
    data2, run = tmp_path / "data2.jsonl", tmp_path / "run"
    _cli("canaries", str(SAMPLE / "rag_eval.jsonl"), "--out", str(data2), "--per-type", "3")
    _cli("run", str(data2), "--backend", "mock", "--out", str(run), "--quiet")
    records = list(read_records(data2, load_mapping(None)))
    query_ids = [r.query_id for r in records]
    cols = _judge_columns(run, len(records))
    verdicts = read_verdicts(SAMPLE / "human_verdicts.jsonl").verdicts

    score, passed = cols["builtin.groundedness"]
    hs, _ = human_arrays(verdicts, "builtin.groundedness", query_ids)
    hp, _ = human_arrays(verdicts, "builtin.groundedness", query_ids, what="passed")
    trust = judge_trust(score, passed, hs, hp, threshold=3, categories=range(1, 6))
    assert trust.raters == 2 and trust.n_labeled == 8  # q01-q05, q09, q11, n02
    assert trust.on_scale is not None and trust.on_scale.n == 11  # (judge, rater) pairs: 3 rows have two raters
    assert all(query_ids[d.index] in {v.query_id for v in verdicts} for d in trust.on_scale.disagreements)
    assert trust.alpha_humans is not None and trust.score_mean is not None and trust.score_mean.ppi_plus is not None
    assert trust.missing == []

    retrieval = qrels_check(records, cols["builtin.retrieval"][1])
    assert retrieval.n + retrieval.n_missing == len(records)

    draws = queue_order(score, rater_mean(hs), spread=_spread(cols))[:5]
    queue = tmp_path / "queue.jsonl"
    texts = {r.query_id: (r.query, r.response) for r in records}
    rows = [
        QueueRow(query_ids[d.index], "builtin.groundedness", d.place, d.reason, *texts[query_ids[d.index]])
        for d in draws
    ]
    assert write_verdict_queue(rows, queue) == 5
    assert read_verdicts(queue).unfilled == 5

    cases = [c for c in (CanaryCase.from_record(r) for r in records) if c is not None]
    verdict_of = {
        (qid, e): None if np.isnan(p[i]) else bool(p[i])
        for e, (_, p) in cols.items()
        for i, qid in enumerate(query_ids)
    }
    scores = score_canaries(cases, verdict_of)
    assert {s.kind for s in scores} == set(CANARY_TYPES)
    for s in scores:
        expected = sum(1 for c in cases if c.kind == s.kind and s.evaluator in c.expect)
        assert s.caught + len(s.missed) + s.unscored == expected
