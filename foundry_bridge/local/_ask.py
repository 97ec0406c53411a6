"""Judge calls with a prompt of the caller's own (not one of azure-ai-evaluation's): one chat completion per request
through the OpenAI client, against a ``LocalBackend``'s endpoint and model, with its response cache, its request
limits (``RequestLimits``: per-request timeout, bounded retries, a total deadline on every answer) and its
give-up rule (``give_up_after`` transient failures in a row: the rest are not sent, ``JUDGE_NOT_CALLED``).

A request's cache key holds the judge's identity (never its key), the task name and both messages; only an answer
that ``parse`` accepts is cached. Failures come back as ``CODE: cause`` texts (``describe_exception``'s codes).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import UsageError
from ._backend import _CALL_SLACK, LocalBackend, is_transient
from ._cache import CACHE_FORMAT, ResponseCache, cache_key
from ._judges import JudgeConfig, _total_deadline, describe_exception

__all__ = ["ask_judge", "cached_answers", "judge_config"]

Answer = dict[str, Any] | str  # the parsed answer, or why there is none
_AZURE_API_VERSION = "2024-10-21"
_AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"


def judge_config(backend: LocalBackend) -> JudgeConfig:
    """The backend's endpoint and model as a ``JudgeConfig``; a ``UsageError`` naming the option when one is missing."""
    if not backend.judge_endpoint or not backend.judge_model:
        missing = "--judge-endpoint" if not backend.judge_endpoint else "--judge-model"
        raise UsageError(f"the local judge needs {missing} (an OpenAI-compatible base URL and its model name)")
    return JudgeConfig(
        backend.judge_endpoint, backend.judge_model, backend.azure, backend.api_key_env, backend.api_version
    )


def _client(backend: LocalBackend, judge: JudgeConfig) -> Any:
    import openai

    retries, timeout = backend.limits.retries, backend.limits.timeout
    config = judge.model_config()
    client: Any
    if not judge.azure:
        client = openai.AsyncOpenAI(
            base_url=config["base_url"], api_key=config["api_key"], max_retries=retries, timeout=timeout
        )
    else:
        provider = None
        if "api_key" not in config:
            from azure.identity import get_bearer_token_provider

            provider = get_bearer_token_provider(backend._credential([judge]), _AZURE_SCOPE)
        client = openai.AsyncAzureOpenAI(
            azure_endpoint=judge.endpoint,
            api_version=judge.api_version or os.environ.get("OPENAI_API_VERSION") or _AZURE_API_VERSION,
            api_key=config.get("api_key"),
            azure_ad_token_provider=provider,
            max_retries=retries,
            timeout=timeout,
        )
    _total_deadline(client._client, timeout)
    return client


def ask_judge(
    backend: LocalBackend,
    requests: Sequence[tuple[str, str]],
    *,
    task: str,
    parse: Callable[[str], dict[str, Any]],
    progress: Callable[[int, int], None] | None = None,
    max_tokens: int | None = None,
) -> list[Answer]:
    """One answer per ``(system, user)`` request, in order: ``parse(content)`` of the judge's message (it raises
    ``ValueError`` for an answer it cannot read: ``JUDGE_UNPARSEABLE``) or a ``CODE: cause`` text. Identical
    requests are asked once. ``backend.stats`` gets ``judge_tasks``, ``cache_hits``, ``judge_calls``,
    ``judge_errors``, ``judge_not_called``; ``progress(done, total)`` after each answer. ``max_tokens``: the
    answer's ceiling, sent with each request (what the cost estimate counts as its output bound)."""
    judge = judge_config(backend)
    cache = ResponseCache(backend.cache_dir, ttl=backend.cache_ttl) if backend.use_cache else None
    parts, keys = _keys(judge, requests, task)
    answers: dict[str, Answer] = {}
    for key in keys:
        cached = cache.get(key) if cache is not None and key not in answers else None
        if cached is not None:
            answers[key] = cached
    todo = {key: i for i, key in enumerate(keys) if key not in answers}
    stats = {"judge_tasks": len(keys), "cache_hits": len(keys) - sum(1 for k in keys if k in todo)}
    stats |= {"judge_calls": 0, "judge_errors": 0, "judge_not_called": 0}
    if todo:
        asyncio.run(_ask_all(backend, judge, requests, todo, parse, answers, stats, progress, max_tokens))
    for key, i in todo.items():
        answer = answers[key]
        if cache is not None and isinstance(answer, dict):
            with contextlib.suppress(OSError):  # a cache that cannot be written never fails the labelling
                cache.put(key, answer, key_parts=parts[i])
    out = [answers[key] for key in keys]
    stats["judge_errors"] = sum(1 for a in out if isinstance(a, str))
    backend.stats = stats
    return out


def _keys(judge: JudgeConfig, requests: Sequence[tuple[str, str]], task: str) -> tuple[list[Any], list[str]]:
    parts = [
        {"cache_format": CACHE_FORMAT, "judge": judge.identity(), "task": task, "messages": list(r)} for r in requests
    ]
    return parts, [cache_key(p) for p in parts]


def cached_answers(backend: LocalBackend, requests: Sequence[tuple[str, str]], *, task: str) -> int:
    """How many of ``requests`` the response cache answers (what ``ask_judge`` would not send)."""
    if not backend.use_cache:
        return 0
    cache = ResponseCache(backend.cache_dir, ttl=backend.cache_ttl)
    return sum(cache.get(key) is not None for key in set(_keys(judge_config(backend), requests, task)[1]))


async def _ask_all(
    backend: LocalBackend,
    judge: JudgeConfig,
    requests: Sequence[tuple[str, str]],
    todo: dict[str, int],
    parse: Callable[[str], dict[str, Any]],
    answers: dict[str, Answer],
    stats: dict[str, int],
    progress: Callable[[int, int], None] | None,
    max_tokens: int | None = None,
) -> None:
    client = _client(backend, judge)
    gate = asyncio.Semaphore(backend.concurrency)
    deadline = backend.limits.worst_case + _CALL_SLACK
    failing: list[str] = []  # the causes of the transient failures in a row
    done = [len(requests) - len(todo)]

    async def one(key: str, system: str, user: str) -> None:
        async with gate:
            limit = backend.give_up_after
            if limit is not None and len(failing) >= limit:
                stats["judge_not_called"] += 1
                answers[key] = (
                    f"JUDGE_NOT_CALLED: the judge failed {len(failing)} calls in a row, so this one was not "
                    f"sent (last cause: {failing[-1]}); fix the judge, then run again (answers so far are cached)"
                )
            else:
                answer = await _one(client, judge.model, system, user, parse, deadline, backend, max_tokens)
                answers[key] = answer
                stats["judge_calls"] += 1
                error = answer if isinstance(answer, str) else None
                failing[:] = [*failing, error] if error is not None and is_transient(error) else []
            done[0] += 1
            if progress is not None:
                progress(done[0], len(requests))

    try:
        await asyncio.gather(*(one(key, *requests[i]) for key, i in todo.items()))
    finally:
        await client.close()


async def _one(
    client: Any,
    model: str,
    system: str,
    user: str,
    parse: Callable[[str], dict[str, Any]],
    deadline: float,
    backend: LocalBackend,
    max_tokens: int | None = None,
) -> Answer:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    ceiling = {} if max_tokens is None else {"max_tokens": max_tokens}
    try:
        call = client.chat.completions.create(model=model, messages=messages, temperature=0, **ceiling)
        reply = await asyncio.wait_for(call, deadline)
        content = reply.choices[0].message.content or ""
    except Exception as exc:
        return describe_exception(exc, timeout=deadline, request_timeout=backend.limits.timeout)
    try:
        return parse(content)
    except ValueError as exc:
        return f"JUDGE_UNPARSEABLE: {exc}"
