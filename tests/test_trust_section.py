"""The report's trust section on a mock run of the sample with generated canaries, checked against what a user
would compute by hand from results.jsonl and the verdict file (scikit-learn, krippendorff, ppi-python)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ppi_helpers import cross_fitted_by_hand

from foundry_bridge.canaries import CANARY_TYPES, expectation
from foundry_bridge.dataset.records import QueryRecord
from foundry_bridge.dataset.verdicts import read_verdicts
from foundry_bridge.errors import DatasetError
from foundry_bridge.metrics.ppi import labels_for_half_width
from foundry_bridge.report._trust import (
    TrustSection,
    noise_bands,
    render_trust_html,
    render_trust_markdown,
    trust_json,
    trust_section,
    write_verdict_queue_for,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")
krippendorff = pytest.importorskip("krippendorff")
ppi_py = pytest.importorskip("ppi_py")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits"
VERDICTS = SAMPLE / "human_verdicts.jsonl"


def _cli(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "foundry_bridge", *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("trust")
    data2, out = tmp / "data2.jsonl", tmp / "run"
    _cli("canaries", str(SAMPLE / "rag_eval.jsonl"), "--out", str(data2), "--per-type", "3")
    _cli("run", str(data2), "--backend", "mock", "--out", str(out), "--quiet")
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _generated(record: dict[str, Any]) -> bool:
    """A generated canary (``<id>~<type>``); the sample's hand-written canaries are ordinary rows here."""
    return record.get("extra", {}).get("canary") in CANARY_TYPES and "~" in record["query_id"]


def _by_hand(run: Path, metric: str) -> tuple[dict[str, tuple[float, bool]], set[str]]:
    """query id → (score, passed) of one judge metric, and the generated canaries' ids, read from the files."""
    records = _lines(run / "records.jsonl")
    ids = [r["query_id"] for r in records]
    canaries = {r["query_id"] for r in records if _generated(r)}
    judged = {}
    for row in _lines(run / "results.jsonl"):
        if row["metric"] == metric and row["score"] is not None:
            judged[ids[row["row"]]] = (row["score"], row["passed"])
    return judged, canaries


def test_agreement_with_the_humans_matches_scikit_learn_and_krippendorff(run: Path) -> None:
    section = trust_section(run, VERDICTS)
    entry = next(j for j in section.judges if j.metric == "groundedness")
    judged, canaries = _by_hand(run, "groundedness")
    pairs = [(judged[v["query_id"]], v) for v in _lines(VERDICTS) if v["evaluator"] == "groundedness"]
    judge_scores = [j[0] for j, _ in pairs]
    human_scores = [v["score"] for _, v in pairs]
    assert entry.trust.on_scale is not None and entry.trust.on_scale.n == len(pairs) == 11
    wk = sklearn_metrics.cohen_kappa_score(judge_scores, human_scores, weights="quadratic", labels=[1, 2, 3, 4, 5])
    assert entry.trust.on_scale.weighted_kappa == pytest.approx(wk)
    # pass/fail: the judge's verdict against the human score at the judge's threshold (3)
    kappa = sklearn_metrics.cohen_kappa_score([j[1] for j, _ in pairs], [s >= 3 for s in human_scores])
    assert entry.trust.on_pass is not None and entry.trust.on_pass.kappa == pytest.approx(kappa)
    raters = sorted({v["rater"] for _, v in pairs})
    rows = sorted({v["query_id"] for _, v in pairs})
    matrix = np.full((len(raters), len(rows)), np.nan)
    for _, v in pairs:
        matrix[raters.index(v["rater"]), rows.index(v["query_id"])] = v["score"]
    assert entry.trust.alpha_humans == pytest.approx(krippendorff.alpha(matrix, level_of_measurement="ordinal"))
    assert entry.worst[0]["query_id"] in rows and entry.worst[0]["judge"] != entry.worst[0]["human"]
    assert section.source.canary_rows == len(canaries) == 13
    assert entry.rows_scored == len(judged) - len(canaries)  # canaries are left out of agreement and means


def test_the_corrected_pass_rate_matches_ppi_python(run: Path) -> None:
    section = trust_section(run, VERDICTS)
    entry = next(j for j in section.judges if j.metric == "relevance")
    judged, canaries = _by_hand(run, "relevance")
    human: dict[str, list[float]] = defaultdict(list)
    for v in _lines(VERDICTS):
        if v["evaluator"] == "relevance":
            human[v["query_id"]].append(float(v["score"] >= 3))
    real = [q for q in judged if q not in canaries]
    y = np.array([np.mean(human[q]) for q in real if q in human])
    f = np.array([float(judged[q][1]) for q in real if q in human])
    f_u = np.array([float(judged[q][1]) for q in real if q not in human])
    rate = entry.trust.pass_rate
    assert rate is not None and rate.ppi is not None and rate.ppi_plus is not None
    assert rate.judge_only.mean == pytest.approx(np.mean([judged[q][1] for q in real]))
    assert rate.human_only.mean == pytest.approx(y.mean())
    assert rate.ppi.mean == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, f, f_u, lam=1)[0]))
    assert rate.ppi_plus.mean == pytest.approx(cross_fitted_by_hand(y, f, f_u), abs=1e-12)  # λ on held-out folds
    # 7 labelled rows: below the 10 a corrected interval needs, so none is printed (ppi-python's would be ±0.34)
    assert y.size == 7 and rate.ppi_plus.need_labels == rate.ppi.need_labels == 10
    assert rate.ppi_plus.low is None and rate.ppi_plus.high is None


def test_without_verdicts_the_section_says_so_and_how_few_labels_would_help(run: Path) -> None:
    section = trust_section(run)
    assert any("no human verdicts given" in m for m in section.missing)
    for entry in section.judges:
        assert entry.trust.n_labeled == 0 and entry.trust.on_pass is None
        assert entry.labels_for_pass_rate == labels_for_half_width(0.05) == 387  # the worst case, Student's t
        assert entry.missing == [f"no human verdict on {entry.evaluator}: its numbers are uncorrected"]
    text = render_trust_markdown(section)
    assert (
        "no human label yet — 387 labelled rows in all give its pass rate ±0.05" in text
        and "no human verdicts given" in text
    )


def test_canaries_are_scored_from_the_results(run: Path) -> None:
    section = trust_section(run, VERDICTS)
    records = _lines(run / "records.jsonl")
    ids = [r["query_id"] for r in records]
    passed = {(ids[r["row"]], r["evaluator"]): r["passed"] for r in _lines(run / "results.jsonl")}
    for score in section.canaries:
        cases = [r for r in records if _generated(r) and r["extra"]["canary"] == score.kind]
        cases = [r for r in cases if score.evaluator in expectation(score.kind, QueryRecord.model_validate(r))]
        if score.expect == "fail":
            caught = sum(1 for r in cases if passed.get((r["query_id"], score.evaluator)) is False)
        else:
            caught = sum(
                1
                for r in cases
                if passed.get((r["query_id"], score.evaluator))
                == passed.get((r["query_id"].split("~")[0], score.evaluator))
                is not None
            )
        assert score.caught == caught, (score.kind, score.evaluator)
        assert score.caught + len(score.missed) + score.unscored == len(cases)


def test_the_retrieval_judge_is_checked_against_the_qrels(run: Path) -> None:
    check = trust_section(run).retrieval
    every = _lines(run / "records.jsonl")
    ids = [r["query_id"] for r in every]
    records = [r for r in every if not _generated(r)]  # a canary repeats its original's context: left out
    assert check.agreement is not None and check.agreement.n + check.agreement.n_missing == len(records)
    assert check.rows_known == check.agreement.n
    # by hand: a relevant document's text inside the context (whitespace-normalized)
    judge = {ids[r["row"]]: r["passed"] for r in _lines(run / "results.jsonl") if r["metric"] == "retrieval"}
    agree = total = 0
    for r in records:
        relevant = {g["document_id"] for g in r["retrieval_ground_truth"] or [] if g["query_relevance_label"] >= 1}
        context = " ".join((r["context"] or "").split())
        docs = [d for d in r["retrieved_documents"] if d["document_id"] in relevant and d.get("content")]
        truth = any(" ".join(d["content"].split()) in context for d in docs)
        if (
            r["context"] is not None
            and r["retrieval_ground_truth"] is not None
            and judge.get(r["query_id"]) is not None
        ):
            total += 1
            agree += truth == judge[r["query_id"]]
    assert check.agreement.n == total and check.agreement.observed == pytest.approx(agree / total)


def test_a_human_score_off_the_scale_is_a_located_error(run: Path, tmp_path: Path) -> None:
    bad = tmp_path / "verdicts.jsonl"
    bad.write_text(
        '{"query_id": "q01", "evaluator": "groundedness", "score": 4}\n'
        '{"query_id": "q02", "evaluator": "groundedness", "score": 7}\n'
    )
    with pytest.raises(DatasetError) as err:
        trust_section(run, bad)
    assert err.value.line == 2 and err.value.field == "score" and "1–5" in str(err.value)


def test_the_queue_names_real_rows_to_label_in_the_verdict_format(run: Path, tmp_path: Path) -> None:
    section = trust_section(run, VERDICTS)
    queue = tmp_path / "queue.jsonl"
    written = write_verdict_queue_for(run, section, queue, limit=9)  # the queue's first 9 (judge, row) pairs
    lines = _lines(queue)
    assert written == len(lines) == 9
    assert all(q["queue_place"] >= 1 and 0 < q["queue_share"] <= 1 and 0 < q["queue_u"] < 1 for q in lines)
    labelled = {(v["query_id"], "builtin." + v["evaluator"]) for v in _lines(VERDICTS)}
    assert all("~" not in q["query_id"] for q in lines)  # no generated canary: its verdict is known
    assert not {(q["query_id"], q["evaluator"]) for q in lines} & labelled
    assert {q["evaluator"] for q in lines} == {j.evaluator for j in section.judges}  # every judge gets its first rows
    assert all(q["query"] and q["score"] is None and q["passed"] is None for q in lines)
    assert read_verdicts(queue).unfilled == written


def test_the_html_fragment_is_escaped_and_the_json_has_no_nan(run: Path) -> None:
    section = trust_section(run, VERDICTS)
    entry = section.judges[1]
    hostile = entry.model_copy(update={"worst": [{"query_id": "<script>alert(1)</script>", "judge": 5, "human": 1}]})
    section = section.model_copy(update={"judges": [hostile, *section.judges[1:]]})
    page = render_trust_html(section)
    assert page.startswith('<section id="trust">') and "<script" not in page and "&lt;script&gt;" in page
    assert "<script" not in render_trust_markdown(section)
    dumped = json.dumps(trust_json(section), allow_nan=False)  # NaN (an undefined κ) is null
    assert TrustSection.model_validate_json(section.model_dump_json()) == section  # the JSON report round-trips
    assert '"kappa": null' in dumped or "NaN" not in dumped


def test_a_judge_score_off_its_scale_is_said_not_raised(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    rows = _lines(copy / "results.jsonl")
    first = next(r for r in rows if r["metric"] == "groundedness" and r["score"] is not None)
    first["score"] = 4.5
    (copy / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    entry = next(j for j in trust_section(copy, VERDICTS).judges if j.metric == "groundedness")
    assert "the judge gave scores off its 1–5 scale: κ on the values seen" in entry.missing
    assert entry.trust.on_scale is not None and 4.5 in entry.trust.on_scale.categories


def test_a_plan_without_judges_says_there_is_nothing_to_trust(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    plan = json.loads((copy / "plan.json").read_text())
    plan["criteria"] = [c for c in plan["criteria"] if c["name"] == "document_retrieval"]
    (copy / "plan.json").write_text(json.dumps(plan))
    section = trust_section(copy)
    assert section.judges == [] and "the plan has no LLM judge: nothing to trust or distrust" in section.missing
    assert section.retrieval.missing == ["no retrieval judge in the run"]
    assert "Missing: the plan has no LLM judge" in render_trust_markdown(section)


def test_judge_noise_over_repeat_runs_matches_hand_values(run: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    shutil.copytree(run, again)
    records = _lines(run / "records.jsonl")
    ids = [r["query_id"] for r in records]
    rows = _lines(again / "results.jsonl")
    moved = {"q01": 2.0, "q02": 4.0, "q06": 1.0}  # the repeat judges these three rows differently
    first = _by_hand(run, "groundedness")[0]
    for r in rows:
        qid = ids[r["row"]]
        if r["metric"] == "groundedness" and qid in moved:
            r["score"], r["passed"] = moved[qid], moved[qid] >= 3
    (again / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    section = trust_section(run, repeats=[again])
    noise = next(n for n in section.noise if n.criterion == "groundedness")
    real = [q for q in first if "~" not in q]
    a = np.array([first[q][0] for q in real])
    b = np.array([moved.get(q, first[q][0]) for q in real])
    sd = math.sqrt(np.mean((a - b) ** 2 / 2))
    assert noise.runs == 2 and noise.noise.rows == len(real)
    assert noise.noise.noise_sd == pytest.approx(sd)
    flipped = [q for q in real if first[q][1] != (moved.get(q, first[q][0]) >= 3)]
    assert noise.noise.flip_rate == pytest.approx(len(flipped) / len(real)) and noise.flaky_queries == flipped
    alpha = krippendorff.alpha(np.vstack([a, b]), level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert noise.noise.alpha == pytest.approx(alpha)
    assert noise.score_band == pytest.approx(1.959963984540054 * sd * math.sqrt(2 / len(real)))
    assert not any("judge noise" in m for m in section.missing)
    assert "groundedness against itself over 2 runs" in render_trust_markdown(section)
    bands = noise_bands(section)
    assert bands["groundedness"] == noise.score_band and "groundedness/pass" in bands  # the report keys


def test_kappa_and_alpha_on_few_rows_are_greyed_with_a_warning(run: Path) -> None:
    section = trust_section(run, VERDICTS)
    few = [j for j in section.judges if j.trust.on_pass is not None and j.trust.on_pass.rows < 10]
    assert few, "the fixture's verdicts label fewer than 10 rows"
    md, page = render_trust_markdown(section), render_trust_html(section)
    row = next(line for line in md.splitlines() if line.startswith(f"| {few[0].criterion} |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[4].startswith("*") and cells[4].endswith("°*")  # κ pass/fail: italic, marked
    assert cells[6].startswith("*") and "\\[" in cells[6]  # α humans: italic, with its interval
    assert "° κ, weighted κ or α on fewer than 10 rows \\(greyed\\)" in md
    assert '<td class="few">' in page and "fewer than 10 rows" in page


def test_judge_noise_pairs_a_repeat_run_by_query_id_whatever_its_order(run: Path, tmp_path: Path) -> None:
    """A repeat run listing the queries in reverse order, one of them under another id: each query is paired with
    its own repeat (the reversed rows are not compared with the rows at the same position); the renamed one has
    no repeat and drops out of the noise."""
    again = tmp_path / "again"
    shutil.copytree(run, again)
    records = _lines(run / "records.jsonl")
    ids = [r["query_id"] for r in records]
    n = len(records)
    renamed = {"q04": "q04-elsewhere"}
    reversed_records = [{**r, "query_id": renamed.get(r["query_id"], r["query_id"])} for r in records[::-1]]
    (again / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reversed_records))
    moved = {"q01": 2.0, "q06": 1.0}
    rows = _lines(again / "results.jsonl")
    for r in rows:
        qid = ids[r["row"]]
        if r["metric"] == "groundedness" and qid in moved:
            r["score"], r["passed"] = moved[qid], moved[qid] >= 3
        r["row"], r["query_id"] = n - 1 - r["row"], renamed.get(qid, qid)
    (again / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    section = trust_section(run, repeats=[again])
    noise = next(n for n in section.noise if n.criterion == "groundedness")
    first = _by_hand(run, "groundedness")[0]
    real = [q for q in first if "~" not in q and q not in renamed]
    a = np.array([first[q][0] for q in real])
    b = np.array([moved.get(q, first[q][0]) for q in real])
    assert noise.noise.rows == len(real)
    assert noise.noise.noise_sd == pytest.approx(math.sqrt(np.mean((a - b) ** 2 / 2)))
    assert noise.flaky_queries == [q for q in real if first[q][1] != (moved.get(q, first[q][0]) >= 3)]
