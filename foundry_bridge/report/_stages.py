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

__all__ = ["STAGE_RULES", "JudgeScore", "ScoreState", "attribute_stage", "judge_decided", "missed_top_grade"]

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
    "Besides the stage (which it does not change): a positive query with a relevant document in the top K but not "
    "one of its highest label (graded labels: a label-1 passage found, the label-3 one missed) is marked "
    "search (partial), and its reason names both labels.",
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


class ScoreState(NamedTuple):
    """A judge's status (scored, errored, missing) and pass/fail on one query: what the rules read of a score."""

    status: str
    passed: bool | None


@dataclass(frozen=True)
class JudgeScore:
    """One answer judge's primary metric on one query (a ``FoundryScore`` or a ``ScoreState``)."""

    criterion: str
    score: _Scored


def missed_top_grade(kind: str, hit: float | None, grades: tuple[int, int] | None) -> bool:
    """The partial search miss of ``STAGE_RULES``: a positive query with a relevant document in the top K
    (``hit`` > 0) whose best label there (``grades[0]``) is below its best label of all (``grades[1]``;
    ``metrics.ranking.top_grades``)."""
    return kind != "negative" and hit is not None and hit > 0 and grades is not None and grades[0] < grades[1]


def judge_decided(kind: str, stage: str, abstained: bool | None) -> bool:
    """The stage rests on the answer judges' verdicts (``STAGE_RULES``, positive rules 6 and 8): a positive query
    that is ok (every answer judge passed) or generation without an abstention (rule 5 decides that one on the
    response alone). Every other stage is decided by labels, the context or the abstention heuristic."""
    return kind != "negative" and (stage == "ok" or (stage == "generation" and abstained is not True))


def attribute_stage(
    *,
    kind: str,
    hit: float | None,
    assembly_checked: bool,
    dropped_relevant: Sequence[str],
    has_response: bool,
    abstained: bool | None,
    answer_judges: Sequence[JudgeScore],
    label_contradiction: bool = False,
    grades: tuple[int, int] | None = None,
) -> tuple[Stage, str]:
    """Return ``(stage, reason)`` per ``STAGE_RULES``. ``grades``: the best label in the top K and the best of the
    query's labels (``metrics.ranking.top_grades``); when the first is below the second (``missed_top_grade``) the
    reason ends with the partial search miss. Of ``dropped_relevant`` the rule reads whether it is empty, never
    which documents it holds; the reason names them joined by one separator (the report decides a run's queries
    once per distinct inputs and names each query's documents in its reason: ``_rows._decide``)."""
    stage, reason = _stage(
        kind=kind,
        hit=hit,
        assembly_checked=assembly_checked,
        dropped_relevant=dropped_relevant,
        has_response=has_response,
        abstained=abstained,
        answer_judges=answer_judges,
        label_contradiction=label_contradiction,
    )
    if grades is not None and missed_top_grade(kind, hit, grades):
        reason += (
            f"; search (partial): the highest-graded relevant document (label {grades[1]}) is not in the top k, "
            f"the best there has label {grades[0]}"
        )
    return stage, reason


def _stage(
    *,
    kind: str,
    hit: float | None,
    assembly_checked: bool,
    dropped_relevant: Sequence[str],
    has_response: bool,
    abstained: bool | None,
    answer_judges: Sequence[JudgeScore],
    label_contradiction: bool,
) -> tuple[Stage, str]:
    """The stage and reason of rules 1–8 (positive) and 1–4 (negative)."""
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
