"""The per-query rows: each query's stage decided in Python (``_stages.attribute_stage``, the one domain rule), the
rows themselves made by the engine (Parquet; JSON lines on request, by one ``COPY`` of those rows).

The stage rule runs once per distinct inputs (``_groups``: the facts, hit@stage_k and the answer judges' status and
verdict of every query grouped by the engine; a handful of groups in a large run); the stages are handed to the
engine as one compact table (``stage_rows``: a stage code, a reason code and the partial-search flag per query) and
a macro (``stage_reason``: the reason of a code, with the query's dropped documents named where the rule names
them), and the rows (``write_rows``: the facts, local metrics, each Foundry metric's ``FoundryScore``, the stage)
are written by the engine. The report keeps the stage of every query (one byte each), the canaries, the ``worst``
rows of each stage and, when the run has at most ``table_rows`` queries, every row (the HTML's per-query table).

The worst rows of a stage: most failed answer judges first, then the lowest mean of the answer judges' primary
scores (each scaled to 0–1 by its catalog range; a query without one counts as 1), then dataset order.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._io import dumps
from ..columns import RunColumns, _glob_literal, _quote, _sql_path
from ._columns import ROW_GROUP, SCORED, STATUSES, ScoreColumn, _literal
from ._model import LIST_CAP, STAGES, CanaryFlag
from ._stages import JudgeScore, ScoreState, attribute_stage, judge_decided, missed_top_grade

__all__ = ["Judge", "RowInputs", "RowsOut", "fetch_rows", "stream_rows", "write_json_lines", "write_rows"]


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


# the stage rule's inputs of a query, as the engine groups them (a judge's status and verdict appended per judge)
_INPUTS = (
    "q.kind, {hit} AS hit, coalesce(q.checked, false) AS checked, len(coalesce(q.dropped_relevant, [])) > 0 AS "
    "dropped, q.response IS NOT NULL AS has_response, q.abstains, coalesce(q.contradiction, false) AS contradiction, "
    "q.found, q.best"
)
# stand-ins for the dropped documents' ids, which the rule only names in the reason: the documents themselves are
# put in each query's reason by the engine (the macro ``stage_reason``)
_NAMES = ("\x00dropped-1\x00", "\x00dropped-2\x00")


def _groups(inp: RowInputs) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The distinct inputs of the stage rule over every query (the facts, hit@stage_k, whether the query has
    dropped documents and each answer judge's status and verdict: one ``GROUP BY`` of the engine) and each query's
    group. Judge labels grade every top-k document a judge could grade: a query with no relevant label whose top k
    holds no ungraded document has hit 0 (the judge found none), not an undefined hit (human qrels: no relevant
    document known)."""
    hit = f"q.{_quote(inp.hit_key)}"
    if inp.judge_based:
        hit = f"CASE WHEN coalesce(isnan({hit}), true) AND len(q.holes) = 0 THEN 0.0 ELSE {hit} END"
    fields, joins = [_INPUTS.format(hit=f"CASE WHEN isnan({hit}) THEN NULL ELSE {hit} END")], []
    for c, judge in enumerate(inp.judges):
        if judge.column is None:
            fields.append(f"-1 AS s{c}, -1 AS p{c}")
            continue
        if not judge.column.positional:
            judge.column.materialize()
        joins.append(f" POSITIONAL JOIN {judge.column.view} j{c}")
        fields.append(f"j{c}.status AS s{c}, coalesce(j{c}.passed::TINYINT, -1) AS p{c}")
    got = inp.run.sql(  # numpy, not Arrow: pyarrow's conversion to numpy would import pandas (0.4 s)
        f"SELECT * EXCLUDE (row), list(row) AS rows FROM (SELECT q.row, {', '.join(fields)} FROM queries q"
        f"{''.join(joins)}) GROUP BY ALL"
    ).fetchnumpy()
    rows = got.pop("rows")  # each group's rows
    sizes = np.array([len(r) for r in rows], np.int64)
    if int(sizes.sum()) != inp.run.n_queries:
        raise RuntimeError("the stage rule's inputs do not cover every query")  # never: one row per query
    group = np.empty(inp.run.n_queries, np.int32)
    if len(rows):
        group[np.concatenate(list(rows))] = np.repeat(np.arange(len(rows), dtype=np.int32), sizes)
    columns = {name: values.tolist() for name, values in got.items()}  # NULL (masked): None
    return [{name: values[g] for name, values in columns.items()} for g in range(len(rows))], group


def _badness(judges: list[Judge], fields: list[dict[str, Any] | None], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the answer judges that failed, and the mean of their primary scores scaled to 0–1 by each
    judge's catalog range (1 where none)."""
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


@dataclass(frozen=True)
class _Decided:
    """The stage rule on one group of inputs: the stage, the reason (``prefix``; with dropped documents named,
    ``prefix`` + the names joined by ``sep`` + ``suffix``), the partial search miss, decided by the judges."""

    stage: str
    prefix: str
    sep: str | None
    suffix: str
    partial: bool
    by_judge: bool
    verdicts: list[JudgeScore]


def _decide(inp: RowInputs, key: dict[str, Any]) -> _Decided:
    """``attribute_stage`` on a group's inputs. A group with dropped documents is decided with stand-ins for their
    ids (``_NAMES``, once two, once one): the rule names them in its reason, joined, and the two reasons give the
    text around the names and the separator (the rule decides on whether documents were dropped, never on which:
    ``attribute_stage``)."""
    abstained = None if key["abstains"] < 0 else key["abstains"] == 1
    verdicts = [
        JudgeScore(j.criterion, ScoreState("missing" if s < 0 else STATUSES[s], None if p < 0 else bool(p)))
        for c, j in enumerate(inp.judges)
        for s, p in [(key[f"s{c}"], key[f"p{c}"])]
    ]
    grades = (key["found"], key["best"])

    def rule(dropped: tuple[str, ...]) -> tuple[str, str]:
        stage, reason = attribute_stage(
            kind=key["kind"],
            hit=key["hit"],
            assembly_checked=key["checked"],
            dropped_relevant=dropped,
            has_response=key["has_response"],
            abstained=abstained,
            answer_judges=verdicts,
            label_contradiction=key["contradiction"],
            grades=grades,
        )
        return stage, reason + (JUDGE_BASED if inp.judge_based else "")

    stage, reason = rule(_NAMES if key["dropped"] else ())
    prefix, sep, suffix = reason, None, ""
    if key["dropped"] and _NAMES[0] in reason:
        prefix, rest = reason.split(_NAMES[0], 1)
        sep, _, suffix = rest.partition(_NAMES[1])
        if rule(_NAMES[:1]) != (stage, prefix + _NAMES[0] + suffix) or any(n in prefix + suffix for n in _NAMES):
            raise RuntimeError("the stage rule names the dropped documents otherwise than joined in its reason")
    elif key["dropped"] and rule(_NAMES[:1]) != (stage, reason):
        raise RuntimeError("the stage rule decides on which documents were dropped")
    partial = missed_top_grade(key["kind"], key["hit"], grades)
    return _Decided(stage, prefix, sep, suffix, partial, judge_decided(key["kind"], stage, abstained), verdicts)


def _first_ids(run: RunColumns, rows: dict[str, np.ndarray]) -> dict[str, list[str]]:
    """The query ids of some lists of rows (each at most ``LIST_CAP`` long), one query of the engine."""
    wanted = sorted({int(r) for at in rows.values() for r in at.tolist()})
    if not wanted:
        return {name: [] for name in rows}
    got = run.sql(f"SELECT row, query_id FROM queries WHERE row IN ({', '.join(map(str, wanted))})").fetchall()
    qid = dict(got)
    return {name: [qid[r] for r in at.tolist()] for name, at in rows.items()}


def _worst(at: np.ndarray, failed: np.ndarray, scaled: np.ndarray, worst: int) -> list[int]:
    """The ``worst`` rows of ``at``: most failed judges, then the lowest scaled score, then dataset order."""
    return at[np.lexsort((at, scaled[at], -failed[at]))][:worst].tolist() if worst > 0 else []


def stream_rows(inp: RowInputs, *, worst: int) -> RowsOut:
    """Every query's stage (``attribute_stage``, once per distinct inputs: ``_groups``), in dataset order; then the
    stages handed to the engine (``stage_rows``, ``stage_reason``) for ``write_rows``. Kept: the stage codes, the
    canaries, the first query ids of each stage and the ``worst`` rows of each stage."""
    n = inp.run.n_queries
    keys, group = _groups(inp)
    decided = [_decide(inp, key) for key in keys]
    templates: dict[tuple[str, str | None, str], int] = {}
    codes = np.array([templates.setdefault((d.prefix, d.sep, d.suffix), len(templates)) for d in decided], np.int32)
    stage_index: dict[str, int] = {s: k for k, s in enumerate(STAGES)}
    stage = np.array([stage_index[d.stage] for d in decided], np.int8)[group]
    partial = np.array([d.partial for d in decided], bool)[group]
    by_judge = np.array([d.by_judge for d in decided], bool)[group]
    out = RowsOut(stage)
    judged_at = {s: np.flatnonzero(by_judge & (stage == k)) for k, s in enumerate(STAGES)}
    judged_order = sorted((at[0], s) for s, at in judged_at.items() if at.size)  # stages in order of their first row
    lists = {f"stage:{s}": np.flatnonzero(stage == k)[:LIST_CAP] for k, s in enumerate(STAGES)}
    lists |= {f"judged:{s}": judged_at[s][:LIST_CAP] for _, s in judged_order}
    partial_at = np.flatnonzero(partial)
    lists["partial"] = partial_at[:LIST_CAP]
    ids = _first_ids(inp.run, lists)
    out.stage_ids = {s: ids[f"stage:{s}"] for s in STAGES}
    out.judged = {s: int(judged_at[s].size) for _, s in judged_order}
    out.judged_ids = {s: ids[f"judged:{s}"] for _, s in judged_order}
    out.search_partial, out.search_partial_ids = int(partial_at.size), ids["partial"]
    canaries = _Canaries()
    for row, qid, canary in inp.run.sql(
        "SELECT row, query_id, canary FROM queries WHERE canary IS NOT NULL ORDER BY row"
    ).fetchall():
        canaries.add(row, _canary(qid, canary, decided[group[row]].verdicts))
    out.canaries, out.canary_counts = canaries.shown(), canaries.counts
    whole = [None if j.column is None else j.column.numbers() for j in inp.judges]
    failed, scaled = _badness(inp.judges, whole, n)
    at_stage = {s: np.flatnonzero(stage == k) for k, s in enumerate(STAGES)}
    out.worst = {s: _worst(at, failed, scaled, worst) for s, at in at_stage.items()}
    if inp.stand_in:
        out.worst_ruled = {s: _worst(at[~by_judge[at]], failed, scaled, worst) for s, at in at_stage.items()}
    con = inp.run.con  # numpy columns as they are: pyarrow's conversion would import pandas (0.4 s) for them
    con.register("stage_rows", {"row": np.arange(n), "stage": stage, "reason": codes[group], "partial": partial})
    con.execute(_reason_macro(list(templates)))
    return out


def _reason_macro(templates: list[tuple[str, str | None, str]]) -> str:
    """The macro ``stage_reason(code, dropped)``: the stage reason of a query of template ``code`` whose dropped
    documents are ``dropped`` (the text; where the rule names them, the names joined and the text after them). A
    run has a handful of templates: each is a branch of the macro, its texts literals."""
    branches = []
    for code, (prefix, sep, suffix) in enumerate(templates):
        text = _literal(prefix)
        if sep is not None:
            text += f" || array_to_string(coalesce(dropped, []), {_literal(sep)}) || {_literal(suffix)}"
        branches.append(f"WHEN {code} THEN {text}")
    return f"CREATE OR REPLACE MACRO stage_reason(code, dropped) AS CASE code {' '.join(branches)} ELSE NULL END"


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
    the engine holds a row group of each at a time (a hash join of the queries with every metric's cells at once
    exceeds its 128 MB at 100,000 queries with a judge's reason per query)."""
    for col in inp.scores.values():
        if not col.positional:
            col.materialize()
    local = ", ".join(
        f"{_quote(k)} := CASE WHEN isnan(q.{_quote(k)}) THEN NULL ELSE q.{_quote(k)} END" for k in inp.local_keys
    )
    stages = "[" + ", ".join(f"'{s}'" for s in STAGES) + "]"
    where = "" if rows is None else f" WHERE q.row IN ({', '.join(str(int(r)) for r in sorted(set(rows))) or '-1'})"
    joins = "".join(f" POSITIONAL JOIN {col.view} p{c}" for c, col in enumerate(inp.scores.values()))
    fields = ", ".join(f"{_quote(key)} := {col.fields_sql(f'p{c}')}" for c, (key, col) in enumerate(inp.scores.items()))
    foundry = f"{_nullable(f'struct_pack({fields})')} AS foundry, " if fields else ""
    _copy(
        inp,
        "COPY (SELECT q.row, q.query_id, q.kind, q.kind_source, q.query, q.response, q.canary, "
        f"{_nullable(f'struct_pack({local})')} AS local, {foundry}"
        "CASE WHEN q.abstains < 0 THEN NULL ELSE q.abstains = 1 END AS abstained, "
        f"q.dropped_relevant, q.holes, {stages}[st.stage + 1] AS stage, "
        "stage_reason(st.reason, q.dropped_relevant) AS stage_reason, "
        f"st.partial AS search_partial FROM queries q POSITIONAL JOIN stage_rows st{joins}{where}) "
        f"TO '{_sql_path(out)}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP})",
        out,
    )


def _copy(inp: RowInputs, sql: str, out: Path) -> None:
    """Run the engine's ``COPY``; its I/O error (a full disk, no permission) becomes the ``OSError`` it wraps, with
    the errno the engine reports and ``out`` as its file, so the command names the file and the reason."""
    import duckdb

    try:
        inp.run.sql(sql)
    except duckdb.IOException as exc:
        found = re.search(r'"errno":"(\d+)"', str(exc))
        if found is None:
            raise OSError(None, str(exc).splitlines()[0], str(out)) from exc
        code = int(found.group(1))
        raise OSError(code, os.strerror(code), str(out)) from exc


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
    cur = inp.run.sql(f"{_select(inp, path)}{where} ORDER BY row")  # Python values: no Arrow (nor pyarrow) needed
    names = [d[0] for d in cur.description]
    got = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
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
