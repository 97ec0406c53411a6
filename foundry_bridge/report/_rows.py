"""The per-query rows: each query's stage decided in Python (``_stages.attribute_stage``, the one domain rule), the
rows themselves made by the engine (Parquet; JSON lines on request, by one ``COPY`` of those rows).

A pass over the stage rule's inputs (the facts and hit@stage_k streamed in batches, the answer judges' status and
verdict fetched whole) decides each query's stage; the stages are handed to the engine as one compact table
(``stage_rows``: a stage code, a reason code and the partial-search flag per query), and the rows (``write_rows``:
the facts, local metrics, each Foundry metric's ``FoundryScore`` from its view, the stage) are written by the engine
and Arrow. The report keeps the stage of every query (one byte each), the canaries, the ``worst`` rows of each stage
and, when the run has at most ``table_rows`` queries, every row (the HTML's per-query table).

The worst rows of a stage: most failed answer judges first, then the lowest mean of the answer judges' primary
scores (each scaled to 0–1 by its catalog range; a query without one counts as 1), then dataset order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._io import dumps
from ..columns import RunColumns, _glob_literal, _quote, _sql_path
from ._columns import ROW_GROUP, SCORED, STATUSES, ScoreColumn
from ._model import LIST_CAP, STAGES, CanaryFlag
from ._stages import JudgeScore, ScoreState, attribute_stage, judge_decided, missed_top_grade

__all__ = ["Judge", "RowInputs", "RowsOut", "fetch_rows", "stream_rows", "write_json_lines", "write_rows"]

_BATCH = 8192  # rows of the stage rule's inputs fetched from the engine at once


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
    local_keys: list[str]  # every local metric column (n_rel included)
    scores: dict[str, ScoreColumn]
    judges: list[Judge]
    hit_key: str
    judge_based: bool = False  # the labels are a judge's (report --qrels): every stage reason says so
    stand_in: bool = False  # the emulator's stand-in judges: ``worst_ruled`` leaves out the rows they decided


@dataclass
class RowsOut:
    """What the report keeps of the rows."""

    stage: np.ndarray  # int8 index into STAGES, per query
    canaries: list[CanaryFlag] = field(default_factory=list)  # see Canaries.shown
    canary_counts: dict[str, int] = field(default_factory=dict)
    worst: dict[str, list[int]] = field(default_factory=dict)  # the worst rows of each stage, worst first
    stage_ids: dict[str, list[str]] = field(default_factory=dict)  # the first LIST_CAP query ids of each stage
    search_partial: int = 0  # queries with a partial search miss (_stages.missed_top_grade)
    search_partial_ids: list[str] = field(default_factory=list)  # the first LIST_CAP of them
    judged: dict[str, int] = field(default_factory=dict)  # per stage, queries decided by the answer judges
    judged_ids: dict[str, list[str]] = field(default_factory=dict)  # the first LIST_CAP of them per stage
    worst_ruled: dict[str, list[int]] = field(default_factory=dict)  # ``worst`` without judge-decided rows (stand-in)


def _canary(query_id: str, canary: str, judges: list[JudgeScore]) -> CanaryFlag:
    """A judge canary: which answer judges passed (flagged it), failed (caught it) or did not score it."""
    passed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is True]
    failed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is False]
    unscored = [j.criterion for j in judges if j.score.status != "scored" or j.score.passed is None]
    caught = True if failed_by else (False if passed_by else None)
    return CanaryFlag(
        query_id=query_id, canary=canary, passed_by=passed_by, failed_by=failed_by, unscored=unscored, caught=caught
    )


_FACTS = (
    "q.row, q.query_id, q.kind, q.canary, q.dropped_relevant, q.checked, q.contradiction, q.found, q.best, "
    "q.response IS NOT NULL AS has_response, q.abstains"
)


def _batches(inp: RowInputs) -> Any:
    """The facts the stage rule reads and hit@stage_k of every query, as Arrow record batches in row order (the
    ``queries`` files' order: one scan, no sort). Judge labels grade every top-k document a judge could grade: a
    query with no relevant label whose top k holds no ungraded document has hit 0 (the judge found none), not an
    undefined hit (human qrels: no relevant document known)."""
    hit = f"q.{_quote(inp.hit_key)}"
    if inp.judge_based:
        hit = f"CASE WHEN coalesce(isnan({hit}), true) AND len(q.holes) = 0 THEN 0.0 ELSE {hit} END"
    sql = f"SELECT {_FACTS}, {hit} AS hit FROM queries q"
    return inp.run.con.sql(sql).to_arrow_reader(_BATCH)


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


JUDGE_BASED = " (judge-based: relevance from judge-labelled qrels)"
_REMEMBERED = 4096  # distinct stage inputs kept at most (a run has a handful; the memo is emptied when full)


class _Stages:
    """``attribute_stage`` on each query, remembered by its inputs (few distinct ones in a large run). A query with
    dropped documents is decided afresh: its reason names them, so its inputs are its own and remembering them
    would grow with the run."""

    def __init__(self, judges: list[Judge], judge_based: bool = False) -> None:
        self.judges, self.judge_based = judges, judge_based
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
        stage, reason = attribute_stage(
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
        return stage, reason + (JUDGE_BASED if self.judge_based else "")


def stream_rows(inp: RowInputs, *, worst: int) -> RowsOut:
    """Every query's stage (``attribute_stage``), in dataset order, a batch of rows at a time; then the stages handed
    to the engine (``stage_rows``, ``stage_reasons``) for ``write_rows``. Kept: the stage codes, the canaries, the
    first query ids of each stage and the ``worst`` rows of each stage."""
    n = inp.run.n_queries
    out = RowsOut(np.zeros(n, np.int8), stage_ids={s: [] for s in STAGES})
    reason = np.zeros(n, np.int32)
    partial_of = np.zeros(n, bool)
    reasons: dict[str, int] = {}
    heaps: dict[str, list[tuple[tuple[int, float, int], int]]] = {s: [] for s in STAGES}
    ruled: dict[str, list[tuple[tuple[int, float, int], int]]] = {s: [] for s in STAGES}
    stage_index: dict[str, int] = {s: k for k, s in enumerate(STAGES)}
    canaries = _Canaries()
    stages = _Stages(inp.judges, inp.judge_based)
    whole = [None if j.column is None else j.column.numbers() for j in inp.judges]  # one query each
    lo = 0
    for batch in _batches(inp):
        c = batch.to_pydict()
        m = len(c["row"])
        hi = lo + m
        qids, kinds, canary, found, best = c["query_id"], c["kind"], c["canary"], c["found"], c["best"]
        if c["row"] and c["row"][0] != lo:
            raise RuntimeError("the queries' columns are out of row order")  # never: one scan of files in order
        judged = [None if w is None else {k: v[lo:hi] for k, v in w.items()} for w in whole]
        codes = [
            [(-1, -1)] * m if f is None else list(zip(f["status"].tolist(), f["passed"].tolist(), strict=True))
            for f in judged
        ]
        per_row = list(zip(*codes, strict=True)) if codes else [()] * m
        abstained = [None if a < 0 else a == 1 for a in c["abstains"]]
        hits = [None if (x is None or x != x) else x for x in c["hit"]]
        grades = list(zip(found, best, strict=True))
        facts = zip(
            kinds, hits, c["checked"], c["dropped_relevant"], c["has_response"], abstained, per_row,
            c["contradiction"], grades, strict=True,
        )  # fmt: skip
        decided = [stages((k, h, bool(x), tuple(d or ()), r, a, v, bool(t), g)) for k, h, x, d, r, a, v, t, g in facts]
        code = np.array([stage_index[st] for st, _ in decided], np.int8)
        out.stage[lo:hi] = code
        reason[lo:hi] = [reasons.setdefault(why, len(reasons)) for _, why in decided]
        partial = [missed_top_grade(k, h, g) for k, h, g in zip(kinds, hits, grades, strict=True)]
        partial_of[lo:hi] = partial
        for st, ids in out.stage_ids.items():
            ids.extend(qids[j] for j in np.flatnonzero(code == stage_index[st])[: LIST_CAP - len(ids)].tolist())
        by_judge = [judge_decided(k, st, a) for k, (st, _), a in zip(kinds, decided, abstained, strict=True)]
        for j in np.flatnonzero(by_judge).tolist():
            st = decided[j][0]
            out.judged[st] = out.judged.get(st, 0) + 1
            if len(ids := out.judged_ids.setdefault(st, [])) < LIST_CAP:
                ids.append(qids[j])
        partial_at = np.flatnonzero(partial)
        out.search_partial += len(partial_at)
        out.search_partial_ids.extend(qids[j] for j in partial_at[: LIST_CAP - len(out.search_partial_ids)].tolist())
        for j in (j for j, x in enumerate(canary) if x is not None):
            canaries.add(lo + j, _canary(qids[j], canary[j], stages.verdicts(per_row[j])))
        failed, scaled = _badness(inp.judges, judged, m)
        by_rule = ~np.asarray(by_judge, bool) if inp.stand_in else None
        for st, heap in heaps.items():
            at = np.flatnonzero(code == stage_index[st])
            at = at[np.lexsort((at, scaled[at], -failed[at]))]  # the block's worst first
            for j in at[:worst].tolist():
                _push(heap, ((int(failed[j]), -float(scaled[j]), -(lo + j)), lo + j), worst)
            for j in [] if by_rule is None else at[by_rule[at]][:worst].tolist():
                _push(ruled[st], ((int(failed[j]), -float(scaled[j]), -(lo + j)), lo + j), worst)
        lo = hi
    out.worst = {s: [r for _, r in sorted(h, reverse=True)] for s, h in heaps.items()}
    out.worst_ruled = {s: [r for _, r in sorted(h, reverse=True)] for s, h in ruled.items()} if inp.stand_in else {}
    out.canaries, out.canary_counts = canaries.shown(), canaries.counts
    con = inp.run.con  # numpy columns as they are: pyarrow's conversion would import pandas (0.4 s) for them
    con.register("stage_rows", {"row": np.arange(n), "stage": out.stage, "reason": reason, "partial": partial_of})
    con.register(
        "stage_reasons", {"code": np.arange(len(reasons), dtype=np.int32), "reason": np.array(list(reasons), object)}
    )
    return out


_ROW_FIELDS = (
    "row, query_id, kind, kind_source, query, response, canary, local, {foundry} AS foundry, abstained, "
    "dropped_relevant, holes, stage, stage_reason, search_partial"
)


def write_rows(inp: RowInputs, out: Path, rows: list[int] | None = None) -> None:
    """The per-query rows (``_model.QueryRow``'s fields, in its order; ``rows``: only these) as Parquet at ``out``, in
    dataset order, by one ``COPY`` of the engine: the facts and local metrics from ``queries`` (NaN: null), each
    Foundry metric's ``FoundryScore`` as a struct field of ``foundry`` (no ``foundry`` column when the run has no
    Foundry metric), the stage from ``stream_rows``' table.

    The ``queries``, the stages and each metric's column (``ScoreColumn.materialize``: evaluated once into a file in
    row order) are joined by position (``POSITIONAL JOIN``): a scan of each in step, no hash table and no sort, so
    the engine holds a row group of each at a time (one hash join of the queries with every metric's cells ran out
    of its 128 MB at 100,000 queries, with a judge's reason per query)."""
    for col in inp.scores.values():
        if not col.materialized:
            col.materialize()
    local = ", ".join(
        f"{_quote(k)} := CASE WHEN isnan(q.{_quote(k)}) THEN NULL ELSE q.{_quote(k)} END" for k in inp.local_keys
    )
    stages = "[" + ", ".join(f"'{s}'" for s in STAGES) + "]"
    where = "" if rows is None else f" WHERE q.row IN ({', '.join(str(int(r)) for r in sorted(set(rows))) or '-1'})"
    joins = "".join(f" POSITIONAL JOIN {col.view} p{c}" for c, col in enumerate(inp.scores.values()))
    fields = ", ".join(f"{_quote(key)} := {col.fields_sql(f'p{c}')}" for c, (key, col) in enumerate(inp.scores.items()))
    foundry = f"{_nullable(f'struct_pack({fields})')} AS foundry, " if fields else ""
    inp.run.sql(
        "COPY (SELECT q.row, q.query_id, q.kind, q.kind_source, q.query, q.response, q.canary, "
        f"{_nullable(f'struct_pack({local})')} AS local, {foundry}"
        "CASE WHEN q.abstains < 0 THEN NULL ELSE q.abstains = 1 END AS abstained, "
        f"q.dropped_relevant, q.holes, {stages}[st.stage + 1] AS stage, "
        "(SELECT list(reason ORDER BY code) FROM stage_reasons)[st.reason + 1] AS stage_reason, "
        f"st.partial AS search_partial FROM queries q POSITIONAL JOIN stage_rows st{joins}{where}) "
        f"TO '{_sql_path(out)}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP})"
    )


def _nullable(struct: str) -> str:
    """A struct column the Parquet file declares optional, as every column of the per-query rows (the engine
    declares a bare ``struct_pack`` required)."""
    return f"CASE WHEN q.row IS NULL THEN NULL ELSE {struct} END"


def _select(inp: RowInputs, path: Path) -> str:
    foundry = "foundry" if inp.scores else "'{}'::JSON"
    return f"SELECT {_ROW_FIELDS.format(foundry=foundry)} FROM read_parquet('{_glob_literal(path)}')"


def write_json_lines(inp: RowInputs, rows: Path, out: IO[bytes]) -> None:
    """The rows of ``rows`` (``write_rows``' file) as JSON lines into ``out``, a row group at a time (the engine's
    JSON ``COPY`` ran out of its 128 MB on 10,000 emulator rows)."""
    import pyarrow.parquet as pq

    empty: dict[str, Any] | None = None if inp.scores else {}
    for batch in pq.ParquetFile(rows).iter_batches(1024):  # 1,024 rows as Python objects at a time
        out.write(b"".join(dumps(r if empty is None else {**r, "foundry": empty}) + b"\n" for r in batch.to_pylist()))


def fetch_rows(inp: RowInputs, path: Path, rows: list[int] | None) -> list[dict[str, Any]]:
    """The rows ``rows`` (None: every row) of ``write_rows``' file as dicts, in dataset order."""
    if rows is not None and not rows:
        return []
    where = "" if rows is None else f" WHERE row IN ({', '.join(str(int(r)) for r in sorted(set(rows)))})"
    got = inp.run.arrow(f"{_select(inp, path)}{where} ORDER BY row").to_pylist()
    if not inp.scores:
        for r in got:
            r["foundry"] = {}
    return got


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
