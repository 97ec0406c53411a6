"""The run folder read once into columns on disk: the records a block at a time, the result rows into columns.

``read_records`` streams ``records.jsonl`` in blocks of ``_CHUNK_RECORDS``: each block becomes the metrics' arrays
(handed to ``on_block``, which computes the local metrics and spills them, then dropped), each record's holes go to
the labelling queue's partition files, and what a per-query row needs of its text (query, response, canary,
dropped relevant documents, holes) is written to a temporary file, read back in order when the rows are produced.
What stays in memory per query is its id, kind, kind source and abstention (``QueryIndex``, ~20 bytes).
``read_results`` streams ``results.jsonl`` into one ``Cells`` per (criterion, metric): score, passed, threshold,
label code and presence in ``Spill`` files, one block of rows in memory (result rows come in row order, so each
block is written once), the reason and error strings only where a row has them. ``ScoreColumn`` derives each
query's status (scored / errored / missing) block by block and spills it too; its columns are read back whole, one
at a time (aggregates, distributions, pairing), or a block of rows at a time (the per-query rows).
"""

from __future__ import annotations

import itertools
import tempfile
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from .._io import dumps, loads, trim_heap
from ..dataset.records import QueryRecord
from ..metrics._arrays import Codes, QueryArrays, Texts
from ..results import ResultRow
from ..runfolder import RunFolder, RunFolderError
from ._queue import Holes
from ._spill import BlockBuffer, Spill, blocks

__all__ = ["SCORED", "STATUSES", "Cells", "Columns", "FoundryRead", "QueryIndex", "RecordRead", "ScoreColumn"]

STATUSES = ("scored", "errored", "missing")
_CHUNK_RECORDS = 65_536  # records whose metric arrays are built at once (a block)
SCORED, ERRORED, MISSING = 0, 1, 2


@dataclass
class QueryIndex:
    """What the report keeps of every query in memory: id, kind, kind source (codes) and abstention (-1, 0, 1)."""

    query_ids: Texts
    kinds: Codes
    kind_sources: Codes
    abstains: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def negative(self) -> np.ndarray:
        return self.kinds.mask("negative")


@dataclass
class RecordRead:
    """One pass over the records: the queries' index, the holes, and the rows' text facts in a temporary file."""

    arrays: QueryIndex
    holes: Holes
    facts: IO[bytes]  # one JSON line per query: [query, response, canary, dropped_relevant, checked, holes]

    def iter_facts(self) -> Iterator[list[Any]]:
        self.facts.seek(0)
        for line in self.facts:
            yield loads(line)
        self.facts.close()


def _holes(rec: QueryRecord, k: int) -> list[tuple[int, str]]:
    """One query's unlabelled top-k documents as ``(rank, document id)``; a repeat counts at its first position."""
    labelled = {g.document_id for g in rec.retrieval_ground_truth or []}
    seen: set[str] = set()
    rank = 0
    holes: list[tuple[int, str]] = []
    for doc in rec.retrieved_documents:
        if doc.document_id in seen:
            continue
        seen.add(doc.document_id)
        rank += 1
        if rank > k:
            break
        if doc.document_id not in labelled:
            holes.append((rank, doc.document_id))
    return holes


def _fact(rec: QueryRecord, asm: dict[str, Any], holes: list[tuple[int, str]]) -> list[Any]:
    """What a per-query row keeps of one record: text fields, canary, the assembly check's verdict, the holes."""
    canary = rec.extra.get("canary")
    return [
        rec.query,
        rec.response,
        str(canary) if canary not in (None, "", False) else None,
        [str(d) for d in asm.get("dropped_relevant", []) or []],
        bool(asm.get("checked", False)) and rec.context is not None,
        [d for _, d in holes],
    ]


def read_records(
    folder: RunFolder,
    records: Iterator[QueryRecord],
    *,
    k_stage: int,
    depth: int,
    rt: int,
    phrases: Any,
    on_block: Callable[[QueryArrays, int], None],
    block: int | None = None,
) -> RecordRead:
    """Records, read once, a block at a time: ``on_block(arrays, first_row)`` sees each block's metric arrays; the
    holes at ``k_stage`` and the text facts are spilled to disk."""
    from ..metrics import assembly_check
    from ..metrics._arrays import from_records

    holes = Holes()
    facts = tempfile.TemporaryFile()  # noqa: SIM115 (closed by iter_facts, or on error below)

    def stream() -> Iterator[QueryRecord]:
        for rec in records:
            found = _holes(rec, k_stage)
            holes.add(len(holes.query_text), rec.query, found)
            asm = assembly_check((rec,), k=k_stage, relevance_threshold=rt)[0]
            facts.write(dumps(_fact(rec, asm, found)) + b"\n")
            yield rec

    index = QueryIndex(Texts(), Codes(), Codes(), np.zeros(0, np.int8))
    abstains: list[np.ndarray] = []
    it = stream()
    try:
        while True:
            size = block or _CHUNK_RECORDS
            arrays = from_records(itertools.islice(it, size), depth, rt, abstention_phrases=phrases)
            if not arrays.n_queries:
                break
            on_block(arrays, index.n_queries)
            index.query_ids.extend(arrays.query_ids)  # type: ignore[arg-type]  # from_records makes Texts
            index.kinds.extend(arrays.kinds)  # type: ignore[arg-type]  # and Codes
            index.kind_sources.extend(arrays.kind_sources)  # type: ignore[arg-type]
            abstains.append(np.asarray(arrays.abstains, np.int8))
            del arrays
            trim_heap()  # the block's arrays and records are freed: their pages go back
    except BaseException:
        facts.close()
        raise
    if not index.n_queries:
        facts.close()
        raise RunFolderError(
            "no query records (records.jsonl missing or empty, and none in plan.json)", file=str(folder.path)
        )
    index.abstains = np.concatenate(abstains)
    holes.query_ids = index.query_ids  # the same ids, held once
    return RecordRead(index, holes, facts)


class SparseText:
    """The strings of some rows of an ``n``-row column, as UTF-8 in one buffer: 8 bytes per row once a string is
    set (none before), plus 16 bytes and the text per string — not a Python object per string."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.at: np.ndarray | None = None  # row → entry, -1: none
        self.buf = bytearray()
        self.bounds = array("q")  # entry k is buf[bounds[2k]:bounds[2k+1]]

    def set(self, i: int, text: str | None) -> None:
        if text is None:
            if self.at is not None:
                self.at[i] = -1
            return
        if self.at is None:
            self.at = np.full(self.n, -1, np.int64)
        self.at[i] = len(self.bounds) // 2
        self.bounds.append(len(self.buf))
        self.buf += text.encode("utf-8")
        self.bounds.append(len(self.buf))

    def get(self, i: int) -> str | None:
        k = -1 if self.at is None else int(self.at[i])
        if k < 0:
            return None
        return self.buf[self.bounds[2 * k] : self.bounds[2 * k + 1]].decode("utf-8")

    def mask(self) -> np.ndarray:
        """The rows that have a string."""
        return np.zeros(self.n, bool) if self.at is None else self.at >= 0

    def clear(self) -> None:
        self.at, self.buf, self.bounds = None, bytearray(), array("q")


_FIELDS: tuple[tuple[str, str, float], ...] = (
    ("present", "bool", False),
    ("score", "float64", np.nan),
    ("passed", "int8", -1),  # -1 none, 0 false, 1 true
    ("threshold", "float64", np.nan),
    ("label", "int32", -1),  # index into labels, -1 none
)


class Cells:
    """One (criterion, metric) column as results.jsonl holds it, in ``Spill`` files (NaN / -1 where a row has no
    value), one block of rows in memory while it is written. Labels are coded (a metric has a handful: pass,
    fail...); reasons and errors are kept only for the rows that have one."""

    def __init__(self, spill: Spill, key: str, n: int) -> None:
        self.spill, self.key, self.n = spill, key, n
        self.reason, self.error = SparseText(n), SparseText(n)
        self.labels: dict[str, int] = {}
        for name, dtype, fill in _FIELDS:
            spill.create(f"{key}:{name}", n, dtype, fill)
        self._buffer = BlockBuffer(spill)
        self._files = [f"{key}:{name}" for name, _, _ in _FIELDS]

    def flush(self) -> None:
        """Write the block in memory back (the next read sees every cell set)."""
        self._buffer.flush()

    def read(self, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Rows ``lo`` to ``hi`` of one field (present, score, passed, threshold, label)."""
        return self.spill.read(f"{self.key}:{name}", lo, hi)

    def write(self, name: str, lo: int, values: np.ndarray) -> None:
        self.flush()
        self.spill.write(f"{self.key}:{name}", lo, values)

    def set(self, i: int, res: ResultRow) -> bool:
        """Row ``i``'s cell (the last one wins); returns whether the row already had one."""
        j = self._buffer.at(i)
        present, score, passed, threshold, label = map(self._buffer.column, self._files)  # _FIELDS' order
        duplicate = bool(present[j])
        present[j] = True
        score[j] = np.nan if res.score is None else res.score
        passed[j] = -1 if res.passed is None else int(res.passed)
        threshold[j] = np.nan if res.threshold is None else res.threshold
        label[j] = -1 if res.label is None else self.labels.setdefault(res.label, len(self.labels))
        self.reason.set(i, res.reason)
        self.error.set(i, res.error)
        return duplicate


@dataclass
class FoundryRead:
    """One pass over results.jsonl: each (criterion, metric) column and what the pass counted."""

    cells: dict[tuple[str, str], Cells]
    errors: dict[str, dict[int, str]]
    observed: dict[str, list[str]]
    evaluator_of: dict[str, str]
    n_results: int = 0
    errored_rows: int = 0


def read_results(
    folder: RunFolder, evaluators: dict[str, str], n_rows: int, warnings: list[str], spill: Spill
) -> FoundryRead:
    """Foundry results, read once into columns on disk; out-of-range rows and duplicates warned."""
    out = FoundryRead({}, defaultdict(dict), defaultdict(list), dict(evaluators))
    duplicates = out_of_range = 0
    for res in folder.iter_results():
        out.n_results += 1
        if res.error is not None:
            out.errored_rows += 1
        if not 0 <= res.row < n_rows:
            out_of_range += 1
            continue
        out.evaluator_of.setdefault(res.criterion, res.evaluator)
        column = out.cells.get((res.criterion, res.metric))
        if column is None:
            column = out.cells[(res.criterion, res.metric)] = Cells(spill, f"{res.criterion}\0{res.metric}", n_rows)
            out.observed[res.criterion].append(res.metric)
        duplicates += column.set(res.row, res)
        if res.error is not None:
            out.errors[res.criterion].setdefault(res.row, res.error)
    for column in out.cells.values():
        column.flush()
    if out_of_range:
        warnings.append(f"{out_of_range} result row(s) point at a dataset row that does not exist: ignored")
    if duplicates:
        warnings.append(f"{duplicates} duplicated result row(s) (same row, criterion, metric): the last one kept")
    return out


def _opt(x: float) -> float | None:
    return None if x != x else float(x)


class ScoreColumn:
    """One Foundry metric on every query: its cells and ``status`` (SCORED, ERRORED, MISSING), on disk.

    A cell with an error is errored; a cell with a score (or, for a boolean metric, a verdict) is scored; any other
    cell is missing. A query without a cell is errored when its criterion errored on that row, else missing."""

    def __init__(self, cells: Cells, crit_errors: dict[int, str], n: int, boolean: bool) -> None:
        self.cells, self.crit_errors, self.n = cells, crit_errors, n
        self.label_names = list(cells.labels)
        err_rows = np.array(sorted(crit_errors), np.int64)
        err_cells = cells.error.mask()  # once, not once per block
        for lo, hi in blocks(n):
            present, score, passed = (cells.read(f, lo, hi) for f in ("present", "score", "passed"))
            err_cell = err_cells[lo:hi]
            crit_err = np.zeros(hi - lo, bool)
            crit_err[err_rows[(err_rows >= lo) & (err_rows < hi)] - lo] = True
            has_value = ~np.isnan(score) | (boolean & (passed >= 0))
            status = np.full(hi - lo, MISSING, np.int8)
            status[present & ~err_cell & has_value] = SCORED
            status[(present & err_cell) | (~present & crit_err)] = ERRORED
            cells.spill.write(f"{cells.key}:status", lo, status)

    def status(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        return self.cells.read("status", lo, hi)

    def score(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        return self.cells.read("score", lo, hi)

    def passed(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        return self.cells.read("passed", lo, hi)

    def values(self) -> np.ndarray:
        """The score where scored, NaN elsewhere (what compare pairs)."""
        return np.where(self.status() == SCORED, self.score(), np.nan)

    def block(self, lo: int, hi: int) -> ScoreBlock:
        """Rows ``lo`` to ``hi`` of every field, for the per-query rows."""
        fields = {name: self.cells.read(name, lo, hi) for name in ("status", *(f for f, _, _ in _FIELDS))}
        return ScoreBlock(self, lo, fields)


@dataclass
class ScoreBlock:
    """A block of a ``ScoreColumn``'s rows in memory; ``row(i)`` takes the query's index in the whole run."""

    column: ScoreColumn
    lo: int
    fields: dict[str, np.ndarray]

    def verdict(self, i: int) -> tuple[int, int, float]:
        """Query ``i``'s (status, passed code, score)."""
        j = i - self.lo
        f = self.fields
        return int(f["status"][j]), int(f["passed"][j]), float(f["score"][j])

    def row(self, i: int) -> dict[str, Any]:
        """Query ``i``'s ``FoundryScore`` fields, as the report's per-query row holds them."""
        col, f, j = self.column, self.fields, i - self.lo
        c = col.cells
        if not f["present"][j]:
            error = col.crit_errors.get(i)
            return _score("missing") if error is None else _score("errored", error=error)
        code = int(f["label"][j])
        label = col.label_names[code] if code >= 0 else None
        reason, error = c.reason.get(i), c.error.get(i)  # (error.get: a cell's own error, not the criterion's)
        threshold = _opt(f["threshold"][j])
        if error is not None:
            return _score("errored", threshold=threshold, reason=reason, error=error)
        if f["status"][j] == SCORED:
            p = int(f["passed"][j])
            passed = None if p < 0 else bool(p)
            return _score(
                "scored", score=_opt(f["score"][j]), passed=passed, label=label, threshold=threshold, reason=reason
            )
        return _score("missing", threshold=threshold, reason=reason or "null score and no error")


def _score(status: str, **fields: Any) -> dict[str, Any]:
    """``FoundryScore`` fields in the model's order, unset ones None."""
    out: dict[str, Any] = {"status": status, "score": None, "passed": None, "label": None, "threshold": None}
    out.update(reason=None, error=None)
    out.update(fields)
    return out


@dataclass
class Columns:
    """What ``compare`` reads of a report: each query's id and kind, local values, Foundry statuses and scores."""

    query_ids: Texts
    kinds: Codes
    local: LocalColumns
    foundry: dict[str, ScoreColumn]

    def values(self, key: str, source: str) -> np.ndarray:
        """``key``'s value on every query (NaN: undefined, errored or missing)."""
        return self.local[key] if source == "local" else self.foundry[key].values()


class LocalColumns(Mapping[str, np.ndarray]):
    """The local metric columns (and n_rel) on disk: ``columns[key]`` reads one whole, ``block`` a range of all."""

    def __init__(self, spill: Spill, keys: list[str]) -> None:
        self.spill, self.keys_ = spill, keys

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.keys_:
            raise KeyError(key)
        return self.spill.read(f"local:{key}")

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_)

    def __len__(self) -> int:
        return len(self.keys_)

    def write(self, lo: int, columns: Mapping[str, np.ndarray]) -> None:
        for key in self.keys_:
            self.spill.write(f"local:{key}", lo, np.asarray(columns[key], np.float64))

    def block(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        return {key: self.spill.read(f"local:{key}", lo, hi) for key in self.keys_}
