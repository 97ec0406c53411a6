"""Labels are int64 in the metric arrays: 2**31 is exact on every path, beyond int64 is a located input error.

Reference values: trec_eval on qrels ``a:2147483648 b:1 c:0`` and run ``c a b`` gives recip_rank 0.5 and
ndcg_cut_3 0.6309 (gain = label: DCG = 2**31/log2(3) + 1/2, ideal = 2**31 + 1/log2(3)). pytrec_eval checks the
formula on the same shape with small top labels: on 2**31 itself it allocates per relevance level (about 16 s and
gigabytes), too much for a test.
"""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest

from foundry_bridge.cli import main
from foundry_bridge.dataset import GroundTruthLabel, QueryRecord, RetrievedDocument
from foundry_bridge.errors import DatasetError
from foundry_bridge.metrics import ranking_metrics

BIG = 2**31
LABELS = {"a": BIG, "b": 1, "c": 0}
RUN = [("c", 3.0), ("a", 2.0), ("b", 1.0)]


def hand_ndcg3(top: int) -> float:
    """trec_eval ndcg_cut_3 of run ``c a b`` on labels ``a:top b:1 c:0``."""
    return (top / math.log2(3) + 1 / 2) / (top + 1 / math.log2(3))


HAND_NDCG3 = hand_ndcg3(BIG)


def _jsonl(path: Path, labels: dict[str, int]) -> Path:
    row = {
        "query_id": "q1",
        "retrieved_documents": [{"document_id": d, "relevance_score": s} for d, s in RUN],
        "retrieval_ground_truth": [{"document_id": d, "query_relevance_label": v} for d, v in labels.items()],
    }
    path.write_bytes(_dumps_big(row) + b"\n")
    return path


def _dumps_big(row: dict) -> bytes:
    """JSON with integers of any size (orjson refuses > 64 bits)."""
    import json

    return json.dumps(row).encode()


def _trec(tmp_path: Path, labels: dict[str, int]) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"q1 0 {d} {v}\n" for d, v in labels.items()))
    run = tmp_path / "run"
    run.write_text("".join(f"q1 Q0 {d} {r} {s} t\n" for r, (d, s) in enumerate(RUN, 1)))
    return qrels, run


def _metrics(args: list[str], capsys) -> dict:
    try:
        main(["metrics", *args, "--k", "3"])
    except SystemExit as exc:
        assert exc.code in (0, None), capsys.readouterr().err
    return orjson.loads(capsys.readouterr().out)["per_query"][0]


@pytest.mark.parametrize("top", [2, 7, 1000])
def test_pytrec_eval_confirms_the_formula(top: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    labels = {**LABELS, "a": top}
    evaluator = pytrec_eval.RelevanceEvaluator({"q1": labels}, {"recip_rank", "ndcg_cut_3"}, relevance_level=1)
    got = evaluator.evaluate({"q1": dict(RUN)})["q1"]
    assert got["recip_rank"] == pytest.approx(0.5)
    assert got["ndcg_cut_3"] == pytest.approx(hand_ndcg3(top), abs=1e-12)
    assert round(HAND_NDCG3, 4) == 0.6309  # trec_eval's printed value for 2**31


def test_label_2_pow_31_is_exact_on_the_jsonl_fast_path(tmp_path: Path, capsys, monkeypatch) -> None:
    import foundry_bridge.dataset as dataset_pkg

    def no_fallback(*args: object, **kwargs: object) -> None:
        raise AssertionError("the fast reader fell back to the records path")

    monkeypatch.setattr(dataset_pkg, "read_records", no_fallback)
    row = _metrics([str(_jsonl(tmp_path / "d.jsonl", LABELS))], capsys)
    assert row["rr@3"] == 0.5
    assert row["ndcg@3"] == pytest.approx(HAND_NDCG3, abs=1e-12)


def test_label_2_pow_31_is_exact_on_the_trec_path(tmp_path: Path, capsys) -> None:
    qrels, run = _trec(tmp_path, LABELS)
    row = _metrics(["--qrels", str(qrels), "--run", str(run)], capsys)
    assert row["rr@3"] == 0.5
    assert row["ndcg@3"] == pytest.approx(HAND_NDCG3, abs=1e-12)


def _record(labels: dict[str, int]) -> QueryRecord:
    return QueryRecord(
        query_id="q1",
        kind_source="labels",
        retrieved_documents=[RetrievedDocument(document_id=d, relevance_score=s) for d, s in RUN],
        retrieval_ground_truth=[GroundTruthLabel(document_id=d, query_relevance_label=v) for d, v in labels.items()],
    )


def test_label_2_pow_31_is_exact_on_the_library_path() -> None:
    row = ranking_metrics([_record(LABELS)], ks=(3,), relevance_threshold=1).per_query[0]
    assert row["rr@3"] == 0.5
    assert row["ndcg@3"] == pytest.approx(HAND_NDCG3, abs=1e-12)


@pytest.mark.parametrize("label", [2**63, 2**70, -(2**63) - 1])
def test_label_beyond_int64_in_jsonl_is_a_located_error(label: int, tmp_path: Path, capsys) -> None:
    path = _jsonl(tmp_path / "d.jsonl", {"a": label, "b": 1})
    with pytest.raises(SystemExit) as exc:
        main(["metrics", str(path), "--k", "3"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert f"{path}:1" in err and "retrieval_ground_truth[0].query_relevance_label" in err
    assert "outside the range" in err and "float" not in err and "Traceback" not in err


@pytest.mark.parametrize("label", [2**63, 2**70])
def test_label_beyond_int64_in_qrels_is_a_located_error(label: int, tmp_path: Path, capsys) -> None:
    qrels, run = _trec(tmp_path, {"a": label, "b": 1})
    with pytest.raises(SystemExit) as exc:
        main(["metrics", "--qrels", str(qrels), "--run", str(run), "--k", "3"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert f"{qrels}:1" in err and "label" in err and "outside the range" in err and "Traceback" not in err


def test_label_beyond_int64_on_the_library_path_names_query_and_field() -> None:
    with pytest.raises(DatasetError) as info:
        ranking_metrics([_record({"a": 2**63, "b": 1})], ks=(3,), relevance_threshold=1)
    assert "query_relevance_label" in str(info.value) and "'q1'" in str(info.value)
    assert "outside the range" in str(info.value)
