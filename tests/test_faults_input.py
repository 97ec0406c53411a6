"""Hostile input files, generated here, through every command that reads them: each ends in exit 1 (or a warning)
with a message naming the file, the line and the fix — never a traceback, never accepted silently.

Covers issue 12 item 4 and its "unclear or wrong messages" about input: JSON nesting, encodings and BOMs,
non-finite scores, empty datasets, mappings without evaluators, duplicate keys, near-duplicate ids, duplicate ids
named, a directory given as DATA.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.cli import main
from foundry_bridge.validate import validate

Capture = pytest.CaptureFixture[str]
DEEP = 100_000  # far past any stack: a recursive reader would die of RecursionError
LATIN1 = "iconv -f latin1 -t utf-8"


def _row(qid: Any = "q1", **over: Any) -> dict[str, Any]:
    row = {
        "query_id": qid,
        "kind": "positive",
        "query": "How many weeks of leave?",
        "retrieved_documents": [{"document_id": "a", "relevance_score": 0.9}],
        "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 3}],
        "context": "Employees get 16 weeks.",
        "response": "Sixteen weeks.",
    }
    row.update(over)
    return row


def _line(row: Any) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode() + b"\n"


def _write(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def _nested(depth: int) -> bytes:
    """A row whose field ``x`` holds ``depth - 1`` nested lists (the row itself is level 1)."""
    return b'{"query_id": "q2", "x": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}\n"


def _cli(args: list[str], capsys: Capture) -> tuple[int, str]:
    """Exit code and stdout+stderr of one command, run in this process (a traceback fails the test)."""
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out + err


@pytest.fixture
def no_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`run` must refuse before creating any backend; run folders go under tmp_path."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a backend was created although the input is bad")

    monkeypatch.setattr("foundry_bridge.runner.get_backend", refuse)
    monkeypatch.chdir(tmp_path)


def _commands(data: Path, tmp_path: Path, *extra: str) -> dict[str, list[str]]:
    return {
        "validate": ["validate", str(data), *extra],
        "plan": ["plan", str(data), "--out", str(tmp_path / "plan"), *extra],
        "metrics": ["metrics", str(data), *extra],
        "run": ["run", str(data), "--backend", "mock", "--out", str(tmp_path / "run"), *extra],
    }


def _refused_everywhere(data: Path, tmp_path: Path, capsys: Capture, expected: str, *extra: str) -> None:
    for name, args in _commands(data, tmp_path, *extra).items():
        code, out = _cli(args, capsys)
        assert code == 1, (name, out)
        assert expected in out, (name, out)
        assert "Traceback" not in out, (name, out)
    assert not (tmp_path / "plan").exists() and not (tmp_path / "run" / "plan.json").exists()


# -- nesting ---------------------------------------------------------------------------------------------------
def test_a_100000_deep_row_is_a_located_error_in_every_command(
    tmp_path: Path, capsys: Capture, no_backend: None
) -> None:
    data = _write(tmp_path / "d.jsonl", _line(_row()), _nested(DEEP))
    expected = f"{data}:2: JSON nested deeper than 64 levels (fix: flatten the value"
    _refused_everywhere(data, tmp_path, capsys, expected)


def test_nesting_limit_is_64_levels(tmp_path: Path) -> None:
    at_limit = _write(tmp_path / "ok.jsonl", _line(_row()), _nested(64))
    assert "too_deep" not in validate(at_limit).by_code
    over = _write(tmp_path / "over.jsonl", _line(_row()), _nested(65))
    assert [(p.code, p.line) for p in validate(over).problems if p.code == "too_deep"] == [("too_deep", 2)]


def test_deep_trec_responses_and_criteria_files(tmp_path: Path, capsys: Capture) -> None:
    trec = _trec(tmp_path, responses=b'{"query_id": "q1", "x": ' + b"[" * DEEP + b"]" * DEEP + b"}\n")
    code, out = _cli(["validate", str(trec), "--mapping", str(_trec_mapping(tmp_path))], capsys)
    assert code == 1 and f"{trec / 'responses.jsonl'}:1: JSON nested deeper than 64 levels" in out
    code, out = _cli(["metrics", str(trec), "--mapping", str(_trec_mapping(tmp_path))], capsys)
    assert code == 1 and f"{trec / 'responses.jsonl'}:1: JSON nested deeper than 64 levels" in out
    crit = _write(tmp_path / "c.json", b'[{"type": "azure_ai_evaluator", "x": ' + b"[" * DEEP + b"]" * DEEP + b"}]")
    data = _write(tmp_path / "d.jsonl", _line(_row()))
    code, out = _cli(["validate", str(data), "--criteria", str(crit)], capsys)
    assert code == 1 and f"{crit}: JSON nested deeper than 64 levels" in out


# -- TREC helpers ------------------------------------------------------------------------------------------------
def _trec(
    tmp_path: Path,
    *,
    qrels: bytes = b"q1 0 a 1\n",
    run: bytes = b"q1 Q0 a 1 0.9 t\n",
    queries: bytes = b"q1\tHow many weeks?\n",
    responses: bytes = b'{"query_id": "q1", "context": "c", "response": "r"}\n',
) -> Path:
    base = tmp_path / "trec"
    base.mkdir(exist_ok=True)
    for name, text in (
        ("qrels.txt", qrels),
        ("run.txt", run),
        ("queries.tsv", queries),
        ("responses.jsonl", responses),
    ):
        (base / name).write_bytes(text)
    return base


def _trec_mapping(tmp_path: Path) -> Path:
    path = tmp_path / "trec.yaml"
    path.write_text(
        "version: 1\ndataset:\n  format: trec\n  trec: {qrels: qrels.txt, run: run.txt, queries: queries.tsv, "
        "responses: responses.jsonl}\n  fields: {query_id: query_id, context: context, response: response}\n"
        "labels: {min: 0, max: 3}\nevaluators:\n  - evaluator: builtin.document_retrieval\n"
    )
    return path


# -- a qrels label out of the mapping's range ------------------------------------------------------------------
def _beir(tmp_path: Path, qrels: str, run: str) -> Path:
    base = tmp_path / "beir"
    (base / "qrels").mkdir(parents=True)
    (base / "corpus.jsonl").write_text('{"_id": "a", "text": "x"}\n{"_id": "b", "text": "y"}\n')
    (base / "queries.jsonl").write_text('{"_id": "q1", "text": "one"}\n{"_id": "q2", "text": "two"}\n')
    (base / "qrels" / "test.tsv").write_text(qrels)
    (base / "run.txt").write_text(run)
    return base


@pytest.mark.parametrize("fmt", ["trec", "beir"])
def test_a_qrels_label_out_of_range_is_located_at_its_qrels_line(
    fmt: str, tmp_path: Path, capsys: Capture, no_backend: None
) -> None:
    run = "q1 Q0 a 1 0.9 t\nq1 Q0 b 2 0.5 t\n"  # q2 is only judged: no run line
    if fmt == "trec":
        data = _trec(tmp_path, qrels=b"q1 0 a 1\nq2 0 b 1\nq1 0 b 9\nq2 0 a -2\n", run=run.encode())
        mapping = _trec_mapping(tmp_path)
        qrels, first, second = data / "qrels.txt", 3, 4
    else:
        data = _beir(tmp_path, "query-id\tcorpus-id\tscore\nq1\ta\t1\nq2\tb\t1\nq1\tb\t9\nq2\ta\t-2\n", run)
        mapping = tmp_path / "beir.yaml"
        mapping.write_text(
            "dataset:\n  format: beir\nlabels: {min: 0, max: 3}\n"
            "evaluators:\n  - evaluator: builtin.document_retrieval\n"
        )
        qrels, first, second = data / "qrels" / "test.tsv", 4, 5
    above = (
        f"{qrels}:{first}: retrieval_ground_truth[1].query_relevance_label: label 9 is above ground_truth_label_max 3"
    )
    below = (
        f"{qrels}:{second}: retrieval_ground_truth[1].query_relevance_label: label -2 is below ground_truth_label_min 0"
    )
    for name in ("validate", "plan", "run"):
        code, out = _cli(_commands(data, tmp_path, "--mapping", str(mapping))[name], capsys)
        assert code == 1 and above in out and below in out, (name, out)
        assert "run.txt" not in out, (name, out)


# -- encodings ---------------------------------------------------------------------------------------------------
def test_a_latin1_jsonl_line_names_line_byte_offset_and_iconv(
    tmp_path: Path, capsys: Capture, no_backend: None
) -> None:
    latin1 = json.dumps(_row("q2", query="café?"), ensure_ascii=False).encode("latin-1") + b"\n"
    data = _write(tmp_path / "d.jsonl", _line(_row()), latin1)
    offset = latin1.index(b"\xe9")
    expected = f"{data}:2: not UTF-8: byte 0xe9 at byte offset {offset} of the line"
    for name in ("validate", "plan", "run"):
        code, out = _cli(_commands(data, tmp_path)[name], capsys)
        assert code == 1 and expected in out and LATIN1 in out, (name, out)


@pytest.mark.parametrize("name", ["qrels.txt", "run.txt", "queries.tsv", "responses.jsonl"])
def test_a_latin1_trec_file_is_a_located_error(name: str, tmp_path: Path, capsys: Capture) -> None:
    files = {
        "qrels.txt": {"qrels": "q1 0 café 1\n".encode("latin-1")},
        "run.txt": {"run": "q1 Q0 café 1 0.9 t\n".encode("latin-1")},
        "queries.tsv": {"queries": "q1\tcafé?\n".encode("latin-1")},
        "responses.jsonl": {"responses": '{"query_id": "q1", "response": "café"}\n'.encode("latin-1")},
    }[name]
    trec = _trec(tmp_path, **files)
    expected = f"{trec / name}:1: not UTF-8: byte 0xe9 at byte offset"
    code, out = _cli(["validate", str(trec), "--mapping", str(_trec_mapping(tmp_path))], capsys)
    assert code == 1 and expected in out and LATIN1 in out, out
    if name in ("qrels.txt", "run.txt"):
        code, out = _cli(["metrics", "--qrels", str(trec / "qrels.txt"), "--run", str(trec / "run.txt")], capsys)
        assert code == 1 and expected in out and "Traceback" not in out, out


def test_a_latin1_mapping_or_criteria_file_names_its_line(tmp_path: Path, capsys: Capture) -> None:
    mapping = _write(tmp_path / "m.yaml", b"version: 1\ndescription: caf\xe9\n")
    data = _write(tmp_path / "d.jsonl", _line(_row()))
    for command in ("validate", "metrics"):
        code, out = _cli([command, str(data), "--mapping", str(mapping)], capsys)
        assert code == 1 and f"{mapping}:2: not UTF-8: byte 0xe9 at byte offset 16 of the line" in out, out
    crit = _write(tmp_path / "c.json", b'[\n {"type": "x", "name": "caf\xe9"}\n]')
    code, out = _cli(["validate", str(data), "--criteria", str(crit)], capsys)
    assert code == 1 and f"{crit}:2: not UTF-8: byte 0xe9 at byte offset 27 of the line" in out, out


def test_a_bom_says_to_drop_it(tmp_path: Path, capsys: Capture) -> None:
    data = _write(tmp_path / "d.jsonl", b"\xef\xbb\xbf" + _line(_row()))
    for command in ("validate", "metrics"):
        code, out = _cli([command, str(data)], capsys)
        assert code == 1 and f"{data}:1: the file starts with a UTF-8 byte order mark (BOM)" in out, out
        assert "(fix: drop the BOM" in out
    trec = _trec(tmp_path, run=b"\xef\xbb\xbfq1 Q0 a 1 0.9 t\n")
    code, out = _cli(["metrics", "--qrels", str(trec / "qrels.txt"), "--run", str(trec / "run.txt")], capsys)
    assert code == 1 and f"{trec / 'run.txt'}:1: the file starts with a UTF-8 byte order mark" in out, out


# -- non-finite scores -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "1e400", "NaN", "-Infinity"])
def test_non_finite_trec_scores_are_refused_by_validate_plan_and_metrics(
    score: str, tmp_path: Path, capsys: Capture
) -> None:
    trec = _trec(tmp_path, run=f"q1 Q0 a 1 0.9 t\nq1 Q0 b 2 {score} t\n".encode())
    mapping = str(_trec_mapping(tmp_path))
    expected = f"{trec / 'run.txt'}:2: score: score {score!r} is not a finite number"
    code, out = _cli(["validate", str(trec), "--mapping", mapping], capsys)
    assert code == 1 and expected in out, out
    code, out = _cli(["plan", str(trec), "--mapping", mapping, "--out", str(tmp_path / "p")], capsys)
    assert code == 1 and expected in out and not (tmp_path / "p").exists(), out
    code, out = _cli(["metrics", "--qrels", str(trec / "qrels.txt"), "--run", str(trec / "run.txt")], capsys)
    assert code == 1 and expected in out, out


@pytest.mark.parametrize("score", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_non_finite_jsonl_scores_name_the_problem(score: bytes, tmp_path: Path, capsys: Capture) -> None:
    line = _line(_row()).replace(b'"relevance_score": 0.9', b'"relevance_score": ' + score)
    data = _write(tmp_path / "d.jsonl", line)
    for command in ("validate", "metrics"):
        code, out = _cli([command, str(data)], capsys)
        assert code == 1 and f"{data}:1: NaN, Infinity or a number beyond a double" in out, out


# -- empty datasets, no evaluators -----------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n"])
def test_an_empty_dataset_exits_1_in_validate_plan_and_metrics(
    content: bytes, tmp_path: Path, capsys: Capture, no_backend: None
) -> None:
    data = _write(tmp_path / "d.jsonl", content)
    _refused_everywhere(data, tmp_path, capsys, f"{data}: the dataset has no rows")
    code, out = _cli(["plan", str(data), "--skip-validation", "--out", str(tmp_path / "p2")], capsys)
    assert code == 1 and "the dataset has no rows" in out, out


def test_empty_trec_files_exit_1_in_metrics(tmp_path: Path, capsys: Capture) -> None:
    trec = _trec(tmp_path, qrels=b"", run=b"\n")
    code, out = _cli(["metrics", "--qrels", str(trec / "qrels.txt"), "--run", str(trec / "run.txt")], capsys)
    assert code == 1 and "the dataset has no rows" in out, out


def test_a_mapping_without_evaluators_is_refused_but_metrics_works(
    tmp_path: Path, capsys: Capture, no_backend: None
) -> None:
    data = _write(tmp_path / "d.jsonl", _line(_row()))
    for text in ("version: 1\n", "version: 1\nevaluators: []\n"):
        mapping = _write(tmp_path / "m.yaml", text.encode())
        for name in ("validate", "plan", "run"):
            code, out = _cli(_commands(data, tmp_path, "--mapping", str(mapping))[name], capsys)
            assert code == 1 and "the mapping has no evaluators: nothing would be evaluated" in out, (name, out)
        code, out = _cli(["metrics", str(data), "--mapping", str(mapping)], capsys)
        assert code == 0 and json.loads(out)["params"]["queries"] == 1, out


# -- duplicate keys --------------------------------------------------------------------------------------------
def test_duplicate_keys_in_a_row_are_a_warning_naming_key_and_positions(tmp_path: Path) -> None:
    top = b'{"query_id": "q1", "query": "a?", "response": "r", "query_id": "q9"}\n'
    nested = (
        b'{"query_id": "q2", "retrieved_documents": [{"document_id": "a", "relevance_score": 1, "document_id": "b"}]}\n'
    )
    colon_in_text = b'{"query_id": "q3", "query": "at 10:30: what?"}\n'  # colons in strings are not keys
    data = _write(tmp_path / "d.jsonl", top, nested, colon_in_text)
    found = [(p.severity, p.line, p.message) for p in validate(data).problems if p.code == "duplicate_key"]
    assert found == [
        ("warning", 1, "key 'query_id' is written twice in one object (keys #1 and #4 in its key order): the JSON "
         "reader keeps the last value silently"),
        ("warning", 2, "key 'document_id' is written twice in one object (keys #1 and #3 in its key order): the JSON "
         "reader keeps the last value silently"),
    ]  # fmt: skip


def test_duplicate_keys_in_criteria_json_name_both_lines(tmp_path: Path) -> None:
    crit = _write(
        tmp_path / "c.json",
        b'[\n  {\n    "type": "azure_ai_evaluator",\n    "name": "dr",\n    "name": "dr2",\n'
        b'    "evaluator_name": "builtin.document_retrieval",\n    "data_mapping": {"retrieval_ground_truth": '
        b'"{{item.retrieval_ground_truth}}", "retrieved_documents": "{{item.retrieved_documents}}"}\n  }\n]\n',
    )
    data = _write(tmp_path / "d.jsonl", _line(_row()))
    found = [str(p) for p in validate(data, criteria_file=crit).problems if p.code == "duplicate_key"]
    assert found == [
        f"{crit}:5: name: key 'name' is written twice in one object (lines 4 and 5): the JSON reader keeps the last "
        "value silently (fix: remove or rename one of them)"
    ]


# -- near-duplicate ids ----------------------------------------------------------------------------------------
NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


@pytest.mark.parametrize(
    ("first", "second", "how"),
    [
        ("q1", "Q1", "case"),
        ("q1", " q1", "surrounding whitespace"),
        ("q1", "q1\t", "surrounding whitespace"),
        ("q1", "q\u200b1", "zero-width characters"),
        (NFC, NFD, "Unicode normalization (NFC vs NFD)"),
        ("Straße", "STRASSE", "case"),
        (NFC, " CAFE\u0301", "surrounding whitespace and Unicode normalization (NFC vs NFD) and case"),
    ],
)
def test_near_duplicate_query_ids_are_warned_with_both_ids_and_lines(
    first: str, second: str, how: str, tmp_path: Path
) -> None:
    data = _write(tmp_path / "d.jsonl", _line(_row(first)), _line(_row("other")), _line(_row(second)))
    report = validate(data)
    found = [str(p) for p in report.problems if p.code == "near_duplicate_query_id"]
    assert found == [
        f"{data}:3: query_id: query_id {second!a} differs from {first!a} (line 1) only by {how} (fix: give "
        "the two queries distinct ids, or one id if they are the same query)"
    ]
    assert report.ok  # a warning: both are kept


def test_exact_and_near_duplicates_are_told_apart(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", *(_line(_row(q)) for q in ("a", "b", "A", "a", "b ", "c")))
    found = [(p.code, p.line) for p in validate(data).problems if "duplicate_query" in p.code]
    assert found == [("near_duplicate_query_id", 3), ("duplicate_query_id", 4), ("near_duplicate_query_id", 5)]


def test_near_duplicate_document_ids_within_a_row(tmp_path: Path) -> None:
    row = _row(
        retrieved_documents=[
            {"document_id": "Doc1", "relevance_score": 0.9},
            {"document_id": NFD, "relevance_score": 0.5},
        ],
        retrieval_ground_truth=[
            {"document_id": "doc1", "query_relevance_label": 3},
            {"document_id": NFC, "query_relevance_label": 1},
        ],
    )
    data = _write(tmp_path / "d.jsonl", _line(row))
    found = sorted(str(p) for p in validate(data).problems if p.code == "near_duplicate_document_id")
    hint = "(fix: write each document's id exactly the same way everywhere)"
    assert found == sorted(
        [
            f"{data}:1: retrieved_documents[0].document_id: document id 'Doc1' differs from 'doc1' "
            f"(retrieval_ground_truth[0]) only by case {hint}",
            f"{data}:1: retrieved_documents[1].document_id: document id {NFD!a} differs from {NFC!a} "
            f"(retrieval_ground_truth[1]) only by Unicode normalization (NFC vs NFD) {hint}",
        ]
    )


# -- messages ----------------------------------------------------------------------------------------------------
def test_a_duplicate_query_id_names_the_id_and_a_directory_as_data_says_so(tmp_path: Path, capsys: Capture) -> None:
    data = _write(tmp_path / "d.jsonl", _line(_row("q-7")), _line(_row("q-8")), _line(_row("q-7")))
    code, out = _cli(["validate", str(data)], capsys)
    assert code == 1 and f"{data}:3: query_id: query_id 'q-7' is already used on line 1" in out, out
    folder = tmp_path / "folder"
    folder.mkdir()
    for command in ("validate", "metrics", "plan"):
        code, out = _cli([command, str(folder), *(["--out", str(tmp_path / "p")] if command == "plan" else [])], capsys)
        assert (
            code == 1
            and f"{folder}: is a directory, not a JSONL file (fix: for TREC input set dataset.format: trec)" in out
        )
