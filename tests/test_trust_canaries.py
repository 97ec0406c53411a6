"""Generated judge canaries: the perturbations by hand, the command end to end, determinism, and the scoring."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from foundry_bridge.canaries import (
    ABSTENTION_TEXT,
    CANARY_TYPES,
    CanaryCase,
    canary_rows,
    perturb,
    score_canaries,
)
from foundry_bridge.cli import cli
from foundry_bridge.dataset.reader import read_records
from foundry_bridge.dataset.records import QueryRecord
from foundry_bridge.mapping import load_mapping

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
G, R, C, RET = "builtin.groundedness", "builtin.relevance", "builtin.response_completeness", "builtin.retrieval"


def _rec(response: str, context: str = "", qid: str = "q", **kw: object) -> QueryRecord:
    return QueryRecord(query_id=qid, response=response, context=context, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "response,context,expected",
    [
        (
            "You get 16 weeks once you have 6 months.",
            "16 weeks after 6 months",
            "You get 17 weeks once you have 6 months.",
        ),
        ("Up to $5,250 per year.", "covers $5,250", "Up to $5,251 per year."),
        (
            "In 30 days at 3% unless you opt out.",
            "at a 3% rate",
            "In 30 days at 4% unless you opt out.",
        ),  # the stated one
        ("Rate is 2.5 now.", "", "Rate is 3.5 now."),
    ],
)
def test_changed_number(response: str, context: str, expected: str) -> None:
    assert perturb("changed_number", _rec(response, context)) is not None
    assert perturb("changed_number", _rec(response, context))[0] == expected  # type: ignore[index]


@pytest.mark.parametrize(
    "response,expected",
    [
        ("Yes, you can take parental leave now.", "Yes, you cannot take parental leave now."),
        ("You cannot roll over more than 20 days.", "You can roll over more than 20 days."),
        ("The match is vested immediately.", "The match is not vested immediately."),
        ("Stock options don't vest.", "Stock options do vest."),
        ("You get 16 weeks of leave.", "You do not get 16 weeks of leave."),
    ],
)
def test_negated_condition(response: str, expected: str) -> None:
    assert perturb("negated_condition", _rec(response)) == (expected, perturb("negated_condition", _rec(response))[1])  # type: ignore[index]


def test_dropped_exception_and_rows_without_one() -> None:
    got = perturb("dropped_exception", _rec("Enrolled at 3% after 30 days, unless you opt out."))
    assert got == ("Enrolled at 3% after 30 days.", "dropped ', unless you opt out'")
    got = perturb("dropped_exception", _rec("Leave is 16 weeks. Exception: transfers keep their date. Ask HR."))
    assert got is not None and got[0] == "Leave is 16 weeks. Ask HR."
    assert perturb("dropped_exception", _rec("Leave is 16 weeks.")) is None
    assert perturb("changed_number", _rec("No numbers here.")) is None


def test_swap_and_abstention() -> None:
    a, b = _rec("A.", qid="a"), _rec("B.", qid="b")
    assert perturb("swapped_answer", a, b) == ("B.", "the response of 'b'")
    assert perturb("swapped_answer", a, _rec("A.", qid="c")) is None  # the same answer is no swap
    assert perturb("abstention_on_positive", a)[0] == ABSTENTION_TEXT  # type: ignore[index]


def test_the_command_writes_originals_then_marked_canaries_deterministically(tmp_path: Path) -> None:
    out, again = tmp_path / "c.jsonl", tmp_path / "c2.jsonl"
    runner = CliRunner()
    result = runner.invoke(cli, ["canaries", str(SAMPLE), "--out", str(out), "--per-type", "3"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "changed_number: 3" in result.output
    assert "dropped_exception: 1" in result.output  # only q10 has a clause (unless)
    assert "wrote 13 canaries" in result.output
    runner.invoke(cli, ["canaries", str(SAMPLE), "--out", str(again), "--per-type", "3"], catch_exceptions=False)
    assert out.read_bytes() == again.read_bytes()
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    originals = {orjson.loads(line)["query_id"]: orjson.loads(line) for line in SAMPLE.read_bytes().splitlines()}
    assert [r["query_id"] for r in rows[:14]] == list(originals)
    canaries = rows[14:]
    positives = {r.query_id for r in read_records(SAMPLE, load_mapping(None)) if r.kind == "positive"}
    assert len(canaries) == 13
    for row in canaries:
        source = originals[row["canary_of"]]
        assert row["query_id"] == f"{row['canary_of']}~{row['canary']}"
        assert row["canary_of"] in positives and not source.get("canary")  # never a negative or a hand canary
        assert row["context"] == source["context"] and row["response"] != source["response"]
        assert row["canary_expect"][RET] == "same"
        assert all(row["canary_expect"][j] == "fail" for j in CANARY_TYPES[row["canary"]])
    for row in canaries:
        if row["canary"] == "changed_number":
            old, new = row["canary_change"].split(" -> ")
            assert int(new) == int(old) + 1 and new in row["response"]
        if row["canary"] == "dropped_exception":
            assert row["query_id"] == "q10~dropped_exception" and "unless" not in row["response"]
    # the written file is a dataset the default mapping reads, canaries included
    records = list(read_records(out, load_mapping(None)))
    cases = [c for c in (CanaryCase.from_record(r) for r in records) if c is not None]
    assert len(records) == 27 and len(cases) == 13
    assert {c.kind for c in cases} == set(CANARY_TYPES)


def test_the_seed_chooses_the_rows_and_only_canaries_leaves_originals_out(tmp_path: Path) -> None:
    recs = list(read_records(SAMPLE, load_mapping(None)))
    first = [r.query_id for r in canary_rows(recs, per_type=2, seed=0, types=["abstention_on_positive"])]
    other = [r.query_id for r in canary_rows(recs, per_type=2, seed=7, types=["abstention_on_positive"])]
    assert len(first) == len(other) == 2 and first != other
    out = tmp_path / "only.jsonl"
    result = CliRunner().invoke(
        cli, ["canaries", str(SAMPLE), "--out", str(out), "--only-canaries", "--type", "swapped_answer"]
    )
    assert result.exit_code == 0
    assert "swapped_answer: 6" in result.output  # 6 positive rows answer and are no hand canary
    assert all(orjson.loads(line)["canary"] == "swapped_answer" for line in out.read_bytes().splitlines())
    bad = CliRunner().invoke(cli, ["canaries", str(SAMPLE), "--out", str(out), "--type", "typo"])
    assert bad.exit_code != 0 and "unknown canary type(s) typo" in str(bad.exception)


def test_scoring_counts_caught_missed_and_unscored_per_type() -> None:
    cases = [
        CanaryCase("q1~changed_number", "changed_number", "q1", {G: "fail", RET: "same"}),
        CanaryCase("q2~changed_number", "changed_number", "q2", {G: "fail", RET: "same"}),
        CanaryCase("q3~changed_number", "changed_number", "q3", {G: "fail", RET: "same"}),
    ]
    passed = {
        ("q1~changed_number", G): False,  # caught
        ("q2~changed_number", G): True,  # missed: the judge passed a wrong number
        ("q1~changed_number", RET): True,
        ("q1", RET): True,  # same as the original: held
        ("q2~changed_number", RET): False,
        ("q2", RET): True,  # the retrieval verdict moved although the context did not
        ("q3~changed_number", RET): True,  # q3's original is unscored
    }
    got = {(s.evaluator, s.expect): (s.caught, s.missed, s.unscored) for s in score_canaries(cases, passed)}
    assert got == {(G, "fail"): (1, ["q2~changed_number"], 1), (RET, "same"): (1, ["q2~changed_number"], 1)}


def test_a_canary_no_judge_must_fail_is_not_made() -> None:
    with_truth = _rec("Enrolled at 3%, unless you opt out.", qid="a", kind="positive", ground_truth="3% unless opt out")
    without = _rec("Enrolled at 3%, unless you opt out.", qid="b", kind="positive")
    made = [r.query_id for r in canary_rows([with_truth, without], types=["dropped_exception"])]
    assert made == ["a~dropped_exception"]


def test_canaries_from_trec_input_are_a_valid_jsonl_dataset(tmp_path: Path) -> None:
    from foundry_bridge.validate import validate

    out = tmp_path / "trec_canaries.jsonl"
    args = ["canaries", str(ROOT / "samples" / "trec"), "--mapping", str(ROOT / "mappings" / "trec.yaml")]
    result = CliRunner().invoke(cli, [*args, "--out", str(out), "--per-type", "2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = validate(out)
    assert report.ok and report.errors == 0
    assert sum(1 for r in read_records(out, load_mapping(None)) if CanaryCase.from_record(r)) == 9
