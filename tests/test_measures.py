"""Measures as values: the registry, ``parse_measure`` (safe, with did-you-mean), canonical ``str()``, and the same
spellings accepted by ``metrics --measure``, ``compare --metric/--fail-on`` and the report's metric keys."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_helpers import write_run

from foundry_bridge.cli import cli, main
from foundry_bridge.comparison import compare_runs, parse_fail_on
from foundry_bridge.errors import UsageError
from foundry_bridge.metrics.measures import (
    COLUMNS,
    MEASURES,
    Measure,
    column_names,
    expand,
    is_measure_name,
    measure_for_key,
    parse_measure,
)
from foundry_bridge.metrics.ranking import ranking_metrics
from foundry_bridge.report import build_report


def _every_spelling() -> list[str]:
    out = []
    for d in MEASURES.values():
        for name in (d.name, *d.aliases, *(v.column for v in d.variants)):
            out += [name, f"{name}@1", f"{name}@10", name.upper() + "@3"]
        for pname, p in d.params.items():
            out += [f"{d.name}({pname}={c})@5" for c in p.choices or ()]
    return out


@pytest.mark.parametrize("spelling", _every_spelling())
def test_str_is_canonical_and_round_trips(spelling: str) -> None:
    m = parse_measure(spelling)
    assert parse_measure(str(m)) == m
    assert str(parse_measure(str(m))) == str(m)
    assert hash(parse_measure(str(m))) == hash(m)


@pytest.mark.parametrize(
    ("spelling", "canonical", "key"),
    [
        ("rr@10", "rr@10", "rr@10"),
        ("MRR@10", "rr@10", "rr@10"),
        ("mrr @ 10", "rr@10", "rr@10"),
        ("hit_rate@5", "hit@5", "hit@5"),
        ("ndcg(gain=exp)@3", "ndcg(gain=exp)@3", "ndcg_exp@3"),
        ("ndcg(gain='exp')@3", "ndcg(gain=exp)@3", "ndcg_exp@3"),
        ("nDCG( gain = exp ) @3", "ndcg(gain=exp)@3", "ndcg_exp@3"),
        ("ndcg_exp@3", "ndcg(gain=exp)@3", "ndcg_exp@3"),
        ("ndcg(gain=linear)@3", "ndcg@3", "ndcg@3"),
        ("NDCG", "ndcg", "ndcg"),
    ],
)
def test_parameterised_and_aliased_spellings(spelling: str, canonical: str, key: str) -> None:
    m = parse_measure(spelling)
    assert str(m) == canonical
    assert m.key == key


def test_aliases_are_equal_and_key_the_same_dict_entry() -> None:
    table = {parse_measure("rr@10"): "x"}
    assert table[parse_measure("MRR@10")] == "x"
    assert parse_measure("ndcg_exp@3") == parse_measure("ndcg(gain=exp)@3") != parse_measure("ndcg@3")
    assert parse_measure("rr@10") != parse_measure("rr@5") != parse_measure("rr")
    assert Measure.of("ndcg")(gain="exp") @ 3 == parse_measure("ndcg(gain=exp)@3")


def test_column_keys_in_output_order() -> None:
    assert [(m @ 10).key for m in COLUMNS] == [
        "rr@10",
        "recall@10",
        "precision@10",
        "hit@10",
        "distracting@10",
        "ndcg@10",
        "ndcg_exp@10",
    ]


def test_directions_and_nan_rules() -> None:
    assert [m.column for m in COLUMNS if not m.higher_is_better] == ["distracting"]
    assert "n_rel = 0" in MEASURES["rr"].nan_rule
    assert "ideal DCG is 0" in MEASURES["ndcg"].nan_rule
    assert "always defined" in MEASURES["distracting"].nan_rule


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("rrr@10", "did you mean 'rr'"),
        ("recal@5", "did you mean 'recall'"),
        ("ndgc@10", "did you mean 'ndcg'"),
        ("ndcg(gian=exp)@3", "its parameters: gain"),
        ("hit(gain=exp)", "its parameters: none"),
        ("ndcg(gain=cubic)@3", "one of linear, exp"),
        ("ndcg(gain=1)@3", "expected a str"),
        ("ndcg_exp(gain=linear)@3", "already means ndcg(gain=exp)"),
        ("rr@0", "integer >= 1"),
        ("rr@1.5", "must be an integer"),
        ("rr@k", "must be an integer"),
        ("rr@True", "must be an integer"),
    ],
)
def test_bad_spellings_name_the_fix(spelling: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_measure(spelling)


@pytest.mark.parametrize(
    "spelling",
    [
        "__import__('os')",
        "__import__('os').system('touch PWNED')",
        "os.system",
        "rr.__class__",
        "rr(1)",
        "ndcg(gain=exp())@3",
        "ndcg(gain=open('x'))",
        "ndcg(**{'gain': 'exp'})",
        "ndcg(gain=[1])",
        "rr@10 + 1",
        "rr@(9+1)",
        "(lambda: 1)()",
        "[rr]",
        "rr; import os",
        "",
        "rr" * 200,
    ],
)
def test_unsafe_or_malformed_input_is_rejected_without_running_it(
    spelling: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError):
        parse_measure(spelling)
    assert not (tmp_path / "PWNED").exists()


def test_report_keys_are_measure_columns() -> None:
    assert column_names() == ("rr", "recall", "precision", "hit", "distracting", "ndcg", "ndcg_exp")
    assert measure_for_key("ndcg_exp@3") == parse_measure("ndcg(gain=exp)@3")
    assert measure_for_key("mrr@10") is None  # an alias (the old summary name), not a column key
    assert measure_for_key("groundedness") is None
    assert measure_for_key("document_retrieval/ndcg@3") is None
    assert is_measure_name("MRR@10") and is_measure_name("ndcg(gain=exp)")
    assert not is_measure_name("groundedness") and not is_measure_name("document_retrieval/ndcg@3")


def test_expand_puts_a_cutoff_less_measure_at_every_k() -> None:
    chosen, ks = expand([parse_measure("ndcg"), parse_measure("rr@5"), parse_measure("MRR@5")], (1, 3))
    assert [str(m) for m in chosen] == ["ndcg@1", "ndcg@3", "rr@5"]
    assert ks == (1, 3, 5)


def test_kernel_columns_follow_the_registry() -> None:
    from foundry_bridge.dataset.records import QueryRecord

    rec = QueryRecord.model_validate(
        {
            "query_id": "q",
            "query": "?",
            "retrieved_documents": [{"document_id": "b"}, {"document_id": "a"}],
            "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 1}],
        }
    )
    result = ranking_metrics([rec], ks=(2, 5))
    assert set(result.columns) == {"n_rel"} | {(m @ k).key for m in COLUMNS for k in (2, 5)}  # compute()'s output
    assert result.metric_keys == [(m @ k).key for k in (2, 5) for m in COLUMNS]
    assert result.per_query[0]["rr@2"] == 0.5  # first relevant at rank 2
    assert result.summary["positive"]["rr@2"] == 0.5
    assert [k for k in result.summary["positive"] if k.endswith("@2")] == [
        "rr@2",
        "recall@2",
        "precision@2",
        "hit@2",
        "ndcg@2",
        "ndcg_exp@2",
        "distracting@2",
    ]


# -- the CLI commands accept the same spellings ---------------------------------------------------------------------
def _trec(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 d 1\n")
    run.write_text("q1 Q0 b 1 3.0 r\nq1 Q0 a 2 2.0 r\nq1 Q0 c 3 1.0 r\nq2 Q0 d 1 1.0 r\n")
    return qrels, run


def _metrics(tmp_path: Path, *args: str) -> dict:
    qrels, run = _trec(tmp_path)
    result = CliRunner().invoke(cli, ["metrics", "--qrels", str(qrels), "--run", str(run), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_metrics_prints_the_report_s_names_and_reads_the_old_ones(tmp_path: Path) -> None:
    # issue #34 item 19: `metrics` printed mrr@3 and hit_rate@3 where the report says rr@3 and hit@3
    qrels, run = _trec(tmp_path)
    args = ["metrics", "--qrels", str(qrels), "--run", str(run), "--k", "3", "--format", "text"]
    text = CliRunner().invoke(cli, args).output
    assert "rr@3" in text and "hit@3" in text and "mrr@" not in text and "hit_rate@" not in text
    old = _metrics(tmp_path, "--measure", "mrr@3", "--measure", "hit_rate@3", "--measure", "map@3")
    assert [k for k in old["summary"]["all"] if "@" in k] == ["rr@3", "hit@3", "ap@3"]


def test_metrics_measure_selects_what_is_output(tmp_path: Path) -> None:
    doc = _metrics(tmp_path, "--measure", "MRR@2", "--measure", "ndcg(gain=exp)@2")
    assert list(doc["per_query"][0]) == ["query_id", "kind", "kind_source", "n_rel", "rr@2", "ndcg_exp@2"]
    # q1: b (0), a (1), c (2) → rr 1/2; ndcg_exp@2 = (1/log2 3) / (3 + 1/log2 3). q2: rank 1 → 1, 1.
    q1 = 1 / math.log2(3) / (3 + 1 / math.log2(3))
    summary = doc["summary"]["positive"]
    assert summary["rr@2"] == pytest.approx(0.75)
    assert summary["ndcg_exp@2"] == pytest.approx((q1 + 1) / 2)
    assert [k for k in summary if "@" in k] == ["rr@2", "ndcg_exp@2"]
    assert doc["params"]["ks"] == [2]


def test_metrics_measure_without_cutoff_uses_every_k(tmp_path: Path) -> None:
    doc = _metrics(tmp_path, "--measure", "ndcg", "--k", "1", "--k", "3", "--measure", "rr@2")
    assert list(doc["per_query"][0])[4:] == ["ndcg@1", "rr@2", "ndcg@3"]
    assert doc["params"]["ks"] == [1, 2, 3]


def test_metrics_without_measure_keeps_every_column(tmp_path: Path) -> None:
    doc = _metrics(tmp_path, "--k", "2")
    assert list(doc["per_query"][0])[4:] == [f"{c}@2" for c in column_names()]


def test_metrics_unknown_measure_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = _trec(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["metrics", "--qrels", str(qrels), "--run", str(run), "--measure", "nDGC@2"])
    assert exc.value.code == 2
    assert "did you mean 'ndcg'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("spell")
    return [write_run(root / "a"), write_run(root / "b", ndcg3={"q07": 1.0})]


def test_compare_accepts_every_spelling_of_a_local_measure(two_runs: list[Path]) -> None:
    plain = compare_runs(two_runs, metrics=["rr@10", "ndcg_exp@10"], n_resamples=200)
    spelled = compare_runs(two_runs, metrics=["MRR@10", "ndcg(gain=exp)@10"], n_resamples=200)
    from test_report_golden import _differences

    assert _differences(spelled.model_dump(), plain.model_dump()) == []  # numbers to 1e-9: the engine's sum order
    assert {m.metric for m in spelled.metrics} == {"rr@10", "ndcg_exp@10"}
    every_k = compare_runs(two_runs, metrics=["ndcg"], n_resamples=200)
    assert {m.metric for m in every_k.metrics} == {"ndcg@3", "ndcg@10"}


def test_compare_fail_on_spellings(two_runs: list[Path]) -> None:
    assert parse_fail_on("negative:HIT_RATE@10:0.1") == ("negative", "hit@10", 0.1)
    assert parse_fail_on("ndcg(gain=exp)@3") == ("positive", "ndcg_exp@3", 0.0)
    assert parse_fail_on("document_retrieval/ndcg@3") == ("positive", "document_retrieval/ndcg@3", 0.0)
    with pytest.raises(UsageError, match="its parameters: gain"):
        parse_fail_on("ndcg(gian=exp)@3")
    a = compare_runs(two_runs, fail_on=["MRR@10"], n_resamples=200)
    b = compare_runs(two_runs, fail_on=["rr@10"], n_resamples=200)
    assert a.gate == b.gate and a.gate["checked"]


def test_precision_is_spelled_p_as_ndcg_is_spelled_ndcg(two_runs: list[Path]) -> None:
    """``P@5`` (ir_measures' and trec_eval's name) is precision's alias, case-insensitive like ``nDCG@10``."""
    assert parse_measure("P@5") == parse_measure("p@5") == parse_measure("precision@5")
    assert parse_measure("P@5").key == "precision@5" and is_measure_name("P@5")
    assert parse_fail_on("P@10:0.1") == ("positive", "precision@10", 0.1)
    shown = compare_runs(two_runs, metrics=["P@10", "nDCG@10"], n_resamples=200, judge_tests=False)
    assert {m.metric for m in shown.metrics} == {"precision@10", "ndcg@10"}


def test_compare_cli_accepts_the_spellings(two_runs: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", *map(str, two_runs), "--format", "json", "--resamples", "200"]
    # hit@10 is undefined on negative queries: a gate that can never fire, allowed here to test the spelling
    result = CliRunner().invoke(
        cli, [*args, "--metric", "MRR@10", "--fail-on", "negative:hit_rate@10", "--allow-empty-gate"]
    )
    assert result.exit_code == 0, result.output
    assert {m["metric"] for m in json.loads(result.output)["metrics"]} == {"rr@10", "hit@10"}
    with pytest.raises(SystemExit) as exc:
        main([*args, "--metric", "MRRR@10"])
    assert exc.value.code == 2
    assert "did you mean 'rr@10'" in capsys.readouterr().err


def test_report_metric_definitions_and_directions_come_from_the_registry(two_runs: list[Path]) -> None:
    report = build_report(two_runs[0])
    local = {m.key: m for m in report.metrics if m.source == "local"}
    assert list(local) == [(m @ k).key for k in (3, 10) for m in COLUMNS]
    assert local["distracting@10"].higher_is_better is False and local["rr@10"].higher_is_better is True
    assert local["rr@10"].definition.endswith("(mean = MRR)")
    assert local["ndcg_exp@3"].definition == "as ndcg with gain 2^label − 1"
