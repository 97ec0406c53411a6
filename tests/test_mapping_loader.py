"""load_mapping: YAML → Mapping, errors located at file, line and key; env expansion; packaged default."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_bridge.errors import MappingError
from foundry_bridge.mapping import Mapping, expand_env, load_mapping, packaged_mapping_path

ROOT = Path(__file__).resolve().parents[1]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return p


def test_none_loads_the_packaged_default_which_is_the_repository_file() -> None:
    m = load_mapping(None)
    assert isinstance(m, Mapping)
    assert m == load_mapping(ROOT / "mappings" / "default.yaml")
    assert packaged_mapping_path().read_bytes() == (ROOT / "mappings" / "default.yaml").read_bytes()
    assert [e.evaluator.removeprefix("builtin.") for e in m.evaluators] == [
        "document_retrieval",
        "retrieval",
        "groundedness",
        "relevance",
    ]


@pytest.mark.parametrize("name", ["default.yaml", "trec.yaml", "custom_fields.yaml"])
def test_every_shipped_mapping_loads(name: str) -> None:
    assert load_mapping(ROOT / "mappings" / name).version == 1
    assert packaged_mapping_path(name).is_file()


def test_unknown_key_gives_line_field_and_did_you_mean(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "version: 1\nevaluators:\n  - evaluator: builtin.retrieval\n    inits: {deployment_name: x}\n",
    )
    with pytest.raises(MappingError) as info:
        load_mapping(p)
    assert str(info.value) == f"{p}:4: evaluators[0].inits: unknown key 'inits' (fix: did you mean 'init'?)"
    assert (info.value.line, info.value.field) == (4, "evaluators[0].inits")


def test_unknown_nested_key(tmp_path: Path) -> None:
    p = _write(tmp_path, "dataset:\n  fields:\n    retrieval_documents: {path: docs}\n")
    with pytest.raises(MappingError) as info:
        load_mapping(p)
    assert str(info.value) == (
        f"{p}:3: dataset.fields.retrieval_documents: unknown key 'retrieval_documents' "
        "(fix: did you mean 'retrieved_documents'?)"
    )


def test_wrong_value_type_is_located(tmp_path: Path) -> None:
    p = _write(tmp_path, "version: 1\ndataset:\n  format: csv\n")
    with pytest.raises(MappingError) as info:
        load_mapping(p)
    assert str(info.value) == f"{p}:3: dataset.format: Input should be 'jsonl', 'trec' or 'beir'"


def test_missing_required_key(tmp_path: Path) -> None:
    p = _write(tmp_path, "evaluators:\n  - name: g\n")
    with pytest.raises(MappingError) as info:
        load_mapping(p)
    assert str(info.value) == f"{p}:2: evaluators[0].evaluator: required key is missing"


def test_bad_yaml_reports_the_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "version: 1\nlabels: {min: 0, max: 4\nmetrics: {}\n")
    with pytest.raises(MappingError) as info:
        load_mapping(p)
    assert info.value.line == 3
    assert str(info.value).startswith(f"{p}:3: invalid YAML:")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MappingError, match="mapping file not found"):
        load_mapping(tmp_path / "nope.yaml")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(MappingError, match="top level"):
        load_mapping(_write(tmp_path, "- a\n- b\n"))


def test_load_mapping_expands_nothing(tmp_path: Path) -> None:
    p = _write(tmp_path, "evaluators:\n  - evaluator: builtin.relevance\n    init: {deployment_name: '${DEP}'}\n")
    assert load_mapping(p).evaluators[0].init == {"deployment_name": "${DEP}"}


def test_expand_env_forms() -> None:
    env = {"DEP": "gpt-x", "EMPTY": ""}
    assert expand_env("${DEP}", environ=env) == "gpt-x"
    assert expand_env("${MISSING:-fallback}", environ=env) == "fallback"
    assert expand_env("${EMPTY:-fallback}", environ=env) == "fallback"
    assert expand_env("pre-${DEP}-post", environ=env) == "pre-gpt-x-post"
    assert expand_env({"a": ["${DEP}", 3]}, environ=env) == {"a": ["gpt-x", 3]}
    assert expand_env(3, environ=env) == 3
    with pytest.raises(MappingError) as info:
        expand_env({"deployment_name": "${NOPE}"}, environ=env, where="evaluators[1].init")
    assert str(info.value) == (
        "evaluators[1].init.deployment_name: environment variable NOPE is not set "
        "(fix: export NOPE=... or write ${NOPE:-default} in the mapping)"
    )
