"""The judge response cache: zero calls on a re-run, misses on any key change, TTL, atomic concurrent writes."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from local_helpers import benefits_plan, benefits_rule, by_key, clean_rule

from foundry_bridge.local import LocalBackend, ResponseCache, cache_key
from foundry_bridge.local.fake_judge import FakeJudgeServer
from foundry_bridge.runner_protocol import RunContext

ROWS = 6
N_JUDGE_CALLS = ROWS * 3


def plan6(mutate=None):
    return benefits_plan(mutate, limit=ROWS)


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer(clean_rule) as server:
        yield server


@pytest.fixture
def fresh_judge(judge: FakeJudgeServer) -> FakeJudgeServer:
    judge.rule = clean_rule
    judge.reset()
    return judge


def execute(backend: LocalBackend, plan, tmp_path: Path) -> list:
    return list(backend.execute(RunContext(plan=plan, run_dir=tmp_path)))


def dumps(rows: list) -> list[dict]:
    return [r.model_dump() for r in rows]


def test_second_identical_run_makes_no_calls_and_same_results(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c")
    first = execute(backend, plan6(), tmp_path)
    assert fresh_judge.calls == N_JUDGE_CALLS
    assert backend.stats["cache_stored"] == N_JUDGE_CALLS
    fresh_judge.reset()
    # a new backend object, as a new process would build
    again = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c")
    second = execute(again, plan6(), tmp_path)
    assert fresh_judge.calls == 0
    assert again.stats["cache_hits"] == N_JUDGE_CALLS and again.stats["judge_calls"] == 0
    assert dumps(second) == dumps(first)


def test_judge_model_change_misses_everything(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    a = execute(
        LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=cache),
        plan6(),
        tmp_path,
    )
    fresh_judge.reset()
    b = execute(
        LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="other-model", cache_dir=cache),
        plan6(),
        tmp_path,
    )
    assert fresh_judge.calls == N_JUDGE_CALLS
    assert {r.model for r in fresh_judge.requests} == {"other-model"}
    # the other model scores one lower (clean_rule): the cache did not serve the first model's answers
    ka, kb = by_key(a), by_key(b)
    assert kb[("q01", "relevance", "relevance")].score == ka[("q01", "relevance", "relevance")].score - 1


def test_changing_one_response_recalls_only_the_judges_that_read_it(
    fresh_judge: FakeJudgeServer, tmp_path: Path
) -> None:
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c")
    execute(backend, plan6(), tmp_path)
    fresh_judge.reset()

    def edit(items):
        items[4]["item"]["response"] = "Orthodontics is covered at 50% up to $1,500 per lifetime."

    execute(backend, plan6(edit), tmp_path)
    # groundedness and relevance read the response; retrieval (query + context) does not
    assert fresh_judge.calls == 2
    assert {r.kind for r in fresh_judge.requests} == {"groundedness", "relevance"}
    assert all("Orthodontics is covered" in r.data for r in fresh_judge.requests)


def test_threshold_change_misses_only_that_criterion(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c")
    execute(backend, plan6(), tmp_path)
    fresh_judge.reset()
    plan = plan6()
    plan.criteria = [
        c.model_copy(update={"init": {**c.init, "threshold": 5}}) if c.name == "relevance" else c for c in plan.criteria
    ]
    rows = execute(backend, plan, tmp_path)
    assert fresh_judge.calls == ROWS
    assert {r.kind for r in fresh_judge.requests} == {"relevance"}
    rel = by_key(rows)[("q01", "relevance", "relevance")]
    assert (rel.score, rel.threshold, rel.label) == (4.0, 5.0, "fail")


def test_failures_are_not_cached(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    fresh_judge.rule = benefits_rule  # one unparseable answer, one answer without a score
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c")
    first = execute(backend, benefits_plan(), tmp_path)
    assert sum(1 for r in first if r.error) == 2
    fresh_judge.reset()
    second = execute(backend, benefits_plan(), tmp_path)
    assert fresh_judge.calls == 2  # only the two failed calls are tried again
    assert dumps(second) == dumps(first)


def test_no_cache_option_calls_every_time_and_writes_nothing(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    backend = LocalBackend(
        judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=cache, use_cache=False
    )
    execute(backend, plan6(), tmp_path)
    execute(backend, plan6(), tmp_path)
    assert fresh_judge.calls == 2 * N_JUDGE_CALLS
    assert not cache.exists()


def test_ttl_expiry_calls_again(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    backend = LocalBackend(
        judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=cache, cache_ttl=3600
    )
    execute(backend, plan6(), tmp_path)
    fresh_judge.reset()
    execute(backend, plan6(), tmp_path)
    assert fresh_judge.calls == 0  # within the TTL
    # age five entries by two hours
    files = sorted(cache.glob("??/*.json"))[:5]
    for path in files:
        entry = orjson.loads(path.read_bytes())
        entry["created"] -= 7200
        path.write_bytes(orjson.dumps(entry))
    execute(backend, plan6(), tmp_path)
    assert fresh_judge.calls == 5
    # without a TTL the aged entries are still good
    fresh_judge.reset()
    for path in files:
        entry = orjson.loads(path.read_bytes())
        entry["created"] -= 7200
        path.write_bytes(orjson.dumps(entry))
    no_ttl = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=cache)
    execute(no_ttl, plan6(), tmp_path)
    assert fresh_judge.calls == 0


def test_entries_hold_no_api_key(fresh_judge: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-123")
    cache = tmp_path / "c"
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=cache)
    ctx = RunContext(plan=plan6(), run_dir=tmp_path)
    list(backend.execute(ctx))
    assert {r.headers.get("authorization") for r in fresh_judge.requests} == {"Bearer sk-very-secret-123"}
    blobs = b"".join(p.read_bytes() for p in cache.glob("??/*.json"))
    assert blobs and b"sk-very-secret" not in blobs
    assert "sk-very-secret" not in orjson.dumps(ctx.manifest).decode()
    assert "sk-very-secret" not in repr(backend)


def test_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key({"a": 1})
    cache.put(key, {"x": 1})
    cache.path(key).write_bytes(b'{"format": 1, "output": {"x"')  # truncated by hand
    assert cache.get(key) is None
    cache.put(key, {"x": 2})
    assert cache.get(key) == {"x": 2}


def test_ttl_with_a_clock(tmp_path: Path) -> None:
    now = [1000.0]
    cache = ResponseCache(tmp_path, ttl=60, clock=lambda: now[0])
    cache.put("ab" + "0" * 62, {"v": 1})
    now[0] += 59
    assert cache.get("ab" + "0" * 62) == {"v": 1}
    now[0] += 2
    assert cache.get("ab" + "0" * 62) is None
    with pytest.raises(ValueError):
        ResponseCache(tmp_path, ttl=0)


def test_key_is_canonical() -> None:
    assert cache_key({"a": 1, "b": [1, 2]}) == cache_key({"b": [1, 2], "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2})
    assert len(cache_key({})) == 64


def _hammer(directory: str, worker: int, rounds: int, queue) -> None:
    cache = ResponseCache(directory)
    bad = 0
    for i in range(rounds):
        key = cache_key({"k": i % 5})
        big = {"worker": worker, "i": i, "pad": "x" * 20000}
        cache.put(key, big)
        got = cache.get(cache_key({"k": (i + 1) % 5}))
        if got is not None and (len(got.get("pad", "")) != 20000):
            bad += 1
    queue.put(bad)


def test_concurrent_processes_never_see_partial_entries(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(str(tmp_path), w, 200, queue)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert sum(queue.get(timeout=5) for _ in procs) == 0
    cache = ResponseCache(tmp_path)
    assert len(cache) == 5
    assert not list(tmp_path.glob("??/*.tmp"))  # no temporary files left behind
    for i in range(5):
        assert len(cache.get(cache_key({"k": i}))["pad"]) == 20000


def test_prompt_or_library_change_misses(
    fresh_judge: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foundry_bridge.local import _backend

    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c")
    execute(backend, plan6(), tmp_path)
    fresh_judge.reset()
    monkeypatch.setattr(_backend, "prompt_fingerprint", lambda spec: "another prompt revision")
    execute(backend, plan6(), tmp_path)
    assert fresh_judge.calls == N_JUDGE_CALLS
    fresh_judge.reset()
    monkeypatch.setattr(_backend, "evaluation_library_version", lambda: "9.9.9")
    execute(backend, plan6(), tmp_path)
    assert fresh_judge.calls == N_JUDGE_CALLS
    fresh_judge.reset()
    execute(backend, plan6(), tmp_path)
    assert fresh_judge.calls == 0


def test_fully_cached_rerun_never_imports_the_evaluation_library(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    import subprocess
    import sys

    cache = tmp_path / "c"
    execute(
        LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model="judge-model", cache_dir=cache), plan6(), tmp_path
    )
    fresh_judge.reset()
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from local_helpers import benefits_plan
from foundry_bridge.local import LocalBackend
from foundry_bridge.runner_protocol import RunContext
backend = LocalBackend({fresh_judge.base_url!r}, "judge-model", cache_dir={str(cache)!r})
rows = list(backend.execute(RunContext(plan=benefits_plan(limit={ROWS}), run_dir={str(tmp_path)!r})))
print(backend.stats["cache_hits"], backend.stats["judge_calls"], "azure.ai.evaluation" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == [str(N_JUDGE_CALLS), "0", "False"]
    assert fresh_judge.calls == 0


def test_interrupted_run_keeps_the_answers_it_got(tmp_path: Path) -> None:
    with FakeJudgeServer(clean_rule) as own_judge:  # its own server: a late in-flight call cannot reach other tests
        backend = LocalBackend(
            judge_endpoint=own_judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c", concurrency=1
        )

        def interrupt(stage: str, done: int, total: int | None) -> None:
            if done >= 3:
                raise KeyboardInterrupt

        ctx = RunContext(plan=plan6(), run_dir=tmp_path, progress=interrupt)
        with pytest.raises(KeyboardInterrupt):
            list(backend.execute(ctx))
        assert own_judge.calls <= 4  # queued calls were cancelled (at most one was in flight)
        own_judge.reset()
        rows = execute(backend, plan6(), tmp_path)
        # the three answers received before Ctrl-C were kept (+1: the call in flight may land after reset())
        assert own_judge.calls <= N_JUDGE_CALLS - 3 + 1
        assert all(r.error is None for r in rows)
