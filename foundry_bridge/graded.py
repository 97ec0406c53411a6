"""Judge calls through Foundry's model graders (``label_model``, ``score_model``): items and grader criteria made
into a ``Plan`` and run by the runner, so they take the path every builtin evaluator takes — the same client,
upload, eval create, run, poll and output-item collection (``foundry/_backend.py``), on Foundry or on the emulator
through its transport — into a run folder of their own (resumable, its results kept). ``judge-docs`` grades
documents with it, and asks retrieval coverage and utilization.

A result is read back per (criterion, item): the ``ResultRow`` of the criterion's metric, or None when the run
returned none (a missing item is counted by the caller as unknown, never as a grade).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._io import dumps
from .catalog import LABEL_MODEL, SCORE_MODEL, EvaluatorSpec
from .errors import UsageError

__all__ = ["GRADER_BACKENDS", "Grader", "GraderRun", "run_graders"]

GRADER_BACKENDS = {"mock": "mock", "foundry": "cloud"}  # judge-docs' backend name → the runner's
_KINDS: dict[str, EvaluatorSpec] = {LABEL_MODEL.short_name: LABEL_MODEL, SCORE_MODEL.short_name: SCORE_MODEL}


@dataclass(frozen=True)
class Grader:
    """One grader criterion: ``kind`` ``label_model`` (``labels``, ``passing``) or ``score_model`` (``low``,
    ``high``, ``threshold``); ``messages`` the ``input`` (``{role, content}``, ``{{item.x}}`` templates)."""

    name: str
    kind: str
    messages: tuple[tuple[str, str], ...]
    labels: tuple[str, ...] = ()
    passing: tuple[str, ...] = ()
    low: float = 0.0
    high: float = 1.0
    threshold: float = 0.5

    @property
    def spec(self) -> EvaluatorSpec:
        return _KINDS[self.kind]

    def init(self, deployment: str) -> dict[str, Any]:
        """The criterion's ``initialization_parameters``, as the published contract requires them."""
        out: dict[str, Any] = {
            "deployment_name": deployment,
            "model": deployment,
            "name": self.name,
            "type": self.kind,
            "input": [{"role": role, "content": content} for role, content in self.messages],
        }
        if self.kind == LABEL_MODEL.short_name:
            return out | {"labels": list(self.labels), "passing_labels": list(self.passing)}
        return out | {"range": [self.low, self.high], "pass_threshold": self.threshold}

    @property
    def prompt_sha256(self) -> str:
        """SHA-256 of the messages as sent: kept with every label, so two runs' prompts can be told apart."""
        return hashlib.sha256(dumps([list(m) for m in self.messages])).hexdigest()


@dataclass
class GraderRun:
    """What ``run_graders`` got: per grader name, each item's ``ResultRow`` (None: no result), the judge deployment
    and the run's ids."""

    results: dict[str, list[Any]]
    deployment: str
    run_dir: Path
    eval_id: str | None
    run_ids: list[str] = field(default_factory=list)

    @property
    def ids(self) -> dict[str, Any]:
        """The run's folder and service ids, as a provenance records them."""
        return {"run_dir": str(self.run_dir), "eval_id": self.eval_id, "run_ids": self.run_ids}


def run_graders(
    items: Iterable[dict[str, Any]],
    graders: Sequence[Grader],
    *,
    backend: str,
    wire: Mapping[str, Any],
    name: str,
    suffix: str = "",
    progress: Callable[[str, int, int | None], None] | None = None,
) -> GraderRun:
    """Run ``graders`` over ``items`` (flat dicts holding the fields the messages' templates read) on ``backend``
    (``mock``: the emulator; ``foundry``: the project at ``wire['endpoint']`` or ``$AZURE_AI_PROJECT_ENDPOINT``)
    into the run folder ``wire['run_dir']`` + ``suffix``, as ``runner.run_evaluation`` runs a plan: a finished run
    of the same plan there is reused (nothing sent), an unfinished one continued with ``wire['resume']``, anything
    else refused unless ``wire['force']``. ``wire['judge_model']``: the judge model deployment the graders name
    (``mock-judge`` on the emulator by default); the rest of ``wire``: the runner's backend options."""
    from . import __version__
    from .mapping import load_mapping
    from .mapping.builder import build_eval_body
    from .mapping.plan import CriterionPlan, Plan, RowSpool
    from .runfolder import RunFolder
    from .runner import run_evaluation

    if backend not in GRADER_BACKENDS:
        raise UsageError(f"graders run on {' or '.join(GRADER_BACKENDS)}, not {backend!r}")
    deployment = wire.get("judge_model") or ("mock-judge" if backend == "mock" else None)
    if deployment is None:
        raise UsageError("judge-docs --backend foundry needs --judge-model: the judge model's deployment name")
    criteria = [CriterionPlan(name=g.name, evaluator=g.spec.name, init=g.init(deployment)) for g in graders]
    spool = RowSpool()
    for item in items:
        spool.append({"item": item})
    body = build_eval_body(criteria, name=name, metadata={"generator": f"foundry_bridge {__version__}"})
    plan = Plan(name=name, mapping=load_mapping(None), criteria=criteria, eval_body=body, items=spool.rows())
    opts = {k: v for k, v in wire.items() if k not in ("judge_model", "run_dir")}
    resume, force = bool(opts.pop("resume", False)), bool(opts.pop("force", False))
    run_dir = f"{os.fspath(wire['run_dir'])}{suffix}"
    summary = run_evaluation(
        plan, run_dir, GRADER_BACKENDS[backend], resume=resume, force=force, progress=progress, **opts
    )
    n = len(plan.items)
    results: dict[str, list[Any]] = {g.name: [None] * n for g in graders}
    metric = {g.name: g.spec.primary_metric for g in graders}
    for row in RunFolder(summary.run_dir).iter_results():
        if row.criterion in results and row.metric == metric[row.criterion] and 0 <= row.row < n:
            results[row.criterion][row.row] = row
    return GraderRun(results, deployment, summary.run_dir, summary.eval_id, list(summary.run_ids))
