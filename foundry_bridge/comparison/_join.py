"""Runs as tables, and pairing them as a join of the engine.

Each run is a Parquet file of its queries (``row``, ``query_id``, ``kind``) and a folder of its cells, one per
query and metric key (``row``, ``key``, ``value``: what compare pairs, NULL where undefined, errored or missing;
``score``: what the run's report averages; ``scored``: a Foundry metric's status is scored). A run folder's are
written by its own engine from the report's views (``report._build.read_run``: no per-query row, no stage, no
canary, no queue); a run file's from the measures computed at compare time (``_files``).

One connection reads every run's files. A query id stands for its last row and is listed at its first
(``ids<i>``). Pairing runs A and B is ``JOIN … USING (query_id, key)`` under A's kind (the section); the queries
only in one run are anti-joins; n, means, Δ, its sd and wins/ties/losses per (section, key) one ``GROUP BY``; the
queries that got worse by the most a window. Only each metric's paired vectors, in A's order, leave the engine for
the tests (``metrics.significance``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog import CATALOG
from ..columns import _quote
from ..metrics.significance import MetricKind
from ..report._model import LIST_CAP, MetricInfo
from ._model import CandidateQueries, CoverageChange, RunSummaryRow, Section_

__all__ = ["PASS", "SECTIONS", "Engine", "RunTable", "arrays_table", "engine", "folder_table", "metric_kind"]

PASS = "/pass"  # a judge's pass/fail verdict beside its score: ``<score key>/pass``
SECTIONS: tuple[Section_, ...] = ("positive", "negative")


@dataclass
class RunTable:
    """One run as compare reads it: its metrics, its two Parquet files (module docstring) and, for the sweep, where
    it came from and how its report averages a local metric (``nan_policy``)."""

    infos: list[MetricInfo]
    queries: Path
    cells: Path
    run_dir: str
    backend: str | None = None
    nan_policy: str = "drop"
    stage_k: int | None = None
    foundry_keys: list[str] = field(default_factory=list)  # coverage: each Foundry metric (no /pass row)
    files: dict[str, Path] = field(default_factory=dict)  # each key's file of cells (a key's join reads it alone)
    stages: dict[str, int] = field(default_factory=dict)  # queries per stage (run folders)


def metric_kind(info: MetricInfo) -> tuple[MetricKind, bool]:
    """A metric's kind by the catalog (local measures and unknown metrics: continuous), and whether it is a
    judge's score (a judge's ordinal or continuous score: its pass/fail verdict is compared too, as ``/pass``)."""
    spec = CATALOG.get(info.evaluator or "") if info.source == "foundry" else None
    if spec is None:
        return "continuous", False
    try:
        kind = spec.metric(info.metric).kind
    except KeyError:
        return "continuous", False
    if kind == "boolean":
        return "boolean", False
    return ("ordinal" if kind == "ordinal" else "continuous"), spec.needs_deployment


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _path(path: Path) -> str:
    return str(path).replace("'", "''")


def folder_table(run_dir: str | os.PathLike[str], stage_k: int | None, work: Path, index: int) -> RunTable:
    """A run folder's tables (``queries-<index>``, ``cells-<index>`` in ``work``), written by its own engine from
    the report's views. A boolean metric's value is its verdict read for the query's kind (0/1); a judge's score
    has its verdict beside it as ``<key>/pass`` (``metric_kind``)."""
    from ..report._build import read_run

    b, stages = read_run(run_dir, stage_k)
    parts: dict[str, tuple[str, str, str, str]] = {}  # key: its value, score, scored and the relation they come from
    for info in b.infos:
        kind, judge = metric_kind(info)
        if info.source == "local":
            v = _quote(info.key)
            value = f"CASE WHEN isnan({v}) THEN NULL ELSE {v} END"
            parts[info.key] = (value, value, "NULL", "queries")
            continue
        view = b.scores[info.key].view
        score = "CASE WHEN status = 0 AND NOT isnan(score) THEN score END"
        verdict = "CASE WHEN status = 0 AND passed IS NOT NULL THEN passed::DOUBLE END"
        parts[info.key] = (verdict if kind == "boolean" else score, score, "status = 0", view)
        if judge:
            parts[info.key + PASS] = (verdict, "NULL", "NULL", view)
    parts = parts or {"": ("NULL", "NULL", "NULL", "(SELECT row FROM queries LIMIT 0)")}  # a file for the view
    queries, cells = work / f"queries-{index}.parquet", work / f"cells-{index}"
    cells.mkdir()
    b.run.sql(
        f"COPY (SELECT row::BIGINT AS row, query_id::VARCHAR AS query_id, kind::VARCHAR AS kind FROM queries) "
        f"TO '{_path(queries)}' (FORMAT parquet)"
    )
    files = {key: cells / f"{n}.parquet" for n, key in enumerate(parts)}
    for key, (value, score, scored, source) in parts.items():  # a query each: one metric's view at a time
        b.run.sql(
            f"COPY (SELECT row::BIGINT AS row, {_literal(key)}::VARCHAR AS key, ({value})::DOUBLE AS value, "
            f"({score})::DOUBLE AS score, ({scored})::BOOLEAN AS scored FROM {source}) "
            f"TO '{_path(files[key])}' (FORMAT parquet)"
        )
    b.run.close()
    return RunTable(
        infos=list(b.infos),
        queries=queries,
        cells=cells,
        run_dir=str(Path(b.run_in.run_dir).resolve()),
        backend=b.run_in.manifest.get("backend"),
        nan_policy=b.params.nan_policy,
        stage_k=b.params.stage_k,
        foundry_keys=[m.key for m in b.infos if m.source == "foundry"],
        stages=stages,
        files=files,
    )


def arrays_table(
    query_ids: Sequence[str], values: dict[str, Any], infos: list[MetricInfo], run_dir: str, work: Path, index: int
) -> RunTable:
    """A run file's tables: every topic positive, each measure's values (NaN: undefined) as cells."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(query_ids)
    rows = np.arange(n, dtype=np.int64)
    queries, cells = work / f"queries-{index}.parquet", work / f"cells-{index}"
    cells.mkdir()
    kinds = {"row": pa.int64(), "query_id": pa.string(), "kind": pa.string()}
    pq.write_table(pa.table([rows, list(query_ids), ["positive"] * n], schema=pa.schema(kinds)), queries)
    types = pa.schema({"row": pa.int64(), "key": pa.string(), "value": pa.float64(), "score": pa.float64(),
                       "scored": pa.bool_()})  # fmt: skip
    files = {key: cells / f"{m}.parquet" for m, key in enumerate(values)}
    for key, v in values.items():  # one file a measure, as a run folder's
        v = np.asarray(v, np.float64)
        value = pa.array(v, pa.float64(), mask=np.isnan(v))
        pq.write_table(pa.table([rows, [key] * n, value, value, pa.nulls(n, pa.bool_())], schema=types),
                       files[key])  # fmt: skip
    return RunTable(infos=infos, queries=queries, cells=cells, run_dir=run_dir, files=files)


@dataclass
class Paired:
    """One pair's join of query ids: the unpaired queries and the paired queries per section."""

    queries: CandidateQueries
    sizes: dict[str, int]  # paired queries per section


@dataclass
class PairedKey:
    """One key of a pair: per section, the ``GROUP BY``'s numbers, the got-worse window's rows and the paired
    values in A's order (NaN: undefined)."""

    stats: dict[str, dict[str, Any]]
    worse: dict[str, list[dict[str, Any]]]
    vectors: dict[str, tuple[Any, Any]]


class ColumnFile:
    """A (rows × columns) matrix of floats kept in a file column after column: written a column at a time
    (``put``), read a slice of rows at a time (``z[start:stop]``, a window of ``WINDOW`` rows read at once) through
    the page cache, never mapped into memory — so a pair's flip scores (a million queries × every metric) cost the
    process nothing while they wait for the Westfall–Young flips."""

    WINDOW = 1 << 15

    def __init__(self, path: Path, rows: int, columns: int) -> None:
        self.path, self.shape = path, (rows, columns)
        with open(path, "wb") as f:
            f.truncate(rows * columns * 8)
        self._window: tuple[int, Any] = (-1, None)

    def put(self, column: int, values: Any) -> None:
        import numpy as np

        with open(self.path, "r+b") as f:
            f.seek(column * self.shape[0] * 8)
            np.ascontiguousarray(values, dtype=np.float64).tofile(f)
        self._window = (-1, None)

    def __getitem__(self, rows: slice) -> Any:
        import numpy as np

        start, stop, _ = rows.indices(self.shape[0])
        if start >= stop:
            return np.zeros((0, self.shape[1]))
        first = start - start % self.WINDOW
        if stop > first + self.WINDOW:  # across windows: read as it is asked
            return self._read(start, stop)
        if self._window[0] != first:
            self._window = (first, self._read(first, min(self.shape[0], first + self.WINDOW)))
        return self._window[1][start - first : stop - first]

    def _read(self, start: int, stop: int) -> Any:
        import numpy as np

        out = np.empty((stop - start, self.shape[1]))
        with open(self.path, "rb") as f:
            for c in range(self.shape[1]):
                f.seek((c * self.shape[0] + start) * 8)
                out[:, c] = np.fromfile(f, dtype=np.float64, count=stop - start)
        return out


class Engine:
    """One connection over every run's tables (``tables``), views per run ``i``: ``queries<i>``, ``cells<i>``,
    ``ids<i>`` (each query id once: its first row, its last row and that row's kind); ``work``: the folder of the
    tables and of each pair's flip scores (``flip_file``)."""

    def __init__(self, con: Any, tables: Sequence[RunTable], work: Path) -> None:
        self.con, self.tables, self.work, self.files = con, tables, work, 0
        for i, t in enumerate(tables):
            con.execute(f"CREATE VIEW queries{i} AS SELECT * FROM read_parquet('{_path(t.queries)}')")
            con.execute(f"CREATE VIEW cells{i} AS SELECT * FROM read_parquet('{_path(t.cells)}/*.parquet')")
            con.execute(
                f"CREATE VIEW ids{i} AS SELECT query_id, min(row) AS first, max(row) AS last, arg_max(kind, row) "
                f"AS kind FROM queries{i} GROUP BY query_id"
            )

    def pair(self, i: int, j: int, name: str) -> Paired:
        """Run ``j``'s query ids joined to run ``i``'s into the temporary table ``pair`` (A's kind is the section,
        A's first row the order, each run's last row the one whose cells count), and its anti-joins. The cells are
        joined a key at a time (``key``): the engine holds one key's pairs, never every key's at once."""
        con = self.con
        con.execute(
            "CREATE OR REPLACE TEMP TABLE pair AS SELECT a.kind AS section, a.first AS pos, query_id, a.last AS ra, "
            f"b.last AS rb FROM ids{i} a JOIN ids{j} b USING (query_id) WHERE a.kind IN ('positive', 'negative')"
        )

        def ids(sql: str) -> list[str]:
            return [r[0] for r in con.execute(sql).fetchall()]

        queries = CandidateQueries(
            candidate=name,
            only_in_baseline=ids(f"SELECT query_id FROM ids{i} ANTI JOIN ids{j} USING (query_id) ORDER BY first"),
            only_in_candidate=ids(f"SELECT query_id FROM ids{j} ANTI JOIN ids{i} USING (query_id) ORDER BY first"),
            kind_changed=ids(
                f"SELECT query_id FROM ids{i} a JOIN ids{j} b USING (query_id) WHERE a.kind <> b.kind ORDER BY a.first"
            ),
        )
        sizes = dict(con.execute("SELECT section, count(*) FROM pair GROUP BY section").fetchall())
        return Paired(queries, {s: int(sizes.get(s, 0)) for s in SECTIONS})

    def key(self, i: int, j: int, key: str, lower_is_better: bool) -> PairedKey:
        """``key``'s cells of runs ``i`` and ``j`` joined on ``pair`` into the temporary table ``pk``: per section
        its ``GROUP BY`` (n, means, Δ, its sd, wins/ties/losses), its got-worse window (the key got worse when it
        fell, or rose if ``lower_is_better``) and its paired vectors."""
        import numpy as np

        con = self.con
        cells_a, cells_b = (self._cells(t, key) for t in (i, j))  # the key's own file: the others' not scanned
        con.execute(
            "CREATE OR REPLACE TEMP TABLE pk AS SELECT p.section, p.pos, a.value AS va, b.value AS vb, "
            f"b.value - a.value AS d FROM pair p JOIN (SELECT row, value FROM {cells_a}) a "
            f"ON a.row = p.ra JOIN (SELECT row, value FROM {cells_b}) b ON b.row = p.rb ORDER BY p.section, p.pos"
        )  # in query order: the parallel join's own order would change the means' last bit from call to call
        stats: dict[str, dict[str, Any]] = {}
        for section, n, n_paired, mean_a, mean_b, delta, sd, up, same, down in con.execute(
            "SELECT section, count(*), count(d), avg(va) FILTER (d IS NOT NULL), avg(vb) FILTER (d IS NOT NULL), "
            "avg(d), stddev_samp(d), count(*) FILTER (d > 0), count(*) FILTER (d = 0), count(*) FILTER (d < 0) "
            "FROM pk GROUP BY section"
        ).fetchall():
            stats[section] = {
                "n": n,
                "n_paired": n_paired,
                "means": (mean_a, mean_b),
                "delta": delta,
                "sd": sd,
                "wins": down if lower_is_better else up,
                "ties": same,
                "losses": up if lower_is_better else down,
            }
        worse: dict[str, list[dict[str, Any]]] = {}
        worsened = "d > 0" if lower_is_better else "d < 0"
        for section, qid, a, b in con.execute(
            f"SELECT k.section, p.query_id, k.va, k.vb FROM (SELECT * FROM pk WHERE {worsened} "
            "QUALIFY row_number() OVER (PARTITION BY section ORDER BY abs(d) DESC, pos) <= $cap) k "
            "JOIN pair p USING (pos) ORDER BY k.section, abs(k.d) DESC, k.pos",
            {"cap": LIST_CAP},
        ).fetchall():
            worse.setdefault(section, []).append({"query_id": qid, "baseline": a, "candidate": b})
        f = con.execute(
            "SELECT list_position($sections, section) AS section, va, vb FROM pk ORDER BY section, pos",
            {"sections": list(SECTIONS)},
        ).fetchnumpy()
        where = np.asarray(f["section"])  # 1-based index into SECTIONS: no string leaves the engine
        a, b = (np.ma.filled(np.ma.asarray(f[c], np.float64), np.nan) for c in ("va", "vb"))
        vectors: dict[str, tuple[Any, Any]] = {s: (a[where == n], b[where == n]) for n, s in enumerate(SECTIONS, 1)}
        return PairedKey(stats, worse, vectors)

    def _cells(self, i: int, key: str) -> str:
        """Run ``i``'s cells of ``key``, as a relation of the engine."""
        path = self.tables[i].files.get(key)
        if path is None:
            return f"(SELECT row, value FROM cells{i} WHERE key = {_literal(key)})"
        return f"read_parquet('{_path(path)}')"

    def flip_file(self, rows: int, columns: int) -> ColumnFile:
        """A new ``ColumnFile`` of ``rows`` × ``columns`` in the work folder."""
        self.files += 1
        return ColumnFile(self.work / f"flips-{self.files}.f64", rows, columns)

    def id_order(self, section: str) -> Any:
        """The section's paired queries (A's order) sorted by query id: the flips' row order."""
        import numpy as np

        got = self.con.execute(
            "SELECT rank FROM (SELECT pos, row_number() OVER (ORDER BY query_id) AS rank FROM pair WHERE section = ?) "
            "ORDER BY pos",
            [section],
        ).fetchnumpy()
        return np.argsort(np.asarray(got["rank"]), kind="stable")

    def coverage(self, j: int, name: str, keys: Sequence[str]) -> list[CoverageChange]:
        """Coverage of each Foundry metric over the baseline's rows: its scored share in the baseline, and the
        share of those rows whose query id is scored in run ``j`` (a query it lacks counts as not scored)."""
        if not keys:
            return []
        n = int(self.con.execute("SELECT count(*) FROM queries0").fetchone()[0])
        base = dict(
            self.con.execute(
                "SELECT key, count(*) FILTER (scored) FROM cells0 WHERE list_contains($k, key) GROUP BY key",
                {"k": list(keys)},
            ).fetchall()
        )
        cand = dict(
            self.con.execute(
                f"SELECT c.key, count(*) FILTER (c.scored) FROM queries0 q JOIN ids{j} d USING (query_id) "
                f"JOIN cells{j} c ON c.row = d.last WHERE list_contains($k, c.key) GROUP BY c.key",
                {"k": list(keys)},
            ).fetchall()
        )
        out = []
        for key in keys:
            b_rate = base.get(key, 0) / n if n else None
            c_rate = cand.get(key, 0) / n if n else None
            out.append(
                CoverageChange(
                    candidate=name,
                    metric=key,
                    baseline=b_rate,
                    candidate_coverage=c_rate,
                    drop=(b_rate or 0.0) - (c_rate or 0.0),
                )
            )
        return out

    def section_values(self, j: int, key: str, section: str) -> Any:
        """Run ``j``'s defined values of ``key`` over its rows of ``section``, in row order."""
        import numpy as np

        got = self.con.execute(
            f"SELECT c.value FROM queries{j} q JOIN cells{j} c USING (row) WHERE c.key = ? AND q.kind = ? "
            "AND c.value IS NOT NULL ORDER BY row",
            [key, section],
        ).fetchnumpy()
        return np.asarray(got["value"], np.float64)

    def summary(self, i: int, label: str, chosen: Sequence[str]) -> RunSummaryRow:
        """Run ``i``'s row of the sweep: its queries by kind, its Foundry scores scored of expected, and each shown
        metric's mean per kind as its report states it (a local metric under the run's NaN policy)."""
        t = self.tables[i]
        kinds = dict(self.con.execute(f"SELECT kind, count(*) FROM queries{i} GROUP BY kind").fetchall())
        n = sum(kinds.values())
        scored = self.con.execute(
            f"SELECT count(*) FILTER (scored) FROM cells{i} WHERE list_contains($k, key)", {"k": t.foundry_keys}
        ).fetchone()[0]
        source = {m.key: m.source for m in t.infos}
        got = {
            (kind, key): (mean, undefined, zerofilled)
            for kind, key, mean, undefined, zerofilled in self.con.execute(
                f"SELECT q.kind, c.key, avg(c.score), count(*) - count(c.score), avg(coalesce(c.score, 0)) "
                f"FROM queries{i} q JOIN cells{i} c USING (row) WHERE list_contains($k, c.key) GROUP BY ALL",
                {"k": [k for k in chosen if k in source]},
            ).fetchall()
        }
        means: dict[str, float | None] = {}
        for key in chosen:
            for kind in SECTIONS:
                if (kind, key) not in got:
                    continue
                mean, undefined, zerofilled = got[kind, key]
                if source[key] == "local" and t.nan_policy == "propagate" and undefined:
                    mean = None
                elif source[key] == "local" and t.nan_policy == "zerofill":
                    mean = zerofilled
                means[f"{kind}:{key}"] = mean
        return RunSummaryRow(
            label=label,
            run_dir=t.run_dir,
            backend=t.backend,
            queries=n,
            positive=int(kinds.get("positive", 0)),
            negative=int(kinds.get("negative", 0)),
            scores_scored=int(scored or 0),
            scores_expected=n * len(t.foundry_keys),
            stages=t.stages,
            means=means,
        )


@contextmanager
def engine() -> Iterator[tuple[Path, Any]]:
    """A work folder for the runs' tables and one connection (``columns.connect``: memory limit, spilling there),
    both gone on exit."""
    from ..columns import connect

    work = Path(tempfile.mkdtemp(prefix="foundry-bridge-compare-"))
    con = connect(work)
    try:
        yield work, con
    finally:
        con.close()
        shutil.rmtree(work, ignore_errors=True)
