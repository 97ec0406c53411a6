"""Stage attribution: for each query, which stage of the RAG pipeline to fix first.

A pure function of facts already computed elsewhere (local metrics, the assembly check, the abstention heuristic,
the answer judges' verdicts). The rules, checked in this order, are in ``STAGE_RULES``; they never guess: when a
fact needed for a decision is absent (no labels, no document content, a judge score errored or missing) the stage
is ``unknown`` and the reason says which fact was missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ._model import Stage

__all__ = ["STAGE_RULES", "JudgeVerdict", "Verdict", "attribute_stage"]

STAGE_RULES: list[str] = [
    "Positive queries, checked in order (K = stage_k, relevant ⇔ label ≥ relevance threshold):",
    "1. no relevance labels reach the threshold (hit@K undefined) → unknown (search cannot be checked)",
    "2. no relevant document in the top K → search",
    "3. the top K holds relevant documents but the documents have no content or the context is absent "
    "→ unknown (assembly cannot be checked)",
    "4. a relevant top-K document's text is not in the context that was sent → assembly",
    "5. the response abstains (heuristic phrase list) although the evidence was in the context → generation "
    "(a wrongly avoided answer)",
    "6. any answer judge (an evaluator whose inputs include the response) failed its threshold → generation",
    "7. any answer judge errored, is missing or gave no pass/fail, or no answer judge ran → unknown",
    "8. otherwise → ok",
    "Negative queries (the answer is not in the corpus):",
    "1. no response → unknown",
    "2. a top-K document carries a relevant label (the labels contradict the kind) → unknown",
    "3. the response abstains → ok (the correct answer to a negative query)",
    "4. the response answers anyway → generation (an answer the corpus cannot support)",
    "Judge scores never override rules 1–4 for positives: a failed judge on a query with a search or assembly "
    "fault is explained by that fault.",
]


class _Scored(Protocol):
    @property
    def status(self) -> str: ...
    @property
    def passed(self) -> bool | None: ...


class Verdict(NamedTuple):
    """A judge's status (scored, errored, missing) and pass/fail on one query: what the rules read of a score."""

    status: str
    passed: bool | None


@dataclass(frozen=True)
class JudgeVerdict:
    """One answer judge's primary metric on one query (a ``FoundryScore`` or a ``Verdict``)."""

    criterion: str
    score: _Scored


def attribute_stage(
    *,
    kind: str,
    hit: float | None,
    assembly_checked: bool,
    dropped_relevant: Sequence[str],
    has_response: bool,
    abstained: bool | None,
    answer_judges: Sequence[JudgeVerdict],
    label_contradiction: bool = False,
) -> tuple[Stage, str]:
    """Return ``(stage, reason)`` per ``STAGE_RULES``."""
    if kind == "negative":
        if not has_response or abstained is None:
            return "unknown", "negative query without a response: abstention cannot be checked"
        if label_contradiction:
            return "unknown", "negative query with a relevant-labelled document in the top k: labels contradict kind"
        if abstained:
            return "ok", "negative query answered with an abstention"
        return "generation", "negative query answered although the corpus holds no answer"

    if hit is None:
        return "unknown", "no relevance label reaches the threshold: search cannot be checked"
    if hit <= 0:
        return "search", "no relevant document in the top k"
    if not assembly_checked:
        return "unknown", "document content or context absent: assembly cannot be checked"
    if dropped_relevant:
        return "assembly", "relevant document(s) retrieved but not in the context: " + ", ".join(dropped_relevant)
    if has_response and abstained:
        return "generation", "evidence was in the context but the response abstained (wrongly avoided answer)"
    failed = [j.criterion for j in answer_judges if j.score.status == "scored" and j.score.passed is False]
    if failed:
        return "generation", "evidence was in the context but failed: " + ", ".join(failed)
    if not has_response:
        return "unknown", "no response"
    if not answer_judges:
        return "unknown", "no answer judge in the plan: generation cannot be checked"
    unsure = [
        f"{j.criterion} ({j.score.status if j.score.status != 'scored' else 'no pass/fail'})"
        for j in answer_judges
        if j.score.status != "scored" or j.score.passed is None
    ]
    if unsure:
        return "unknown", "answer judge(s) without a verdict: " + ", ".join(unsure)
    return "ok", "evidence in the context and every answer judge passed"
