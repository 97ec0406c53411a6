"""How many of a plan's judge calls the local backend's response cache already answers: what a re-run would not
send (``foundry_bridge.estimate`` reports it). The keys are the backend's own (``_judges.judge_key_parts``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..catalog import CATALOG
from ..mapping.plan import CriterionPlan
from ._backend import LocalBackend, _threshold
from ._cache import ResponseCache, cache_key
from ._judges import (
    JudgeConfig,
    call_inputs,
    evaluation_library_version,
    judge_key_parts,
    output_failure,
    prompt_fingerprint,
)

__all__ = ["cache_probe"]


def cache_probe(backend: LocalBackend, criteria: Sequence[CriterionPlan]) -> Callable[[int, dict[str, Any]], bool]:
    """``probe(criterion index, inputs)``: True when the cache holds a usable answer for that call (an answer the
    backend would take: present, unexpired, not a failed output), as ``LocalBackend`` looks it up."""
    cache = ResponseCache(backend.cache_dir, ttl=backend.cache_ttl)
    library = f"azure-ai-evaluation {evaluation_library_version()}"
    known: dict[int, tuple[JudgeConfig, str, Any]] = {}

    def probe(ci: int, inputs: dict[str, Any]) -> bool:
        crit = criteria[ci]
        spec = CATALOG[crit.evaluator]
        if ci not in known:
            known[ci] = (backend._judge_for(crit), prompt_fingerprint(spec), _threshold(spec, crit))
        judge, prompt, threshold = known[ci]
        sent, _ = call_inputs(spec, inputs)
        cached = cache.get(cache_key(judge_key_parts(judge, spec, library, prompt, threshold, sent)))
        return cached is not None and output_failure(spec, cached) is None

    return probe
