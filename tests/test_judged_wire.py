"""judge-docs on the emulator and on Foundry through the wire path (issue #37 item 1): one ``label_model`` criterion
with our rubric, run by the runner through the same client, eval create, run, poll and output items as the
builtin evaluators; labels read from the output items; an errored, missing or unreadable one is unknown and
counted. "Foundry" here is the emulator served on 127.0.0.1, reached as a cloud endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trec_sweep_helpers import read_trec_qrels

from foundry_bridge.catalog import LABEL_MODEL
from foundry_bridge.cli import cli, main
from foundry_bridge.errors import UsageError
from foundry_bridge.foundry import StaticTokenCredential
from foundry_bridge.judged import RUBRIC_SCALE, judge_documents
from foundry_bridge.mock import FaultConfig, FoundryEmulator, serve, tokens

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _expected(query: str, text: str) -> int:
    """The stand-in's grade as docs/mock.md states it, with float cuts (the emulator computes it in integers)."""
    words, found = tokens(query), tokens(text)
    share = len(words & found) / len(words)
    return 3 if share >= 0.6 else 2 if share >= 0.4 else 1 if share >= 0.2 else 0


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_judge_docs_on_the_emulator_runs_one_label_model_criterion_through_the_wire(tmp_path: Path) -> None:
    out = tmp_path / "judged.qrels"
    result = CliRunner().invoke(cli, ["judge-docs", str(BENEFITS), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "41 documents of 14 queries: 41 graded (0: 17, 1: 11, 2: 6, 3: 7), 0 unknown" in result.output
    qrels = read_trec_qrels(out)
    for row in _rows(BENEFITS):
        for doc in row["retrieved_documents"][:10]:
            text = "\n".join(p for p in (doc.get("title"), doc.get("content")) if p)
            assert qrels[row["query_id"]][doc["document_id"]] == _expected(row["query"], text), doc["document_id"]
    run_dir = tmp_path / "judged.qrels.run"
    (criterion,) = json.loads((run_dir / "plan.json").read_text())["eval_body"]["testing_criteria"]
    assert criterion["evaluator_name"] == LABEL_MODEL.name and criterion["type"] == "azure_ai_evaluator"
    init = criterion["initialization_parameters"]
    assert init["labels"] == ["0", "1", "2", "3"] and init["passing_labels"] == ["2", "3"]
    assert init["input"][0]["content"].startswith(RUBRIC_SCALE) and "{{item.document}}" in init["input"][1]["content"]
    items = _rows(run_dir / "output_items.jsonl")
    assert len(items) == 41 and {r["metric"] for it in items for r in it["results"]} == {"label_model"}
    prov = json.loads((tmp_path / "judged.qrels.json").read_text())
    assert prov["backend"] == "mock" and prov["judge"]["grader"] == "label_model"
    assert prov["judge"]["evaluator"] == LABEL_MODEL.name and prov["judge"]["run_dir"] == str(run_dir)
    assert prov["judge"]["eval_id"].startswith("eval_") and len(prov["judge"]["run_ids"]) == 1
    assert prov["judge_stats"] == {"judge_calls": 41, "errored": 0}


def _awkward(tmp: Path) -> Path:
    """Two sample queries; one document of stopwords only, one without text."""
    rows = _rows(BENEFITS)[:2]
    rows[0]["retrieved_documents"][1]["content"] = "the and of"
    rows[0]["retrieved_documents"][1].pop("title", None)
    rows[1]["retrieved_documents"][0]["content"] = None
    rows[1]["retrieved_documents"][0].pop("title", None)
    path = tmp / "awkward.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_errored_and_textless_documents_are_unknown_counted_with_their_cause(tmp_path: Path) -> None:
    data = _awkward(tmp_path)
    rows = _rows(data)
    n = sum(len(r["retrieved_documents"][:10]) for r in rows)
    # the emulator errors the 4th item it is sent (0-based row 3), as the service errors rows of a completed run
    faults = FaultConfig(errored_rows=(3,))
    prov = judge_documents(data, tmp_path / "j.qrels", backend="mock", foundry={"faults": faults})
    assert prov["counts"]["unknown"] == 3 and prov["counts"]["labelled"] == n - 3
    docs = json.loads((tmp_path / "j.qrels.json").read_text())["documents"]
    causes = {(d["query_id"], d["document_id"]): d["reason"] for d in docs if d["grade"] is None}
    stop = (rows[0]["query_id"], rows[0]["retrieved_documents"][1]["document_id"])
    empty = (rows[1]["query_id"], rows[1]["retrieved_documents"][0]["document_id"])
    assert "no text in the other parts" in causes.pop(stop)
    assert causes.pop(empty).startswith("NO_TEXT")
    (injected,) = causes.values()
    assert injected.startswith("FAILED_EXECUTION")
    qrels = read_trec_qrels(tmp_path / "j.qrels")
    assert sum(len(v) for v in qrels.values()) == n - 3 and stop[1] not in qrels.get(stop[0], {})
    assert prov["judge_stats"] == {"judge_calls": n - 1, "errored": 2}  # the textless one is never sent


def test_judge_docs_on_foundry_takes_the_cloud_path_to_a_project_endpoint(tmp_path: Path) -> None:
    with serve(FoundryEmulator(polls_to_complete=1), "127.0.0.1", 0) as server:
        options = {"endpoint": server.endpoint, "credential": StaticTokenCredential("t"), "poll_interval": 0.0}
        prov = judge_documents(
            BENEFITS, tmp_path / "f.qrels", backend="foundry", judge_model="gpt-4o-mini", foundry=options
        )
    assert prov["backend"] == "foundry" and prov["judge"]["model"] == "gpt-4o-mini"
    assert prov["judge"]["deployment"] == "gpt-4o-mini" and "cuts" not in prov["judge"]
    manifest = json.loads((tmp_path / "f.qrels.run" / "manifest.json").read_text())
    assert manifest["backend"] == "cloud" and manifest["endpoint"] == server.endpoint
    # the same emulator scorer behind either transport: the same labels as on --backend mock
    mock = judge_documents(BENEFITS, tmp_path / "m.qrels", backend="mock")
    assert (tmp_path / "f.qrels").read_bytes() == (tmp_path / "m.qrels").read_bytes()
    assert mock["counts"] == prov["counts"]


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    return int(exit_.value.code or 0), capsys.readouterr().err


def test_foundry_without_a_deployment_or_mock_with_an_endpoint_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "x.qrels")
    code, err = _refused(["judge-docs", str(BENEFITS), "--backend", "foundry", "--out", out], capsys)
    assert code == 2 and "Error: judge-docs --backend foundry needs --judge-model" in err and "Traceback" not in err
    code, err = _refused(["judge-docs", str(BENEFITS), "--endpoint", "http://127.0.0.1:1", "--out", out], capsys)
    assert code == 2 and "--endpoint is for --backend foundry, not mock" in err
    assert not (tmp_path / "x.qrels").exists()


@pytest.mark.parametrize("label", ["4", None])
def test_a_label_outside_the_scale_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: Any) -> None:
    from foundry_bridge.mock import _scoring

    real = _scoring._score_grader

    def odd(crit: Any, item: Any, sample: Any) -> Any:
        scored = real(crit, item, sample)
        scored.results[0]["label"] = label
        return scored

    monkeypatch.setattr(_scoring, "_score_grader", odd)
    prov = judge_documents(BENEFITS, tmp_path / "o.qrels", backend="mock")
    assert prov["counts"]["unknown"] == prov["counts"]["documents"] == 41
    docs = json.loads((tmp_path / "o.qrels.json").read_text())["documents"]
    assert all(d["reason"].startswith("UNREADABLE_LABEL") for d in docs)


def test_a_finished_grader_run_is_reused_and_another_plan_in_its_folder_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "grades"
    first = judge_documents(BENEFITS, tmp_path / "a.qrels", backend="mock", run_dir=run_dir)
    again = judge_documents(BENEFITS, tmp_path / "b.qrels", backend="mock", run_dir=run_dir)
    assert again["judge"]["eval_id"] == first["judge"]["eval_id"]  # nothing sent: the finished run read back
    assert (tmp_path / "a.qrels").read_bytes() == (tmp_path / "b.qrels").read_bytes()
    with pytest.raises(UsageError, match="already holds a run of another plan"):
        judge_documents(BENEFITS, tmp_path / "c.qrels", backend="mock", run_dir=run_dir, k=3)
    forced = judge_documents(
        BENEFITS, tmp_path / "c.qrels", backend="mock", run_dir=run_dir, k=3, foundry={"force": True}
    )
    assert forced["judge"]["eval_id"] != first["judge"]["eval_id"] and forced["counts"]["documents"] < 41
