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

from .._io import loads
from ..columns import RunColumns, _quote, no_cells, string_spans
from ._columns import SCORED, STATUSES, Index, ScoreColumn, score_fields
from ._model import LIST_CAP, STAGES, CanaryFlag
from ._stages import JudgeScore, ScoreState, attribute_stage, missed_top_grade

__all__ = ["Judge", "RowInputs", "RowsOut", "stream_rows"]

_BLOCK = 8192  # rows whose columns are fetched from the engine at once


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

    run: RunColumns
    index: Index
    local_keys: list[str]  # every local metric column (n_rel included)
    scores: dict[str, ScoreColumn]
    judges: list[Judge]
    hit_key: str


@dataclass
class RowsOut:
    """What the report keeps of the rows."""

    stage: np.ndarray  # int8 index into STAGES, per query
    canaries: list[CanaryFlag] = field(default_factory=list)  # see Canaries.shown
    canary_counts: dict[str, int] = field(default_factory=dict)
    worst: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    kept: list[dict[str, Any]] | None = None
    stage_ids: dict[str, list[str]] = field(default_factory=dict)  # the first LIST_CAP query ids of each stage
    search_partial: int = 0  # queries with a partial search miss (_stages.missed_top_grade)
    search_partial_ids: list[str] = field(default_factory=list)  # the first LIST_CAP of them


def _canary(query_id: str, canary: str, judges: list[JudgeScore]) -> CanaryFlag:
    """A judge canary: which answer judges passed (flagged it), failed (caught it) or did not score it."""
    passed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is True]
    failed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is False]
    unscored = [j.criterion for j in judges if j.score.status != "scored" or j.score.passed is None]
    caught = True if failed_by else (False if passed_by else None)
    return CanaryFlag(
        query_id=query_id, canary=canary, passed_by=passed_by, failed_by=failed_by, unscored=unscored, caught=caught
    )


_FACTS = "query_id, kind, canary, dropped_relevant, checked, contradiction, found, best, response IS NOT NULL"


@dataclass
class _Block:
    """A block of rows: the facts the stage rules read (one list per column), the hit column, every Foundry
    column's result cells (one query), and the answer judges' per-query fields."""

    lo: int
    hi: int
    facts: list[list[Any]]
    hit: list[float | None]
    cells: dict[tuple[str, str], dict[str, np.ndarray]]
    made: dict[int, dict[str, Any]] = field(default_factory=dict)

    def fields(self, col: ScoreColumn) -> dict[str, Any]:
        """``col``'s fields on the block (``ScoreColumn.fields`` of its cells), made once."""
        got = self.made.get(id(col))
        if got is None:
            cells = self.cells.get((col.criterion, col.metric))
            got = self.made[id(col)] = col.fields(
                self.lo, self.hi, no_cells(self.hi - self.lo) if cells is None else cells
            )
        return got

    def judges(self, judges: list[Judge]) -> list[dict[str, Any] | None]:
        return [None if j.column is None else self.fields(j.column) for j in judges]


def _blocks(inp: RowInputs) -> Iterator[_Block]:
    n = inp.run.n_queries
    hit = _quote(inp.hit_key)
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        got = inp.run.arrow(f"SELECT {_FACTS}, {hit} FROM queries WHERE row >= ? AND row < ? ORDER BY row", [lo, hi])
        *facts, hits = (c.to_pylist() for c in got.columns)  # a column at a time: a third faster than row tuples
        hits = [None if (x is None or x != x) else x for x in hits]
        yield _Block(lo, hi, facts, hits, inp.run.block_cells(lo, hi))


def _badness(judges: list[Judge], fields: list[dict[str, Any] | None], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query of a block: the answer judges that failed, and the mean of their primary scores scaled to 0–1
    by each judge's catalog range (1 where none)."""
    failed, total, count = np.zeros(n, np.int64), np.zeros(n), np.zeros(n, np.int64)
    for judge, f in zip(judges, fields, strict=True):
        if f is None:
            continue
        scored = f["status"] == SCORED
        failed += scored & (f["passed"] == 0)
        if judge.hi > judge.lo:
            ok = scored & ~np.isnan(f["score"])
            total += np.where(ok, (f["score"] - judge.lo) / (judge.hi - judge.lo), 0.0)
            count += ok
    return failed, np.divide(total, count, out=np.ones(n), where=count > 0)


_REMEMBERED = 4096  # distinct stage inputs kept at most (a run has a handful; the memo is emptied when full)


class _Stages:
    """``attribute_stage`` on each query, remembered by its inputs (few distinct ones in a large run). A query with
    dropped documents is decided afresh: its reason names them, so its inputs are its own and remembering them
    would grow with the run."""

    def __init__(self, judges: list[Judge]) -> None:
        self.judges = judges
        self.seen: dict[tuple[Any, ...], tuple[str, str]] = {}
        self.made: dict[tuple[tuple[int, int], ...], list[JudgeScore]] = {}

    def verdicts(self, codes: tuple[tuple[int, int], ...]) -> list[JudgeScore]:
        """The answer judges' verdicts from their (status, passed) codes (-1: missing / none)."""
        got = self.made.get(codes)
        if got is None:
            got = self.made[codes] = [
                JudgeScore(j.criterion, ScoreState("missing" if s < 0 else STATUSES[s], None if p < 0 else bool(p)))
                for j, (s, p) in zip(self.judges, codes, strict=True)
            ]
        return got

    def __call__(self, key: tuple[Any, ...]) -> tuple[str, str]:
        if key[3]:  # dropped documents
            return self._decide(key)
        got = self.seen.get(key)
        if got is None:
            if len(self.seen) >= _REMEMBERED:
                self.seen.clear()
            got = self.seen[key] = self._decide(key)
        return got

    def _decide(self, key: tuple[Any, ...]) -> tuple[str, str]:
        kind, hit, checked, dropped, has_response, abstained, codes, contradiction, grades = key
        return attribute_stage(
            kind=kind,
            hit=hit,
            assembly_checked=checked,
            dropped_relevant=dropped,
            has_response=has_response,
            abstained=abstained,
            answer_judges=self.verdicts(codes),
            label_contradiction=contradiction,
            grades=grades,
        )


def stream_rows(inp: RowInputs, write: Callable[[Any], Any] | None, *, worst: int, keep_all: bool) -> RowsOut:
    """Every query's row, in dataset order: written with ``write`` (JSON lines) a block at a time.

    The stage of each query is decided here (``attribute_stage``); the row's JSON is made by the engine from the
    run's columns and the block's stages and Foundry fields (``_json_lines``), so no per-query object is built
    except for the rows the report keeps (the worst of each stage, canaries, every row of a small run)."""
    n = inp.run.n_queries
    out = RowsOut(np.zeros(n, np.int8), kept=[] if keep_all else None, stage_ids={s: [] for s in STAGES})
    heaps: dict[str, list[tuple[tuple[int, float, int], Any]]] = {s: [] for s in STAGES}
    stage_index: dict[str, int] = {s: k for k, s in enumerate(STAGES)}
    abstains = inp.index.abstains
    canaries = _Canaries()
    stages = _Stages(inp.judges)
    want_json = write is not None or keep_all or worst > 0
    for block in _blocks(inp):
        lo, hi, m = block.lo, block.hi, block.hi - block.lo
        qids, kinds, canary, dropped, checked, contradiction, found, best, has_response = block.facts
        judged = block.judges(inp.judges)
        codes = [
            [(-1, -1)] * m if f is None else list(zip(f["status"].tolist(), f["passed"].tolist(), strict=True))
            for f in judged
        ]
        per_row = list(zip(*codes, strict=True)) if codes else [()] * m
        abstained = [None if a < 0 else a == 1 for a in abstains[lo:hi].tolist()]
        grades = list(zip(found, best, strict=True))
        facts = zip(
            kinds, block.hit, checked, dropped, has_response, abstained, per_row, contradiction, grades, strict=True
        )
        decided = [stages((k, h, bool(c), tuple(d or ()), r, a, v, bool(x), g)) for k, h, c, d, r, a, v, x, g in facts]
        stage_of = [st for st, _ in decided]
        partial = [missed_top_grade(k, h, g) for k, h, g in zip(kinds, block.hit, grades, strict=True)]
        code = np.array([stage_index[st] for st in stage_of], np.int8)
        out.stage[lo:hi] = code
        for st, ids in out.stage_ids.items():
            ids.extend(qids[j] for j in np.flatnonzero(code == stage_index[st])[: LIST_CAP - len(ids)].tolist())
        partial_at = np.flatnonzero(partial)
        out.search_partial += len(partial_at)
        out.search_partial_ids.extend(qids[j] for j in partial_at[: LIST_CAP - len(out.search_partial_ids)].tolist())
        for j in (j for j, c in enumerate(canary) if c is not None):
            canaries.add(lo + j, _canary(qids[j], canary[j], stages.verdicts(per_row[j])))
        if not want_json:
            continue
        lines = _json_lines(inp, block, stage_of, [r for _, r in decided], partial, abstained)
        if write is not None:
            _write_lines(lines, write)
        if out.kept is not None:
            out.kept.extend(loads(lines[j].as_py()) for j in range(m))
        failed, scaled = _badness(inp.judges, judged, m)
        for st, heap in heaps.items():
            at = np.flatnonzero(code == stage_index[st])
            for j in at[np.lexsort((at, scaled[at], -failed[at]))][:worst].tolist():  # the block's worst first
                _push(heap, ((int(failed[j]), -float(scaled[j]), -(lo + j)), lines[j].as_py()), worst)
    out.worst = {s: [loads(r) for _, r in sorted(h, reverse=True)] for s, h in heaps.items()}
    out.canaries, out.canary_counts = canaries.shown(), canaries.counts
    return out


def _json_lines(
    inp: RowInputs,
    block: _Block,
    stage: list[str],
    reason: list[str],
    partial: list[bool],
    abstained: list[bool | None],
) -> Any:
    """The block's rows as JSON text (an Arrow string array, one newline-ended value per row, in row order), made by
    the engine: the facts and local metrics from the ``queries`` columns (NaN → null), the rest from the block's own
    columns (the stages, and each Foundry column's ``score_fields``), registered as numpy arrays."""
    lo, hi = block.lo, block.hi
    ab = np.array([a is True for a in abstained])
    table: dict[str, np.ndarray] = {
        "row": np.arange(lo, hi, dtype=np.int64),
        "abstained": np.ma.array(ab, mask=np.array([a is None for a in abstained], bool)),
        "stage": np.array(stage, object),
        "stage_reason": np.array(reason, object),
        "search_partial": np.array(partial, bool),
    }
    foundry = []
    for c, (key, col) in enumerate(inp.scores.items()):
        fields = score_fields(col, block.fields(col), lo)
        table.update({f"f{c}_{name}": values for name, values in fields.items()})
        foundry.append(f"{_quote(key)} := struct_pack({', '.join(f'{n} := b.f{c}_{n}' for n in fields)})")
    local = ", ".join(
        f"{_quote(k)} := CASE WHEN isnan(q.{_quote(k)}) THEN NULL ELSE q.{_quote(k)} END" for k in inp.local_keys
    )
    scores = f"struct_pack({', '.join(foundry)})" if foundry else "'{}'::JSON"
    con = inp.run.con
    con.register("block_rows", table)
    try:
        got = inp.run.arrow(
            "SELECT to_json(struct_pack(row := q.row, query_id := q.query_id, kind := q.kind, "
            "kind_source := q.kind_source, query := q.query, response := q.response, canary := q.canary, "
            f"local := struct_pack({local}), foundry := {scores}, "
            "abstained := b.abstained, dropped_relevant := q.dropped_relevant, holes := q.holes, stage := b.stage, "
            "stage_reason := b.stage_reason, search_partial := b.search_partial)) || chr(10) AS j "
            "FROM queries q JOIN block_rows b ON q.row = b.row WHERE q.row >= ? AND q.row < ? ORDER BY q.row",
            [lo, hi],
        )
    finally:
        con.unregister("block_rows")
    return got.column("j").combine_chunks()


def _write_lines(lines: Any, write: Callable[[Any], Any]) -> None:
    """Write an Arrow string array of newline-ended values in one call: its text buffer, as it is."""
    if len(lines):
        write(string_spans(lines)[0])


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


def _push(heap: list[Any], item: tuple[tuple[int, float, int], Any], limit: int) -> None:
    """Keep the ``limit`` items with the largest keys (the worst rows) in a min-heap."""
    if limit <= 0:
        return
    if len(heap) < limit:
        heapq.heappush(heap, item)
    elif item[0] > heap[0][0]:
        heapq.heapreplace(heap, item)
