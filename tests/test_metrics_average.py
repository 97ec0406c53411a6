"""#26 items 3–4: the trec_eval average (judged topics, all-zero topics as 0, unjudged topics left out) and the
field's measures against pytrec_eval, per query and in the mean, on runs with holes, ties and unjudged queries."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import orjson
import pytest
import pytrec_eval
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.commands.metrics import compute_metrics
from foundry_bridge.metrics.measures import parse_measure
from foundry_bridge.metrics.ranking import average

DOCS = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"


def _write(tmp_path: Path, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> tuple[str, str]:
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text("".join(f"{qid} 0 {d} {lab}\n" for qid, docs in qrels.items() for d, lab in docs.items()))
    r.write_text("".join(f"{qid} Q0 {d} 1 {s} t\n" for qid, docs in run.items() for d, s in docs.items()))
    return str(q), str(r)


def _sweep_data(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Graded qrels 0–2 over 40 documents, 30 judged queries (4 judged only 0, 3 absent from the run), 3 queries
    in the run only; runs of 0–30 documents with tied scores and unjudged documents."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(33):
        qid = f"q{i:02d}"
        if i < 30:
            docs = rng.sample(range(40), rng.randint(1, 15))
            qrels[qid] = {f"d{d}": (0 if i < 4 else rng.choice([0, 0, 1, 2])) for d in docs}
        if not 27 <= i < 30:
            docs = rng.sample(range(40), rng.randint(0, 30))
            run[qid] = {f"d{d}": float(rng.randint(0, 6)) for d in docs}  # few distinct scores: ties
    return qrels, run


# pytrec_eval measure → our measure, at cutoff 5 and 10 where it has one; uncut ones at a k beyond the run
_PAIRS = {
    "map": "ap@1000",
    "map_cut_5": "ap@5",
    "map_cut_10": "ap@10",
    "Rprec": "rprec@1000",
    "bpref": "bpref@1000",
    "P_5": "precision@5",
    "P_10": "precision@10",
    "ndcg_cut_10": "ndcg@10",
    "recip_rank": "rr@1000",
}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("threshold", [1, 2])
@pytest.mark.parametrize("condensed", [False, True])
def test_field_measures_equal_pytrec_eval_per_query_and_in_the_trec_eval_mean(
    tmp_path: Path, seed: int, threshold: int, condensed: bool
) -> None:
    qrels, run = _sweep_data(seed)
    q, r = _write(tmp_path, qrels, run)
    names = {"map", "map_cut", "Rprec", "bpref", "P", "ndcg_cut", "recip_rank"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level=threshold, judged_docs_only_flag=condensed)
    # trec_eval -c: a judged query the run has nothing for is scored on an empty ranking
    expected = ref.evaluate({qid: run.get(qid, {}) for qid in qrels})
    ours = {name: parse for name, parse in _PAIRS.items()}
    if condensed:  # the condensed-list variants; bpref ignores unjudged documents anyway
        ours = {n: m if m.startswith("bpref") else m.replace("@", "_cond@") for n, m in ours.items()}
    doc = compute_metrics(qrels=q, run=r, relevance_threshold=threshold, measures=tuple(ours.values()))
    rows = {row["query_id"]: row for row in doc["per_query"]}
    unjudged = {qid for qid, docs in run.items() if docs and qid not in qrels}  # an empty run has no line
    assert set(expected) == set(qrels) and set(rows) == set(qrels) | unjudged and unjudged
    summary = doc["summary"]["all"]
    assert (summary["average"], summary["queries"], summary["left_out"]) == ("trec_eval", 30, len(unjudged))
    for name, key in ours.items():
        for qid, values in expected.items():
            got = rows[qid][key]
            assert (0.0 if got is None else got) == pytest.approx(values[name], abs=1e-12), (name, qid, got)
        mean = sum(v[name] for v in expected.values()) / len(expected)
        agg = parse_measure(key).key  # ap@1000, rr@1000, ap_cond@10: the per-query key names the mean too
        assert summary[agg] == pytest.approx(mean, abs=1e-12), (name, summary[agg], mean)


def test_judged_at_k_is_the_judged_share_of_the_top_k(tmp_path: Path) -> None:
    q, r = _write(tmp_path, {"a": {"x": 1, "y": 0}}, {"a": {"x": 3.0, "z": 2.0, "y": 1.0, "w": 0.5}})
    rows = compute_metrics(qrels=q, run=r, measures=("judged@2", "judged@4", "judged@10"))["per_query"]
    assert [rows[0][f"judged@{k}"] for k in (2, 4, 10)] == [0.5, 0.5, 0.2]  # ÷ k, also past the run's end


def test_qrels_and_run_give_a_mean_by_default_not_a_blank_from_one_unjudged_query(tmp_path: Path) -> None:
    """#26: `metrics --qrels q --run r --k 10` printed — for every positive mean when one run query had no qrels."""
    qrels, run = _sweep_data(7)
    q, r = _write(tmp_path, qrels, run)
    result = CliRunner().invoke(cli, ["metrics", "--qrels", q, "--run", r, "--k", "10", "--format", "text"])
    assert result.exit_code == 0, result.output
    line = next(row for row in result.output.splitlines() if row.startswith("ndcg@10 "))
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate({qid: run.get(qid, {}) for qid in qrels})
    mean = sum(v["ndcg_cut_10"] for v in ref.values()) / len(ref)
    assert line.split()[1] == f"{mean:.4f}", line  # the first column: judged (trec_eval)
    doc = orjson.loads(CliRunner().invoke(cli, ["metrics", "--qrels", q, "--run", r, "--k", "10"]).stdout_bytes)
    assert doc["summary"]["all"]["ndcg@10"] == pytest.approx(mean, abs=1e-12)


def test_average_trec_eval_counts_all_zero_topics_as_zero_and_leaves_unjudged_topics_out(tmp_path: Path) -> None:
    """#26: topics judged only 0 moved to the negative section, so no NaN policy gave trec_eval's headline number
    (drop: too high; zerofill: right only when as many unjudged as all-zero topics)."""
    qrels = {"a": {"x": 1}, "b": {"y": 1, "z": 0}, "c": {"w": 0}}  # c: judged only 0
    run = {"a": {"x": 2.0}, "b": {"z": 2.0, "y": 1.0}, "c": {"w": 1.0}, "d": {"x": 1.0}, "e": {"y": 1.0}}
    q, r = _write(tmp_path, qrels, run)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    trec_eval = sum(v["recip_rank"] for v in ref.values()) / len(ref)
    assert trec_eval == pytest.approx(0.5)  # (1 + 1/2 + 0) / 3
    result = CliRunner().invoke(
        cli, ["metrics", "--qrels", q, "--run", r, "--measure", "rr@10", "--average", "trec_eval"]
    )
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.stdout_bytes)["summary"]
    assert summary["all"]["rr@10"] == trec_eval
    for policy, other in (("drop", 0.75), ("zerofill", 1.5 / 4)):  # positives a, b, d, e; c is negative
        doc = compute_metrics(qrels=q, run=r, measures=("rr@10",), nan_policy=policy)
        assert doc["summary"]["positive"]["rr@10"] == other != trec_eval


def test_average_is_one_function_for_every_mode() -> None:
    values = np.array([1.0, np.nan, 0.5, np.nan])
    judged = np.array([True, True, True, False])
    assert average(values, judged, "trec_eval") == 0.5  # (1 + 0 + 0.5) / 3: the unjudged NaN left out
    assert average(values, judged, "drop") == 0.75
    assert average(values, judged, "zerofill") == 0.375
    assert average(values, judged, "propagate") is None


def _block(text: str, after: str) -> str:
    start = text.index("```text\n", text.index(after)) + len("```text\n")
    return text[start : text.index("```", start)]


def test_docs_worked_example_of_each_average_and_the_ir_measures_tie_rule(tmp_path: Path) -> None:
    """#26: each averaging mode with a worked example, and ir_measures' tie rule (RR@10 1/8 where trec_eval gives
    1/7 on tied queries), stated in docs/metrics.md: the numbers there are the command's."""
    text = DOCS.read_text()
    section = text[text.index("## Averages you can match") :]
    (tmp_path / "qrels.txt").write_text(_block(section, "`qrels.txt`"))
    (tmp_path / "run.txt").write_text(_block(section, "`run.txt`"))
    q, r = str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")
    table = {
        line.split("|")[1].strip(): line.split("|")[3].strip() for line in section.splitlines() if line.count("|") == 4
    }
    ours = compute_metrics(qrels=q, run=r, measures=("rr@10",), average="trec_eval")["summary"]
    assert table["`--average trec_eval` (`all`)"] == f"{ours['all']['rr@10']:.4f}" == "0.5000"
    for policy in ("propagate", "drop", "zerofill"):
        mean = compute_metrics(qrels=q, run=r, measures=("rr@10",), nan_policy=policy)["summary"]["positive"]["rr@10"]
        assert table[f"positive, `--nan-policy {policy}`"] == ("—" if mean is None else f"{mean:.4f}")
    # ir_measures' RR@10 (MS MARCO evaluator): ties by document id ascending, judged queries, missing ones as 0
    qrels: dict[str, dict[str, int]] = {}
    for line in _block(section, "`qrels.txt`").splitlines():
        qid, _, doc, label = line.split()
        qrels.setdefault(qid, {})[doc] = int(label)
    run: dict[str, list[tuple[float, str]]] = {}
    for line in _block(section, "`run.txt`").splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, []).append((float(score), doc))
    rr = []
    for qid, labels in qrels.items():
        ranked = [doc for _, doc in sorted(run.get(qid, []), key=lambda x: (-x[0], x[1]))][:10]
        rr.append(next((1 / (i + 1) for i, doc in enumerate(ranked) if labels.get(doc, 0) >= 1), 0.0))
    assert table["ir_measures 0.4.3 `RR@10`"] == f"{sum(rr) / len(rr):.4f}" == "0.3333"
    assert "ir_measures' own implementations" in section and "*ascending*" in section
