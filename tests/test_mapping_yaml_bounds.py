"""Mapping YAML is loaded with bounds: an alias bomb, deep nesting and a key written twice are located errors."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from foundry_bridge.cli import main
from foundry_bridge.errors import MappingError
from foundry_bridge.mapping import load_mapping

Capture = pytest.CaptureFixture[str]
ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
HEAD = "evaluators:\n  - evaluator: builtin.document_retrieval\n    init:\n"


def _alias_bomb(levels: int = 9) -> str:
    """The "billion laughs" pattern inside evaluators[].init: level n is ten aliases of level n-1 (10**9 leaves)."""
    lines = [HEAD + '      a0: &a0 ["lol"]']
    lines += [f"      a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _deep(levels: int = 10_000) -> str:
    return HEAD + "      threshold: " + "[" * levels + "]" * levels + "\n"


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return p


def test_alias_bomb_is_a_located_error_in_bounded_memory(tmp_path: Path) -> None:
    path = _write(tmp_path, _alias_bomb())
    tracemalloc.start()
    try:
        with pytest.raises(MappingError) as info:
            load_mapping(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # the expanded value would be gigabytes
    err = info.value
    assert err.file == str(path) and err.line == 9  # a5: 211,111 nodes, the first level over 100,000
    assert "more than 100,000 nodes once its aliases (*name) are expanded" in err.message
    assert err.hint is not None and "alias bomb" in err.hint


def test_aliases_that_stay_small_still_load(tmp_path: Path) -> None:
    ok = "evaluators:\n  - evaluator: builtin.retrieval\n    init: &judge {deployment_name: j, threshold: 3}\n"
    ok += "  - evaluator: builtin.relevance\n    init: *judge\n"
    m = load_mapping(_write(tmp_path, ok))
    assert m.evaluators[1].init == {"deployment_name": "j", "threshold": 3}


def test_a_long_string_repeated_by_aliases_is_refused_too(tmp_path: Path) -> None:
    text = HEAD + f'      a: &long "{"x" * 100_000}"\n      b: [{", ".join(["*long"] * 101)}]\n'
    with pytest.raises(MappingError) as info:  # 101 x 100,000 characters > 10,000,000
        load_mapping(_write(tmp_path, text))
    assert info.value.line == 5
    assert "expands to more than 10,000,000 characters once its aliases (*name) are expanded" in info.value.message
    ok = HEAD + f'      a: &long "{"x" * 100_000}"\n      b: [{", ".join(["*long"] * 90)}]\n'
    assert len(load_mapping(_write(tmp_path, ok)).evaluators[0].init["b"]) == 90  # within the bounds: loads


def test_deep_nesting_is_a_located_error(tmp_path: Path) -> None:
    path = _write(tmp_path, _deep())
    with pytest.raises(MappingError) as info:
        load_mapping(path)
    assert info.value.line == 4 and "nesting deeper than 64 levels" in info.value.message
    assert "flatten" in (info.value.hint or "")


def test_a_key_written_twice_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    text = HEAD + "      threshold: 3\n      k: 1\n      threshold: 4\n"
    with pytest.raises(MappingError) as info:
        load_mapping(_write(tmp_path, text))
    assert info.value.line == 6
    assert info.value.message == "YAML refused: key 'threshold' is written twice in one mapping (lines 4 and 6)"


def test_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    text = "evaluators:\n  - evaluator: builtin.retrieval\n    init: &j {deployment_name: j, threshold: 3}\n"
    text += "  - evaluator: builtin.relevance\n    init: {<<: *j, threshold: 4}\n"
    assert load_mapping(_write(tmp_path, text)).evaluators[1].init == {"deployment_name": "j", "threshold": 4}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_alias_bomb(), "m.yaml:9: YAML refused: this value expands to more than 100,000 nodes"),
        (_deep(), "m.yaml:4: YAML refused: nesting deeper than 64 levels"),
        (
            HEAD + "      ground_truth_label_max: 4\n      ground_truth_label_max: 9\n",
            "m.yaml:5: YAML refused: key 'ground_truth_label_max' is written twice in one mapping (lines 4 and 5)",
        ),
    ],
    ids=["alias bomb", "deep nesting", "duplicate key"],
)
def test_validate_plan_and_run_refuse_the_file_alike(
    text: str, expected: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, text)
    monkeypatch.chdir(tmp_path)
    for args in (
        ["validate", str(BENEFITS), "--mapping", str(path)],
        ["plan", str(BENEFITS), "--mapping", str(path), "--out", "p"],
        ["run", str(BENEFITS), "--mapping", str(path), "--backend", "mock", "--out", "r"],
    ):
        with pytest.raises(SystemExit) as info:
            main(args)
        out, err = capsys.readouterr()
        assert info.value.code == 1, args
        assert expected in out + err, (args, out, err)
    assert not (tmp_path / "p").exists() and not (tmp_path / "r").exists()
