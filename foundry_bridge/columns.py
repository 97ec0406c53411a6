"""A run's results as columns (Parquet), and ``RunColumns``: the one reader of a run folder's results.

A finished run folder gets a ``columns/`` folder (``seal``): ``results.parquet`` (``results.jsonl`` as DuckDB
reads it, in file order), ``queries-NNNNN.parquet`` (one file per block of 16,384 records: each query's id, kind,
kind source, abstention, text facts, the local ranking metrics at every k and the per-query facts the report and
the trust section need), ``holes-NNNNN.parquet`` (every unlabelled top-k document: row, rank, document id),
``queue.parquet`` (each unlabelled document's holes counted, ``QUEUE_DOCS``: what ``report._queue`` ranks) and
``meta.json`` (the parameters the facts were computed with, the counts, the negative-query report, the sizes of
the files they were read from). The runner seals a run when it finishes, with the per-query facts ``run`` computed
while its plan read the records (``prepare_facts``, ``QueryFacts``); a folder written by an earlier version
(or whose ``results.jsonl`` / ``records.jsonl`` changed since, or read with other parameters, e.g. another
``--stage-k``) is sealed on its first read: in place, or in a temporary folder when the run folder is read-only.
``results.jsonl`` stays the append log that makes a run resumable.

Every group-by, join and ranking over these files is a query of an embedded DuckDB (``connect``: a memory limit,
spilling to ``TMPDIR``); the statistics stay numpy on columns fetched one at a time (``RunColumns.column``).
DuckDB is imported here only, when a run is read or sealed: never on the ``--help`` or ``validate`` paths. The
per-query facts are written by Arrow (``_write_parquet``), each column of its declared type (``_FACT_TYPES``), never
inferred from the values, and outside the engine's memory limit (one row may hold a long text).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._io import dumps, held, loads, remove_stale, write_json
from .mapping.plan import Plan
from .runfolder import RunFolder, RunFolderError

if TYPE_CHECKING:
    import duckdb

    from .metrics._arrays import Codes, Texts

__all__ = [
    "COLUMNS_DIR",
    "FactParams",
    "QueryFacts",
    "RunColumns",
    "connect",
    "prepare_facts",
    "record_response_id",
    "seal",
]

COLUMNS_DIR = "columns"
_WORK = f".{COLUMNS_DIR}.*"  # the temporary folder ``seal`` fills beside ``columns/``
FORMAT = 5  # the layout of columns/: a folder sealed with another is sealed again
BLOCK = 16_384  # records whose facts are computed (and written as one Parquet file) at once
MEMORY_LIMIT = os.environ.get("FOUNDRY_BRIDGE_DUCKDB_MEMORY", "128MB")

# result row fields as results.jsonl holds them (results.ResultRow), with the SQL type DuckDB reads them as
_RESULT_TYPES = {
    "row": "BIGINT",
    "query_id": "VARCHAR",
    "criterion": "VARCHAR",
    "evaluator": "VARCHAR",
    "metric": "VARCHAR",
    "score": "DOUBLE",
    "label": "VARCHAR",
    "passed": "BOOLEAN",
    "threshold": "DOUBLE",
    "reason": "VARCHAR",
    "error": "VARCHAR",
}
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
        return cls.for_mapping(plan.mapping, stage_k)

    @classmethod
    def for_mapping(cls, mapping: Any, stage_k: int | None = None) -> FactParams:
        """``for_plan`` from the mapping itself (``mapping.Mapping``), before a plan is built."""
        from .metrics._arrays import check_threshold
        from .metrics.ranking import normalize_ks

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


def _sources(folder: RunFolder) -> dict[str, list[int] | None]:
    """Size and modification time of the files the columns are read from (a change means: seal again)."""
    out: dict[str, list[int] | None] = {}
    for key in ("results", "records", "plan"):
        try:
            st = folder.file(key).stat()
        except FileNotFoundError:
            out[key] = None
        else:
            out[key] = [st.st_size, st.st_mtime_ns]
    return out


def record_response_id(rec: Any, field: str | None) -> str | None:
    """A record's response id: its extra item field ``field`` (the mapping's ``response_id``) when that is a string
    or an integer (never a bool), as a string; else None."""
    value = None if field is None else rec.extra.get(field)
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


class QueryFacts:
    """The per-query facts of a run's records, computed as the records are handed over one at a time (``add``;
    ``tap`` passes an iterator through) and written a block of ``BLOCK`` records at a time into ``folder``:
    ``queries-NNNNN.parquet`` (the facts, the local metrics at every k, ``top_grades``) and ``holes-NNNNN.parquet``.
    The run feeds it while it builds its plan from the records it has just read (so ``seal`` need not read
    ``records.jsonl`` again); ``seal`` feeds it from ``records.jsonl`` for any other folder. ``finish`` writes the
    last block; ``meta`` then holds the counts and the negative-query report."""

    def __init__(self, params: FactParams, folder: Path) -> None:
        from .canaries import CanaryCase
        from .metrics import assembly_check
        from .metrics.agreement import context_holds_relevant
        from .metrics.negative import NegativeParts

        self.params, self.folder = params, folder
        self.parts = NegativeParts(params.stage_k, params.surface_threshold, keep=_LIST_CAP)
        self.n = self.n_holes = self._index = 0
        self.done = False
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

    def tap(self, records: Iterable[Any]) -> Iterator[Any]:
        """``records`` unchanged, each added on its way through; ``finish`` once they are all through."""
        for rec in records:
            self.add(rec)
            yield rec
        self.finish()

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
        if self.done:
            return
        if self._facts["row"]:
            self._flush()
        self.done = True

    def remove(self) -> None:
        """Delete ``folder`` (facts prepared under ``TMPDIR``, once sealed)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def meta(self) -> dict[str, Any]:
        """What ``meta.json`` says of the facts: the counts and the negative-query report with its lists."""
        parts = self.parts
        return {
            "queries": self.n,
            "holes": self.n_holes,
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
            "query_id": list(arrays.query_ids),
            "kind": list(arrays.kinds),
            "kind_source": list(arrays.kind_sources),
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
        self.n_holes += len(h["row"])
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


def prepare_facts(records: Iterable[Any], plan_mapping: Any) -> tuple[Iterator[Any], QueryFacts]:
    """``records`` passed through a ``QueryFacts`` under the mapping's parameters (``FactParams.for_mapping``),
    written to a folder under ``TMPDIR`` (removed with ``QueryFacts.remove``): what ``run`` hands to ``seal``."""
    facts = QueryFacts(FactParams.for_mapping(plan_mapping), Path(tempfile.mkdtemp(prefix="foundry-bridge-facts-")))
    return facts.tap(records), facts


_LIST_CAP = 100  # as report._model.LIST_CAP: the negative-query report's lists keep this many rows


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _holes(top: Sequence[str], qrels: dict[str, int] | None, k: int) -> list[tuple[int, str]]:
    """One query's unlabelled top-k documents as ``(rank, document id)``, from its distinct documents in rank order
    (``record_adder``'s: a repeat counts at its first position) and its labels by document id."""
    labelled = qrels or {}
    return [(rank, doc) for rank, doc in enumerate(top[:k], start=1) if doc not in labelled]


# each unlabelled document's holes: how many, the best rank, the sum of ranks and Σ 1/rank in the engine's order
QUEUE_DOCS = (
    "SELECT document_id, count(*) AS n, min(rank) AS best, sum(rank)::DOUBLE AS rank_sum, sum(1.0 / rank) AS approx "
    "FROM holes GROUP BY document_id"
)


def _glob_literal(path: Path) -> str:
    """``path`` for a DuckDB file pattern, its glob characters (``[``, ``*``, ``?``: a run folder may be called
    ``run[1]``) each matched literally, quoted for SQL."""
    return _sql_path(Path("".join(f"[{c}]" if c in "[*?" else c for c in str(path))))


def _views(con: duckdb.DuckDBPyConnection, path: Path, duplicates: bool = True) -> None:
    """The views over a ``columns/`` folder: ``queries``, ``results`` (with its file order as ``seq``), ``cell``
    (the results with the last row of a duplicated (row, criterion, metric) winning), ``criterion_error`` (each
    row's first error of a criterion), ``cell_of(criterion, metric)`` (``cell`` of one pair; the result rows
    themselves when no row is ``duplicates``), ``holes`` and, once sealed, ``queue_docs``."""
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
    last = " QUALIFY row_number() OVER (PARTITION BY row ORDER BY seq DESC) = 1" if duplicates else ""
    con.execute(  # one (criterion, metric)'s cells: chosen before the window, which then holds only them
        f"CREATE OR REPLACE MACRO cell_of(c, m) AS TABLE SELECT * FROM results WHERE criterion = c AND metric = m{last}"
    )
    con.execute(
        "CREATE OR REPLACE VIEW criterion_error AS SELECT row, criterion, arg_min(error, seq) AS error FROM results "
        "WHERE error IS NOT NULL GROUP BY row, criterion"
    )
    con.execute(f"CREATE OR REPLACE VIEW holes AS SELECT * FROM read_parquet('{q}/holes-*.parquet')")
    if (path / "queue.parquet").exists():
        con.execute(f"CREATE OR REPLACE VIEW queue_docs AS SELECT * FROM read_parquet('{q}/queue.parquet')")


def _seal_results(con: duckdb.DuckDBPyConnection, folder: RunFolder, target: Path) -> None:
    """``results.jsonl`` → ``results.parquet`` (file order kept). A line DuckDB cannot read is located by the run
    folder's own validating reader (file, line, field)."""
    import duckdb

    path = folder.file("results")
    out = _sql_path(target / "results.parquet")
    if not path.exists():
        list(folder.iter_results())  # says why (an unfinished run, or not a run folder)
    cols = ", ".join(f"{_quote(k)}: '{t}'" for k, t in _RESULT_TYPES.items())
    select = ", ".join(_quote(k) for k in _RESULT_TYPES)
    source = f"read_json('{_glob_literal(path)}', format='newline_delimited', columns={{{cols}}})"
    if path.stat().st_size == 0:
        source = f"(SELECT {', '.join(f'NULL::{t} AS {_quote(k)}' for k, t in _RESULT_TYPES.items())} LIMIT 0)"
    try:
        con.execute(f"COPY (SELECT {select} FROM {source}) TO '{out}' (FORMAT PARQUET)")
    except duckdb.Error as exc:
        for _ in folder.iter_results():  # the validating reader names the line
            pass
        raise RunFolderError(f"cannot be read as result rows: {exc}", file=str(path)) from None


def _result_counts(con: duckdb.DuckDBPyConnection, n_queries: int) -> dict[str, int]:
    """What every report states of the result rows (the view ``results``), counted once when the run is sealed:
    ``rows``, ``errored`` (rows with an error), ``out_of_range`` (rows pointing at a dataset row that does not
    exist) and ``duplicates`` (in-range rows repeating a (row, criterion, metric): the last one is kept)."""
    rows, errored, out_of_range, in_range, distinct = con.execute(
        "SELECT count(*), count(error), count(*) FILTER (WHERE row < 0 OR row >= $n), "
        "count(*) FILTER (WHERE row >= 0 AND row < $n), (SELECT count(*) FROM (SELECT DISTINCT row, criterion, "
        "metric FROM results WHERE row >= 0 AND row < $n)) FROM results",
        {"n": n_queries},
    ).fetchall()[0]
    return {
        "rows": int(rows),
        "errored": int(errored),
        "out_of_range": int(out_of_range),
        "duplicates": int(in_range) - int(distinct),
    }


def seal(
    folder: RunFolder,
    params: FactParams | None = None,
    *,
    target: Path | None = None,
    plan: Plan | None = None,
    facts: QueryFacts | None = None,
    relabel: Callable[[Any], Any] | None = None,
) -> Path:
    """Write ``columns/`` for the run in ``folder`` (or into ``target``), replacing what is there; its path.
    ``facts``: the per-query facts the run computed while it read the records (``prepare_facts``), copied when
    they are complete and of these parameters; otherwise computed here from ``records.jsonl``, each record through
    ``relabel`` when given (``report --qrels``: judge labels in place of the records' own)."""
    plan = plan or folder.read_plan(items=False, records=False)
    params = params or FactParams.for_plan(plan)
    final = target or folder.path / COLUMNS_DIR
    remove_stale(final.parent, _WORK)  # the work folders of a seal that was killed
    work = Path(tempfile.mkdtemp(prefix=f".{COLUMNS_DIR}.", dir=final.parent))
    spill = _spill_dir()
    con = connect(spill)
    try:
        with held(work):  # a later seal removes it only once this process is gone
            sources = _sources(folder)
            if relabel is None and facts is not None and facts.done and facts.params == params and facts.n:
                for part in sorted(facts.folder.glob("*.parquet")):
                    shutil.copyfile(part, work / part.name)
            else:
                facts = QueryFacts(params, work)
                for rec in folder.iter_records(plan):
                    facts.add(rec if relabel is None else relabel(rec))
                facts.finish()
            if not facts.n:
                raise RunFolderError(
                    "no query records (records.jsonl missing or empty, and none in plan.json)", file=str(folder.path)
                )
            _seal_results(con, folder, work)
            _views(con, work)
            con.execute(f"COPY ({QUEUE_DOCS}) TO '{_sql_path(work / 'queue.parquet')}'")
            meta = {
                "format": FORMAT,
                "params": params.key(),
                "sources": sources,
                **facts.meta,
                "local_keys": params.local_keys,
                "results": _result_counts(con, facts.n),
            }
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


def _fresh(meta: dict[str, Any] | None, folder: RunFolder, params: FactParams) -> bool:
    return (
        meta is not None
        and meta.get("format") == FORMAT
        and meta.get("params") == params.key()
        and meta.get("sources") == _sources(folder)
    )


class RunColumns:
    """The one reader of a run folder's results: per-query columns, result rows, holes — as DuckDB views
    (``queries``, ``results`` with its file order as ``seq``, ``holes``) and as numpy columns fetched one at a time.

    ``open`` seals the folder first when it has no up-to-date ``columns/`` (a folder of an earlier version: converted
    once, in place; a read-only folder: into a temporary folder, removed with the object)."""

    def __init__(self, folder: RunFolder, path: Path, meta: dict[str, Any], params: FactParams) -> None:
        self.folder, self.path, self.meta, self.params = folder, path, meta, params
        self._temporary: Path | None = None
        self._spill: Path | None = _spill_dir()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._observed: tuple[dict[str, list[str]], dict[str, str]] | None = None
        self._defined: list[str] = []  # views a reader defined (``define``), made again on a new connection

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The engine's connection with the views, opened at the first query (again after ``release``)."""
        if self._con is None:
            if self._spill is None:
                raise RunFolderError("the run's columns were closed", file=str(self.path))
            con = connect(self._spill)
            _views(con, self.path, duplicates=self.anomalies()[1] > 0)
            for sql in self._defined:
                con.execute(sql)
            self._con = con
        return self._con

    def define(self, sql: str) -> None:
        """Run ``sql`` (a ``CREATE OR REPLACE VIEW``) now and on every later connection."""
        self._defined.append(sql)
        self.con.execute(sql)

    def release(self) -> None:
        """Close the connection (the next query opens another): an engine instance keeps memory its queries used
        (≈ 50 MB after a group-by over a million queries' results), so a caller holding several runs — compare —
        releases each between its uses."""
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None

    @classmethod
    def open(
        cls,
        run_dir: str | os.PathLike[str],
        *,
        stage_k: int | None = None,
        plan: Plan | None = None,
        relabel: Callable[[Any], Any] | None = None,
    ) -> RunColumns:
        """The run's columns (sealed first when stale); with ``relabel`` (each record with other labels), always
        sealed afresh into a temporary folder: the run folder's own columns keep its own labels."""
        folder = RunFolder(run_dir)
        folder.require_dir()
        plan = plan or folder.read_plan(items=False, records=False)
        params = FactParams.for_plan(plan, stage_k)
        path = folder.path / COLUMNS_DIR
        remove_stale(folder.path, _WORK)  # what a killed report's seal left, whether or not this one seals
        meta = _read_meta(path)
        temporary = None
        if relabel is not None:
            temporary = Path(tempfile.mkdtemp(prefix="foundry-bridge-columns-"))
            try:
                path = seal(folder, params, target=temporary / COLUMNS_DIR, plan=plan, relabel=relabel)
            except BaseException:
                shutil.rmtree(temporary, ignore_errors=True)
                raise
            meta = _read_meta(path)
        elif not _fresh(meta, folder, params):
            try:
                seal(folder, params, plan=plan)
            except PermissionError:  # a read-only run folder: the columns go to a temporary folder
                temporary = Path(tempfile.mkdtemp(prefix="foundry-bridge-columns-"))
                path = seal(folder, params, target=temporary / COLUMNS_DIR, plan=plan)
            meta = _read_meta(path)
            if meta is None:
                raise RunFolderError("the run's columns could not be written", file=str(path))
        out = cls(folder, path, meta or {}, params)
        out._temporary = temporary
        return out

    def close(self) -> None:
        """Close the connection; remove the engine's spill folder (and temporary columns)."""
        if not hasattr(self, "_spill"):
            return
        self.release()
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
        return int(self.meta["queries"])

    @property
    def local_keys(self) -> list[str]:
        return list(self.meta["local_keys"])

    def sql(self, query: str, params: Sequence[Any] | dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run a query over the views (``queries``, ``results``, ``holes``)."""
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

    # -- per-query columns, in row order ------------------------------------------------------------------------
    def column(self, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """One per-query column (rows ``lo`` to ``hi``) as numpy: numbers as float64 with NULL as NaN, booleans
        as bool (NULL False), small integers as int8, anything else as Python objects."""
        hi = self.n_queries if hi is None else hi
        where = "" if (lo, hi) == (0, self.n_queries) else f" WHERE row >= {int(lo)} AND row < {int(hi)}"
        got = self.sql(f"SELECT {_quote(name)} AS v FROM queries{where}").fetchnumpy()["v"]
        return _filled(got)

    def texts(self, name: str, lo: int = 0, hi: int | None = None) -> list[Any]:
        """A text (or list) column as Python values, rows ``lo`` to ``hi``."""
        hi = self.n_queries if hi is None else hi
        where = "" if (lo, hi) == (0, self.n_queries) else f" WHERE row >= {int(lo)} AND row < {int(hi)}"
        return [r[0] for r in self.sql(f"SELECT {_quote(name)} FROM queries{where}").fetchall()]

    def text_column(self, name: str) -> Texts:
        """A text column of every query, in row order, copied from the engine's buffers into a ``Texts`` (no
        Python string per query)."""
        from .metrics._arrays import Texts

        out = Texts()
        for chunk in self.arrow(f"SELECT {_quote(name)}::VARCHAR AS v FROM queries ORDER BY row").column("v").chunks:
            if not len(chunk):
                continue
            none = None
            if chunk.null_count:
                bits = np.unpackbits(np.frombuffer(chunk.buffers()[0], np.uint8), bitorder="little")
                none = bits[chunk.offset : chunk.offset + len(chunk)] == 0
            data, ends = string_spans(chunk)
            out.extend_utf8(bytes(data), ends, none)
        return out

    def code_column(self, name: str) -> Codes:
        """A column of a handful of distinct strings (a query's kind), in row order, as ``Codes`` (names in order of
        first appearance); the engine finds the names and each row's index."""
        from .metrics._arrays import Codes

        col = _quote(name)
        names = [r[0] for r in self.sql(f"SELECT {col} FROM queries GROUP BY {col} ORDER BY min(row)").fetchall()]
        got = self.sql(f"SELECT list_position(?, {col}) - 1 AS c FROM queries ORDER BY row", [names]).fetchnumpy()
        return Codes.of(names, np.asarray(got["c"], np.int8))

    def ids_where(self, condition: str, limit: int | None = None) -> list[str]:
        """The query ids of the rows where the SQL ``condition`` holds, in row order (the first ``limit``)."""
        cap = "" if limit is None else f" LIMIT {int(limit)}"
        return [r[0] for r in self.sql(f"SELECT query_id FROM queries WHERE {condition} ORDER BY row{cap}").fetchall()]

    def count_where(self, condition: str) -> int:
        return int(self.scalar(f"SELECT count(*) FROM queries WHERE {condition}"))

    # -- result rows ----------------------------------------------------------------------------------------------
    def result_counts(self) -> tuple[int, int]:
        """(result rows, rows with an error), as counted when the run was sealed."""
        counts = self.meta["results"]
        return int(counts["rows"]), int(counts["errored"])

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

    def anomalies(self) -> tuple[int, int]:
        """(rows pointing outside the dataset, duplicated (row, criterion, metric) rows), as counted when the run was
        sealed (``_result_counts``)."""
        counts = self.meta["results"]
        return int(counts["out_of_range"]), int(counts["duplicates"])


def string_spans(chunk: Any) -> tuple[memoryview, np.ndarray]:
    """An Arrow string array's text as it lies in its buffer: the bytes of its values, one after the other, and each
    value's end offset in them."""
    n, buffers = len(chunk), chunk.buffers()
    offsets = np.frombuffer(buffers[1], np.int32, n + 1, chunk.offset * 4).astype(np.int64)
    return memoryview(buffers[2])[int(offsets[0]) : int(offsets[-1])], offsets[1:] - offsets[0]


def _filled(values: Any) -> np.ndarray:
    """A fetched column with NULL as NaN (numbers) or None (objects)."""
    if isinstance(values, np.ma.MaskedArray):
        if values.dtype.kind == "f":
            return np.ma.filled(values, np.nan)
        if values.dtype.kind in "iu":
            return np.ma.filled(values.astype(np.float64), np.nan)
        if values.dtype.kind == "b":
            return np.ma.filled(values, False)
        return _objects_of(values)
    return np.asarray(values)


def _objects_of(values: Any) -> np.ndarray:
    if isinstance(values, np.ma.MaskedArray):
        out = np.asarray(values.data, dtype=object).copy()
        out[np.ma.getmaskarray(values)] = None
        return out
    return np.asarray(values, dtype=object)
