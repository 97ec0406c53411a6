"""Streaming runs: plan rows on disk, output items normalized page by page, results in row order, verdicts counted
as the rows pass (issue 13, items 1 and 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from foundry_helpers import ENDPOINT, TOKEN, FakeFoundry, RecordingSleep
from local_helpers import BENEFITS, DEFAULT_MAPPING, benefits_plan, with_criteria

from foundry_bridge.catalog import DOCUMENT_RETRIEVAL
from foundry_bridge.foundry import FoundryBackend, FoundryClient, StaticTokenCredential
from foundry_bridge.local import LocalBackend
from foundry_bridge.mapping.plan import JsonlRows
from foundry_bridge.results import RUN_FILES, ResultRow
from foundry_bridge.runfolder import RunFolder, RunFolderError
from foundry_bridge.runner import VerdictCounter, read_results, run_evaluation

N_DOCRET = len(DOCUMENT_RETRIEVAL.metrics)
DATASET = [json.loads(line) for line in BENEFITS.read_text().splitlines() if line.strip()]
QUERY_IDS = [row["query_id"] for row in DATASET]


def _backend(fake: FakeFoundry, **kw: Any) -> FoundryBackend:
    client = FoundryClient(
        ENDPOINT, StaticTokenCredential(TOKEN), transport=fake.transport(), sleep=RecordingSleep(), poll_interval=0
    )
    return FoundryBackend(client, name="mock", judges_deployed=False, **kw)


class ShuffledFoundry(FakeFoundry):
    """Output items two a page, last row first (``reverse``), none for row ``skip``, row ``twice`` twice."""

    def __init__(self, *, reverse: bool = True, skip: int | None = 5, twice: int | None = None) -> None:
        super().__init__(polls_to_complete=1)
        self.reverse, self.skip, self.twice = reverse, skip, twice
        self.temp_sizes: list[int] = []  # bytes of results.jsonl being written, seen at each page request
        self.run_dir: Path | None = None

    def _items(self, run_id: str, params: httpx.QueryParams) -> httpx.Response:
        if self.run_dir is not None:
            self.temp_sizes.append(sum(p.stat().st_size for p in self.run_dir.glob(".results.jsonl.*.tmp")))
        run, rows = self.runs[run_id], self.rows[run_id]
        order = [i for i in (reversed if self.reverse else iter)(range(len(rows))) if i != self.skip]
        if self.twice is not None:
            order.insert(order.index(self.twice), self.twice)
        after = params.get("after")
        start = 0 if after is None else int(after[4:]) + 1
        criteria = self.evals[run["eval_id"]]["testing_criteria"]
        data = [
            {"object": "eval.run.output_item", "id": f"item{pos}", "run_id": run_id, "eval_id": run["eval_id"]}
            | {"status": "completed", "datasource_item_id": i, "datasource_item": rows[i]}
            | {"results": self._results(i, criteria)}
            for pos, i in enumerate(order[start : start + 2], start)
        ]
        return httpx.Response(200, json={"data": data, "has_more": start + 2 < len(order)})


def test_items_out_of_order_and_missing_come_out_in_row_order(tmp_path: Path) -> None:
    plan = benefits_plan()
    fake = ShuffledFoundry()
    summary = run_evaluation(plan, tmp_path / "run", _backend(fake))
    rows = read_results(tmp_path / "run")
    assert [r.row for r in rows] == sorted(r.row for r in rows)  # row order, whatever the service's order
    assert len(rows) == 13 * (N_DOCRET + 3) + 4  # row 5: one MISSING_ITEM row per criterion
    assert sorted({r.row for r in rows}) == list(range(14))
    assert [r.query_id for r in rows if r.criterion == "relevance"] == QUERY_IDS
    missing = [r for r in rows if r.row == 5]
    assert {r.criterion for r in missing} == {"document_retrieval", "retrieval", "groundedness", "relevance"}
    assert all(r.error is not None and r.error.startswith("MISSING_ITEM") for r in missing)
    # the fake scores even rows 4 (pass) and odd rows 2 (fail) on the judges
    rel = {r.row: r.score for r in rows if r.criterion == "relevance" and r.row != 5}
    assert rel == {i: 4.0 if i % 2 == 0 else 2.0 for i in range(14) if i != 5}
    assert summary.errored == 4 and summary.results == len(rows)
    assert summary.per_criterion["relevance"] == {"passed": 7, "failed": 6, "errored": 1, "no_verdict": 0}
    raw = (tmp_path / "run" / RUN_FILES["output_items"]).read_bytes().splitlines()
    assert [json.loads(line)["datasource_item_id"] for line in raw] == [13, 12, 11, 10, 9, 8, 7, 6, 4, 3, 2, 1, 0]


def test_results_are_written_while_pages_are_still_being_read(tmp_path: Path) -> None:
    fake = ShuffledFoundry(reverse=False, skip=None)
    fake.run_dir = tmp_path / "run"
    run_evaluation(benefits_plan(), tmp_path / "run", _backend(fake))
    # seven pages: by the last request the rows of the first six pages are already in the file being written
    assert len(fake.temp_sizes) == 7 and fake.temp_sizes[0] == 0 and fake.temp_sizes[-1] > 0
    assert not list((tmp_path / "run").glob(".results.jsonl.*.tmp"))  # put in place at the end


def test_several_runs_each_in_reverse_give_one_file_in_dataset_order(tmp_path: Path) -> None:
    fake = ShuffledFoundry(reverse=True, skip=None)
    summary = run_evaluation(benefits_plan(), tmp_path / "run", _backend(fake, max_rows_per_run=4))
    rows = read_results(tmp_path / "run")
    assert len(fake.runs) == 4 and len(summary.run_ids) == 4  # 4 + 4 + 4 + 2 rows
    assert [r.row for r in rows] == [i for i in range(14) for _ in range(N_DOCRET + 3)]
    assert [r.query_id for r in rows if r.criterion == "relevance"] == QUERY_IDS
    assert summary.errored == 0 and summary.per_criterion["relevance"]["passed"] == 7


def test_a_plan_row_that_is_not_an_object_is_named_by_file_and_line(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.write_plan(benefits_plan(limit=3))
    lines = folder.file("items").read_bytes().splitlines()
    folder.file("items").write_bytes(b"\n".join([lines[0], b"[1, 2]", lines[2]]) + b"\n")
    with pytest.raises(RunFolderError, match="not a JSON object") as info:
        folder.read_plan()
    assert (info.value.file, info.value.line) == (str(folder.file("items")), 2)


def test_a_row_sent_twice_keeps_both_items_side_by_side_and_counts_once(tmp_path: Path) -> None:
    fake = ShuffledFoundry(reverse=False, skip=None, twice=3)
    summary = run_evaluation(benefits_plan(), tmp_path / "run", _backend(fake))
    rows = read_results(tmp_path / "run")
    assert [r.row for r in rows] == sorted(r.row for r in rows)
    assert sum(1 for r in rows if r.row == 3) == 2 * (N_DOCRET + 3)  # nothing dropped, as before
    assert summary.per_criterion["relevance"] == {"passed": 7, "failed": 7, "errored": 0, "no_verdict": 0}


def _row(row: int, criterion: str, evaluator: str, metric: str, **kw: Any) -> ResultRow:
    return ResultRow(row=row, query_id=f"q{row}", criterion=criterion, evaluator=evaluator, metric=metric, **kw)


def test_verdicts_are_counted_per_row_and_criterion_on_the_primary_metric() -> None:
    plan = benefits_plan(limit=2)
    plan = with_criteria(plan, [c for c in plan.criteria if c.name in ("document_retrieval", "relevance")])
    docret, rel = "builtin.document_retrieval", "builtin.relevance"
    rows = [
        _row(0, "document_retrieval", docret, "ndcg@3", passed=False),  # the primary metric decides: failed
        _row(0, "document_retrieval", docret, "fidelity", passed=True),
        _row(0, "relevance", rel, "relevance", passed=True),  # passed
        _row(1, "document_retrieval", docret, "ndcg@3", passed=None),  # no verdict
        _row(1, "relevance", rel, "relevance", error="JUDGE_TIMEOUT: 60 s"),  # errored
    ]
    counter = VerdictCounter(plan)
    assert list(counter.count(iter(rows))) == rows
    summary = counter.summary(plan, Path("run"), "local")
    assert (summary.passed, summary.failed, summary.errored, summary.no_verdict) == (1, 1, 1, 1)
    assert summary.per_criterion == {
        "document_retrieval": {"passed": 0, "failed": 1, "errored": 0, "no_verdict": 1},
        "relevance": {"passed": 1, "failed": 0, "errored": 1, "no_verdict": 0},
    }
    assert summary.results == 5 and summary.rows == 2
    assert summary.warnings == [
        "1 of 4 (row, criterion) results ERRORED (JUDGE_TIMEOUT ×1); they are kept in results.jsonl with their "
        "cause and are not scores"
    ]


def test_plan_rows_live_in_files_and_read_back_equal(tmp_path: Path) -> None:
    plan = benefits_plan()
    assert isinstance(plan.items, JsonlRows) and isinstance(plan.records, JsonlRows)
    assert len(plan.items) == 14 and [it["item"]["query_id"] for it in plan.items] == QUERY_IDS
    assert plan.items[-1] == plan.items[13] and plan.items[13]["item"]["query_id"] == "n03"
    assert [it["item"]["query_id"] for it in plan.items[2:4]] == ["q03", "q04"]
    assert [r["query_id"] for r in plan.records] == QUERY_IDS
    with pytest.raises(IndexError):
        plan.items[14]
    assert list(plan.items) == list(plan.items)  # read again from the start
    folder = RunFolder(tmp_path / "run")
    folder.write_plan(plan)
    items_file = folder.file("items")
    assert [json.loads(line)["item"]["query_id"] for line in items_file.read_bytes().splitlines()] == QUERY_IDS
    items_file.write_bytes(items_file.read_bytes().replace(b"\n", b"\n\n", 3))  # blank lines are not rows
    again = folder.read_plan()
    assert isinstance(again.items, JsonlRows) and again.items == list(plan.items)
    assert again.fingerprint() == plan.fingerprint()
    assert [r["query_id"] for r in again.records] == QUERY_IDS


def test_local_document_retrieval_in_small_batches_equals_azure_ai_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from azure.ai.evaluation import DocumentRetrievalEvaluator

    from foundry_bridge.local import _backend

    monkeypatch.setattr(_backend, "BATCH_ROWS", 4)  # 14 rows: four batches
    plan = benefits_plan()
    plan = with_criteria(plan, [c for c in plan.criteria if c.evaluator == "builtin.document_retrieval"])
    summary = run_evaluation(plan, tmp_path / "run", LocalBackend(cache_dir=None))
    rows = read_results(tmp_path / "run")
    assert [r.row for r in rows] == [i for i in range(14) for _ in range(N_DOCRET)]
    assert [r.query_id for r in rows[::N_DOCRET]] == QUERY_IDS
    (crit,) = plan.criteria
    evaluator = DocumentRetrievalEvaluator(**crit.init)
    for i, source in enumerate(DATASET):
        expected = evaluator(
            retrieval_ground_truth=source["retrieval_ground_truth"],
            retrieved_documents=[
                {"document_id": d["document_id"], "relevance_score": d["relevance_score"]}
                for d in source["retrieved_documents"]
            ],
        )["document_retrieval_properties"]
        for r in rows[i * N_DOCRET : (i + 1) * N_DOCRET]:
            assert r.score == pytest.approx(float(expected[r.metric]), rel=1e-12), (i, r.metric)
            assert r.passed == expected[f"{r.metric}_passed"]
    assert summary.rows == 14 and summary.results == 14 * N_DOCRET
    assert DEFAULT_MAPPING.is_file()


DOCRET_ONLY = """version: 1
dataset:
  format: jsonl
  fields:
    query_id: query_id
    retrieved_documents: {path: retrieved_documents, document_id: document_id, relevance_score: relevance_score}
    retrieval_ground_truth: {path: retrieval_ground_truth, document_id: document_id,
                             query_relevance_label: query_relevance_label}
evaluators:
  - evaluator: builtin.document_retrieval
"""


def _docret_plan(tmp_path: Path, n: int) -> Any:
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import build_plan, load_mapping

    data, mapping_path = tmp_path / f"d{n}.jsonl", tmp_path / "docret.yaml"
    mapping_path.write_text(DOCRET_ONLY)
    with data.open("w") as fh:
        for q in range(n):
            docs = [{"document_id": f"d{(q + j) % 97}", "relevance_score": 1 - j / 10} for j in range(10)]
            labels = [{"document_id": f"d{(q + 2 * j) % 97}", "query_relevance_label": j % 5} for j in range(5)]
            fh.write(json.dumps({"query_id": f"q{q}", "retrieved_documents": docs, "retrieval_ground_truth": labels}))
            fh.write("\n")
    mapping = load_mapping(mapping_path)
    return build_plan(read_records(data, mapping), mapping, dataset_path=data, mapping_path=mapping_path)


def test_local_run_memory_follows_the_batch_not_the_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracemalloc

    from foundry_bridge import columns, runfolder
    from foundry_bridge.local import _backend
    from foundry_bridge.mapping import plan as plan_module

    monkeypatch.setattr(_backend, "BATCH_ROWS", 100)
    monkeypatch.setattr(columns, "BLOCK", 100)  # the run's columns are sealed 100 records at a time,
    monkeypatch.setattr(runfolder, "_CHUNK_BYTES", 1 << 16)  # read from records.jsonl 64 KiB at a time
    monkeypatch.setattr(plan_module, "_BLOCK", 1 << 16)  # plan rows are read 64 KiB at a time

    def peak(n: int) -> int:
        plan = _docret_plan(tmp_path, n)  # built first: the plan's rows are spooled, the run is what is measured
        tracemalloc.start()
        try:
            summary = run_evaluation(plan, tmp_path / f"run{n}", LocalBackend(cache_dir=None))
            traced = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert summary.results == n * N_DOCRET
        return traced

    peak(100)  # imports and first-use caches
    small, large = peak(400), peak(4000)
    # ten times the rows, about the same memory (holding the rows would take ten times as much)
    assert large < 1.5 * small, (small, large)
