"""`metrics --queue-out` / `--queue`: the query queue for human relevance labels on judge-labelled qrels, round trip
on the bundled sample with half its human qrels hidden: judge-docs on the emulator, the queue drawn, its first lines
labelled from the hidden qrels, read back and weighted by the queue's inclusion probabilities (checked against the
estimator computed here by hand on pytrec_eval's per-query nDCG@10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from test_judged_docs import BENEFITS, _per_query, _refused, hidden, invoke
from trec_sweep_helpers import read_trec_qrels, read_trec_run

from foundry_bridge.errors import FoundryBridgeWarning

COPIES = 3  # 42 queries, 21 with human labels


def _truth(tmp: Path) -> dict[str, dict[str, int]]:
    """Every query's human labels, as ``hidden`` names the copies."""
    rows = [json.loads(line) for line in BENEFITS.read_text().splitlines()]
    return {
        f"{row['query_id']}-{c}": {g["document_id"]: g["query_relevance_label"] for g in row["retrieval_ground_truth"]}
        for c in range(COPIES)
        for row in rows
        if row.get("retrieval_ground_truth")
    }


def _write_qrels(path: Path, qrels: dict[str, dict[str, int]]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return path


@pytest.fixture
def queued(tmp_path: Path) -> dict[str, Any]:
    data, human, run = hidden(tmp_path, copies=COPIES)
    judged, queue = tmp_path / "judged.qrels", tmp_path / "queue.jsonl"
    assert invoke(["judge-docs", data, "--out", judged, "--k", "10"])[0] == 0
    code, text, raw = invoke(["metrics", data, "--qrels", judged, "--human-qrels", human, "--queue-out", queue])
    assert code == 0, text
    lines = [json.loads(line) for line in queue.read_text().splitlines()]
    return {"data": data, "human": human, "run": run, "judged": judged, "queue": queue, "lines": lines, "raw": raw}


def test_the_queue_lists_the_unlabelled_positive_queries_with_their_documents_and_design(queued: dict) -> None:
    lines, known = queued["lines"], read_trec_qrels(queued["human"])
    rows = {
        f"{r['query_id']}-{c}": r for c in range(COPIES) for r in map(json.loads, BENEFITS.read_text().splitlines())
    }
    positive = {q for q, r in rows.items() if r.get("kind") != "negative"}
    assert {line["query_id"] for line in lines} == positive - set(known)
    assert [line["queue_place"] for line in lines] == list(range(1, len(lines) + 1))
    judged = read_trec_qrels(queued["judged"])
    for line in lines:
        assert line["query"] == rows[line["query_id"]]["query"]
        assert set(line["documents"]) == set(judged.get(line["query_id"], {}))
        assert line["queue_candidates"] == len(lines) and 0 < line["queue_share"] <= 1
    # the order is by key u/share, each line's next key the key of the line after it
    keys = [line["queue_u"] / line["queue_share"] for line in lines]
    assert keys == sorted(keys)
    assert [line["queue_next_key"] for line in lines[:-1]] == pytest.approx(keys[1:], rel=1e-12)
    assert lines[-1]["queue_next_key"] is None
    out = orjson.loads(queued["raw"])["queue_out"]
    assert out["lines"] == len(lines) and out["size_measure"] == "ndcg@10"


def test_labels_on_the_queues_first_lines_are_weighted_back(queued: dict, tmp_path: Path) -> None:
    lines, known, n = queued["lines"], read_trec_qrels(queued["human"]), 6
    truth = _truth(tmp_path)
    labelled = {**known, **{line["query_id"]: truth[line["query_id"]] for line in lines[:n]}}
    human = _write_qrels(tmp_path / "more.qrels", labelled)
    args = ["metrics", queued["data"], "--qrels", queued["judged"], "--human-qrels", human, "--k", "10"]
    code, text, raw = invoke([*args, "--queue", queued["queue"]])
    assert code == 0, text
    v = orjson.loads(raw)["judged_vs_human"]
    assert v["queue"]["labelled_prefix"] == n and v["queue"]["left_out"] == []
    # by hand: π = min(1, share·t) on the first n lines, t the key of line n + 1; 1 for those labelled before
    pi = {line["query_id"]: min(1.0, line["queue_share"] * lines[n - 1]["queue_next_key"]) for line in lines[:n]}
    runs, rows = read_trec_run(queued["run"]), map(json.loads, queued["data"].read_text().splitlines())
    order = [r["query_id"] for r in rows if r.get("kind") != "negative"]  # metrics leaves declared negatives out
    pi |= {q: 1.0 for q in known if q in order}
    f = _per_query(read_trec_qrels(queued["judged"]), runs, order)
    y = _per_query(labelled, runs, order)
    weights = np.array([1 / pi[q] if q in pi else 0.0 for q in order])
    ppi = f.mean() + (weights * (y - f)).sum() / len(order)
    m = v["corrected"]["ndcg@10"]
    assert m["design"] == "labels weighted by 1/(the queue's inclusion probability)"
    assert m["ppi"]["mean"] == pytest.approx(ppi, rel=1e-9)
    assert m["human_only"]["mean"] == pytest.approx((weights * y).sum() / weights.sum(), rel=1e-9)
    # without --queue the same labels are a uniform sample: another estimate
    plain = orjson.loads(invoke(args)[2])["judged_vs_human"]["corrected"]["ndcg@10"]
    assert plain["design"] != m["design"]
    code, text, _ = invoke([*args, "--queue", queued["queue"], "--format", "text"])
    assert "weighted by 1/(the query queue's inclusion probability)" in text
    assert f"its first {n} places labelled" in text


def test_labels_after_a_gap_are_left_out_with_a_warning(queued: dict, tmp_path: Path) -> None:
    lines, known = queued["lines"], read_trec_qrels(queued["human"])
    truth = _truth(tmp_path)
    picked = [lines[0]["query_id"], lines[1]["query_id"], lines[3]["query_id"]]  # place 3 left unlabelled
    human = _write_qrels(tmp_path / "gap.qrels", {**known, **{q: truth[q] for q in picked}})
    args = ["metrics", queued["data"], "--qrels", queued["judged"], "--human-qrels", human, "--queue", queued["queue"]]
    with pytest.warns(
        FoundryBridgeWarning, match=f"after place 3, which is not labelled: left out.*{lines[2]['query_id']}"
    ):
        code, text, raw = invoke(args)
    assert code == 0, text
    v = orjson.loads(raw)["judged_vs_human"]
    assert v["queue"]["labelled_prefix"] == 2 and v["queue"]["left_out"] == [picked[2]]
    assert v["human_queries"] == v["queue"]["labelled_before"] + 2


def test_a_broken_queue_file_and_missing_partners_are_refused(
    queued: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = queued["lines"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(
        "".join(json.dumps(line | ({"queue_share": 2} if i == 1 else {})) + "\n" for i, line in enumerate(lines))
    )
    base = ["metrics", queued["data"], "--qrels", queued["judged"], "--human-qrels", queued["human"]]
    code, err = _refused([*base, "--queue", broken], capsys)
    assert code == 1 and f"{broken}:2: queue_share: queue_share must be what metrics --queue-out wrote, got 2" in err
    code, err = _refused(["metrics", queued["data"], "--qrels", queued["judged"], "--queue", queued["queue"]], capsys)
    assert code == 2 and "--queue weighs the human labels of --human-qrels" in err
    code, err = _refused(["metrics", queued["data"], "--qrels", queued["human"], "--queue-out", tmp_path / "q"], capsys)
    assert code == 2 and "--queue-out ranks queries for human labels on judge-labelled qrels" in err
    code, err = _refused([*base, "--queue-out", queued["judged"]], capsys)
    assert code == 2 and "would overwrite its own input" in err


def test_queue_size_and_seed_cut_and_reorder_the_queue(queued: dict, tmp_path: Path) -> None:
    base = ["metrics", queued["data"], "--qrels", queued["judged"], "--human-qrels", queued["human"]]
    short, other = tmp_path / "short.jsonl", tmp_path / "other.jsonl"
    assert invoke([*base, "--queue-out", short, "--queue-size", "3"])[0] == 0
    assert [json.loads(x) for x in short.read_text().splitlines()][:2] == queued["lines"][:2]
    assert len(short.read_text().splitlines()) == 3
    assert invoke([*base, "--queue-out", other, "--queue-seed", "5"])[0] == 0
    again = [json.loads(x)["query_id"] for x in other.read_text().splitlines()]
    assert sorted(again) == sorted(x["query_id"] for x in queued["lines"])
    assert again != [x["query_id"] for x in queued["lines"]]


def test_the_queue_from_a_run_file_and_its_text_line(queued: dict, tmp_path: Path) -> None:
    """With --run (no DATA: no query text, no declared negatives) the queue holds every ranked query without human
    labels; the text output says where the queue went."""
    out = tmp_path / "run-queue.jsonl"
    args = ["metrics", "--qrels", queued["judged"], "--run", queued["run"], "--human-qrels", queued["human"]]
    code, text, _ = invoke([*args, "--queue-out", out, "--queue-size", "4", "--format", "text"])
    assert code == 0, text
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    unlabelled = set(read_trec_run(queued["run"])) - set(read_trec_qrels(queued["human"]))
    assert len(lines) == 4 and {x["query_id"] for x in lines} <= unlabelled and "query" not in lines[0]
    assert lines[0]["queue_candidates"] == len(unlabelled)
    assert f"query queue: 4 of {len(unlabelled)} queries without human labels written to {out}" in text
