"""The plan: everything one evaluation submits, built from a dataset and a mapping before any backend runs.

``build_plan`` (in ``mapping.builder``) makes it; every backend consumes it; ``plan.json`` in a run folder is
its JSON dump, without the rows: the items and records are ``items.jsonl`` and ``records.jsonl``.

A plan's rows (``items``, ``records``) are a sequence: a list when built by hand, or ``JsonlRows`` — the lines of
a JSONL file, indexed by byte offset and parsed only when read — when ``build_plan`` spooled them or a run folder
holds them. Code that must scale reads them with ``iter_rows(rows, start, stop)``, never as a list.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Annotated, Any, overload

import orjson
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, PrivateAttr, TypeAdapter

from .model import Mapping

__all__ = ["CriterionPlan", "EnvDefault", "JsonlRows", "Plan", "RowSpool", "iter_rows", "write_rows"]

_BLOCK = 1 << 20  # bytes read at once when rows are iterated


class JsonlRows(Sequence[dict[str, Any]]):
    """The JSON-object lines of a binary file, as a read-only sequence: ``offsets`` holds where each line starts
    (and, last, where the rows end); a row is parsed when it is read, so memory stays 8 bytes a row. Reads are
    positional (``os.pread``): several iterations, and threads, may read at once. Equal to any sequence of the
    same rows (``plan.items == [...]``)."""

    def __init__(self, fh: IO[bytes], offsets: array[int]) -> None:
        self._fh = fh  # kept open (an anonymous spool file lives as long as this object)
        self._offsets = offsets

    def __copy__(self) -> JsonlRows:
        return self  # read-only: a copied plan shares its rows

    def __deepcopy__(self, memo: dict[int, Any]) -> JsonlRows:
        return self

    def __del__(self) -> None:
        fh = getattr(self, "_fh", None)
        if fh is not None:
            fh.close()

    @classmethod
    def open(cls, path: str | os.PathLike[str], check: Callable[[int, bytes], None] | None = None) -> JsonlRows:
        """The non-blank lines of ``path``; ``check(line_number, line)`` sees each one first (and may raise)."""
        fh = open(path, "rb")  # noqa: SIM115 - held by the object
        offsets, position = array("q"), 0
        try:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    if check is not None:
                        check(lineno, line)
                    offsets.append(position)
                position += len(line)
        except BaseException:
            fh.close()
            raise
        offsets.append(position)
        return cls(fh, offsets)  # a blank line is part of the bytes of the row before it (stripped when read)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return list(self.iter(*index.indices(len(self))[:2])) if index.step in (None, 1) else list(self)[index]
        i = range(len(self))[index]  # IndexError, negative indexes
        start, end = self._offsets[i], self._offsets[i + 1]
        row: dict[str, Any] = orjson.loads(os.pread(self._fh.fileno(), end - start, start))
        return row

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter(0, len(self))

    def iter(self, start: int, stop: int) -> Iterator[dict[str, Any]]:
        """Rows ``start .. stop-1``, read a MiB at a time."""
        return (orjson.loads(line) for line in self.lines(start, stop))

    def lines(self, start: int, stop: int) -> Iterator[bytes]:
        """The raw lines of rows ``start .. stop-1`` (without their newline)."""
        offsets, fd = self._offsets, self._fh.fileno()
        i = max(0, start)
        stop = min(stop, len(self))
        while i < stop:
            j = i + 1
            while j < stop and offsets[j + 1] - offsets[i] <= _BLOCK:
                j += 1
            base = offsets[i]
            block = os.pread(fd, offsets[j] - base, base)
            for k in range(i, j):
                yield block[offsets[k] - base : offsets[k + 1] - base].rstrip()
            i = j

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<JsonlRows: {len(self)} rows of {getattr(self._fh, 'name', 'a spool file')}>"


class RowSpool:
    """Rows appended one at a time to an anonymous temporary file, then read as ``JsonlRows`` (``rows()``)."""

    def __init__(self) -> None:
        self._fh: IO[bytes] = tempfile.TemporaryFile(prefix="foundry-bridge-rows-")  # noqa: SIM115
        self._offsets = array("q", [0])
        self._position = 0

    def append(self, row: Any) -> None:
        line = orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
        self._fh.write(line)
        self._position += len(line)
        self._offsets.append(self._position)

    def rows(self) -> JsonlRows:
        self._fh.flush()
        return JsonlRows(self._fh, self._offsets)


def iter_rows(rows: Sequence[dict[str, Any]], start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
    """Rows ``start .. stop-1`` of a plan's ``items`` or ``records`` (a list or ``JsonlRows``), streamed."""
    stop = len(rows) if stop is None else stop
    if isinstance(rows, JsonlRows):
        return rows.iter(start, stop)
    return itertools.islice(rows, start, stop)


def write_rows(path: str | os.PathLike[str], rows: Sequence[dict[str, Any]]) -> int:
    """Write a plan's rows to a JSONL file atomically, one line each (``JsonlRows`` copied line by line, never
    parsed); the number of rows."""
    from .._io import atomic_open, dumps

    with atomic_open(path) as fh:
        lines = rows.lines(0, len(rows)) if isinstance(rows, JsonlRows) else (dumps(row) for row in rows)
        for line in lines:
            fh.write(line + b"\n")
    return len(rows)


_ROW_LIST: TypeAdapter[list[dict[str, Any]]] = TypeAdapter(list[dict[str, Any]])


def _rows(value: Any) -> Sequence[dict[str, Any]]:
    """A plan's rows as given: ``JsonlRows`` as they are (no row is read), anything else a checked list."""
    return value if isinstance(value, JsonlRows) else _ROW_LIST.validate_python(value)


Rows = Annotated[
    Sequence[dict[str, Any]], PlainValidator(_rows), PlainSerializer(list, return_type=list[dict[str, Any]])
]


class CriterionPlan(BaseModel):
    """One testing criterion as it will be sent (``type: azure_ai_evaluator``)."""

    model_config = ConfigDict(frozen=True)

    name: str
    evaluator: str  # builtin.x
    init: dict[str, Any] = Field(default_factory=dict)  # initialization_parameters, env vars expanded
    data_mapping: dict[str, str] = Field(default_factory=dict)  # input → "{{item.field}}"

    def testing_criterion(self) -> dict[str, Any]:
        """The wire form of this criterion inside the eval-create body."""
        body: dict[str, Any] = {"type": "azure_ai_evaluator", "name": self.name, "evaluator_name": self.evaluator}
        if self.init:
            body["initialization_parameters"] = dict(self.init)
        body["data_mapping"] = dict(self.data_mapping)
        return body


class EnvDefault(BaseModel):
    """An init parameter that holds the mapping's default because its variable was unset or empty when the plan
    was built (``${VAR:-default}``): a guess, which a backend where the value matters refuses (the cloud backend,
    for ``deployment_name``)."""

    model_config = ConfigDict(frozen=True)

    criterion: str
    param: str
    field: str  # where in the mapping: evaluators[i].init.<param>
    variable: str
    value: str


class Plan(BaseModel):
    """Eval-create body, run items, and the settings needed to interpret the results later."""

    name: str
    mapping: Mapping
    criteria: list[CriterionPlan]
    eval_body: dict[str, Any]  # POST /openai/v1/evals body
    items: Rows  # [{"item": {...}}], one per dataset row, in row order
    records: Rows = Field(
        default_factory=list, description="canonical QueryRecord dumps (with document content), row order"
    )
    dataset_path: str | None = None
    dataset_sha256: str | None = None
    mapping_path: str | None = None
    env_defaults: list[EnvDefault] = Field(default_factory=list)  # init values the mapping only guessed
    _fingerprint: tuple[bytes, Any, str] | None = PrivateAttr(default=None)

    @property
    def query_ids(self) -> list[str]:
        return [it["item"].get("query_id") for it in self.items]

    def fingerprint(self) -> str:
        """SHA-256 over what the service would see (eval body + items): same plan ⇒ same run. Remembered for
        file-backed items (they cannot change), so a million rows are hashed once."""
        body = orjson.dumps(self.eval_body, option=orjson.OPT_SORT_KEYS)
        cached = self._fingerprint
        if cached is not None and cached[0] == body and cached[1] is self.items:
            return cached[2]
        h = hashlib.sha256(body)
        for it in self.items:
            h.update(orjson.dumps(it, option=orjson.OPT_SORT_KEYS))
        digest = h.hexdigest()
        if isinstance(self.items, JsonlRows):
            self._fingerprint = (body, self.items, digest)
        return digest
