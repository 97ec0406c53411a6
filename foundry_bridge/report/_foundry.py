"""Foundry's own comparison beside the local one, as ``compare --foundry`` shows it (JSON field
``foundry_comparison``, a Markdown section).

The report layer does not talk to Foundry: ``compare_runs(..., foundry=request)`` takes the request as a function
(``foundry._insights.request_comparison``), called with the run folders before the local comparison, so a run
Foundry cannot compare is refused before any work; its answer's ``beside(labels, local_rows)`` (the comparison's
positive Foundry score rows, ``LocalLine``) is read here into ``FoundryComparison``. Nothing of it reaches the gate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from ._format import fmt_num, md_escape, md_table

__all__ = [
    "FoundryAnswer",
    "FoundryComparison",
    "FoundryRequest",
    "FoundryRow",
    "LocalLine",
    "beside_foundry",
    "render_foundry_markdown",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", from_attributes=True)


class LocalLine(_Model):
    """One local comparison row of a Foundry metric (positive queries), as Foundry's comparison is put beside it:
    ``key`` is the report key, ``criterion``/``metric`` Foundry's names, ``score`` False for a ``/pass`` row."""

    candidate: str
    key: str
    criterion: str
    metric: str
    score: bool
    test: str
    verdict: str
    delta: float | None
    p_adjusted: float | None


class FoundryAnswer(Protocol):
    """What the request returns: its answer, put beside the local rows on demand."""

    def beside(self, labels: Sequence[str], local_rows: Sequence[LocalLine]) -> object: ...


FoundryRequest = Callable[[Sequence[object]], FoundryAnswer]


class FoundryRow(_Model):
    """One (candidate, criterion, metric): Foundry's verdict, the local one, and whether they agree."""

    candidate: str
    criterion: str
    metric: str
    foundry_effect: str | None = Field(description="Foundry's treatmentEffect")
    foundry_p: float | None = Field(description="Foundry's pValue")
    foundry_delta: float | None = Field(description="Foundry's deltaEstimate (treatment − baseline)")
    local_verdict: str | None
    local_test: str | None
    local_p_adjusted: float | None
    local_delta: float | None
    agree: bool | None = Field(description="None: only one side compared it")
    note: str


class FoundryComparison(_Model):
    """Foundry's ``EvaluationComparison`` of the same runs beside the local rows; never part of the gate."""

    endpoint: str
    eval_id: str
    insight_id: str | None
    method: str | None = Field(description="the test Foundry says it used")
    run_ids: dict[str, str] = Field(description="run label → Foundry run id")
    rows: list[FoundryRow]
    disagreements: int = Field(description="rows where Foundry and the local test reach different verdicts")
    error: str | None = Field(description="why Foundry gave no comparison (the local one stands alone)")


def beside_foundry(
    answer: FoundryAnswer | None, labels: Sequence[str], rows: Sequence[LocalLine]
) -> FoundryComparison | None:
    """The answer beside the local score rows (Foundry compares scores, not pass rates)."""
    if answer is None:
        return None
    return FoundryComparison.model_validate(answer.beside(labels, [r for r in rows if r.score]))


def render_foundry_markdown(fc: FoundryComparison) -> str:
    """The side-by-side table, disagreements marked ⚠ and counted."""
    lines = ["### Foundry's comparison beside the local one", ""]
    lines.append(f"Eval `{md_escape(fc.eval_id)}` on {md_escape(fc.endpoint)}; not part of the gate.")
    if fc.error:
        return "\n".join([*lines, "", f"> ⚠️ {md_escape(fc.error)}", ""])
    if fc.method:
        lines += ["", f"Foundry's method: {md_escape(fc.method)}."]
    head = ["candidate", "metric", "Foundry", "p", "Δ", "local", "adjusted p", "Δ", "agree"]
    rows = []

    def p(v: float | None) -> str:
        return "–" if v is None else f"{v:.3g}"

    for r in fc.rows:
        mark = "–" if r.agree is None else ("yes" if r.agree else f"⚠ no: {r.note}")
        cells = [r.candidate, f"{r.criterion}:{r.metric}", r.foundry_effect or "–", p(r.foundry_p)]
        cells += [fmt_num(r.foundry_delta), r.local_verdict or "–", p(r.local_p_adjusted)]
        cells += [fmt_num(r.local_delta), mark]
        rows.append([md_escape(c) for c in cells])
    lines += ["", *md_table(head, rows), "", f"{fc.disagreements} disagreement(s).", ""]
    return "\n".join(lines)
