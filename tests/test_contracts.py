"""The published builtin contracts (foundry_bridge/contracts.py) read from the bundled specs and from a live
``GET /evaluators`` answer (the recorded one), checked against values read by hand from those files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foundry_bridge.contracts import contract_from_live, get_contract, published_contracts

REF = Path(__file__).parent / "data" / "reference"
BUNDLED = Path(__file__).parent.parent / "foundry_bridge" / "resources" / "contracts" / "builtin-specs.json"


def test_the_bundled_specs_are_the_reference_copy() -> None:
    assert BUNDLED.read_bytes() == (REF / "evaluators" / "builtin-specs.json").read_bytes()


def test_all_44_builtins_with_the_versions_the_issue_names() -> None:
    contracts = published_contracts()
    assert len(contracts) == 44
    versions = {n: contracts[f"builtin.{n}"].version for n in ("document_retrieval", "retrieval", "groundedness")}
    assert versions == {"document_retrieval": 3, "retrieval": 12, "groundedness": 16}
    assert get_contract("relevance").version == 11
    assert get_contract("response_completeness").version == 9
    assert get_contract("builtin.groundedness_pro").version == 7
    assert get_contract("quality_grader").version == 6


def test_document_retrieval_v3_has_one_metric_and_optional_init_parameters() -> None:
    c = get_contract("document_retrieval")
    assert [m.name for m in c.metrics] == ["document_retrieval"]
    m = c.metric("document_retrieval")
    assert m is not None and (m.type, m.higher_is_better, m.min_value, m.max_value) == ("continuous", True, 0.0, 1.0)
    assert c.required_inputs == ("retrieval_ground_truth", "retrieved_documents")
    assert c.required_init == () and "ndcg_threshold" in c.init_params


def test_safety_graders_and_turn_level_quirks() -> None:
    violence = get_contract("violence")
    assert violence.subtype == "service"
    assert violence.metrics[0].higher_is_better is False
    assert (violence.metrics[0].min_value, violence.metrics[0].max_value) == (0.0, 7.0)
    assert get_contract("string_check").subtype == "openai_graders"
    assert get_contract("coherence").required_inputs is None  # decided per evaluation level
    assert get_contract("coherence").levels == ("conversation", "turn")
    assert [m.name for m in get_contract("indirect_attack").metrics] == [
        "xpia",
        "xpia_information_gathering",
        "xpia_intrusion",
        "xpia_manipulated_content",
    ]


def test_the_recorded_live_catalog_reads_as_version_2_with_nine_metrics() -> None:
    entries = json.loads((REF / "recordings" / "eval_catalog.json").read_text())["Entries"]
    items = [v for e in entries if "type=builtin" in e["RequestUri"] for v in e["ResponseBody"]["value"]]
    live = {c.name: c for c in map(contract_from_live, items)}
    dr = live["builtin.document_retrieval"]
    assert dr.version == 2 and len(dr.metrics) == 9
    assert dr.metric("holes") is not None and dr.metric("holes").higher_is_better is False  # type: ignore[union-attr]
    assert dr.inputs.keys() == get_contract("document_retrieval").inputs.keys()


def test_unknown_name_gets_a_did_you_mean() -> None:
    with pytest.raises(KeyError, match=r"did you mean .builtin\.groundedness."):
        get_contract("groundednes")
