"""Foundry's own comparison of runs (the Insights API's ``EvaluationComparison``), typed, and put beside the local
corrected tests with the disagreements flagged.

Wire format as azure-ai-projects 2.x's ``beta.insights`` (``mock._insights`` emulates it): ``POST
{endpoint}/insights?api-version=v1`` with ``Foundry-Features: Insights=V1Preview`` and the repeatability headers
→ 201 ``Insight``; then ``GET {endpoint}/insights/{id}`` until ``state`` is ``Succeeded`` (or ``Failed`` /
``Canceled``). The result holds, per (testing criterion, metric), the baseline's summary and one item per
treatment run (``pValue``, ``deltaEstimate``, ``treatmentEffect``); ``method`` names the service's test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import formatdate
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..errors import BackendError, UsageError
from ..runfolder import RunFolder

if TYPE_CHECKING:
    from ._client import FoundryClient

__all__ = [
    "INSIGHTS_FEATURE",
    "CompareItem",
    "ComparisonResult",
    "FoundryRuns",
    "FoundrySide",
    "Insight",
    "InsightMetricComparison",
    "InsightRunSummary",
    "LocalRow",
    "SideBySide",
    "beside_local",
    "compare_on_foundry",
    "generate_comparison",
    "get_insight",
    "request_comparison",
    "run_of",
]

INSIGHTS_FEATURE = "Insights=V1Preview"
INSIGHTS_API_VERSION = "v1"
_TERMINAL = ("Succeeded", "Failed", "Canceled")


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")


class InsightRunSummary(_Wire):
    run_id: str = Field(alias="runId")
    sample_count: int = Field(alias="sampleCount")
    average: float
    standard_deviation: float = Field(alias="standardDeviation")


class CompareItem(_Wire):
    treatment_run_id: str = Field(alias="treatmentRunId")
    treatment_run_summary: InsightRunSummary = Field(alias="treatmentRunSummary")
    delta_estimate: float = Field(alias="deltaEstimate")
    p_value: float = Field(alias="pValue")
    treatment_effect: str = Field(alias="treatmentEffect")


class InsightMetricComparison(_Wire):
    testing_criteria: str = Field(alias="testingCriteria")
    metric: str
    evaluator: str
    baseline_run_summary: InsightRunSummary = Field(alias="baselineRunSummary")
    compare_items: list[CompareItem] = Field(alias="compareItems")


class ComparisonResult(_Wire):
    type: str
    method: str
    comparisons: list[InsightMetricComparison]


class Insight(_Wire):
    id: str
    state: str
    display_name: str = Field(alias="displayName")
    request: dict[str, Any]
    metadata: dict[str, Any] | None = None
    result: ComparisonResult | None = None


def _url(client: FoundryClient, *parts: str) -> str:
    from urllib.parse import quote

    return "/".join([f"{client.endpoint}/insights", *(quote(p, safe="") for p in parts)])


def _headers() -> dict[str, str]:
    return {
        "Foundry-Features": INSIGHTS_FEATURE,
        "Repeatability-Request-ID": str(uuid.uuid4()),
        "Repeatability-First-Sent": formatdate(usegmt=True),
    }


def generate_comparison(
    client: FoundryClient,
    eval_id: str,
    baseline_run_id: str,
    treatment_run_ids: Sequence[str],
    *,
    display_name: str | None = None,
) -> Insight:
    """Ask for the comparison (``POST /insights``); the answer is usually still ``NotStarted``/``Running``."""
    body = {
        "displayName": display_name or f"foundry-bridge: {baseline_run_id} vs {', '.join(treatment_run_ids)}",
        "request": {
            "type": "EvaluationComparison",
            "evalId": eval_id,
            "baselineRunId": baseline_run_id,
            "treatmentRunIds": list(treatment_run_ids),
        },
    }
    params = {"api-version": INSIGHTS_API_VERSION}
    response = client._request("POST", _url(client), json=body, params=params, headers=_headers())
    return client._parse(Insight, response)


def get_insight(client: FoundryClient, insight_id: str) -> Insight:
    headers = {"Foundry-Features": INSIGHTS_FEATURE}
    params = {"api-version": INSIGHTS_API_VERSION}
    return client._parse(Insight, client._request("GET", _url(client, insight_id), params=params, headers=headers))


def compare_on_foundry(
    client: FoundryClient,
    eval_id: str,
    baseline_run_id: str,
    treatment_run_ids: Sequence[str],
    *,
    display_name: str | None = None,
    max_polls: int = 120,
) -> Insight:
    """Generate the comparison and poll it (``client.poll_interval``, through ``client.sleep``) until it has
    finished; ``BackendError`` when it failed, was canceled or did not finish in ``max_polls``."""
    insight = generate_comparison(client, eval_id, baseline_run_id, treatment_run_ids, display_name=display_name)
    for _ in range(max_polls):
        if insight.state in _TERMINAL:
            break
        client.sleep(client.poll_interval)
        insight = get_insight(client, insight.id)
    if insight.state != "Succeeded" or insight.result is None:
        raise BackendError(
            f"Foundry's comparison {insight.id} ended {insight.state!r}"
            + ("" if insight.state in _TERMINAL else f" (not finished after {max_polls} polls)")
            + "; the local comparison stands alone"
        )
    return insight


def run_of(run_dir: str | os.PathLike[str]) -> tuple[str, str]:
    """``(eval id, run id)`` of a run folder made on Foundry (or the emulator): what the comparison names. A folder
    split over several service runs, or without ids, cannot be compared by Foundry (``UsageError``): the request
    takes one baseline run and treatment runs that are each compared with it, so the parts of a split run would be
    compared one by one, never as the one sample they are."""
    state = RunFolder(run_dir).read_state()
    ids = state.run_ids if state is not None else []
    if state is None or not state.eval_id or len(ids) != 1:
        why = "it has no service run" if not ids else f"it was run as {len(ids)} service runs"
        rows = sum(p.count for p in state.runs or []) if state is not None else 0
        fix = "" if not ids else f"; run it again as one run with --max-rows-per-run {rows} or more"
        raise UsageError(f"{run_dir}: Foundry cannot compare this run folder: {why} (one eval run is needed{fix})")
    return state.eval_id, ids[0]


_IN_PROCESS = (
    "was run on the in-process emulator (--backend mock), whose evals and runs ended with that process, so nothing "
    "can compare them any more; serve the emulator with `foundry-bridge mock-server` and run with --backend cloud "
    "--endpoint http://127.0.0.1:PORT/api/projects/mock-project (the candidates with --eval-id of the baseline's "
    "eval)"
)


@dataclass(frozen=True)
class FoundryRuns:
    """The runs ``compare --foundry`` asks Foundry about, and its answer: ``insight`` when the comparison
    succeeded, else ``error`` (the service's own failure: the local comparison stands alone)."""

    endpoint: str
    eval_id: str
    run_ids: list[str]  # per run folder, the baseline first
    insight: Insight | None
    error: str | None = None

    def beside(self, labels: Sequence[str], local_rows: Iterable[LocalRow]) -> FoundrySide:
        """The answer beside the local rows (``beside_local``); ``labels`` name the run folders in order."""
        ids = dict(zip(labels, self.run_ids, strict=True))
        insight, result = self.insight, self.insight.result if self.insight is not None else None
        rows = beside_local(insight, local_rows, ids) if insight is not None and result is not None else []
        return FoundrySide(
            endpoint=self.endpoint,
            eval_id=self.eval_id,
            insight_id=insight.id if insight is not None else None,
            method=result.method if result is not None else None,
            run_ids=ids,
            rows=rows,
            disagreements=sum(1 for r in rows if r.agree is False),
            error=self.error,
        )


@dataclass(frozen=True)
class FoundrySide:
    """What ``compare`` shows of Foundry's comparison (``report.FoundryComparison`` reads it)."""

    endpoint: str
    eval_id: str
    insight_id: str | None
    method: str | None
    run_ids: dict[str, str]  # local label → Foundry run id
    rows: list[SideBySide]
    disagreements: int
    error: str | None


def _foundry_run(run: object) -> tuple[str, str, str]:
    """``(endpoint, eval id, run id)`` of a run folder Foundry can compare, or a ``UsageError`` saying why not."""
    if not isinstance(run, str | os.PathLike):
        raise UsageError("--foundry compares run folders (a built report has no service runs)")
    state = RunFolder(run).read_state()
    backend = state.backend if state is not None else None
    if backend == "mock":
        raise UsageError(f"{run} {_IN_PROCESS}")
    if backend == "local":
        raise UsageError(f"{run} was judged here (--backend local): Foundry has no run of it; use --backend cloud")
    eval_id, run_id = run_of(run)
    endpoint = state.endpoint if state is not None else None
    if not endpoint:
        raise UsageError(f"{run}: state.json records no Foundry endpoint, so Foundry cannot be asked about it")
    return endpoint, eval_id, run_id


def request_comparison(
    runs: Sequence[object], *, credential: Any = None, transport: Any = None, max_polls: int = 120
) -> FoundryRuns:
    """Ask Foundry (or a loopback emulator) to compare run folders: the first is the baseline, the others the
    treatments. Refused (``UsageError``, before any request) unless every folder is one service run of the same
    eval on the same endpoint. ``credential``: default ``DefaultAzureCredential``. A comparison the service fails
    or does not finish is returned with ``error`` set; an unreachable endpoint or a refused request is a
    ``BackendError``."""
    from azure.core.exceptions import AzureError, ClientAuthenticationError

    from . import default_credential  # the package's name: what a test or an embedding application replaces
    from ._client import FoundryClient, validate_endpoint

    found = [_foundry_run(r) for r in runs]
    (endpoint, eval_id, base), treatments = found[0], [run_id for _e, _v, run_id in found[1:]]
    _same_eval(runs, found)
    try:
        with FoundryClient(validate_endpoint(endpoint), credential or default_credential(), transport=transport) as c:
            insight = compare_on_foundry(c, eval_id, base, treatments, max_polls=max_polls)
    except BackendError as exc:
        return FoundryRuns(endpoint, eval_id, [base, *treatments], None, str(exc))
    except ClientAuthenticationError as exc:
        raise BackendError(f"Foundry's comparison: no credentials for {endpoint}: {exc}") from exc
    except AzureError as exc:
        raise BackendError(f"Foundry's comparison could not be requested: {exc}") from exc
    return FoundryRuns(endpoint, eval_id, [base, *treatments], insight)


def _same_eval(runs: Sequence[object], found: Sequence[tuple[str, str, str]]) -> None:
    """Foundry compares the runs of one eval on one project."""
    endpoint, eval_id, _ = found[0]
    for run, (other_endpoint, other_eval, _r) in zip(runs[1:], found[1:], strict=True):
        if other_endpoint != endpoint:
            raise UsageError(f"{run} ran on {other_endpoint}, {runs[0]} on {endpoint}: Foundry compares one project")
        if other_eval != eval_id:
            raise UsageError(
                f"{run} is in eval {other_eval}, the baseline {runs[0]} in eval {eval_id}: Foundry compares runs of "
                f"one eval; re-run the candidate with `--eval-id {eval_id}`"
            )


# -- beside the local comparison -----------------------------------------------------------------------------------


class LocalRow(Protocol):
    """What ``beside_local`` reads of a local comparison row (``report._foundry.LocalLine`` has it)."""

    @property
    def candidate(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def criterion(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def test(self) -> str: ...
    @property
    def verdict(self) -> str: ...
    @property
    def delta(self) -> float | None: ...
    @property
    def p_adjusted(self) -> float | None: ...


# the local verdict → the treatment effect that says the same
_AS_EFFECT = {
    "better": "Improved",
    "worse": "Degraded",
    "changed": "Changed",
    "no significant change": "Inconclusive",
    "within judge noise": "Inconclusive",
    "too few paired queries": "TooFewSamples",
    "not comparable": "TooFewSamples",
}


@dataclass(frozen=True)
class SideBySide:
    """One (candidate, criterion, metric): Foundry's verdict, the local one, and whether they agree."""

    candidate: str
    criterion: str
    metric: str
    foundry_effect: str | None
    foundry_p: float | None
    foundry_delta: float | None
    local_verdict: str | None
    local_test: str | None
    local_p_adjusted: float | None
    local_delta: float | None
    agree: bool | None  # None: only one side compared it
    note: str


def _agree(effect: str, verdict: str) -> bool:
    """Same call: equal effects, or a direction-neutral "Changed" on either side against a significant change."""
    local = _AS_EFFECT.get(verdict, verdict)
    changed = {"Improved", "Degraded", "Changed"}
    return local == effect or (effect in changed and local in changed and "Changed" in (effect, local))


def _note(effect: str, verdict: str, agree: bool) -> str:
    if agree:
        return "same verdict"
    if verdict == "within judge noise":
        return "Foundry's test does not know the judge's own noise: the local side calls this change noise"
    if effect in ("Improved", "Degraded", "Changed") and verdict == "no significant change":
        return "significant for Foundry (one metric, unpaired) but not after the local paired test and correction"
    if effect == "Inconclusive" and verdict in ("better", "worse", "changed"):
        return "the paired local test finds a change Foundry's test does not"
    if "TooFewSamples" in (effect, _AS_EFFECT.get(verdict)):
        return "one side had too few samples to test"
    return "opposite directions"


def beside_local(insight: Insight, local_rows: Iterable[LocalRow], run_ids: Mapping[str, str]) -> list[SideBySide]:
    """Foundry's comparison beside the local one: ``run_ids`` maps each local candidate label to its Foundry run id;
    a local row (a score row: the caller leaves the ``/pass`` rows out) is matched by candidate, criterion and
    metric. Rows only one side compared are listed with ``agree=None``."""
    if insight.result is None:
        raise ValueError(f"insight {insight.id} has no result (state {insight.state!r})")
    label_of = {run: label for label, run in run_ids.items()}
    local = {(r.candidate, r.criterion, r.metric): r for r in local_rows}
    out: list[SideBySide] = []
    for comp in insight.result.comparisons:
        for item in comp.compare_items:
            label = label_of.get(item.treatment_run_id, item.treatment_run_id)
            where = (label, comp.testing_criteria, comp.metric)
            foundry = (item.treatment_effect, item.p_value, item.delta_estimate)
            row = local.pop(where, None)
            if row is None:
                out.append(SideBySide(*where, *foundry, None, None, None, None, None, "not compared locally"))
                continue
            agree = _agree(item.treatment_effect, row.verdict)
            note = _note(item.treatment_effect, row.verdict, agree)
            out.append(SideBySide(*where, *foundry, row.verdict, row.test, row.p_adjusted, row.delta, agree, note))
    note = "not in Foundry's comparison"
    for where, row in local.items():
        out.append(SideBySide(*where, None, None, None, row.verdict, row.test, row.p_adjusted, row.delta, None, note))
    return out
