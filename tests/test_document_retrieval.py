"""document_retrieval: hand-computed cases for every quirk, errors, output shapes."""

from __future__ import annotations

import math

import pytest

from foundry_bridge.errors import InputError
from foundry_bridge.metrics import (
    DocumentRetrievalError,
    document_retrieval,
    document_retrieval_batch,
    flat_output,
)
from foundry_bridge.metrics.docret import METRICS, normalize_output


def gt(*pairs):
    return [{"document_id": d, "query_relevance_label": label} for d, label in pairs]


def ret(*pairs):
    return [{"document_id": d, "relevance_score": s} for d, s in pairs]


def props(result):
    return result["document_retrieval_properties"]


def both(g, r, **params):
    """The single and the batch function must agree; return the single result."""
    one = document_retrieval(g, r, **params)
    [many] = document_retrieval_batch([{"retrieval_ground_truth": g, "retrieved_documents": r}], **params)
    assert many == one or (math.isnan(props(one)["fidelity"]) and math.isnan(props(many)["fidelity"]))
    return one


LOG2_3 = math.log2(3)


def test_worked_example_by_hand():
    res = both(gt(("a", 4), ("b", 2), ("c", 0)), ret(("b", 0.9), ("x", 0.5), ("a", 0.1)))
    p = props(res)
    # ranked labels [2, 0, 4]; ideal [4, 2, 0]
    dcg = (2**2 - 1) / 1 + 0 + (2**4 - 1) / 2
    idcg = (2**4 - 1) / 1 + (2**2 - 1) / LOG2_3
    assert p["ndcg@3"] == pytest.approx(dcg / idcg, abs=1e-12)
    assert p["ndcg@3"] == pytest.approx(0.62157, abs=1e-5)
    assert p["xdcg@3"] == pytest.approx(25 * (2 + 0 + 4 * 0.36) / 1.96, abs=1e-9)
    assert p["fidelity"] == 1.0
    assert (p["top1_relevance"], p["top3_max_relevance"], p["holes"]) == (2, 4, 1)
    assert p["holes_ratio"] == pytest.approx(1 / 3)
    assert (p["total_retrieved_documents"], p["total_ground_truth_documents"]) == (3, 3)
    assert res["document_retrieval"] == p["ndcg@3"] == res["document_retrieval_score"]
    assert res["document_retrieval_passed"] is True and res["document_retrieval_result"] == "pass"
    assert res["document_retrieval_threshold"] == 0.5 and res["document_retrieval_reason"] is None
    assert p["xdcg@3_result"] == "fail" and p["holes_passed"] is False and p["holes_threshold"] == 0
    assert p["total_retrieved_documents_threshold"] == 50 and p["holes_higher_is_better"] is False
    keys = list(p)
    assert keys[:9] == list(METRICS)
    assert keys[9:13] == ["ndcg@3_result", "ndcg@3_passed", "ndcg@3_threshold", "ndcg@3_higher_is_better"]
    assert len(keys) == 9 * 5


def test_perfect_order_and_ranking_by_score_not_list_order():
    labels = gt(("a", 4), ("b", 3), ("c", 2), ("d", 1), ("e", 0))
    p = props(both(labels, ret(("e", 0.1), ("d", 0.2), ("c", 0.3), ("b", 0.4), ("a", 0.5))))
    assert p["ndcg@3"] == pytest.approx(1.0, abs=1e-12)
    assert p["xdcg@3"] == pytest.approx(25 * (4 + 3 * 0.6 + 2 * 0.36) / 1.96, abs=1e-9)  # 83.163
    assert p["top1_relevance"] == 4


def test_ties_keep_list_order_and_int_float_tie():
    p = props(both(gt(("a", 4), ("b", 1)), ret(("b", 1), ("a", 1.0))))
    assert p["top1_relevance"] == 1  # b first: equal scores keep list order
    p = props(both(gt(("a", 4), ("b", 1)), ret(("a", 1.0), ("b", 1))))
    assert p["top1_relevance"] == 4


def test_hole_is_label_zero_even_with_min_one():
    p = props(both(gt(("a", 1)), ret(("x", 0.9), ("a", 0.5)), ground_truth_label_min=1, ground_truth_label_max=5))
    assert p["ndcg@3"] == pytest.approx((2**1 - 1) / LOG2_3, abs=1e-12)  # hole ranks first with gain 0
    assert p["top1_relevance"] == 0 and p["holes"] == 1


def test_zero_branch_reports_int_zero():
    res = both(gt(("a", 3), ("b", 0)), ret(("b", 0.9), ("x", 0.5)))
    p = props(res)
    for m in ("ndcg@3", "xdcg@3", "fidelity", "top1_relevance", "top3_max_relevance"):
        assert p[m] == 0 and type(p[m]) is int
    assert p["holes"] == 1 and p["holes_ratio"] == 0.5 and type(p["holes_ratio"]) is float
    assert type(res["document_retrieval"]) is float and res["document_retrieval_result"] == "fail"


def test_empty_branch_types_and_non_list_retrieved():
    for retrieved in ([], (), {"document_id": "a", "relevance_score": 1.0}, "abc"):
        p = props(both(gt(("a", 3)), retrieved))
        for m in ("ndcg@3", "xdcg@3", "fidelity", "top1_relevance", "top3_max_relevance"):
            assert p[m] == 0.0 and type(p[m]) is float
        assert type(p["holes"]) is int and p["holes_ratio"] == 0 and type(p["holes_ratio"]) is int
        assert p["total_retrieved_documents"] == 0 and p["total_ground_truth_documents"] == 1


def test_fidelity_nan_when_all_labels_at_min_one():
    # min 1: label 1 is "irrelevant" for fidelity but non-zero, so the normal branch runs and W(ideal) = 0
    p = props(both(gt(("a", 1), ("b", 1)), ret(("a", 0.9)), ground_truth_label_min=1, ground_truth_label_max=5))
    assert math.isnan(p["fidelity"]) and p["fidelity_result"] == "fail" and p["fidelity_passed"] is False


def test_fidelity_weights_string_sorted_for_max_ten():
    # labels as strings "1","10","2",...,"9" get weights 3,7,15,...,2047: label 2 -> 15, label 10 -> 7
    p = props(both(gt(("a", 10), ("b", 2)), ret(("b", 0.9)), ground_truth_label_max=10))
    assert p["fidelity"] == pytest.approx(15 / 22, abs=1e-12)  # intended weights would give 7/2054
    p = props(both(gt(("a", 4), ("b", 2)), ret(("b", 0.9))))
    assert p["fidelity"] == pytest.approx(7 / (31 + 7), abs=1e-12)  # max 4: weights 3,7,15,31 as intended


def test_fidelity_counts_all_retrieved_not_top3():
    labels = gt(("a", 0), ("b", 0), ("c", 0), ("d", 4))
    p = props(both(labels, ret(("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6))))
    assert p["fidelity"] == 1.0 and p["ndcg@3"] == 0 and type(p["ndcg@3"]) is float


def test_duplicates_last_label_and_score_win_first_position_kept():
    # ground truth: a labelled 1 then 4 -> 4; counted twice in total_ground_truth_documents
    p = props(both(gt(("a", 1), ("a", 4)), ret(("a", 0.5))))
    assert p["top1_relevance"] == 4 and p["total_ground_truth_documents"] == 2
    # retrieved: b scored 0.1 then 0.9 -> 0.9, ties with a (0.9) but keeps its first position (before a)
    p = props(both(gt(("a", 4), ("b", 1)), ret(("b", 0.1), ("a", 0.9), ("b", 0.9))))
    assert p["top1_relevance"] == 1
    assert p["total_retrieved_documents"] == 3 and p["holes"] == 0
    p = props(both(gt(("a", 4)), ret(("x", 0.1), ("x", 0.2))))
    assert p["holes"] == 1 and p["holes_ratio"] == 0.5


def test_ids_follow_python_dict_equality():
    p = props(both(gt((1, 4)), ret(("1", 0.9), (1.0, 0.5))))
    assert p["top1_relevance"] == 0 and p["top3_max_relevance"] == 4 and p["holes"] == 1
    # hash(-1) == hash(-2) in CPython: still two documents
    p = props(both(gt((-1, 4), (-2, 1)), ret((-2, 0.9))))
    assert p["top1_relevance"] == 1


def test_bool_labels():
    res = both(gt(("a", False), ("b", 3)), ret(("a", 0.9), ("b", 0.1)))
    assert props(res)["top1_relevance"] is False
    with pytest.raises(DocumentRetrievalError) as info:
        document_retrieval(gt(("a", True)), ret(("a", 0.9)))
    assert info.value.category == "crash" and "KeyError" in str(info.value)


def test_negative_scores_and_short_lists():
    p = props(both(gt(("a", 2), ("b", 4)), ret(("a", -5), ("b", -7.5))))
    assert p["top1_relevance"] == 2
    assert p["xdcg@3"] == pytest.approx(25 * (2 + 4 * 0.6) / 1.96, abs=1e-9)  # still divided by 1.96


MSGS = {
    "empty": "'retrieval_ground_truth' parameter must contain at least one item.",
    "gt_fields": "Invalid input data was found in the retrieval ground truth.",
    "int": "Query relevance labels must be integer values.",
    "min": "A query relevance label less than the configured minimum value",
    "max": "A query relevance label greater than the configured maximum value",
    "ret_fields": "Invalid input data was found in the retrieved documents.",
    "num": "Retrieved document relevance score must be a numerical value.",
    "many": "inputs should contain no more than 10000 items.",
}


@pytest.mark.parametrize(
    ("g", "r", "expected"),
    [
        ([], ret(("a", 1.0)), "empty"),
        ([{"document_id": "a", "label": 1}], [], "gt_fields"),
        (gt(("a", 2.0)), [], "int"),
        (gt(("a", "2")), [], "int"),
        (gt(("a", -1)), [], "min"),
        (gt(("a", 5)), [], "max"),
        (gt(("a", 1)), [{"document_id": "a"}], "ret_fields"),
        (gt(("a", 1)), ret(("a", "0.5")), "num"),
        (gt(("a", 1)), ret((None, 0.5)), "ret_fields"),
        (gt(("a", 1)), ret(*[(str(i), 1.0) for i in range(10_001)]), "many"),
    ],
)
def test_validation_messages(g, r, expected):
    with pytest.raises(DocumentRetrievalError) as info:
        document_retrieval(g, r)
    assert MSGS[expected] in str(info.value)
    assert info.value.library_exception == "EvaluationException"
    [err] = document_retrieval_batch([{"retrieval_ground_truth": g, "retrieved_documents": r}])
    assert isinstance(err, DocumentRetrievalError) and str(err) == str(info.value)


def test_exactly_ten_thousand_items_is_fine():
    p = props(document_retrieval(gt(("a", 1)), ret(*[(str(i), 1.0) for i in range(10_000)])))
    assert p["total_retrieved_documents"] == 10_000 and p["holes"] == 10_000


def test_error_class_and_init_params():
    assert issubclass(DocumentRetrievalError, InputError) and issubclass(DocumentRetrievalError, ValueError)
    with pytest.raises(DocumentRetrievalError, match="must be an integer value"):
        document_retrieval(gt(("a", 1)), [], ground_truth_label_min=0.0)
    with pytest.raises(DocumentRetrievalError, match="strictly greater"):
        document_retrieval(gt(("a", 1)), [], ground_truth_label_min=4, ground_truth_label_max=4)
    with pytest.raises(DocumentRetrievalError, match="unexpected keyword argument 'threshold'"):
        document_retrieval(gt(("a", 1)), [], threshold=3)
    with pytest.raises(DocumentRetrievalError, match="threshold"):
        document_retrieval(gt(("a", 1)), ret(("a", 1.0)), xdcg_threshold=None)
    with pytest.raises(DocumentRetrievalError, match="Either 'conversation'"):
        document_retrieval(None, [])
    with pytest.raises(DocumentRetrievalError):  # batch: a bad init parameter raises
        document_retrieval_batch([], ground_truth_label_max="4")


def test_custom_thresholds_echoed():
    p = props(both(gt(("a", 4)), ret(("a", 1.0)), top1_relevance_threshold=4, total_retrieved_documents_threshold=1))
    assert p["top1_relevance_passed"] is True and p["top1_relevance_threshold"] == 4
    assert p["total_retrieved_documents_result"] == "pass"


def test_crashes_become_errors():
    cases = [
        ({"document_id": "a", "query_relevance_label": 1}, [], {}),  # a dict, not a list: AttributeError
        (["a"], [], {}),
        (gt((["unhashable"], 1)), ret(("a", 1.0)), {}),
        (gt(("a", -2)), ret(("x", 1.0), ("a", 0.5)), {"ground_truth_label_min": -3, "ground_truth_label_max": -1}),
        (gt(("a", 3)), ret(("a", 1.0)), {"ground_truth_label_max": 1023}),
    ]
    for g, r, params in cases:
        with pytest.raises(DocumentRetrievalError) as info:
            document_retrieval(g, r, **params)
        assert info.value.category == "crash"
        [err] = document_retrieval_batch([{"retrieval_ground_truth": g, "retrieved_documents": r}], **params)
        assert isinstance(err, DocumentRetrievalError)


def test_batch_mixed_rows_records_and_items():
    from foundry_bridge.dataset.records import QueryRecord

    good = {"retrieval_ground_truth": gt(("a", 4)), "retrieved_documents": ret(("a", 1.0))}
    bad = {"retrieval_ground_truth": [], "retrieved_documents": []}
    record = QueryRecord(
        query_id="q1",
        retrieved_documents=[{"document_id": "a", "relevance_score": 0.3}],
        retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 2}],
    )
    out = document_retrieval_batch(iter([good, bad, {"item": good}, record]))
    assert out[0] == out[2] == document_retrieval(**good)
    assert isinstance(out[1], DocumentRetrievalError)
    assert props(out[3])["top1_relevance"] == 2
    assert document_retrieval_batch([]) == []


def test_flat_output_and_normalize_output():
    res = document_retrieval(gt(("a", 4), ("b", 2), ("c", 0)), ret(("b", 0.9), ("x", 0.5), ("a", 0.1)))
    flat = flat_output(res)
    assert list(flat)[:9] == list(METRICS)
    assert "ndcg@3_passed" not in flat and flat["ndcg@3_result"] == "pass" and flat["holes_threshold"] == 0
    assert len(flat) == 9 * 4
    assert flat_output(flat) == flat
    expected = {m: props(res)[m] for m in METRICS}
    for shape in (res, flat, {f"outputs.docret.{k}": v for k, v in res.items()}):
        got = normalize_output(shape)
        assert {m: got[m] for m in METRICS} == expected
        assert got["document_retrieval"] == props(res)["ndcg@3"]
    foundry_single = {
        "type": "azure_ai_evaluator",
        "name": "document_retrieval",
        "metric": "document_retrieval",
        "score": 0.646,
        "passed": True,
        "properties": {"ndcg@3": 0.646, "holes": 30, "total_groundtruth_documents": 1565, "holes_result": "fail"},
    }
    got = normalize_output(foundry_single, with_verdicts=True)
    assert got["ndcg@3"] == 0.646 and got["total_ground_truth_documents"] == 1565
    assert got["holes_passed"] is False and got["document_retrieval_passed"] is True
    per_metric = [
        {"name": "document_retrieval", "metric": "ndcg@3", "score": 0.646, "label": "pass"},
        {"name": "document_retrieval", "metric": "fidelity", "score": 0.019, "label": "fail", "passed": False},
    ]
    got = normalize_output(per_metric, with_verdicts=True)
    assert got == {
        "ndcg@3": 0.646,
        "document_retrieval": 0.646,
        "ndcg@3_passed": True,
        "fidelity": 0.019,
        "fidelity_passed": False,
    }
    with pytest.raises(ValueError):
        flat_output({"something": 1})


def test_package_export_is_the_function_after_submodule_import():
    import importlib

    import foundry_bridge.metrics as metrics

    importlib.import_module("foundry_bridge.metrics.docret")
    fn = metrics.document_retrieval
    assert props(fn(gt(("a", 4)), ret(("a", 1.0))))["top1_relevance"] == 4


def test_jsonl_bad_json_names_the_line(tmp_path):
    from foundry_bridge.dataset.docret_jsonl import document_retrieval_jsonl
    from foundry_bridge.errors import DatasetError

    path = tmp_path / "bad.jsonl"
    path.write_text('{"retrieval_ground_truth": [], "retrieved_documents": []}\n\n{oops\n')
    with pytest.raises(DatasetError) as info:
        document_retrieval_jsonl(path)
    assert info.value.line == 3 and "bad.jsonl:3" in str(info.value)
    assert "malformed JSON line: unexpected character" in str(info.value)
    assert "each line must be one complete JSON object" in str(info.value)


def test_jsonl_errors_are_the_row_readers(tmp_path):
    """A line orjson refuses is reported as every dataset reader reports it (the limit broken, with its fix)."""
    from foundry_bridge.dataset.docret_jsonl import document_retrieval_jsonl
    from foundry_bridge.errors import DatasetError

    path = tmp_path / "nan.jsonl"
    path.write_text('{"retrieval_ground_truth": [], "retrieved_documents": []}\n{"x": NaN}\n')
    with pytest.raises(DatasetError) as info:
        document_retrieval_jsonl(path)
    text = str(info.value)
    assert info.value.line == 2 and text.startswith(f"{path}:2: NaN, Infinity or a number beyond a double")
    assert "use allow_nan=False" in text


def test_batch_hash_fallback_still_exact():
    # an unhashable id in the batch switches id coding to hashes; -1 and -2 share a hash in CPython,
    # and NaN ids are equal only to themselves: both must still match the one-query results
    nan = float("nan")
    rows = [
        {"retrieval_ground_truth": gt((["x"], 1)), "retrieved_documents": ret(("a", 1.0))},
        {"retrieval_ground_truth": gt((-1, 4), (-2, 1)), "retrieved_documents": ret((-2, 0.9), (-1, 0.5))},
        {"retrieval_ground_truth": gt((nan, 3)), "retrieved_documents": ret((nan, 0.9), (float("nan"), 0.8))},
        {"retrieval_ground_truth": gt(("a", 2), ("a", 3)), "retrieved_documents": ret(("a", 0.2), ("b", 0.3))},
    ]
    out = document_retrieval_batch(rows)
    assert isinstance(out[0], DocumentRetrievalError)
    assert props(out[1])["top1_relevance"] == 1 and props(out[1])["top3_max_relevance"] == 4
    assert props(out[2])["top1_relevance"] == 3 and props(out[2])["holes"] == 1
    assert props(out[3])["top1_relevance"] == 0 and props(out[3])["top3_max_relevance"] == 3
    for row, res in zip(rows[1:], out[1:], strict=True):
        assert res == document_retrieval(row["retrieval_ground_truth"], row["retrieved_documents"])
