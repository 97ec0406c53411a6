"""The run folder read once into columns: the records into the metrics' arrays, the result rows into numpy columns.

``read_records`` streams ``records.jsonl``: each record is added to the local metrics' arrays, its holes to the
labelling queue's arrays, and what a per-query row needs of its text (query, response, canary, dropped relevant
documents, holes) is written to a temporary file, read back in order when the rows are produced: document text is
never held. ``read_results`` streams ``results.jsonl`` into one column per (criterion, metric): score, passed and
threshold as numpy arrays, the label, reason and error strings only where a row has them. ``ScoreColumn`` derives
each query's status (scored / errored / missing) from those, for every query at once.
"""

from __future__ import annotations

import itertools
import tempfile
from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from .._io import dumps, loads
from ..dataset.records import QueryRecord
from ..metrics._arrays import QueryArrays
from ..results import ResultRow
from ..runfolder import RunFolder, RunFolderError
from ._queue import Holes

__all__ = ["SCORED", "STATUSES", "Cells", "Columns", "FoundryRead", "RecordRead", "ScoreColumn"]

STATUSES = ("scored", "errored", "missing")
_CHUNK_RECORDS = 65_536  # records whose labels and scores become arrays at once
SCORED, ERRORED, MISSING = 0, 1, 2


@dataclass
class RecordRead:
    """One pass over the records: the metrics' arrays, the holes, and the rows' text facts in a temporary file."""

    arrays: QueryArrays
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
    folder: RunFolder, records: Iterator[QueryRecord], *, k_stage: int, depth: int, rt: int, phrases: Any
) -> RecordRead:
    """Records, read once: the local metrics' arrays, the holes at ``k_stage``, the text facts spilled to disk."""
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

    it = stream()
    first = next(it, None)
    if first is None:
        facts.close()
        raise RunFolderError(
            "no query records (records.jsonl missing or empty, and none in plan.json)", file=str(folder.path)
        )
    arrays = from_records(itertools.chain((first,), it), depth, rt, abstention_phrases=phrases, chunk=_CHUNK_RECORDS)
    holes.query_ids = arrays.query_ids  # type: ignore[assignment]  # the same ids, held once (a Texts)
    return RecordRead(arrays, holes, facts)


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


@dataclass
class Cells:
    """One (criterion, metric) column as results.jsonl holds it; NaN / -1 where a row has no value. Labels are coded
    (a metric has a handful: pass, fail...); reasons and errors are kept only for the rows that have one."""

    present: np.ndarray
    score: np.ndarray
    passed: np.ndarray  # int8: -1 none, 0 false, 1 true
    threshold: np.ndarray
    label: np.ndarray  # int32 index into labels, -1 none
    reason: SparseText
    error: SparseText
    labels: dict[str, int] = field(default_factory=dict)

    @classmethod
    def empty(cls, n: int) -> Cells:
        nan = np.full(n, np.nan)
        none = np.full(n, -1, np.int8)
        return cls(np.zeros(n, bool), nan, none, nan.copy(), np.full(n, -1, np.int32), SparseText(n), SparseText(n))

    def set(self, i: int, res: ResultRow) -> bool:
        """Row ``i``'s cell (the last one wins); returns whether the row already had one."""
        duplicate = bool(self.present[i])
        self.present[i] = True
        self.score[i] = np.nan if res.score is None else res.score
        self.passed[i] = -1 if res.passed is None else int(res.passed)
        self.threshold[i] = np.nan if res.threshold is None else res.threshold
        self.label[i] = -1 if res.label is None else self.labels.setdefault(res.label, len(self.labels))
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


def read_results(folder: RunFolder, evaluators: dict[str, str], n_rows: int, warnings: list[str]) -> FoundryRead:
    """Foundry results, read once into columns; out-of-range rows and duplicates warned."""
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
            column = out.cells[(res.criterion, res.metric)] = Cells.empty(n_rows)
            out.observed[res.criterion].append(res.metric)
        duplicates += column.set(res.row, res)
        if res.error is not None:
            out.errors[res.criterion].setdefault(res.row, res.error)
    if out_of_range:
        warnings.append(f"{out_of_range} result row(s) point at a dataset row that does not exist: ignored")
    if duplicates:
        warnings.append(f"{duplicates} duplicated result row(s) (same row, criterion, metric): the last one kept")
    return out


def _opt(x: float) -> float | None:
    return None if x != x else float(x)


class ScoreColumn:
    """One Foundry metric on every query: ``status`` (SCORED, ERRORED, MISSING), score and passed arrays.

    A cell with an error is errored; a cell with a score (or, for a boolean metric, a verdict) is scored; any other
    cell is missing. A query without a cell is errored when its criterion errored on that row, else missing."""

    def __init__(self, cells: Cells | None, crit_errors: dict[int, str], n: int, boolean: bool) -> None:
        self.cells = cells if cells is not None else Cells.empty(n)
        self.crit_errors = crit_errors
        c = self.cells
        self.label_names = list(c.labels)
        err_cell = c.error.mask()
        crit_err = np.zeros(n, bool)
        crit_err[list(crit_errors)] = True
        has_value = ~np.isnan(c.score) | (boolean & (c.passed >= 0))
        self.status = np.full(n, MISSING, np.int8)
        self.status[c.present & ~err_cell & has_value] = SCORED
        self.status[(c.present & err_cell) | (~c.present & crit_err)] = ERRORED

    @property
    def score(self) -> np.ndarray:
        return self.cells.score

    @property
    def passed(self) -> np.ndarray:
        return self.cells.passed

    def values(self) -> np.ndarray:
        """The score where scored, NaN elsewhere (what compare pairs)."""
        return np.where(self.status == SCORED, self.cells.score, np.nan)

    def row(self, i: int) -> dict[str, Any]:
        """Query ``i``'s ``FoundryScore`` fields, as the report's per-query row holds them."""
        c = self.cells
        if not c.present[i]:
            error = self.crit_errors.get(i)
            return _score("missing") if error is None else _score("errored", error=error)
        code = int(c.label[i])
        label = self.label_names[code] if code >= 0 else None
        reason, error = c.reason.get(i), c.error.get(i)  # (error.get: a cell's own error, not the criterion's)
        threshold = _opt(c.threshold[i])
        if error is not None:
            return _score("errored", threshold=threshold, reason=reason, error=error)
        if self.status[i] == SCORED:
            p = int(c.passed[i])
            passed = None if p < 0 else bool(p)
            return _score(
                "scored", score=_opt(c.score[i]), passed=passed, label=label, threshold=threshold, reason=reason
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

    query_ids: Sequence[str]  # metrics._arrays.Texts from build_report
    kinds: Sequence[str]  # metrics._arrays.Codes from build_report
    local: dict[str, np.ndarray]
    foundry: dict[str, ScoreColumn]

    def values(self, key: str, source: str) -> np.ndarray:
        """``key``'s value on every query (NaN: undefined, errored or missing)."""
        return self.local[key] if source == "local" else self.foundry[key].values()
