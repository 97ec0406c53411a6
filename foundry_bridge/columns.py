"""A run folder's tables: a cache of its log, and ``RunColumns``, the one reader of a run folder's results.

A run folder is its log: ``results.jsonl`` (appended as results are collected: what makes a run resumable) and its
records (``records.jsonl``, else ``plan.json``'s). The tables made from them live in ``columns/``:
``results.parquet`` (``results.jsonl`` in file order), ``queries-NNNNN.parquet`` (one file per block of 16,384
records: each query's id, kind, kind source, abstention, text facts, the local ranking metrics at every k and the
per-query facts the report and the trust section need), ``holes-NNNNN.parquet`` (every unlabelled top-k document:
row, rank, document id) and ``meta.json`` (the negative-query report of the records, the result rows' counts, and
``key``: what the tables were made from). They are a cache: ``RunColumns.open`` makes them again when they are
missing or their key differs from the folder's (``_key``: the parameters the facts are computed with, and each
source file's size with a hash of its first and last MiB: an appended result, a rewritten run or other ``--stage-k``
all change it). A folder written by an earlier version simply has no (or another) key. A read-only folder gets its
tables in a temporary folder.

Every count, group-by, join and ranking over these files is a query of an embedded DuckDB (``connect``: a memory
limit, spilling to ``TMPDIR``); the statistics stay numpy on columns fetched one at a time (``RunColumns.column``).
DuckDB is imported here only, when a run is read: never on the ``--help`` or ``validate`` paths. Every column's type
is declared (``_RESULT_TYPES``, ``_FACT_TYPES``), never inferred from the values; the per-query facts are written by
Arrow (``_write_parquet``), outside the engine's memory limit (one row may hold a long text).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._io import ENGINE_MEMORY, dumps, held, loads, remove_stale, write_json
from .mapping.plan import Plan
from .runfolder import RESULT_COLUMNS, RunFolder, RunFolderError

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "COLUMNS_DIR",
    "FactParams",
    "RunColumns",
    "connect",
    "record_response_id",
    "seal",
]

COLUMNS_DIR = "columns"
_WORK = f".{COLUMNS_DIR}.*"  # the temporary folder ``seal`` fills beside ``columns/``
BLOCK = 16_384  # records whose facts are computed (and written as one Parquet file) at once
MEMORY_LIMIT = ENGINE_MEMORY

# per-query fact columns (besides the local metrics) and their SQL types
_FACT_TYPES = {
    "row": "BIGINT",
    "query_id": "VARCHAR",
    "kind": "VARCHAR",
    "kind_source": "VARCHAR",
    "abstains": "TINYINT",  # -1 no response, 0 answered, 1 abstained (metrics' heuristic)
    "query": "VARCHAR",
    "response": "VARCHAR",
    "canary": "VARCHAR",  # the record's ``canary`` field as a string, when set
    "canary_case": "VARCHAR",  # a generated canary's case (canaries.CanaryCase) as JSON
    "dropped_relevant": "VARCHAR[]",  # relevant top-k documents missing from the context
    "checked": "BOOLEAN",  # the assembly check could be made
    "holds_relevant": "DOUBLE",  # the context holds a relevant document: 1 / 0, NULL unknown
    "contradiction": "BOOLEAN",  # a negative query with a relevant-labelled top-k document
    "holes": "VARCHAR[]",  # unlabelled top-k documents, in rank order
    "found": "BIGINT",  # the highest label in the top stage_k (metrics.ranking.top_grades)
    "best": "BIGINT",  # the highest label of the query's judgments (metrics.ranking.top_grades)
    "response_id": "VARCHAR",  # the item field the mapping names as ``response_id`` (``record_response_id``)
}


def connect(spill: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection for one command: ``memory_limit`` (``FOUNDRY_BRIDGE_DUCKDB_MEMORY``, default 128MB),
    spilling to ``spill`` (a folder under ``TMPDIR``, the caller's to remove), insertion order kept (results in
    file order)."""
    import duckdb

    con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(spill)})
    con.execute("SET enable_progress_bar = false")
    con.execute("SET preserve_insertion_order = true")
    con.execute("SET parquet_metadata_cache = true")  # a report queries the same files once per block of rows
    return con


def _spill_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="foundry-bridge-duckdb-"))


@dataclass(frozen=True)
class FactParams:
    """What the per-query facts are computed with: the cutoffs (``stage_k`` among them), the relevance threshold,
    the abstention phrases, the surface threshold of the negative-query report, and the extra item field that holds
    each row's response id (the mapping's ``response_id``)."""

    ks: tuple[int, ...]
    stage_k: int
    relevance_threshold: int
    abstention_phrases: tuple[str, ...] | None
    surface_threshold: float | None
    response_id: str | None = None

    @classmethod
    def for_plan(cls, plan: Plan, stage_k: int | None = None) -> FactParams:
        """The plan mapping's cutoffs (default [10]) with ``stage_k`` (default: the largest) added."""
        from .metrics._arrays import check_threshold
        from .metrics.ranking import normalize_ks

        mapping = plan.mapping
        ms = mapping.metrics
        ks = sorted(set(ms.k)) or [10]
        k_stage = stage_k or max(ks)
        check_threshold(ms.relevance_threshold)
        phrases = None if ms.abstention_phrases is None else tuple(ms.abstention_phrases)
        ks_all = normalize_ks([*ks, k_stage])
        response_id = getattr(mapping, "response_id", None)
        return cls(ks_all, k_stage, ms.relevance_threshold, phrases, ms.surface_threshold, response_id)

    def key(self) -> dict[str, Any]:
        return {
            "ks": list(self.ks),
            "stage_k": self.stage_k,
            "relevance_threshold": self.relevance_threshold,
            "abstention_phrases": None if self.abstention_phrases is None else list(self.abstention_phrases),
            "surface_threshold": self.surface_threshold,
            "response_id": self.response_id,
        }

    @property
    def local_keys(self) -> list[str]:
        """The local metric columns: every ranking metric at every k."""
        from .metrics.ranking import METRIC_NAMES

        return [f"{m}@{k}" for k in self.ks for m in METRIC_NAMES]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_EDGE = 1 << 20  # the bytes hashed at each end of a source file


def _fingerprint(path: Path) -> list[Any] | None:
    """A source file's size and a hash of its first and last MiB (None: no such file). The run folder's files are
    logs, appended to or written anew, never edited in place: any change of theirs changes this."""
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            digest = hashlib.sha256(fh.read(_EDGE))
            if size > _EDGE:
                fh.seek(max(size - _EDGE, _EDGE))
                digest.update(fh.read())
    except FileNotFoundError:
        return None
    return [size, digest.hexdigest()]


def _key(folder: RunFolder, params: FactParams) -> dict[str, Any]:
    """What a run folder's tables are made from: the facts' parameters and the source files' fingerprints."""
    sources = {key: _fingerprint(folder.file(key)) for key in ("results", "records", "plan")}
    return {"params": params.key(), "sources": sources}


def record_response_id(rec: Any, field: str | None) -> str | None:
    """A record's response id: its extra item field ``field`` (the mapping's ``response_id``) when that is a string
    or an integer (never a bool), as a string; else None."""
    value = None if field is None else rec.extra.get(field)
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


class _QueryFacts:
    """The per-query facts of a run's records, computed as ``seal`` hands the records over one at a time (``add``)
    and written a block of ``BLOCK`` records at a time into ``folder``: ``queries-NNNNN.parquet`` (the facts, the
    local metrics at every k, ``top_grades``) and ``holes-NNNNN.parquet``. ``finish`` writes the last block;
    ``meta`` then holds the negative-query report."""

    def __init__(self, params: FactParams, folder: Path) -> None:
        from .canaries import CanaryCase
        from .metrics import assembly_check
        from .metrics.agreement import context_holds_relevant
        from .metrics.negative import NegativeParts

        self.params, self.folder = params, folder
        self.parts = NegativeParts(params.stage_k, params.surface_threshold, keep=_LIST_CAP)
        self.n = self._index = 0
        self._case_of, self._assembly, self._holds = CanaryCase.from_record, assembly_check, context_holds_relevant
        self._start()

    def _start(self) -> None:
        from .metrics._arrays import ArraysBuilder, record_adder

        p = self.params
        self._builder = ArraysBuilder(p.ks[-1], p.relevance_threshold)
        self._add_record = record_adder(self._builder, p.abstention_phrases)
        derived = ("query_id", "kind", "kind_source", "abstains", "contradiction", "found", "best")
        self._facts: dict[str, list[Any]] = {k: [] for k in _FACT_TYPES if k not in derived}
        self._holes: dict[str, list[Any]] = {"row": [], "rank": [], "document_id": []}

    def add(self, rec: Any) -> None:
        """One record (a ``QueryRecord`` or alike), the next row."""
        p = self.params
        top, qrels = self._add_record(rec)  # the first ks[-1] distinct documents, the labels by document id
        row = self.n + len(self._facts["row"])
        found = _holes(top, qrels, p.stage_k)
        h = self._holes
        for rank, doc in found:
            h["row"].append(row)
            h["rank"].append(rank)
            h["document_id"].append(doc)
        asm = self._assembly((rec,), k=p.stage_k, relevance_threshold=p.relevance_threshold)[0]
        canary = rec.extra.get("canary")
        case = self._case_of(rec)
        holds = self._holds(rec)
        f = self._facts
        f["row"].append(row)
        f["query"].append(rec.query)
        f["response"].append(rec.response)
        f["canary"].append(str(canary) if canary not in (None, "", False) else None)
        f["canary_case"].append(
            None if case is None else dumps({"kind": case.kind, "of": case.of, "expect": dict(case.expect)}).decode()
        )
        f["dropped_relevant"].append([str(d) for d in asm.get("dropped_relevant", []) or []])
        f["checked"].append(bool(asm.get("checked", False)) and rec.context is not None)
        f["holds_relevant"].append(np.nan if holds is None else float(holds))
        f["holes"].append([d for _, d in found])
        f["response_id"].append(record_response_id(rec, p.response_id))
        if len(f["row"]) >= BLOCK:
            self._flush()

    def finish(self) -> None:
        """Write the last block."""
        if self._facts["row"]:
            self._flush()

    @property
    def meta(self) -> dict[str, Any]:
        """What ``meta.json`` says of the records: the negative-query report with its lists."""
        parts = self.parts
        return {
            "negative": parts.report() if parts.n_neg else {},
            "negative_lists": {
                "surfaced_evidence": parts.surfaced_ids,
                "n_surfaced": parts.n_surfaced,
                "label_contradictions": parts.contradiction_ids,
                "n_contradictions": parts.n_contradictions,
            },
        }

    def _flush(self) -> None:
        """The block's arrays (local metrics, the negative-query parts, top grades) and facts, as Parquet."""
        from .metrics.ranking import compute, top_grades

        p = self.params
        arrays = self._builder.build()
        local = compute(arrays, p.ks)
        self.parts.add(arrays)
        block: dict[str, Any] = {
            **self._facts,
            "query_id": arrays.query_ids,
            "kind": arrays.kinds,
            "kind_source": arrays.kind_sources,
            "abstains": np.asarray(arrays.abstains, np.int8),
            "contradiction": self.parts._contradiction[-1],
            **top_grades(arrays, p.stage_k),
        }
        block.update({key: np.asarray(local[key], np.float64) for key in [*p.local_keys, "n_rel"]})
        doubles = dict.fromkeys([*p.local_keys, "n_rel"], "DOUBLE")
        _write_parquet(self.folder / f"queries-{self._index:05d}.parquet", {**_FACT_TYPES, **doubles}, block)
        h = self._holes
        path = self.folder / f"holes-{self._index:05d}.parquet"
        _write_parquet(path, {"row": "BIGINT", "rank": "BIGINT", "document_id": "VARCHAR"}, h)
        self.n += arrays.n_queries
        self._index += 1
        self._start()


def _write_parquet(path: Path, types: dict[str, str], columns: dict[str, Any]) -> None:
    """``columns`` (lists or numpy arrays; NaN in a float column is NULL) as one Parquet file whose column types are
    ``types`` (their SQL names), in that order: declared, never inferred from the values (a column that is empty or
    NULL in most rows keeps its type), and written by Arrow alone (a long text needs no engine memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = {"BIGINT": pa.int64(), "TINYINT": pa.int8(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_()}
    arrow |= {"VARCHAR": pa.string(), "VARCHAR[]": pa.list_(pa.string())}
    schema = pa.schema([(name, arrow[t]) for name, t in types.items()])
    data = [pa.array(columns[f.name], f.type, from_pandas=True) for f in schema]
    pq.write_table(pa.Table.from_arrays(data, schema=schema), path)


_LIST_CAP = 100  # as report._model.LIST_CAP: the negative-query report's lists keep this many rows


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _holes(top: Sequence[str], qrels: dict[str, int] | None, k: int) -> list[tuple[int, str]]:
    """One query's unlabelled top-k documents as ``(rank, document id)``, from its distinct documents in rank order
    (``record_adder``'s: a repeat counts at its first position) and its labels by document id."""
    labelled = qrels or {}
    return [(rank, doc) for rank, doc in enumerate(top[:k], start=1) if doc not in labelled]


# each unlabelled document's holes: how many, the best rank, the sum of ranks and Σ 1/rank
QUEUE_DOCS = (
    "SELECT document_id, count(*) AS n, min(rank) AS best, sum(rank)::DOUBLE AS rank_sum, sum(1.0 / rank) AS approx "
    "FROM holes GROUP BY document_id"
)


def _glob_literal(path: Path) -> str:
    """``path`` for a DuckDB file pattern, its glob characters (``[``, ``*``, ``?``: a run folder may be called
    ``run[1]``) each matched literally, quoted for SQL."""
    return _sql_path(Path("".join(f"[{c}]" if c in "[*?" else c for c in str(path))))


_PAIR_ROWS = "SELECT * FROM results WHERE criterion = c AND metric = m"


def _views(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """The views over a ``columns/`` folder: ``queries``, ``results`` (with its file order as ``seq``), ``cell``
    (the results with the last row of a duplicated (row, criterion, metric) winning), ``criterion_error`` (each
    row's first error of a criterion), ``cell_of(criterion, metric)`` (``cell`` of one pair: once ``_result_counts``
    has found no duplicate, the pair's rows themselves), ``holes`` and
    ``queue_docs`` (each unlabelled document's holes counted: what ``report._queue`` ranks)."""
    q = _glob_literal(path)
    con.execute(f"CREATE OR REPLACE VIEW queries AS SELECT * FROM read_parquet('{q}/queries-*.parquet')")
    con.execute(
        f"CREATE OR REPLACE VIEW results AS SELECT *, file_row_number AS seq FROM read_parquet('{q}/results.parquet', "
        "file_row_number = true)"
    )
    con.execute(
        "CREATE OR REPLACE VIEW cell AS SELECT * FROM results "
        "QUALIFY row_number() OVER (PARTITION BY row, criterion, metric ORDER BY seq DESC) = 1"
    )
    con.execute(  # one (criterion, metric)'s cells: chosen before the window, which then holds only them
        f"CREATE OR REPLACE MACRO cell_of(c, m) AS TABLE {_PAIR_ROWS} "
        "QUALIFY row_number() OVER (PARTITION BY row ORDER BY seq DESC) = 1"
    )
    con.execute(
        "CREATE OR REPLACE VIEW criterion_error AS SELECT row, criterion, arg_min(error, seq) AS error FROM results "
        "WHERE error IS NOT NULL GROUP BY row, criterion"
    )
    con.execute(f"CREATE OR REPLACE VIEW holes AS SELECT * FROM read_parquet('{q}/holes-*.parquet')")
    con.execute(f"CREATE OR REPLACE VIEW queue_docs AS {QUEUE_DOCS}")


def _seal_results(con: duckdb.DuckDBPyConnection, folder: RunFolder, target: Path) -> None:
    """``results.jsonl`` → ``results.parquet`` (file order kept), read by the run folder's one reader of it."""
    sql = folder.results_sql([k for k in RESULT_COLUMNS if k != "properties"])
    with folder.results_errors():
        con.execute(f"COPY ({sql}) TO '{_sql_path(target / 'results.parquet')}' (FORMAT PARQUET)")


def _count_results(con: duckdb.DuckDBPyConnection, results: str, n: int) -> tuple[int, int, int, int]:
    """The result rows of ``results`` (a table or ``read_parquet`` of ``results.parquet``) counted against a run of
    ``n`` queries: ``RunColumns._result_counts``."""
    rows, errored, out_of_range, in_range, distinct = con.execute(
        "SELECT count(*), count(error), count(*) FILTER (WHERE row < 0 OR row >= $n), "
        "count(*) FILTER (WHERE row >= 0 AND row < $n), (SELECT count(*) FROM (SELECT DISTINCT row, "
        f"criterion, metric FROM {results} WHERE row >= 0 AND row < $n)) FROM {results}",
        {"n": n},
    ).fetchall()[0]
    return int(rows), int(errored), int(out_of_range), int(in_range) - int(distinct)


# per (criterion, metric): are its result rows one per query, in row order in the file (``RunColumns.in_row_order``)
_IN_ROW_ORDER = (
    "SELECT criterion, metric, count(*) = $n AND coalesce(bool_and(row = i), true) FROM (SELECT criterion, metric, "
    "row, row_number() OVER (PARTITION BY criterion, metric ORDER BY seq) - 1 AS i FROM {results}{pair}) GROUP BY ALL"
)


def seal(
    folder: RunFolder,
    params: FactParams,
    *,
    target: Path | None = None,
    plan: Plan | None = None,
    relabel: Callable[[Any], Any] | None = None,
) -> Path:
    """Write the tables of the run in ``folder`` into ``target`` (default: its ``columns/``), replacing what is
    there; their path. The per-query facts are computed from the records, each through ``relabel`` when given
    (``report --qrels``: judge labels in place of the records' own)."""
    plan = plan or folder.read_plan(items=False, records=False)
    final = target or folder.path / COLUMNS_DIR
    remove_stale(final.parent, _WORK)  # the work folders of a seal that was killed
    work = Path(tempfile.mkdtemp(prefix=f".{COLUMNS_DIR}.", dir=final.parent))
    spill = _spill_dir()
    con = connect(spill)
    try:
        with held(work):  # a later seal removes it only once this process is gone
            key = _key(folder, params)  # before reading: a source changed meanwhile makes the next read seal again
            facts = _QueryFacts(params, work)
            for rec in folder.iter_records(plan):
                facts.add(rec if relabel is None else relabel(rec))
            facts.finish()
            if not facts.n:
                raise RunFolderError(
                    "no query records (records.jsonl missing or empty, and none in plan.json)", file=str(folder.path)
                )
            _seal_results(con, folder, work)
            results = f"read_parquet('{_glob_literal(work / 'results.parquet')}', file_row_number = true)"
            counts = _count_results(con, results, facts.n)
            sql = _IN_ROW_ORDER.format(results=f"(SELECT *, file_row_number AS seq FROM {results})", pair="")
            ordered = [[c, m] for c, m, yes in con.execute(sql, {"n": facts.n}).fetchall() if yes]
            meta = {"key": key, "result_counts": list(counts), "in_row_order": ordered, **facts.meta}
            write_json(work / "meta.json", meta)
            if final.exists():
                shutil.rmtree(final)
            os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    return final


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = loads((path / "meta.json").read_bytes())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


class RunColumns:
    """The one reader of a run folder's results: per-query columns, result rows, holes — as DuckDB views
    (``queries``, ``results`` with its file order as ``seq``, ``cell``, ``holes``, ``queue_docs``) and as numpy
    columns fetched one at a time.

    ``open`` makes the tables first when they are missing or stale (``_key``): in the run folder, or in a temporary
    folder (removed by ``close``) when the run folder is read-only or the records are relabelled."""

    def __init__(self, folder: RunFolder, path: Path, meta: dict[str, Any], params: FactParams) -> None:
        self.folder, self.path, self.meta, self.params = folder, path, meta, params
        self._temporary: Path | None = None
        self._spill: Path | None = _spill_dir()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._observed: tuple[dict[str, list[str]], dict[str, str]] | None = None
        self._counts: tuple[int, int, int, int] | None = None
        self._n: int | None = None
        self._column_types: dict[str, str] | None = None

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The engine's connection with the views, opened at the first query."""
        if self._con is None:
            if self._spill is None:
                raise RunFolderError("the run's columns were closed", file=str(self.path))
            self._con = connect(self._spill)
            _views(self._con, self.path)
        return self._con

    def define(self, sql: str) -> None:
        """Run ``sql`` (a ``CREATE OR REPLACE VIEW``) on the connection."""
        self.con.execute(sql)

    def scratch(self) -> Path:
        """A folder for this reader's own temporary files (tables a report writes once and reads again), removed
        with the engine's spill folder by ``close``."""
        if self._spill is None:
            raise RunFolderError("the run's columns were closed", file=str(self.path))
        folder = self._spill / "scratch"
        folder.mkdir(exist_ok=True)
        return folder

    @classmethod
    def open(
        cls,
        run_dir: str | os.PathLike[str],
        *,
        stage_k: int | None = None,
        plan: Plan | None = None,
        relabel: Callable[[Any], Any] | None = None,
    ) -> RunColumns:
        """The run's tables (made first when missing or stale); with ``relabel`` (each record with other labels),
        always made afresh into a temporary folder: the run folder's own tables keep its own labels."""
        folder = RunFolder(run_dir)
        folder.require_dir()
        plan = plan or folder.read_plan(items=False, records=False)
        params = FactParams.for_plan(plan, stage_k)
        path = folder.path / COLUMNS_DIR
        remove_stale(folder.path, _WORK)  # what a killed report's seal left, whether or not this one seals
        meta = _read_meta(path)
        stale = meta is None or meta.get("key") != _key(folder, params)
        elsewhere = relabel is not None  # relabelled tables never replace the run folder's own
        if stale and not elsewhere:
            try:
                seal(folder, params, plan=plan)
            except PermissionError:  # a read-only run folder: the tables go to a temporary folder
                elsewhere = True
        temporary = Path(tempfile.mkdtemp(prefix="foundry-bridge-columns-")) if elsewhere else None
        if temporary is not None:
            try:
                path = seal(folder, params, target=temporary / COLUMNS_DIR, plan=plan, relabel=relabel)
            except BaseException:
                shutil.rmtree(temporary, ignore_errors=True)
                raise
        if stale or temporary is not None:
            meta = _read_meta(path)
        if meta is None:
            raise RunFolderError("the run's columns could not be written", file=str(path))
        out = cls(folder, path, meta, params)
        out._temporary = temporary
        return out

    def close(self) -> None:
        """Close the connection; remove the engine's spill folder (and temporary tables)."""
        if not hasattr(self, "_spill"):
            return
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None
        if self._spill is not None:
            shutil.rmtree(self._spill, ignore_errors=True)
            self._spill = None
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def __del__(self) -> None:
        self.close()

    def records(self, query_ids: Iterable[str]) -> dict[str, Any]:
        """The query records (``dataset.QueryRecord``) of ``query_ids`` as the run holds them, the others skipped
        while streaming: the ranked documents, labels, context and response of the few queries a page shows."""
        wanted = set(query_ids)
        plan = self.folder.read_plan(items=False, records=False)
        return {r.query_id: r for r in self.folder.iter_records(plan) if r.query_id in wanted}

    # -- counts ------------------------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        if self._n is None:
            self._n = int(self.scalar("SELECT count(*) FROM queries"))
        return self._n

    @property
    def local_keys(self) -> list[str]:
        return self.params.local_keys

    def sql(self, query: str, params: Sequence[Any] | dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run a query over the views (``queries``, ``results``, ``cell``, ``holes``, ``queue_docs``)."""
        return self.con.execute(query, params) if params is not None else self.con.execute(query)

    def arrow(self, query: str, params: Sequence[Any] | None = None) -> Any:
        """A query's whole result as an Arrow table (``to_arrow_table``; ``fetch_arrow_table`` before DuckDB 2)."""
        rel = self.con.sql(query, params=params)
        fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
        return fetch()

    def one(self, query: str, params: Sequence[Any] | dict[str, Any] | None = None) -> tuple[Any, ...]:
        """The first row of a query (the result fetched to its end: the connection is free afterwards)."""
        rows = self.sql(query, params).fetchall()
        return tuple(rows[0]) if rows else ()

    def scalar(self, query: str, params: Sequence[Any] | None = None) -> Any:
        row = self.one(query, params)
        return row[0] if row else None

    # -- per-query columns, in row order: the ``queries`` files' scan order (insertion order kept), no sort -------
    def _rows(self, lo: int, hi: int | None) -> str:
        hi = self.n_queries if hi is None else hi
        return "" if (lo, hi) == (0, self.n_queries) else f" WHERE row >= {int(lo)} AND row < {int(hi)}"

    def column(self, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """One per-query column (rows ``lo`` to ``hi``) as numpy: numbers as float64 with NULL as NaN, booleans
        as bool (NULL False), anything else as Python objects (NULL None)."""
        col = _quote(name)
        kind = self._types()[name]
        where = self._rows(lo, hi)
        if kind == "BOOLEAN":
            flags = self.sql(f"SELECT coalesce({col}, false) AS v FROM queries{where}").fetchnumpy()
            return np.asarray(flags["v"], bool)
        if kind in ("DOUBLE", "BIGINT", "TINYINT"):
            got = self.sql(f"SELECT coalesce({col}::DOUBLE, 'NaN') AS v FROM queries{where}")
            return np.asarray(got.fetchnumpy()["v"], np.float64)
        values = self.texts(name, lo, hi)
        return np.fromiter(values, dtype=object, count=len(values))

    def texts(self, name: str, lo: int = 0, hi: int | None = None) -> list[Any]:
        """A text (or list) column as Python values, rows ``lo`` to ``hi``."""
        got = self.sql(f"SELECT {_quote(name)} FROM queries{self._rows(lo, hi)}").fetchall()
        return [r[0] for r in got]

    def _types(self) -> dict[str, str]:
        """Each ``queries`` column's SQL type, asked once."""
        if self._column_types is None:
            got = self.sql("SELECT column_name, column_type FROM (DESCRIBE queries)").fetchall()
            self._column_types = {str(name): str(kind) for name, kind in got}
        return self._column_types

    def ids_where(self, condition: str, limit: int | None = None) -> list[str]:
        """The query ids of the rows where the SQL ``condition`` holds, in row order (the first ``limit``)."""
        cap = "" if limit is None else f" LIMIT {int(limit)}"
        return [r[0] for r in self.sql(f"SELECT query_id FROM queries WHERE {condition} ORDER BY row{cap}").fetchall()]

    def mask_where(self, condition: str) -> np.ndarray:
        """Per query, in row order: does the SQL ``condition`` hold (NULL: no)."""
        got = self.sql(f"SELECT coalesce({condition}, false) AS v FROM queries").fetchnumpy()
        return np.asarray(got["v"], bool)

    def count_where(self, condition: str) -> int:
        return int(self.scalar(f"SELECT count(*) FROM queries WHERE {condition}"))

    # -- result rows ----------------------------------------------------------------------------------------------
    def _result_counts(self) -> tuple[int, int, int, int]:
        """``rows``, ``errored`` (rows with an error), ``out_of_range`` (rows pointing at a dataset row that does
        not exist) and ``duplicates`` (in-range rows repeating a (row, criterion, metric): the last one is kept):
        counted when the tables were sealed (``meta.json``), else now."""
        if self._counts is None:
            sealed = self.meta.get("result_counts")
            if isinstance(sealed, list) and len(sealed) == 4 and all(type(v) is int for v in sealed):
                self._counts = (sealed[0], sealed[1], sealed[2], sealed[3])
            else:
                self._counts = _count_results(self.con, "results", self.n_queries)
            if self._counts[3] == 0:  # no duplicate: a pair's cells are its rows, no window needed (≈ 20 ms each)
                self.con.execute(f"CREATE OR REPLACE MACRO cell_of(c, m) AS TABLE {_PAIR_ROWS}")
        return self._counts

    def result_counts(self) -> tuple[int, int]:
        """(result rows, rows with an error)."""
        return self._result_counts()[:2]

    def observed(self) -> tuple[dict[str, list[str]], dict[str, str]]:
        """The (criterion → metrics) the in-range result rows hold, in order of first appearance, and each
        criterion's evaluator (its first row's). Counted once (the run's results do not change while it is read)."""
        if self._observed is None:
            self._observed = self._observe()
        return self._observed

    def _observe(self) -> tuple[dict[str, list[str]], dict[str, str]]:
        rows = self.sql(
            "SELECT criterion, metric, min(seq) AS first, arg_min(evaluator, seq) FROM results "
            "WHERE row >= 0 AND row < ? GROUP BY criterion, metric ORDER BY first",
            [self.n_queries],
        ).fetchall()
        observed: dict[str, list[str]] = {}
        evaluator_of: dict[str, tuple[int, str]] = {}
        for crit, metric, first, evaluator in rows:
            observed.setdefault(crit, []).append(metric)
            if crit not in evaluator_of or first < evaluator_of[crit][0]:
                evaluator_of[crit] = (first, evaluator)
        return observed, {c: e for c, (_, e) in evaluator_of.items()}

    def in_row_order(self, criterion: str, metric: str) -> bool:
        """Are the result rows of (``criterion``, ``metric``) one per query, in row order in the file? Then its
        cells are its rows as the file holds them (no duplicate, none missing), to be joined with the ``queries``
        by position."""
        sealed = self.meta.get("in_row_order")  # found when the tables were sealed
        if isinstance(sealed, list):
            return [criterion, metric] in sealed
        pair = " WHERE criterion = $c AND metric = $m"
        got = self.one(
            _IN_ROW_ORDER.format(results="results", pair=pair), {"n": self.n_queries, "c": criterion, "m": metric}
        )
        return bool(got[2]) if got else self.n_queries == 0

    def anomalies(self) -> tuple[int, int]:
        """(rows pointing outside the dataset, duplicated (row, criterion, metric) rows)."""
        return self._result_counts()[2:]
