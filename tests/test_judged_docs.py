"""`judge-docs` and judge-labelled qrels end to end, on the bundled sample with its human qrels hidden: the emulator's
stand-in and the fake local judge write qrels; `metrics --qrels` on them equals pytrec_eval on the same files and
says "judge-labelled"; human qrels restored for half the queries give κ and PPI-corrected means."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
import pytrec_eval
from click.testing import CliRunner
from trec_sweep_helpers import read_trec_qrels, read_trec_run

from foundry_bridge.cli import cli, main
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def invoke(args: list[str]) -> tuple[int, str, bytes]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output, result.stdout_bytes


def hidden(tmp: Path, copies: int = 1) -> tuple[Path, Path, Path]:
    """The sample without its labels (``copies`` times, ids suffixed), the human qrels of every other query, and a
    TREC run of its rankings (scores as stored: distinct and descending, so trec_eval keeps the stored order)."""
    data, human, run = tmp / "hidden.jsonl", tmp / "human.qrels", tmp / "run.trec"
    rows = [json.loads(line) for line in BENEFITS.read_text().splitlines()]
    with data.open("w") as d, human.open("w") as h, run.open("w") as r:
        i = 0
        for c in range(copies):
            for row in rows:
                row = {**row, "query_id": f"{row['query_id']}-{c}"}
                labels = row.pop("retrieval_ground_truth", None) or []
                if i % 2 == 0:
                    h.writelines(
                        f"{row['query_id']} 0 {g['document_id']} {g['query_relevance_label']}\n" for g in labels
                    )
                for rank, doc in enumerate(row["retrieved_documents"], 1):
                    r.write(f"{row['query_id']} Q0 {doc['document_id']} {rank} {doc['relevance_score']} run\n")
                d.write(json.dumps(row) + "\n")
                i += 1
    return data, human, run


def test_judge_docs_on_the_emulator_writes_judged_qrels_and_provenance(tmp_path: Path) -> None:
    data, _, _ = hidden(tmp_path)
    out = tmp_path / "judged.qrels"
    code, text, _ = invoke(["judge-docs", data, "--backend", "mock", "--k", "5", "--out", out])
    assert code == 0, text
    qrels = read_trec_qrels(out)
    # by hand: q01 "How many weeks of paid parental leave do I get?" → many, weeks, paid, parental, leave, get (the
    # rest are stopwords); pol-leave-01 holds weeks, paid, parental, leave: 4 of 6 = 67 % ≥ 60 % → grade 3
    assert qrels["q01-0"]["pol-leave-01"] == 3
    prov = json.loads((tmp_path / "judged.qrels.json").read_text())
    assert prov["labels"] == "judge-labelled" and prov["backend"] == "mock"
    assert prov["rubric"]["version"] == "1" and len(prov["rubric"]["sha256"]) == 64
    assert prov["scale"] == {"0": "irrelevant", "1": "related", "2": "partially answers", "3": "answers"}
    assert prov["deepchecks"] == {"Platinum": [3], "Gold": [2], "Irrelevant": [0, 1]}
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    top5 = sum(len({d["document_id"] for d in r["retrieved_documents"][:5]}) for r in rows)
    assert prov["counts"]["documents"] == top5 == len(prov["documents"])
    assert sum(len(v) for v in qrels.values()) == prov["counts"]["labelled"]
    assert all(doc["reason"] for doc in prov["documents"])


def _grade_rule(request: JudgeRequest) -> FakeAnswer:
    """A judge that reads the document: 3 if it names the query's subject, 1 otherwise; unreadable on dental."""
    document = request.user.split("Document:\n", 1)[1].lower()
    if "dental" in document:
        return FakeAnswer(content="The document is relevant, I think.")
    query = request.user.split("Query:\n", 1)[1].split("\n\nDocument:", 1)[0].lower()
    grade = 3 if any(w in document for w in query.split() if len(w) > 6) else 1
    return FakeAnswer(content=json.dumps({"grade": grade, "reason": "fake judge"}))


def test_judge_docs_on_the_fake_local_judge_counts_unknown_and_caches(tmp_path: Path) -> None:
    data, _, _ = hidden(tmp_path)
    out, cache = tmp_path / "judged.qrels", tmp_path / "cache"
    with FakeJudgeServer(_grade_rule) as judge:
        args = ["judge-docs", data, "--backend", "local", "--judge-endpoint", judge.base_url, "--judge-model", "m"]
        args += ["--cache-dir", cache, "--out", out, "--k", "10"]
        code, estimate, _ = invoke([*args, "--estimate"])
        assert code == 0 and judge.calls == 0, estimate
        code, text, _ = invoke(args)
        assert code == 0, text
        first = judge.calls
        prov = json.loads((tmp_path / "judged.qrels.json").read_text())
        unknown = [d for d in prov["documents"] if d["grade"] is None]
        assert unknown and prov["counts"]["unknown"] == len(unknown)
        assert all(d["reason"].startswith("JUDGE_UNPARSEABLE") for d in unknown)
        qrels = read_trec_qrels(out)
        assert all(d["document_id"] not in qrels.get(d["query_id"], {}) for d in unknown)  # unknown is not 0
        assert prov["judge"]["model"] == "m" and prov["backend"] == "local"
        assert f"judge_calls: {first}" in estimate and "cached: 0" in estimate
        code, again, _ = invoke(args)  # the answers that parsed come from the cache; the unreadable are asked again
        assert code == 0 and judge.calls == first + len(unknown), again
        stats = json.loads((tmp_path / "judged.qrels.json").read_text())["judge_stats"]
        assert stats["cache_hits"] == first - len(unknown) and stats["judge_calls"] == len(unknown)


@pytest.mark.parametrize("via", ["run", "data"])
def test_metrics_on_judged_qrels_equal_pytrec_eval_and_say_judge_labelled(tmp_path: Path, via: str) -> None:
    data, _, run = hidden(tmp_path)
    out = tmp_path / "judged.qrels"
    assert invoke(["judge-docs", data, "--out", out, "--k", "10"])[0] == 0
    source = ["--run", run] if via == "run" else [data]
    code, text, raw = invoke(["metrics", *source, "--qrels", out, "--k", "5", "--k", "10"])
    assert code == 0, text
    doc = orjson.loads(raw)
    assert doc["params"]["relevance_labels"]["source"] == "judge-labelled"
    qrels = read_trec_qrels(out)
    runs = read_trec_run(run)
    measures = {"ndcg_cut.5,10", "recall.5,10", "P.5,10", "recip_rank"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(runs)
    per_query = {row["query_id"]: row for row in doc["per_query"]}
    assert max(len(r) for r in runs.values()) <= 10  # rr@10 is recip_rank on these rankings
    for q, values in expected.items():
        for ours, theirs in (("ndcg@5", "ndcg_cut_5"), ("ndcg@10", "ndcg_cut_10"), ("recall@5", "recall_5")):
            assert (per_query[q][ours] or 0.0) == pytest.approx(values[theirs], rel=1e-9, abs=1e-12)
        assert (per_query[q]["precision@10"] or 0.0) == pytest.approx(values["P_10"], rel=1e-9, abs=1e-12)
        assert (per_query[q]["rr@10"] or 0.0) == pytest.approx(values["recip_rank"], rel=1e-9, abs=1e-12)
    mean = np.mean([v["ndcg_cut_10"] for v in expected.values()])
    assert doc["summary"]["all"]["ndcg@10"] == pytest.approx(mean, rel=1e-9)
    code, text, _ = invoke(["metrics", *source, "--qrels", out, "--k", "10", "--format", "text"])
    assert "relevance labels: judge-labelled (mock judge" in text
    for key in ("rr@10", "recall@10", "ndcg@10", "precision@10"):
        assert f"{key} (judge-labelled)" in text


def _refused(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in args])
    return int(exit_.value.code or 0), capsys.readouterr().err


def test_human_and_judge_labels_are_never_mixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, human, _ = hidden(tmp_path)
    out = tmp_path / "judged.qrels"
    assert invoke(["judge-docs", data, "--out", out])[0] == 0
    code, text = _refused(["metrics", data, "--qrels", human, "--human-qrels", human], capsys)
    assert code == 2 and "give --qrels a file judge-docs wrote" in text
    code, text = _refused(["metrics", data, "--qrels", out, "--human-qrels", out], capsys)
    assert code == 2 and "is judge-labelled" in text
    with out.open("a") as fh:  # a human label appended to the judge's file
        fh.write("q01-0 0 pol-leave-02 2\n")
    code, text = _refused(["metrics", data, "--qrels", out], capsys)
    assert code == 1 and "changed since judge-docs wrote it" in text and "Traceback" not in text


def _ppi(f_all: np.ndarray, y: np.ndarray, labelled: np.ndarray) -> float:
    """PPI (λ = 1) by hand: mean of the judge's metric on the unlabelled queries − mean(judge − human) on the
    labelled ones."""
    return float(f_all[~labelled].mean() - (f_all[labelled] - y).mean())


def test_half_the_human_qrels_restored_give_kappa_and_corrected_means(tmp_path: Path) -> None:
    from sklearn.metrics import cohen_kappa_score

    data, human, run = hidden(tmp_path, copies=3)  # 42 queries, 21 with human labels
    out = tmp_path / "judged.qrels"
    assert invoke(["judge-docs", data, "--out", out, "--k", "10"])[0] == 0
    code, text, raw = invoke(["metrics", data, "--qrels", out, "--human-qrels", human, "--k", "10"])
    assert code == 0, text
    v = orjson.loads(raw)["judged_vs_human"]
    judged, humans = read_trec_qrels(out), read_trec_qrels(human)
    pairs = [(judged[q][d], g) for q in humans for d, g in humans[q].items() if d in judged.get(q, {})]
    j, h = np.array(pairs).T
    a = v["agreement"]
    assert a["pairs"] == len(pairs)
    assert a["weighted_kappa"] == pytest.approx(cohen_kappa_score(j, h, weights="quadratic"), rel=1e-9)
    low, high = a["weighted_kappa_interval"]
    assert low < a["weighted_kappa"] < high
    confusion = np.zeros((4, 4), int)
    np.add.at(confusion, (j, h), 1)
    assert a["confusion"] == confusion.tolist()
    # the corrected mean's unit is the query: pytrec_eval's per-query nDCG@10 on the judge's and the humans' qrels
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    positive = [r["query_id"] for r in rows if r.get("kind") != "negative"]
    runs = {q: {d: s for d, s in ds.items()} for q, ds in read_trec_run(run).items() if q in positive}
    f = _per_query(judged, runs, positive)
    y_all = _per_query(humans, runs, positive)
    labelled = np.array([q in humans for q in positive])
    m = v["corrected"]["ndcg@10"]
    assert v["queries"] == len(positive) and v["human_queries"] == int(labelled.sum()) >= 10
    assert m["ppi"]["mean"] == pytest.approx(_ppi(f, y_all[labelled], labelled), rel=1e-9)
    assert m["human_only"]["mean"] == pytest.approx(y_all[labelled].mean(), rel=1e-9)
    for est in ("ppi", "ppi_plus", "human_only"):
        assert m[est]["low"] < m[est]["mean"] < m[est]["high"]
    code, text, _ = invoke(["metrics", data, "--qrels", out, "--human-qrels", human, "--k", "10", "--format", "text"])
    assert "weighted κ (quadratic)" in text and "PPI++" in text and f"{m['ppi']['mean']:.3f} [" in text


def test_too_few_human_labels_say_how_many_are_needed(tmp_path: Path) -> None:
    data, human, _ = hidden(tmp_path)  # 14 queries, 7 with human labels: below PPI's 10
    out = tmp_path / "judged.qrels"
    assert invoke(["judge-docs", data, "--out", out])[0] == 0
    code, text, _ = invoke(["metrics", data, "--qrels", out, "--human-qrels", human, "--format", "text"])
    assert code == 0, text
    assert "too few labels (need 10)" in text and "weighted κ (quadratic)" in text


def _per_query(qrels: dict[str, Any], runs: dict[str, dict[str, float]], order: list[str]) -> np.ndarray:
    """pytrec_eval's nDCG@10 per query in ``order``; a query without a relevant label is 0 (trec_eval's mean)."""
    got = pytrec_eval.RelevanceEvaluator({q: v for q, v in qrels.items() if q in runs}, {"ndcg_cut.10"}).evaluate(runs)
    return np.array([got.get(q, {}).get("ndcg_cut_10", 0.0) for q in order])


def test_the_run_report_shows_kappa_and_corrected_means_as_metrics_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report RUN --qrels J --human-qrels H`: the section of the run report holds metrics' κ (= scikit-learn's) and
    corrected means, in JSON, Markdown and HTML."""
    from sklearn.metrics import cohen_kappa_score

    data, human, _ = hidden(tmp_path, copies=3)
    out, run = tmp_path / "judged.qrels", tmp_path / "run"
    assert invoke(["judge-docs", data, "--out", out, "--k", "10"])[0] == 0
    mapping = tmp_path / "m.yaml"  # the default mapping without document_retrieval (it needs labels in the data)
    default = (ROOT / "mappings" / "default.yaml").read_text().splitlines()
    mapping.write_text("\n".join(ln for ln in default if "builtin.document_retrieval" not in ln) + "\n")
    assert invoke(["run", data, "--mapping", mapping, "--backend", "mock", "--out", run, "--quiet"])[0] == 0
    code, text, _ = invoke(["report", run, "--qrels", out, "--human-qrels", human, "--out", tmp_path / "r.json"])
    assert code == 0, text
    v = json.loads((tmp_path / "r.json").read_text())["judged_vs_human"]
    judged, humans = read_trec_qrels(out), read_trec_qrels(human)
    pairs = [(judged[q][d], g) for q in humans for d, g in humans[q].items() if d in judged.get(q, {})]
    j, h = np.array(pairs).T
    assert v["agreement"]["weighted_kappa"] == pytest.approx(cohen_kappa_score(j, h, weights="quadratic"), rel=1e-9)
    code, _, raw = invoke(["metrics", data, "--qrels", out, "--human-qrels", human, "--k", "10"])
    assert code == 0
    m = orjson.loads(raw)["judged_vs_human"]["corrected"]["ndcg@10"]
    for est in ("judge_only", "human_only", "ppi", "ppi_plus"):
        assert v["corrected"]["ndcg@10"][est]["mean"] == pytest.approx(m[est]["mean"], rel=1e-9)
    for fmt, marker in (("md", "## Judge labels against human labels"), ("html", '<section id="judged-vs-human">')):
        code, page, _ = invoke(["report", run, "--qrels", out, "--human-qrels", human, "--format", fmt])
        assert code == 0 and marker in page and f"{m['ppi']['mean']:.3f} " in page.split(marker, 1)[1]
    for args in (["--human-qrels", human], ["--qrels", out, "--human-qrels", out]):  # no --qrels; judge labels
        with pytest.raises(SystemExit) as exc:
            main(["report", str(run), *map(str, args)])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "--human-qrels" in err and "Traceback" not in err
