"""The per-query rows, produced one at a time in dataset order and written as they are produced.

Each row joins a query's text facts (read back from the records pass), its local metrics and its Foundry scores,
and gets its stage (``_stages.attribute_stage``). A row is written to the per-query JSONL file at once; the
report keeps only the stage of every query (one byte each), the canaries, the ``worst`` rows of each stage and,
when the run has at most ``table_rows`` queries, every row (the HTML's per-query table).

The worst rows of a stage: most failed answer judges first, then the lowest mean of the answer judges' primary
scores (each scaled to 0–1 by its catalog range; a query without one counts as 1), then dataset order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._io import dumps
from ._columns import SCORED, STATUSES, LocalColumns, RecordRead, ScoreBlock, ScoreColumn
from ._model import LIST_CAP, STAGES, CanaryFlag
from ._stages import JudgeVerdict, Verdict, attribute_stage, missed_top_grade

__all__ = ["Judge", "RowInputs", "RowsOut", "stream_rows"]

_CHUNK = 4096  # rows whose local metrics are turned into Python values at once


@dataclass(frozen=True)
class Judge:
    """An answer criterion's primary metric column (``None``: no column) and its catalog range."""

    criterion: str
    column: ScoreColumn | None
    lo: float
    hi: float


@dataclass
class RowInputs:
    """What the rows are made of."""

    records: RecordRead
    local: LocalColumns  # every local metric column (n_rel included)
    scores: dict[str, ScoreColumn]
    judges: list[Judge]
    contradiction: np.ndarray  # bool per query: a negative query with a relevant-labelled top-k document
    hit_key: str
    grades: LocalColumns | None = None  # found, best (metrics.ranking.top_grades at the stage k)


@dataclass
class RowsOut:
    """What the report keeps of the rows."""

    stage: np.ndarray  # int8 index into STAGES, per query
    canaries: list[CanaryFlag] = field(default_factory=list)  # see Canaries.shown
    canary_counts: dict[str, int] = field(default_factory=dict)
    worst: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    kept: list[dict[str, Any]] | None = None
    search_partial: int = 0  # queries with a partial search miss (_stages.missed_top_grade)
    search_partial_ids: list[str] = field(default_factory=list)  # the first LIST_CAP of them


def _verdicts(
    judges: list[Judge], blocks: list[ScoreBlock | None], i: int
) -> tuple[list[JudgeVerdict], tuple[int, float]]:
    """The answer judges on query ``i`` (their columns' blocks) and its badness key (failed judges, mean scaled
    primary score)."""
    out: list[JudgeVerdict] = []
    failed, scaled = 0, []
    for j, block in zip(judges, blocks, strict=True):
        if block is None:
            out.append(JudgeVerdict(j.criterion, Verdict("missing", None)))
            continue
        status, p, score = block.verdict(i)
        passed = None if p < 0 else bool(p)
        out.append(JudgeVerdict(j.criterion, Verdict(STATUSES[status], passed)))
        if status == SCORED:
            failed += passed is False
            if score == score and j.hi > j.lo:
                scaled.append((score - j.lo) / (j.hi - j.lo))
    return out, (failed, sum(scaled) / len(scaled) if scaled else 1.0)


def _canary(query_id: str, canary: str, judges: list[JudgeVerdict]) -> CanaryFlag:
    """A judge canary: which answer judges passed (flagged it), failed (caught it) or did not score it."""
    passed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is True]
    failed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is False]
    unscored = [j.criterion for j in judges if j.score.status != "scored" or j.score.passed is None]
    caught = True if failed_by else (False if passed_by else None)
    return CanaryFlag(
        query_id=query_id, canary=canary, passed_by=passed_by, failed_by=failed_by, unscored=unscored, caught=caught
    )


@dataclass
class _Block:
    """``_CHUNK`` queries' inputs: the local metrics as one ``{key: value}`` per query (NaN → None), every Foundry
    column's block and the answer judges' blocks."""

    lo: int
    local: list[dict[str, float | None]]
    scores: dict[str, ScoreBlock]
    judges: list[ScoreBlock | None]
    grades: list[tuple[int, int]] | None  # (found, best) per query


def _blocks(inp: RowInputs) -> Iterator[_Block]:
    n = inp.records.arrays.n_queries
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        cols = {k: v.tolist() for k, v in inp.local.block(lo, hi).items()}
        local = [{k: (None if (x := c[j]) != x else x) for k, c in cols.items()} for j in range(hi - lo)]
        scores = {key: col.block(lo, hi) for key, col in inp.scores.items()}
        by_column = {id(col): scores[key] for key, col in inp.scores.items()}
        judges = [
            None if j.column is None else by_column.get(id(j.column)) or j.column.block(lo, hi) for j in inp.judges
        ]
        grades = None
        if inp.grades is not None:
            g = inp.grades.block(lo, hi)
            grades = list(zip(g["found"].astype(np.int64).tolist(), g["best"].astype(np.int64).tolist(), strict=True))
        yield _Block(lo, local, scores, judges, grades)


def _indexed(inp: RowInputs) -> Iterator[tuple[int, dict[str, float | None], _Block]]:
    for block in _blocks(inp):
        for j, local in enumerate(block.local):
            yield block.lo + j, local, block


def stream_rows(inp: RowInputs, write: Callable[[bytes], Any] | None, *, worst: int, keep_all: bool) -> RowsOut:
    """Every query's row, in dataset order: written with ``write`` (one JSON line each) as it is made."""
    arrays = inp.records.arrays
    n = arrays.n_queries
    out = RowsOut(np.zeros(n, np.int8), kept=[] if keep_all else None)
    heaps: dict[str, list[tuple[tuple[int, float, int], dict[str, Any]]]] = {s: [] for s in STAGES}
    stage_index = {s: k for k, s in enumerate(STAGES)}
    abstains = arrays.abstains
    facts = inp.records.iter_facts()
    canaries = _Canaries()
    for i, local, block in _indexed(inp):
        query, response, canary, dropped, checked, holes = next(facts)
        query_id, kind = arrays.query_ids[i], arrays.kinds[i]
        abstained = None if abstains[i] < 0 else bool(abstains[i] == 1)
        judges, (failed, scaled) = _verdicts(inp.judges, block.judges, i)
        hit = local.get(inp.hit_key)
        grades = None if block.grades is None else block.grades[i - block.lo]
        stage, reason = attribute_stage(
            kind=kind,
            hit=hit,
            assembly_checked=checked,
            dropped_relevant=dropped,
            has_response=response is not None,
            abstained=abstained,
            answer_judges=judges,
            label_contradiction=bool(inp.contradiction[i]),
            grades=grades,
        )
        partial = missed_top_grade(kind, hit, grades)
        row = {
            "row": i,
            "query_id": query_id,
            "kind": kind,
            "kind_source": arrays.kind_sources[i],
            "query": query,
            "response": response,
            "canary": canary,
            "local": local,
            "foundry": {key: b.row(i) for key, b in block.scores.items()},
            "abstained": abstained,
            "dropped_relevant": dropped,
            "holes": holes,
            "stage": stage,
            "stage_reason": reason,
            "search_partial": partial,
        }
        if write is not None:
            write(dumps(row) + b"\n")
        out.stage[i] = stage_index[stage]
        if partial:
            out.search_partial += 1
            if len(out.search_partial_ids) < LIST_CAP:
                out.search_partial_ids.append(query_id)
        if canary is not None:
            canaries.add(i, _canary(query_id, canary, judges))
        if out.kept is not None:
            out.kept.append(row)
        _push(heaps[stage], ((failed, -scaled, -i), row), worst)
    out.worst = {s: [r for _, r in sorted(h, reverse=True)] for s, h in heaps.items()}
    out.canaries, out.canary_counts = canaries.shown(), canaries.counts
    return out


class _Canaries:
    """Every canary counted; ``LIST_CAP`` of them kept: all when they fit, else those no judge caught first."""

    def __init__(self) -> None:
        self.counts = {"canaries": 0, "caught": 0, "not_caught": 0, "no_verdict": 0}
        self.missed: list[tuple[int, CanaryFlag]] = []
        self.caught: list[tuple[int, CanaryFlag]] = []

    def add(self, row: int, flag: CanaryFlag) -> None:
        self.counts["canaries"] += 1
        self.counts[{True: "caught", False: "not_caught", None: "no_verdict"}[flag.caught]] += 1
        kept = self.caught if flag.caught else self.missed
        if len(kept) < LIST_CAP:
            kept.append((row, flag))

    def shown(self) -> list[CanaryFlag]:
        """In dataset order when every canary fits, else the ones not caught (or without a verdict) first."""
        if self.counts["canaries"] <= LIST_CAP:
            return [f for _, f in sorted(self.missed + self.caught, key=lambda rf: rf[0])]
        return [f for _, f in (self.missed + self.caught)[:LIST_CAP]]


def _push(heap: list[Any], item: tuple[tuple[int, float, int], dict[str, Any]], limit: int) -> None:
    """Keep the ``limit`` items with the largest keys (the worst rows) in a min-heap."""
    if limit <= 0:
        return
    if len(heap) < limit:
        heapq.heappush(heap, item)
    elif item[0] > heap[0][0]:
        heapq.heapreplace(heap, item)
