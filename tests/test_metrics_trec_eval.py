"""trec_eval's own test files: `metrics --qrels --run` reproduces its per-topic values to the printed 4 decimals."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli

TREC = Path(__file__).resolve().parent / "data" / "reference" / "trec_eval"


# trec_eval measure → (our per-query metric, cutoff parser)
_MEASURE = re.compile(r"^(recip_rank|P|recall|success|ndcg_cut)(?:_(\d+))?$")
_OURS = {"P": "precision", "recall": "recall", "success": "hit", "ndcg_cut": "ndcg"}


def expected(name: str) -> dict[tuple[str, str], float]:
    """(measure, topic) → value for the measures we reproduce, per topic (not `all`)."""
    out: dict[tuple[str, str], float] = {}
    for line in (TREC / name).read_text().splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] == "all":
            continue
        if _MEASURE.match(parts[0]) or parts[0] == "num_rel":
            out[(parts[0], parts[1])] = float(parts[2])
    return out


def run_metrics(qrels: str, threshold: int, ks: list[int]) -> dict:
    args = ["metrics", "--qrels", str(TREC / qrels), "--run", str(TREC / "results.test")]
    args += [x for k in ks for x in ("--k", str(k))]
    args += ["--relevance-threshold", str(threshold)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return orjson.loads(result.stdout_bytes)


@pytest.mark.parametrize(
    ("qrels", "out", "threshold"), [("qrels.test", "out.test.aq", 1), ("qrels.rel_level", "out.test.aql", 2)]
)
def test_reproduces_trec_eval(qrels: str, out: str, threshold: int) -> None:
    exp = expected(out)
    ks = sorted({int(m.group(2)) for (name, _), _v in exp.items() if (m := _MEASURE.match(name)) and m.group(2)})
    assert ks == [1, 5, 10, 15, 20, 30, 100, 200, 500, 1000]
    doc = run_metrics(qrels, threshold, [*ks, 100000])  # recip_rank has no cutoff: a k beyond every run
    rows = {row["query_id"]: row for row in doc["per_query"]}
    assert set(rows) == {topic for _, topic in exp}
    checked = 0
    for (name, topic), value in exp.items():
        row = rows[topic]
        if name == "num_rel":
            assert row["n_rel"] == value
            continue
        m = _MEASURE.match(name)
        assert m is not None
        ours = row["rr@100000"] if m.group(1) == "recip_rank" else row[f"{_OURS[m.group(1)]}@{m.group(2)}"]
        assert ours is not None, (name, topic)
        assert round(ours, 4) == pytest.approx(value, abs=1e-9), (name, topic, ours, value)
        checked += 1
    # recip_rank, and P / recall / ndcg_cut at 9 cutoffs and success at 3, for 3 topics
    assert checked == 3 * (1 + 3 * 9 + 3)


def test_rank_column_is_ignored_and_ties_go_to_docid_desc(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q 0 d10 1\n")
    # listed (and ranked) d10 first, but the scores tie: trec_eval puts "d9" before "d10" (string order)
    (tmp_path / "run").write_text("q Q0 d10 1 0.5 t\nq Q0 d9 2 0.5 t\n")
    result = CliRunner().invoke(
        cli, ["metrics", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--k", "10"]
    )
    assert result.exit_code == 0, result.output
    row = orjson.loads(result.stdout_bytes)["per_query"][0]
    assert row["rr@10"] == 0.5


def test_qrels_only_topic_is_kept_with_an_empty_ranking(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q1 0 a 1\nq2 0 b 1\n")
    (tmp_path / "run").write_text("q1 Q0 a 1 2.0 t\n")
    result = CliRunner().invoke(cli, ["metrics", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run")])
    rows = orjson.loads(result.stdout_bytes)["per_query"]
    assert [(r["query_id"], r["rr@10"]) for r in rows] == [("q1", 1.0), ("q2", 0.0)]


def test_an_empty_run_scores_every_qrels_query_0_in_metrics_and_through_a_trec_folder(tmp_path: Path) -> None:
    """ir_measures' test_providers.test_empty and trec_eval -c: a run that retrieved nothing gives every judged query
    a 0 (pytrec_eval computes the same with an empty ranking per qrels query), by --qrels/--run and by a folder."""
    import pytrec_eval

    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\nq2 0 d 1\n")
    (tmp_path / "run.txt").write_bytes(b"")
    (tmp_path / "m.yaml").write_text(
        "dataset:\n  format: trec\n  trec: {qrels: qrels.txt, run: run.txt, queries: null, responses: null}\n"
        "evaluators:\n  - evaluator: builtin.document_retrieval\n"
    )
    pairs = {"recip_rank": "rr@10", "P_10": "precision@10", "recall_10": "recall@10", "ndcg_cut_10": "ndcg@10"}
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2, "d": 1}}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.10", "recall.10", "ndcg_cut.10"})
    expected = {
        q: {ours: v[name] for name, ours in pairs.items()}
        for q, v in reference.evaluate({q: {} for q in qrels}).items()
    }
    assert expected == {q: dict.fromkeys(pairs.values(), 0.0) for q in qrels}  # trec_eval -c, by hand

    files = ["metrics", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt"), "--k", "10"]
    folder = ["metrics", str(tmp_path), "--mapping", str(tmp_path / "m.yaml"), "--k", "10"]
    for args in (files, folder):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        rows = orjson.loads(result.stdout_bytes)["per_query"]
        assert {r["query_id"]: {k: r[k] for k in pairs.values()} for r in rows} == expected, args
        assert all(r["hit@10"] == 0.0 for r in rows)
    result = CliRunner().invoke(cli, ["validate", str(tmp_path), "--mapping", str(tmp_path / "m.yaml")])
    assert result.exit_code == 0 and "in 2 row(s)" in result.output, result.output
    result = CliRunner().invoke(
        cli, ["plan", str(tmp_path), "--mapping", str(tmp_path / "m.yaml"), "--out", str(tmp_path / "plan")]
    )
    assert result.exit_code == 0, result.output
    items = [orjson.loads(line)["item"] for line in (tmp_path / "plan" / "items.jsonl").read_bytes().splitlines()]
    assert [(i["query_id"], i["retrieved_documents"]) for i in items] == [("q1", []), ("q2", [])]


# trec_eval name → our measure (uncut without @k, as trec_eval's), and the cut ones at their k
_FIELD = re.compile(r"^(map|Rprec|bpref|map_cut_(\d+)|unj_(\d+))$")


@pytest.mark.parametrize(
    ("qrels", "out", "threshold"), [("qrels.test", "out.test.aq", 1), ("qrels.rel_level", "out.test.aql", 2)]
)
def test_field_measures_reproduce_trec_eval_per_topic_and_in_the_mean(qrels: str, out: str, threshold: int) -> None:
    """map, map_cut_k, Rprec, bpref and judged@k (= 1 − unj_k) per topic and on trec_eval's `all` line, under the
    default --average trec_eval, each asked for by its trec_eval name."""
    values: dict[tuple[str, str], float] = {}
    for line in (TREC / out).read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and _FIELD.match(parts[0]):
            values[(parts[0], parts[1])] = float(parts[2])
    names = sorted({name for name, _ in values})
    assert len(names) == 3 + 9 + 3  # map, Rprec, bpref, map_cut at 9 cutoffs, unj at 3
    args = ["metrics", "--qrels", str(TREC / qrels), "--run", str(TREC / "results.test")]
    args += ["--relevance-threshold", str(threshold)]  # no --k: map, Rprec and bpref are uncut (issue #34 item 7)
    for name in names:
        args += ["--measure", f"judged@{name[4:]}" if name.startswith("unj_") else name]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout_bytes)
    rows = {row["query_id"]: row for row in doc["per_query"]}
    summary = doc["summary"]["all"]
    assert summary["average"] == "trec_eval" and summary["queries"] == 3
    for (name, topic), value in values.items():
        m = _FIELD.match(name)
        assert m is not None
        if m.group(2):
            key = agg = f"ap@{m.group(2)}"
        elif m.group(3):
            key = agg = f"judged@{m.group(3)}"
            value = round(1 - value, 4)
        else:
            key = agg = {"map": "ap", "Rprec": "rprec", "bpref": "bpref"}[name]
        ours = summary[agg] if topic == "all" else rows[topic][key]
        assert round(ours, 4) == pytest.approx(value, abs=1e-9), (name, topic, ours, value)


def test_map_and_bpref_without_a_cutoff_are_pytrec_eval_s_over_the_whole_ranking() -> None:
    # issue #34 item 7: --measure map and --measure bpref were cut at the default k (map@10, bpref@10)
    import pytrec_eval
    from trec_sweep_helpers import read_trec_qrels, read_trec_run

    qrels, run = TREC / "qrels.test", TREC / "results.test"
    want = pytrec_eval.RelevanceEvaluator(read_trec_qrels(qrels), {"map", "bpref", "map_cut_10"})
    want = want.evaluate(read_trec_run(run))
    args = ["metrics", "--qrels", str(qrels), "--run", str(run), "--measure", "map", "--measure", "bpref"]
    result = CliRunner().invoke(cli, [*args, "--measure", "map@10"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout_bytes)
    rows = {row["query_id"]: row for row in doc["per_query"]}
    assert set(doc["per_query"][0]) >= {"ap", "bpref", "ap@10"} and "bpref@10" not in doc["per_query"][0]
    for topic, values in want.items():
        for ours, theirs in (("ap", "map"), ("bpref", "bpref"), ("ap@10", "map_cut_10")):
            assert (rows[topic][ours] or 0.0) == pytest.approx(values[theirs], abs=1e-12), (topic, ours)
    means = doc["summary"]["all"]
    assert means["ap"] == pytest.approx(sum(v["map"] for v in want.values()) / len(want), abs=1e-12)
    assert means["ap"] != pytest.approx(means["ap@10"], abs=1e-6)  # the run is deeper than 10: they differ
