"""`foundry-bridge metrics` end to end, and the fast JSONL reader against the records path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest
from click.testing import CliRunner
from metrics_helpers import generate

import foundry_bridge.dataset as dataset_pkg
from foundry_bridge.cli import cli, main
from foundry_bridge.dataset import read_records
from foundry_bridge.dataset.columnar import arrays_from_records, load_dataset
from foundry_bridge.mapping import load_mapping


def invoke(args: list[str]) -> tuple[int, str, bytes]:
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output, result.stdout_bytes


def test_metrics_json_on_sample(benefits_jsonl: Path) -> None:
    code, out, raw = invoke(["metrics", str(benefits_jsonl)])
    assert code == 0, out
    doc = orjson.loads(raw)
    assert set(doc) == {"params", "per_query", "summary", "negative_report", "assembly"}
    # defaults from the packaged mapping: k 3 and 10, threshold 1, propagate, surface 0.6
    assert doc["params"]["ks"] == [3, 10] and doc["params"]["surface_threshold"] == 0.6
    q09 = next(row for row in doc["per_query"] if row["query_id"] == "q09")
    assert q09["rr@10"] == 0.25 and q09["rr@3"] == 0.0 and q09["distracting@10"] == 3.0
    for key in ("query_id", "kind", "rr@10", "recall@10", "precision@10", "hit@10", "distracting@10", "ndcg@10"):
        assert key in q09
    pos, neg = doc["summary"]["positive"], doc["summary"]["negative"]
    assert pos["queries"] == 11 and neg["queries"] == 3 and neg["undefined"] == 3
    assert neg["rr@10"] is None  # propagate: every negative query is undefined
    # MRR@10 of the 11 positive queries, from the sample's README and data: q07 misses, q09 at 4, q11 at 2
    assert pos["rr@10"] == pytest.approx((8 * 1.0 + 0 + 0.25 + 0.5) / 11)
    assembly = {row["query_id"]: row for row in doc["assembly"]["per_query"]}
    assert assembly["q06"]["dropped_relevant"] == ["pol-parttime-01"]
    assert doc["assembly"]["with_dropped_relevant"] == 1
    assert doc["negative_report"]["aggregate"]["surfaced_evidence"] == 1


def test_metrics_options_override_mapping(benefits_jsonl: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "m.json"
    code, out, _ = invoke(
        [
            "metrics",
            str(benefits_jsonl),
            "--k",
            "5",
            "--nan-policy",
            "drop",
            "--relevance-threshold",
            "3",
            "--surface-threshold",
            "0.5",
            "--out",
            str(out_file),
        ]
    )
    assert code == 0, out
    doc = orjson.loads(out_file.read_bytes())
    assert doc["params"]["ks"] == [5] and doc["params"]["nan_policy"] == "drop"
    assert doc["params"]["relevance_threshold"] == 3 and "rr@5" in doc["per_query"][0]
    assert doc["negative_report"]["aggregate"]["surfaced_evidence"] == 2  # n02 (0.78) and n03 (0.52)


def test_metrics_text(benefits_jsonl: Path) -> None:
    code, out, _ = invoke(["metrics", str(benefits_jsonl), "--format", "text"])
    assert code == 0
    assert "rr@10" in out and "mrr@10" not in out and "q06: dropped pol-parttime-01" in out and "ROC AUC" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["metrics"], "give DATA"),
        (["metrics", "x.jsonl", "--qrels", "{q}", "--run", "{q}"], "not both"),
        (["metrics", "--qrels", "{q}"], "give DATA"),
    ],
)
def test_usage_errors(args: list[str], message: str, tmp_path: Path, capsys) -> None:
    q = tmp_path / "qrels"
    q.write_text("q 0 a 1\n")
    with pytest.raises(SystemExit) as exc:
        main([a.replace("{q}", str(q)) for a in args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_row_reports_file_and_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "d.jsonl"
    good = {"query_id": "a", "retrieved_documents": [{"document_id": "x"}], "retrieval_ground_truth": []}
    bad = {
        "query_id": "b",
        "retrieved_documents": [],
        "retrieval_ground_truth": [{"document_id": "x", "query_relevance_label": 0.7}],
    }
    path.write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps(bad) + b"\n")
    with pytest.raises(SystemExit) as exc:
        main(["metrics", str(path)])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert f"{path}:2" in err and "label" in err


def test_duplicate_query_ids_are_refused_naming_their_lines_as_validate_does(tmp_path: Path, capsys) -> None:
    # issue #34 item 6: 1 real query plus 9 copies of another was "queries: 10, MRR 0.1" with no warning
    path = tmp_path / "d.jsonl"
    found = {"query_id": "a", "retrieved_documents": [{"document_id": "x"}], "retrieval_ground_truth": []}
    found["retrieval_ground_truth"] = [{"document_id": "x", "query_relevance_label": 1}]
    missed = {**found, "query_id": "b", "retrieved_documents": [{"document_id": "y"}]}
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in [found] + [missed] * 9))
    with pytest.raises(SystemExit) as exc:
        main(["metrics", str(path), "--format", "text"])
    assert exc.value.code == 1
    captured = capsys.readouterr()
    assert "queries:" not in captured.out
    assert f"{path}:3" in captured.err and f"{path}:10" in captured.err  # the repeated lines, each named
    assert "'b' is already used on line 2" in captured.err  # validate's own words
    with pytest.raises(SystemExit) as validated:
        main(["validate", str(path)])
    assert validated.value.code == 1 and "'b' is already used on line 2" in capsys.readouterr().out


# -- the fast reader gives exactly what the records path gives -----------------------------------------------------
def _write_generated(path: Path, seed: int) -> None:
    g = generate(seed, n_queries=120, max_docs=25)
    rng = np.random.default_rng(seed)
    lines = []
    for i, rec in enumerate(g.records):
        row = rec.item()
        if i % 3 == 0:
            del row["kind"]  # derived from the labels
        elif i % 5 == 0:
            row["kind"] = "negative"
        if i % 4 == 0:
            docs = row["retrieved_documents"]
            for d in docs:
                d["content"] = f"text of {d['document_id']} " * 3
            row["context"] = " ".join(d["content"] for d in docs[: int(rng.integers(0, len(docs) + 1))])
            row["response"] = "I don't know." if i % 8 == 0 else "An answer."
        if i % 9 == 0 and row.get("retrieval_ground_truth"):
            row["retrieval_ground_truth"][0]["document_id"] = 77  # an integer id, read as "77"
        lines.append(orjson.dumps(row))
    path.write_bytes(b"\n".join(lines) + b"\n\n")


def _assert_same(a, b) -> None:
    for name in ("labels", "judged", "length", "n_ret", "scores", "n_rel", "has_labels", "ideal", "abstains"):
        x, y = getattr(a, name), getattr(b, name)
        if name == "n_ret":  # the fast reader counts distinct documents for negative queries only
            known = x >= 0
            assert known[np.array(a.kinds) == "negative"].all()
            x, y = x[known], y[known]
        assert np.array_equal(x, y, equal_nan=name == "scores"), name
    assert a.query_ids == b.query_ids and a.kinds == b.kinds and a.kind_sources == b.kind_sources
    assert a.top_ids == b.top_ids


@pytest.mark.parametrize(("seed", "depth", "threshold"), [(1, 10, 1), (2, 3, 2), (3, 25, 1), (5, 5, 2)])
def test_fast_reader_matches_records(seed: int, depth: int, threshold: int, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "d.jsonl"
    _write_generated(path, seed)
    mapping = load_mapping(None)
    slow, slow_asm = arrays_from_records(
        read_records(path, mapping, relevance_threshold=threshold), depth=depth, relevance_threshold=threshold
    )

    def no_fallback(*args, **kwargs):
        raise AssertionError("the fast reader fell back to read_records")

    monkeypatch.setattr(dataset_pkg, "read_records", no_fallback)
    fast, fast_asm = load_dataset(path, mapping, depth=depth, relevance_threshold=threshold)
    _assert_same(fast, slow)
    assert fast_asm == slow_asm and len(fast_asm) > 0


def test_fast_reader_nested_paths(tmp_path: Path, monkeypatch) -> None:
    mapping_file = tmp_path / "m.yaml"
    mapping_file.write_text(
        "version: 1\n"
        "dataset:\n"
        "  format: jsonl\n"
        "  fields:\n"
        "    query_id: meta.qid\n"
        "    kind: meta.kind\n"
        "    context: gen.prompt_context\n"
        "    response: gen.answer\n"
        "    retrieved_documents: {path: search.hits, document_id: doc.id, relevance_score: doc.score,"
        " content: doc.text, title: null}\n"
        "    retrieval_ground_truth: {path: judgements, document_id: doc, query_relevance_label: grade}\n"
        "metrics: {k: [2, 5]}\n"
    )
    rows = [
        {
            "meta": {"qid": "a"},
            "search": {
                "hits": [
                    {"doc": {"id": "x", "score": 0.9, "text": "alpha"}},
                    {"doc": {"id": "y", "score": 0.5, "text": "beta"}},
                ]
            },
            "judgements": [{"doc": "y", "grade": 2}],
            "gen": {"prompt_context": "alpha", "answer": "I don't know"},
        },
        {
            "meta": {"qid": "b", "kind": "negative"},
            "search": {"hits": [{"doc": {"id": "z", "score": 0.7}}]},
            "judgements": [],
        },
    ]
    data = tmp_path / "d.jsonl"
    data.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    mapping = load_mapping(mapping_file)
    slow, slow_asm = arrays_from_records(read_records(data, mapping), depth=5, relevance_threshold=1)
    monkeypatch.setattr(dataset_pkg, "read_records", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    fast, fast_asm = load_dataset(data, mapping, depth=5, relevance_threshold=1)
    _assert_same(fast, slow)
    assert fast_asm == slow_asm
    assert fast_asm[0]["dropped_relevant"] == ["y"]
    monkeypatch.undo()
    code, out, raw = invoke(["metrics", str(data), "--mapping", str(mapping_file)])
    assert code == 0, out
    doc = orjson.loads(raw)
    assert doc["params"]["ks"] == [2, 5]
    assert doc["per_query"][0]["rr@2"] == 0.5
    assert doc["negative_report"]["per_query"][0]["query_id"] == "b"


def test_a_line_the_decoders_refuse_goes_through_the_row_parser(tmp_path: Path, monkeypatch) -> None:
    """A value the typed decoders refuse (a non-string content, which the records path ignores): that line alone is
    read by the row parser, in the same pass, with the same numbers."""
    from foundry_bridge.dataset import reader

    path = tmp_path / "d.jsonl"
    _write_generated(path, 5)
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    target = next(r for r in rows if r["retrieved_documents"] and "context" not in r)
    target["retrieved_documents"][0]["content"] = 5
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    mapping = load_mapping(None)
    slow, slow_asm = arrays_from_records(read_records(path, mapping), depth=10, relevance_threshold=1)
    calls: list[int] = []
    real = reader.row_parser

    def counting(*args, **kwargs):
        parse = real(*args, **kwargs)

        def counted(at, row):
            calls.append(at)
            return parse(at, row)

        return counted

    monkeypatch.setattr(dataset_pkg, "read_records", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    monkeypatch.setattr(reader, "row_parser", counting)
    fast, fast_asm = load_dataset(path, mapping, depth=10, relevance_threshold=1)
    assert calls == [rows.index(target) + 1]
    _assert_same(fast, slow)
    assert fast_asm == slow_asm


# -- the top-k decoder (first attempt on every line) against the raw-list reader and the records path -------------
def _edge_rows() -> list[bytes]:
    docs = [{"document_id": f"e{i}", "relevance_score": 1.0 - i / 20} for i in range(12)]
    rows = [
        {
            "query_id": "no-score",
            "retrieved_documents": [{"document_id": "a"}, {"document_id": "b"}],
            "retrieval_ground_truth": [{"document_id": "b", "query_relevance_label": 2}],
        },
        {
            "query_id": "null-score",
            "retrieved_documents": [{"document_id": "a", "relevance_score": None}],
            "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 1}],
        },
        {
            "query_id": "empty-docs",  # an explicit empty ranking (null or absent: test_metrics_field_typos)
            "retrieved_documents": [],
            "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 1}],
        },
        {"query_id": "no-labels", "retrieved_documents": docs[:3]},
        {
            "query_id": "long-negative",
            "kind": "negative",
            "retrieved_documents": docs + docs[:2],
            "retrieval_ground_truth": [],
        },
        {
            "query_id": "dup-late",
            "retrieved_documents": docs[:4] + docs[:2] + docs[4:],
            "retrieval_ground_truth": [
                {"document_id": "e5", "query_relevance_label": 3},
                {"document_id": "e5", "query_relevance_label": 1},
            ],
        },
        {
            "query_id": "int-score",
            "retrieved_documents": [{"document_id": "a", "relevance_score": 1}],
            "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 1}],
            "response": "I don't know",
        },
    ]
    return [orjson.dumps(r) for r in rows]


def _count_raw_lines(monkeypatch) -> list[int]:
    """Patch the raw-list reader to count the lines it reads."""
    from foundry_bridge.dataset import columnar as loader

    calls: list[int] = []
    real = loader._line_reader

    def counting(*args, **kwargs):
        read = real(*args, **kwargs)

        def wrapped(line: bytes) -> None:
            calls.append(1)
            read(line)

        return wrapped

    monkeypatch.setattr(loader, "_line_reader", counting)
    return calls


@pytest.mark.parametrize(("seed", "depth"), [(6, 10), (7, 3), (8, 25)])
def test_top_decoder_matches_raw_reader(seed: int, depth: int, tmp_path: Path, monkeypatch) -> None:
    from foundry_bridge.dataset import columnar as loader

    path = tmp_path / "d.jsonl"
    _write_generated(path, seed)
    # whitespace-only lines, the edge rows, and a last line without a newline
    path.write_bytes(path.read_bytes() + b"  \t\n" + b"\n".join(_edge_rows()) + b"\n\r\n" + _edge_rows()[0])
    mapping = load_mapping(None)
    slow, slow_asm = arrays_from_records(read_records(path, mapping), depth=depth, relevance_threshold=1)
    n_lines = sum(1 for line in path.read_bytes().splitlines() if line.strip())

    monkeypatch.setattr(dataset_pkg, "read_records", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    calls = _count_raw_lines(monkeypatch)
    fast, fast_asm = load_dataset(path, mapping, depth=depth, relevance_threshold=1)
    _assert_same(fast, slow)
    assert fast_asm == slow_asm
    assert 0 < len(calls) < n_lines // 2  # most lines took the top-k decoder; some needed the raw list

    calls.clear()
    monkeypatch.setattr(loader, "_TOP_K_MAX_DEPTH", 0)  # every line through the raw-list reader
    raw, raw_asm = load_dataset(path, mapping, depth=depth, relevance_threshold=1)
    assert len(calls) == n_lines
    _assert_same(raw, slow)
    assert raw_asm == slow_asm


def test_top_decoder_optional_score_object(tmp_path: Path, monkeypatch) -> None:
    """A score in another (possibly absent) object than the id: NaN when that object is missing."""
    mapping_file = tmp_path / "m.yaml"
    mapping_file.write_text(
        "version: 1\n"
        "dataset:\n"
        "  format: jsonl\n"
        "  fields:\n"
        "    query_id: qid\n"
        "    retrieved_documents: {path: hits, document_id: doc.id, relevance_score: meta.score, title: null,"
        " content: null}\n"
        "    retrieval_ground_truth: {path: qrels, document_id: id, query_relevance_label: grade}\n"
    )
    rows = [
        {
            "qid": "a",
            "hits": [{"doc": {"id": "x"}, "meta": {"score": 0.4}}, {"doc": {"id": "y"}}],
            "qrels": [{"id": "y", "grade": 1}],
        },
        {"qid": "b", "hits": [{"doc": {"id": "z"}, "meta": {}}], "qrels": [{"id": "q", "grade": 2}]},
    ]
    data = tmp_path / "d.jsonl"
    data.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    mapping = load_mapping(mapping_file)
    slow, _ = arrays_from_records(read_records(data, mapping), depth=5, relevance_threshold=1)
    calls = _count_raw_lines(monkeypatch)
    fast, _ = load_dataset(data, mapping, depth=5, relevance_threshold=1)
    assert calls == []
    _assert_same(fast, slow)
    assert fast.scores[0, 0] == 0.4 and np.isnan(fast.scores[0, 1]) and np.isnan(fast.scores[1, 0])


def test_null_document_is_the_records_path_error(tmp_path: Path) -> None:
    row = {
        "query_id": "q",
        "retrieved_documents": [{"document_id": "a"}, None, {"document_id": "b"}],
        "retrieval_ground_truth": [{"document_id": "b", "query_relevance_label": 1}],
    }
    path = tmp_path / "d.jsonl"
    path.write_bytes(orjson.dumps(row) + b"\n")
    mapping = load_mapping(None)
    with pytest.raises(Exception) as expected:
        arrays_from_records(read_records(path, mapping), depth=10, relevance_threshold=1)
    with pytest.raises(type(expected.value)) as got:
        load_dataset(path, mapping, depth=10, relevance_threshold=1)
    assert str(got.value) == str(expected.value)


def test_json_output_is_orjson_of_the_document(tmp_path: Path) -> None:
    """The command serializes per-query rows from columns: the bytes are those of orjson on the whole document."""
    from foundry_bridge.commands.metrics import compute_metrics

    path = tmp_path / "d.jsonl"
    _write_generated(path, 9)
    code, out, raw = invoke(["metrics", str(path), "--k", "3", "--k", "10", "--nan-policy", "drop"])
    assert code == 0, out
    doc = compute_metrics(str(path), ks=(3, 10), nan_policy="drop")
    assert raw == orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
    assert any(v is None for row in doc["per_query"] for v in row.values())  # NaN → null is exercised


def test_per_query_json_large_values() -> None:
    from foundry_bridge.commands.metrics import per_query_json
    from foundry_bridge.metrics.ranking import RankingResult

    def result(values: list[float]) -> RankingResult:
        columns = {"n_rel": np.array([1, 0, 2])}
        columns |= {
            f"{m}@1": np.array(values) for m in ("rr", "recall", "precision", "hit", "distracting", "ndcg", "ndcg_exp")
        }
        return RankingResult(
            ["a", 'b\n"c', "é"], ["positive", "negative", "positive"], ["declared"] * 3, columns, {}, {"ks": [1]}
        )

    for values in ([0.5, float("nan"), 1 / 3], [1e17, float("nan"), 2.5e-9]):
        r = result(values)
        assert per_query_json(r) == orjson.dumps(r.per_query)


def test_trec_folder_and_qrels_run_agree_when_a_query_is_only_judged(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n2 Q0 c 1 1.0 t\n2 Q0 d 2 0.5 t\n")
    # query 3 is judged but the system returned nothing for it: rr 0 and recall 0 (trec_eval -c), not dropped
    (tmp_path / "qrels.txt").write_text("1 0 b 1\n2 0 c 2\n3 0 e 1\n")
    (tmp_path / "queries.tsv").write_text("1\tone\n2\ttwo\n")  # query 3 only in the qrels
    (tmp_path / "responses.jsonl").write_text("")
    mapping = Path(__file__).resolve().parents[1] / "mappings" / "trec.yaml"
    code, out, raw = invoke(["metrics", str(tmp_path), "--mapping", str(mapping)])
    assert code == 0, out
    folder = orjson.loads(raw)
    code, out, raw = invoke(["metrics", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt")])
    assert code == 0, out
    files = orjson.loads(raw)
    by_folder = {row["query_id"]: row for row in folder["per_query"]}
    by_files = {row["query_id"]: row for row in files["per_query"]}
    assert set(by_folder) == set(by_files) == {"1", "2", "3"}
    keys = [k for k in by_files["1"] if k.startswith(("rr@", "recall@")) and k in by_folder["1"]]
    assert keys
    for qid in ("1", "2", "3"):
        assert {k: by_folder[qid][k] for k in keys} == {k: by_files[qid][k] for k in keys}, qid
    assert by_folder["3"]["rr@10"] == 0.0 and by_folder["1"]["rr@10"] == 0.5  # by hand: b at rank 2
    mrr = (0.5 + 1.0 + 0.0) / 3
    assert folder["summary"]["positive"]["rr@10"] == pytest.approx(mrr)
    assert files["summary"]["positive"]["rr@10"] == pytest.approx(mrr)


def test_trec_one_parser_ties_kinds_and_repeats_on_both_paths(tmp_path: Path) -> None:
    """The folder (records) path and --qrels/--run (arrays) path share one TREC parser, order and kind rule."""
    # q1: x and y tie at 1.0 → trec_eval ranks y (larger id) first; z below; z repeated lower keeps its first place
    # q2: every label 0 → negative from the labels; q3: in the run only → positive, kind_source unknown
    (tmp_path / "run.txt").write_text(
        "q1 Q0 x 1 1.0 t\nq1 Q0 y 2 1.0 t\nq1 Q0 z 3 0.5 t\nq1 Q0 z 4 0.1 t\nq2 Q0 a 1 1.0 t\nq3 Q0 b 1 1.0 t\n"
    )
    (tmp_path / "qrels.txt").write_text("q1 0 x 1\nq1 0 z 2\nq2 0 a 0\n")
    (tmp_path / "queries.tsv").write_text("")
    (tmp_path / "responses.jsonl").write_text("")
    mapping = Path(__file__).resolve().parents[1] / "mappings" / "trec.yaml"
    code, out, folder_raw = invoke(["metrics", str(tmp_path), "--mapping", str(mapping), "--k", "3"])
    assert code == 0, out
    args = ["metrics", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt"), "--k", "3"]
    code, out, files_raw = invoke(args)
    assert code == 0, out
    for raw in (folder_raw, files_raw):
        rows = {row["query_id"]: row for row in orjson.loads(raw)["per_query"]}
        assert [(q, rows[q]["kind"], rows[q]["kind_source"]) for q in ("q1", "q2", "q3")] == [
            ("q1", "positive", "labels"),
            ("q2", "negative", "labels"),
            ("q3", "positive", "unknown"),
        ]
        assert rows["q1"]["rr@3"] == 0.5  # y (unjudged) first, then x
        assert rows["q1"]["distracting@3"] == 1.0
        assert rows["q1"]["precision@3"] == pytest.approx(2 / 3)  # y, x, z: z counted once
        assert rows["q2"]["rr@3"] is None and rows["q3"]["rr@3"] is None


def _modules_after(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter holds after ``foundry-bridge ARGV`` (run from outside the repository)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom foundry_bridge.cli import main\n"
        f"sys.argv = ['foundry-bridge', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint('\\n'.join(sys.modules), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stderr.split())


def test_the_metrics_path_imports_only_what_it_needs(benefits_jsonl: Path, tmp_path: Path) -> None:
    loaded = _modules_after(["metrics", str(benefits_jsonl), "--out", str(tmp_path / "m.json")])
    assert (tmp_path / "m.json").is_file()
    # the fast reader needs the mapping and the numeric core, not the records reader, the TREC parser, the gate,
    # the plan builder, the report or another command
    unneeded = {
        "foundry_bridge.dataset.reader",
        "foundry_bridge.dataset.parse",
        "foundry_bridge.dataset.trec",
        "foundry_bridge.validate",
        "foundry_bridge.mapping.builder",
        "foundry_bridge.report",
        "foundry_bridge.runner",
        "foundry_bridge.commands.run",
    }
    assert loaded & unneeded == set()
    # any other command's start-up: the command line and the exception tree, no numbers, no mapping model
    loaded = _modules_after(["run", "--help"])
    assert {m for m in loaded if m.startswith("foundry_bridge.")} <= {
        "foundry_bridge.cli",
        "foundry_bridge.errors",
        "foundry_bridge.commands",
        "foundry_bridge.commands._exit_codes",
        "foundry_bridge.commands._options",
        "foundry_bridge.commands.run",
        "foundry_bridge.commands.validate",
    }
    assert not loaded & {"numpy", "pydantic", "yaml", "msgspec"}
