"""Every validation rule: a small bad file and the exact expected message."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.dataset import read_records
from foundry_bridge.errors import DatasetError
from foundry_bridge.mapping import load_mapping
from foundry_bridge.validate import MAX_DOCUMENTS, validate

ROOT = Path(__file__).resolve().parents[1]


def _row(qid: str = "q1", **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "query_id": qid,
        "kind": "positive",
        "query": "How many weeks of leave?",
        "retrieved_documents": [
            {"document_id": "a", "relevance_score": 0.9},
            {"document_id": "b", "relevance_score": 0.5},
        ],
        "retrieval_ground_truth": [
            {"document_id": "a", "query_relevance_label": 3},
            {"document_id": "b", "query_relevance_label": 0},
        ],
        "context": "Sixteen weeks.",
        "response": "16 weeks.",
    }
    row.update(over)
    return {k: v for k, v in row.items() if v is not ...}


def _data(tmp_path: Path, *rows: Any) -> Path:
    p = tmp_path / "d.jsonl"
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def _mapping(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return p


def _criteria(tmp_path: Path, criteria: Any) -> Path:
    p = tmp_path / "c.json"
    p.write_text(json.dumps(criteria, indent=2))
    return p


def _found(report: Any) -> list[str]:
    return [f"{p.severity}: {p}" for p in report.problems]


JUDGE = "deployment_name: gpt-4o-mini"


def test_clean_data_has_no_problem(tmp_path: Path) -> None:
    report = validate(_data(tmp_path, _row("q1"), _row("q2")))
    assert _found(report) == [] and report.ok and report.rows == 2


# ---- errors ------------------------------------------------------------------------------------------------------


def test_docs_typo_retrieval_documents_in_criteria(tmp_path: Path) -> None:
    crit = _criteria(
        tmp_path,
        [
            {
                "type": "azure_ai_evaluator",
                "name": "docret",
                "evaluator_name": "builtin.document_retrieval",
                "data_mapping": {
                    "retrieval_ground_truth": "{{item.retrieval_ground_truth}}",
                    "retrieval_documents": "{{item.retrieved_documents}}",
                },
            }
        ],
    )
    report = validate(_data(tmp_path, _row()), criteria_file=crit)
    assert (
        f"error: {crit}:8: testing_criteria[0].data_mapping.retrieval_documents: 'retrieval_documents' is not an "
        "input of builtin.document_retrieval (fix: did you mean 'retrieved_documents'?)" in _found(report)
    )
    assert not report.ok


def test_docs_typo_retrieval_documents_in_mapping_inputs(tmp_path: Path) -> None:
    m = _mapping(
        tmp_path,
        "evaluators:\n  - evaluator: builtin.document_retrieval\n"
        "    inputs: {retrieval_documents: retrieved_documents}\n",
    )
    report = validate(_data(tmp_path, _row()), mapping=m)
    assert _found(report) == [
        f"error: {m}:3: evaluators[0].inputs.retrieval_documents: 'retrieval_documents' is not an input of "
        "builtin.document_retrieval (fix: did you mean 'retrieved_documents'?)"
    ]


def test_template_field_no_row_has(tmp_path: Path) -> None:
    crit = _criteria(
        tmp_path,
        [
            {
                "type": "azure_ai_evaluator",
                "name": "rel",
                "evaluator_name": "builtin.relevance",
                "initialization_parameters": {"deployment_name": "d"},
                "data_mapping": {"query": "{{item.query}}", "response": "{{item.respones}}"},
            }
        ],
    )
    data = _data(tmp_path, _row("q1"), _row("q2"))
    report = validate(data, criteria_file=crit)
    assert _found(report) == [
        f"error: {data}: respones: no row has the field 'respones' that rel.response read "
        "(fix: did you mean 'response'?)"
    ]


def test_mapping_path_no_row_has(tmp_path: Path) -> None:
    m = _mapping(
        tmp_path,
        f"dataset:\n  fields: {{response: answr}}\nevaluators:\n"
        f"  - evaluator: builtin.relevance\n    init: {{{JUDGE}}}\n",
    )
    data = _data(tmp_path, _row(response=..., answer="16 weeks."))
    assert _found(validate(data, mapping=m)) == [
        f"error: {data}: answr: no row has the field 'answr' that relevance.response read (fix: did you mean 'answer'?)"
    ]


def test_wrong_case_input_key_and_template_field(tmp_path: Path) -> None:
    crit = _criteria(
        tmp_path,
        [
            {
                "type": "azure_ai_evaluator",
                "name": "ret",
                "evaluator_name": "builtin.retrieval",
                "initialization_parameters": {"deployment_name": "d"},
                "data_mapping": {"Query": "{{item.query}}", "context": "{{item.Context}}"},
            }
        ],
    )
    data = _data(tmp_path, _row())
    found = _found(validate(data, criteria_file=crit))
    assert found == [
        f"error: {crit}:9: testing_criteria[0].data_mapping: builtin.retrieval needs input(s) query in data_mapping "
        '(fix: "query": "{{item.query}}")',
        f"error: {crit}:10: testing_criteria[0].data_mapping.Query: input 'Query' has the wrong case "
        "(fix: write 'query')",
        f"error: {data}: Context: no row has the field 'Context' that ret.context read "
        "(fix: wrong case: the data has 'context')",
    ]


def test_missing_deployment_for_judge(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "evaluators:\n  - evaluator: builtin.groundedness\n    init: {threshold: 3}\n")
    assert _found(validate(_data(tmp_path, _row()), mapping=m)) == [
        f"error: {m}:3: evaluators[0].init.deployment_name: builtin.groundedness is an LLM judge and needs "
        'deployment_name (fix: add deployment_name: "${AZURE_AI_MODEL_DEPLOYMENT_NAME}")'
    ]


def test_unset_env_var_in_deployment(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "evaluators:\n  - evaluator: builtin.relevance\n    init: {deployment_name: '${NOPE_X}'}\n")
    assert _found(validate(_data(tmp_path, _row()), mapping=m, environ={})) == [
        f"error: {m}:3: evaluators[0].init.deployment_name: environment variable NOPE_X is not set "
        "(fix: export NOPE_X=... or write ${NOPE_X:-default} in the mapping)"
    ]


def test_init_param_not_accepted(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "evaluators:\n  - evaluator: builtin.document_retrieval\n    init: {ndcg_treshold: 0.5}\n")
    assert _found(validate(_data(tmp_path, _row()), mapping=m)) == [
        f"error: {m}:3: evaluators[0].init.ndcg_treshold: 'ndcg_treshold' is not an initialization parameter of "
        "builtin.document_retrieval (fix: did you mean 'ndcg_threshold'?)"
    ]


def test_unknown_evaluator(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "evaluators:\n  - evaluator: builtin.groundednes\n")
    assert _found(validate(_data(tmp_path, _row()), mapping=m)) == [
        f"error: {m}:2: evaluators[0].evaluator: 'builtin.groundednes' is not a known builtin evaluator "
        "(fix: did you mean 'builtin.groundedness'?)"
    ]


def test_required_input_missing_in_a_row(tmp_path: Path) -> None:
    m = _mapping(tmp_path, f"evaluators:\n  - evaluator: builtin.retrieval\n    init: {{{JUDGE}}}\n")
    data = _data(tmp_path, _row("q1"), _row("q2", context=...))
    assert _found(validate(data, mapping=m)) == [
        f"error: {data}:2: context: required input 'context' of criterion 'retrieval' is missing: the row has no "
        "'context' (fix: fill the field in every row, or drop the evaluator)"
    ]


def test_context_list_of_chunks(tmp_path: Path) -> None:
    data = _data(tmp_path, _row(context=["one", "two", "three"]))
    assert _found(validate(data)) == [
        f"error: {data}:1: context: context is a list of 3 chunks, not a string "
        '(fix: join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model)'
    ]


def test_float_label_is_probably_a_search_score(tmp_path: Path) -> None:
    data = _data(tmp_path, _row(retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 3.7}]))
    assert _found(validate(data)) == [
        f"error: {data}:1: retrieval_ground_truth[0].query_relevance_label: label 3.7 is not an integer; a fractional "
        "value in a label field is probably a search score "
        "(fix: put human relevance labels (integers) here; search scores belong in relevance_score)"
    ]


def test_label_outside_declared_range(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "labels: {min: 0, max: 3}\nevaluators:\n  - evaluator: builtin.document_retrieval\n")
    data = _data(
        tmp_path,
        _row(
            retrieval_ground_truth=[
                {"document_id": "a", "query_relevance_label": 4},
                {"document_id": "b", "query_relevance_label": -1},
            ]
        ),
    )
    assert _found(validate(data, mapping=m)) == [
        f"error: {data}:1: retrieval_ground_truth[0].query_relevance_label: label 4 is above ground_truth_label_max 3 "
        "(criterion 'document_retrieval') "
        "(fix: fix the label, or declare the range in the mapping's `labels` (min/max))",
        f"error: {data}:1: retrieval_ground_truth[1].query_relevance_label: label -1 is below ground_truth_label_min 0 "
        "(criterion 'document_retrieval') "
        "(fix: fix the label, or declare the range in the mapping's `labels` (min/max))",
    ]


def test_more_than_10000_documents(tmp_path: Path) -> None:
    docs = [{"document_id": f"d{i}", "relevance_score": 1.0} for i in range(MAX_DOCUMENTS)] + [
        {"document_id": "a", "relevance_score": 0.5}
    ]
    data = _data(tmp_path, _row(retrieved_documents=docs))
    assert _found(validate(data)) == [
        f"error: {data}:1: retrieved_documents: 10001 documents in retrieved_documents; Foundry accepts at most 10000 "
        "(fix: keep the top 10000)"
    ]
    ok = _data(tmp_path, _row(retrieved_documents=docs[1:]))
    assert _found(validate(ok)) == []


def test_duplicate_query_id(tmp_path: Path) -> None:
    data = _data(tmp_path, _row("q1"), _row("q2"), _row("q1"), _row("q3"), _row("q2"), _row("q1"))
    assert _found(validate(data)) == [
        f"error: {data}:3: query_id: query_id 'q1' is already used on line 1 (fix: give every query a unique id)",
        f"error: {data}:5: query_id: query_id 'q2' is already used on line 2 (fix: give every query a unique id)",
        f"error: {data}:6: query_id: query_id 'q1' is already used on line 1 (fix: give every query a unique id)",
    ]


def test_malformed_json_line_is_reported_and_the_rest_checked(tmp_path: Path) -> None:
    data = _data(tmp_path, _row("q1"), '{"query_id": "q2", "query": ', _row("q3", context=["x", "y"]))
    report = validate(data)
    assert _found(report) == [
        f"error: {data}:2: malformed JSON line: unexpected end of data "
        "(fix: each line must be one complete JSON object)",
        f"error: {data}:3: context: context is a list of 2 chunks, not a string "
        '(fix: join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model)',
    ]
    assert report.rows == 3


# ---- warnings ----------------------------------------------------------------------------------------------------


def test_duplicate_document_id_within_a_list(tmp_path: Path) -> None:
    docs = [{"document_id": "a", "relevance_score": 0.9}, {"document_id": "a", "relevance_score": 0.5}]
    data = _data(tmp_path, _row(retrieved_documents=docs))
    report = validate(data)
    assert _found(report) == [
        f"warning: {data}:1: retrieved_documents[1].document_id: document 'a' appears twice in retrieved_documents: "
        "Foundry keeps the last score, foundry_bridge's metrics the first position (fix: remove the duplicate)"
    ]
    assert report.ok


def test_integer_and_string_id_are_not_merged_silently(tmp_path: Path) -> None:
    docs = [
        {"document_id": 1, "relevance_score": 0.9},
        {"document_id": "1", "relevance_score": 0.5},
        {"document_id": "a", "relevance_score": 0.4},
    ]
    data = _data(tmp_path, _row(retrieved_documents=docs))
    assert _found(validate(data)) == [
        f"warning: {data}:1: retrieved_documents[0].document_id: document id 1 is a JSON number, read as the string "
        "'1': 1 and '1' become the same id (fix: write ids as JSON strings)",
        f"warning: {data}:1: retrieved_documents[1].document_id: document '1' appears twice in retrieved_documents: "
        "Foundry keeps the last score, foundry_bridge's metrics the first position (fix: remove the duplicate)",
    ]


def test_list_order_disagrees_with_scores(tmp_path: Path) -> None:
    docs = [{"document_id": "a", "relevance_score": 0.2}, {"document_id": "b", "relevance_score": 0.9}]
    data = _data(tmp_path, _row(retrieved_documents=docs))
    assert _found(validate(data)) == [
        f"warning: {data}:1: retrieved_documents[1].relevance_score: list order disagrees with relevance_score order "
        "at rank 2 (0.9 > 0.2): Foundry ranks by score, so this list is scored in another order than it was shown "
        "(fix: set dataset.fields.retrieved_documents.scores_from_rank: true to synthesize monotone scores from rank)"
    ]


def test_scores_from_rank_fixes_the_order_warning(tmp_path: Path) -> None:
    docs = [{"document_id": "a", "relevance_score": 0.2}, {"document_id": "b", "relevance_score": 0.9}]
    m = _mapping(
        tmp_path,
        "dataset:\n  fields:\n    retrieved_documents: {scores_from_rank: true}\n"
        "evaluators:\n  - evaluator: builtin.document_retrieval\n",
    )
    assert _found(validate(_data(tmp_path, _row(retrieved_documents=docs)), mapping=m)) == []


def test_label_max_10_or_more_fidelity_bug(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "labels: {min: 0, max: 10}\nevaluators:\n  - evaluator: builtin.document_retrieval\n")
    report = validate(_data(tmp_path, _row()), mapping=m)
    assert _found(report) == [
        f"warning: {m}:3: evaluators[0].init.ground_truth_label_max: ground_truth_label_max is 10: Foundry's fidelity "
        "metric mis-weights labels when the maximum is 10 or more (it sorts labels as strings) "
        "(fix: rescale labels to 0-9 (e.g. round(label * 9 / 10)) or ignore fidelity)"
    ]
    assert report.ok


def test_label_min_1_with_holes(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "labels: {min: 1, max: 4}\nevaluators:\n  - evaluator: builtin.document_retrieval\n")
    data = _data(tmp_path, _row(retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 3}]))
    assert _found(validate(data, mapping=m)) == [
        f"warning: {data}:1: retrieved_documents: 1 retrieved document(s) without a label ('b'...): Foundry counts a "
        "hole as label 0, below ground_truth_label_min 1 ('irrelevant'), so holes rank below documents judged "
        "irrelevant (fix: label every retrieved document, or use labels from 0)"
    ]


ZERO_RESULT = (
    "Foundry reports the integer 0 for ndcg@3, xdcg@3, fidelity, top1_relevance and top3_max_relevance on them and "
    "fails them (criterion 'document_retrieval')"
)
ZERO_RESULT_FIX = (
    "(fix: nothing to fix if the search really missed those documents; a query with no answer in the corpus should "
    "have all its labels 0)"
)


def _doc_props(row: dict[str, Any], **init: int) -> dict[str, Any]:
    """Foundry's numbers for a row (foundry_bridge's document_retrieval, parity-tested with the library)."""
    from foundry_bridge.metrics import document_retrieval

    result = document_retrieval(row["retrieval_ground_truth"], row["retrieved_documents"], **init)
    return result["document_retrieval_properties"]


def test_zero_result_one_warning_for_the_rows_that_retrieve_nothing_labelled(tmp_path: Path) -> None:
    miss = [{"document_id": "x", "relevance_score": 0.9}, {"document_id": "y", "relevance_score": 0.5}]
    negative = [{"document_id": "a", "query_relevance_label": 0}, {"document_id": "b", "query_relevance_label": 0}]
    relabelled = [  # the last label of 'a' (0) wins, as in Foundry: nothing retrieved is labelled non-zero
        {"document_id": "c", "query_relevance_label": 2},
        {"document_id": "a", "query_relevance_label": 3},
        {"document_id": "a", "query_relevance_label": 0},
    ]
    rows = [
        _row("q1"),
        _row("q2", retrieved_documents=miss),
        _row("q3", kind="negative", retrieval_ground_truth=negative),
        _row("q4", retrieved_documents=[]),  # an empty list is Foundry's float-0.0 branch, not this one
        _row("q5", retrieval_ground_truth=relabelled),
    ]
    data = _data(tmp_path, *rows)
    assert _found(validate(data)) == [
        f"warning: {data}: retrieved_documents: 2 row(s) retrieve no document with a non-zero label although one is "
        f"labelled (lines 2, 5): {ZERO_RESULT}; the 1 row(s) whose labels are all 0 (negative queries) get the "
        f"same 0, as expected {ZERO_RESULT_FIX}",
        f"warning: {data}:5: retrieval_ground_truth[2].document_id: document 'a' is labelled twice in "
        "retrieval_ground_truth: Foundry keeps the last label, foundry_bridge's metrics the first "
        "(fix: keep one label per document)",
    ]
    # the rows named are exactly those Foundry answers with its integer-0 branch, and the negative one
    integer_zero = [i for i, r in enumerate(rows, 1) if type(_doc_props(r)["ndcg@3"]) is int]
    assert integer_zero == [2, 3, 5]
    assert type(_doc_props(rows[3])["ndcg@3"]) is float and _doc_props(rows[0])["ndcg@3"] > 0


def test_zero_result_names_five_lines_and_is_silent_for_negative_or_rejected_rows(tmp_path: Path) -> None:
    miss = [{"document_id": "x", "relevance_score": 0.9}]
    data = _data(tmp_path, *(_row(f"q{i}", retrieved_documents=miss) for i in range(7)))
    assert _found(validate(data)) == [
        f"warning: {data}: retrieved_documents: 7 row(s) retrieve no document with a non-zero label although one is "
        f"labelled (lines 1, 2, 3, 4, 5, ...): {ZERO_RESULT} {ZERO_RESULT_FIX}"
    ]
    zeros = [{"document_id": "a", "query_relevance_label": 0}]
    negatives = _data(tmp_path, *(_row(f"n{i}", kind="negative", retrieval_ground_truth=zeros) for i in range(3)))
    assert _found(validate(negatives)) == []
    rejected = _data(tmp_path, _row(retrieved_documents=[{"document_id": "x"}]))  # Foundry refuses the row
    assert [p.code for p in validate(rejected).problems] == ["missing_score"]


def test_zero_result_with_label_min_1_means_only_holes_retrieved(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "labels: {min: 1, max: 5}\nevaluators:\n  - evaluator: builtin.document_retrieval\n")
    row = _row(
        retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 1}],
        retrieved_documents=[{"document_id": "x", "relevance_score": 0.9}],
    )
    data = _data(tmp_path, row)
    assert _found(validate(data, mapping=m)) == [
        f"warning: {data}: retrieved_documents: 1 row(s) retrieve no document with a non-zero label although one is "
        f"labelled (line 1): {ZERO_RESULT} {ZERO_RESULT_FIX}",
        f"warning: {data}:1: retrieved_documents: 1 retrieved document(s) without a label ('x'...): Foundry counts a "
        "hole as label 0, below ground_truth_label_min 1 ('irrelevant'), so holes rank below documents judged "
        "irrelevant (fix: label every retrieved document, or use labels from 0)",
    ]
    fidelity = _doc_props(row, ground_truth_label_min=1, ground_truth_label_max=5)["fidelity"]
    assert fidelity == 0 and type(fidelity) is int  # the zero branch wins over the NaN one


def test_nan_fidelity_when_every_label_is_the_minimum(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "labels: {min: 1, max: 5}\nevaluators:\n  - evaluator: builtin.document_retrieval\n")
    ones = [{"document_id": "a", "query_relevance_label": 1}, {"document_id": "b", "query_relevance_label": 1}]
    graded = [{"document_id": "a", "query_relevance_label": 2}, {"document_id": "b", "query_relevance_label": 1}]
    relabelled = [{"document_id": "a", "query_relevance_label": 3}, {"document_id": "a", "query_relevance_label": 1}]
    rows = [
        _row("q1", retrieval_ground_truth=ones),
        _row("q2", retrieval_ground_truth=graded),
        _row("q3", retrieval_ground_truth=relabelled, retrieved_documents=[{"document_id": "a", "relevance_score": 1}]),
    ]
    data = _data(tmp_path, *rows)
    nan_fidelity = (
        "retrieval_ground_truth: every label equals ground_truth_label_min 1 ('irrelevant'): Foundry's fidelity "
        "divides by zero here, so it reports NaN and fails (fix: expected for a query with no relevant document; "
        "with labels from 0 (0 = irrelevant, ground_truth_label_min: 0) Foundry reports 0 instead)"
    )
    assert _found(validate(data, mapping=m)) == [
        f"warning: {data}:1: {nan_fidelity}",
        f"warning: {data}:3: retrieval_ground_truth[1].document_id: document 'a' is labelled twice in "
        "retrieval_ground_truth: Foundry keeps the last label, foundry_bridge's metrics the first "
        "(fix: keep one label per document)",
        f"warning: {data}:3: {nan_fidelity}",
    ]
    fidelity = [_doc_props(r, ground_truth_label_min=1, ground_truth_label_max=5)["fidelity"] for r in rows]
    assert math.isnan(fidelity[0]) and fidelity[1] == 1.0 and math.isnan(fidelity[2])
    results = [_doc_props(r, ground_truth_label_min=1, ground_truth_label_max=5) for r in rows]
    assert [r["fidelity_result"] for r in results] == ["fail", "pass", "fail"]


@pytest.mark.parametrize(("lo", "hi"), [(0, 4), (1, 5), (0, 1), (2, 3)])
def test_quirk_warnings_match_foundrys_numbers_on_random_rows(tmp_path: Path, lo: int, hi: int) -> None:
    """zero_result and nan_fidelity fire exactly where Foundry's numbers show the quirk (random valid rows)."""
    rng = random.Random(lo * 10 + hi)
    rows = []
    for i in range(300):
        pool = [f"d{j}" for j in range(rng.randint(1, 6))]
        labels = [
            {"document_id": rng.choice(pool), "query_relevance_label": rng.choice([lo, lo, hi, rng.randint(lo, hi)])}
            for _ in range(rng.randint(1, 4))
        ]
        docs = [
            {"document_id": rng.choice(pool), "relevance_score": round(rng.random(), 3)}
            for _ in range(rng.randint(0, 4))
        ]
        rows.append({"query_id": f"q{i}", "retrieval_ground_truth": labels, "retrieved_documents": docs})
    m = _mapping(
        tmp_path, f"labels: {{min: {lo}, max: {hi}}}\nevaluators:\n  - evaluator: builtin.document_retrieval\n"
    )
    report = validate(_data(tmp_path, *rows), mapping=m, max_per_code=1000)
    assert report.ok
    init = {"ground_truth_label_min": lo, "ground_truth_label_max": hi}
    props = [_doc_props(r, **init) for r in rows]
    nan_lines = [i for i, p in enumerate(props, 1) if isinstance(p["fidelity"], float) and math.isnan(p["fidelity"])]
    assert [p.line for p in report.problems if p.code == "nan_fidelity"] == nan_lines
    # Foundry's integer-0 branch, split by whether the ground truth (last label per id) has a non-zero label
    integer_zero = [(i, r) for i, (r, p) in enumerate(zip(rows, props, strict=True), 1) if type(p["ndcg@3"]) is int]
    positive_zero = [
        i
        for i, r in integer_zero
        if any({g["document_id"]: g["query_relevance_label"] for g in r["retrieval_ground_truth"]}.values())
    ]
    negative_zero = len(integer_zero) - len(positive_zero)
    [zero] = [p for p in report.problems if p.code == "zero_result"] or [None]
    if positive_zero:
        assert zero is not None and zero.message.startswith(f"{len(positive_zero)} row(s) ")
        shown = ", ".join(map(str, positive_zero[:5]))
        assert f"{shown}, ...)" in zero.message if len(positive_zero) > 5 else f"{shown})" in zero.message
        negatives = f"; the {negative_zero} row(s) whose labels are all 0 (negative queries)"
        assert (negatives in zero.message) if negative_zero else ("negative queries" not in zero.message)
    else:
        assert zero is None
    assert (nan_lines != []) == (lo != 0)  # the random rows do reach the quirk where it exists


def test_empty_query_and_response(tmp_path: Path) -> None:
    data = _data(tmp_path, _row(query="  ", response=""))
    assert _found(validate(data)) == [
        f"warning: {data}:1: query: query is empty",
        f"warning: {data}:1: response: response is empty",
    ]


def test_kind_disagrees_with_labels(tmp_path: Path) -> None:
    zero = [{"document_id": "a", "query_relevance_label": 0}]
    data = _data(tmp_path, _row("q1", retrieval_ground_truth=zero), _row("q2", kind="negative"))
    assert _found(validate(data)) == [
        f"warning: {data}:1: kind: kind is positive but no label reaches the relevance threshold 1 "
        "(fix: label the passage that answers it, or mark the query negative)",
        f"warning: {data}:2: kind: kind is negative but a label reaches the relevance threshold 1 "
        "(fix: a negative query has no answer in the corpus: check the label or the kind)",
    ]


# ---- criteria files, caps, TREC ----------------------------------------------------------------------------------


def test_whole_eval_create_body_is_accepted(tmp_path: Path) -> None:
    body = json.loads((ROOT / "tests" / "data_plan" / "benefits_eval.json").read_text())
    report = validate(ROOT / "samples" / "benefits" / "rag_eval.jsonl", criteria_file=_criteria(tmp_path, body))
    assert [p.code for p in report.problems] == ["zero_result"] and report.ok and report.rows == 14


def test_sample_template_is_rejected_for_a_dataset_run(tmp_path: Path) -> None:
    crit = _criteria(
        tmp_path,
        [
            {
                "type": "azure_ai_evaluator",
                "name": "rel",
                "evaluator_name": "builtin.relevance",
                "initialization_parameters": {"deployment_name": "d"},
                "data_mapping": {"query": "{{item.query}}", "response": "{{sample.output_text}}"},
            }
        ],
    )
    found = _found(validate(_data(tmp_path, _row()), criteria_file=crit))
    assert found == [
        f"error: {crit}:11: testing_criteria[0].data_mapping.response: '{{{{sample.output_text}}}}' needs a model "
        "or agent target; a dataset run has only item fields (fix: map it to a dataset field: "
        '"{{item.response}}")'
    ]


def test_problems_are_capped_per_rule_but_all_counted(tmp_path: Path) -> None:
    rows = [_row(f"q{i}", response="") for i in range(30)]
    report = validate(_data(tmp_path, *rows), max_per_code=5)
    assert len(report.problems) == 5 and report.warnings == 30
    assert report.to_dict()["counts"]["omitted"] == {"empty_response": 25}


def test_trec_directory_is_validated(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("1 Q0 a 1 0.9 t\n1 Q0 b 2 0.5 t\n2 Q0 a 1 1 t\n2 Q0 a 2 1 t\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 9\n2 0 a 1\nbad line\n")
    (tmp_path / "queries.tsv").write_text("1\tfirst\n2\tsecond\n")
    m = _mapping(
        tmp_path,
        "dataset: {format: trec, trec: {responses: null}}\nlabels: {min: 0, max: 4}\n"
        "evaluators:\n  - evaluator: builtin.document_retrieval\n",
    )
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    assert _found(validate(tmp_path, mapping=m)) == [
        f"error: {qrels}:1: retrieval_ground_truth[0].query_relevance_label: label 9 is above ground_truth_label_max "
        "4 (criterion 'document_retrieval') "
        "(fix: fix the label, or declare the range in the mapping's `labels` (min/max))",
        f"error: {qrels}:3: expected 4 columns `qid 0 docid label`, got 2",
        f"warning: {run}:3: retrieved_documents[1].document_id: document 'a' appears twice in retrieved_documents: "
        "Foundry keeps the last score, foundry_bridge's metrics the first position (fix: remove the duplicate)",
    ]


@pytest.mark.parametrize(
    ("data", "mapping"),
    [
        ("samples/benefits/rag_eval.jsonl", None),
        ("samples/custom_fields/rag_eval.jsonl", "mappings/custom_fields.yaml"),
        ("samples/trec", "mappings/trec.yaml"),
    ],
)
def test_shipped_samples_are_clean(data: str, mapping: str | None) -> None:
    """No error; the one warning is zero_result for q07, the sample's designed retrieval miss."""
    report = validate(ROOT / data, mapping=ROOT / mapping if mapping else None)
    line = 18 if data == "samples/trec" else 7
    ranking = "docs" if "custom_fields" in data else "retrieved_documents"  # the rows' own name for the list
    source = ROOT / data / "run.txt" if data == "samples/trec" else ROOT / data
    assert _found(report) == [
        f"warning: {source}: {ranking}: 1 row(s) retrieve no document with a non-zero label although one "
        f"is labelled (line {line}): {ZERO_RESULT}; the 3 row(s) whose labels are all 0 (negative queries) get the "
        f"same 0, as expected {ZERO_RESULT_FIX}"
    ]
    assert report.rows == 14


def test_integral_float_label_is_named_as_a_float(tmp_path: Path) -> None:
    data = _data(tmp_path, _row(retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 3.0}]))
    expected = (
        f"error: {data}:1: retrieval_ground_truth[0].query_relevance_label: label 3.0 is a float; Foundry requires "
        "JSON integers (fix: write 3)"
    )
    assert _found(validate(data)) == [expected]
    body = json.loads((ROOT / "tests" / "data_plan" / "benefits_eval.json").read_text())
    assert expected in _found(validate(data, criteria_file=_criteria(tmp_path, body)))


def test_float_label_in_hand_written_criteria_route(tmp_path: Path) -> None:
    body = json.loads((ROOT / "tests" / "data_plan" / "benefits_eval.json").read_text())
    data = _data(tmp_path, _row(retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 0.83}]))
    assert (
        f"error: {data}:1: retrieval_ground_truth[0].query_relevance_label: label 0.83 is not an integer; a "
        "fractional value in a label field is probably a search score (fix: put human relevance labels (integers) "
        "here; search scores belong in relevance_score)"
    ) in _found(validate(data, criteria_file=_criteria(tmp_path, body)))


def test_empty_dataset_is_an_error(tmp_path: Path) -> None:
    data = _data(tmp_path)
    assert _found(validate(data)) == [f"error: {data}: the dataset has no rows (fix: nothing to evaluate)"]


def test_kind_with_wrong_case_and_missing_query_id(tmp_path: Path) -> None:
    bad_kind = _row("q1", kind="Positive")
    no_id = _row("q2")
    no_id["queryid"] = no_id.pop("query_id")
    data = _data(tmp_path, bad_kind, no_id)
    assert _found(validate(data)) == [
        f"error: {data}:1: kind: kind must be 'positive' or 'negative', got 'Positive' (fix: did you mean 'positive'?)",
        f"error: {data}:2: query_id: query id is missing (fix: did you mean 'queryid'? (set dataset.fields.query_id))",
    ]


def _trec_with_responses(tmp_path: Path, responses: str) -> Path:
    (tmp_path / "run.txt").write_text("1 Q0 a 1 0.9 t\n2 Q0 a 1 0.9 t\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n2 0 a 1\n3 0 a 1\n")  # 3: judged, nothing retrieved
    (tmp_path / "queries.tsv").write_text("1\tone\n2\ttwo\n3\tthree\n")
    (tmp_path / "responses.jsonl").write_text(responses)
    return _mapping(
        tmp_path,
        "dataset: {format: trec, trec: {responses: responses.jsonl}}\n"
        f"evaluators:\n  - evaluator: builtin.groundedness\n    init: {{{JUDGE}}}\n",
    )


def test_trec_missing_response_fields_are_reported_in_the_responses_file(tmp_path: Path) -> None:
    rows = [{"query_id": "1", "context": "c", "response": "r"}, {"query_id": "2", "context": "c"}]
    m = _trec_with_responses(tmp_path, "".join(json.dumps(r) + "\n" for r in rows))
    responses = tmp_path / "responses.jsonl"
    found = [p for p in validate(tmp_path, mapping=m).problems if p.code == "missing_input"]
    # query 2's responses row (line 2) lacks `response`; query 3 has no responses row and no run line (judged
    # only), so no line at all (never 0)
    assert sorted((p.line or 0, p.file, p.line, p.field) for p in found) == [
        (0, str(responses), None, "response"),
        (2, str(responses), 2, "response"),
    ]
    by_line = {p.line: p.message for p in found}
    assert "no responses row" not in by_line[2]
    assert by_line[None].endswith("; no responses row for query '3'")


def test_trec_bad_kind_in_responses_is_reported(tmp_path: Path) -> None:
    row = {"query_id": "1", "context": "c", "response": "r", "kind": "negtive"}
    m = _trec_with_responses(tmp_path, json.dumps(row) + "\n")
    responses = tmp_path / "responses.jsonl"
    bad = [p for p in validate(tmp_path, mapping=m).problems if p.code == "bad_kind"]
    assert [(p.file, p.line, p.field, p.hint) for p in bad] == [(str(responses), 1, "kind", "did you mean 'negative'?")]
    with pytest.raises(DatasetError, match=r"responses.jsonl:1: kind: kind must be 'positive' or 'negative'"):
        list(read_records(tmp_path, load_mapping(m)))


def _label4(tmp_path: Path) -> Path:
    return _data(tmp_path, _row(retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 4}]))


def test_lone_env_reference_in_a_label_bound_is_an_integer_and_checked(tmp_path: Path) -> None:
    m = _mapping(
        tmp_path,
        "evaluators:\n  - evaluator: builtin.document_retrieval\n    init: {ground_truth_label_max: '${LMAX:-3}'}\n",
    )
    data = _label4(tmp_path)
    # the plan sends the integer 3, so label 4 is above it (the string "3" used to skip the range check silently)
    assert [p.code for p in validate(data, mapping=m, environ={}).problems] == ["label_out_of_range"]
    assert validate(data, mapping=m, environ={"LMAX": "4"}).problems == []


@pytest.mark.parametrize(
    ("init", "expected"),
    [
        (
            "{ground_truth_label_max: '3'}",
            "evaluators[0].init.ground_truth_label_max: ground_truth_label_max must be an integer, got str '3' "
            "(fix: write it without quotes, e.g. 3 (a ${VAR} alone is converted))",
        ),
        (
            "{ground_truth_label_max: '${LMAX:-x}'}",
            "evaluators[0].init.ground_truth_label_max: ${LMAX:-x} expands to 'x', which is not an integer "
            "(fix: set the variable (or the default after :-) to an integer, e.g. 3 (no decimal point))",
        ),
        (
            "{ground_truth_label_min: 0.0}",
            "evaluators[0].init.ground_truth_label_min: ground_truth_label_min must be an integer, got float 0.0 "
            "(fix: write a whole number, e.g. 0)",
        ),
        (
            "{ndcg_threshold: true}",
            "evaluators[0].init.ndcg_threshold: ndcg_threshold must be a number, got bool True (fix: write a number)",
        ),
    ],
)
def test_init_value_of_the_wrong_catalog_type(tmp_path: Path, init: str, expected: str) -> None:
    m = _mapping(tmp_path, f"evaluators:\n  - evaluator: builtin.document_retrieval\n    init: {init}\n")
    report = validate(_data(tmp_path, _row()), mapping=m, environ={})
    # one error at the init line; a rejected label bound leaves the range unknown, so labels are not checked against
    # a guess (no cascade of label errors)
    assert _found(report) == [f"error: {m}:3: {expected}"]


def test_deployment_name_must_be_a_string(tmp_path: Path) -> None:
    m = _mapping(tmp_path, "evaluators:\n  - evaluator: builtin.relevance\n    init: {deployment_name: 4}\n")
    assert [(p.code, p.field) for p in validate(_data(tmp_path, _row()), mapping=m).problems] == [
        ("bad_init_type", "evaluators[0].init.deployment_name")
    ]


def test_a_pinned_older_evaluator_version_is_a_warning_naming_the_published_one(tmp_path: Path) -> None:
    docret = {
        "type": "azure_ai_evaluator",
        "name": "docret",
        "evaluator_name": "builtin.document_retrieval",
        "data_mapping": {
            "retrieval_ground_truth": "{{item.retrieval_ground_truth}}",
            "retrieved_documents": "{{item.retrieved_documents}}",
        },
    }
    crit = _criteria(tmp_path, [{**docret, "evaluator_version": "2"}])
    report = validate(_data(tmp_path, _row()), criteria_file=crit)
    found = [p for p in _found(report) if "evaluator_version" in p]
    assert len(found) == 1 and found[0].startswith(
        f"warning: {crit}:10: testing_criteria[0].evaluator_version: builtin.document_retrieval is pinned at "
        "version 2; the published contract this tool checks is version 3 (fix: drop evaluator_version"
    )
    assert report.ok  # a warning: the older shape is still read
    for current in ("3", "", "latest"):
        report = validate(
            _data(tmp_path, _row()), criteria_file=_criteria(tmp_path, [{**docret, "evaluator_version": current}])
        )
        assert _found(report) == [], current
