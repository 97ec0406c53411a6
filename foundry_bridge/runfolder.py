"""The run folder: typed ``state.json`` and ``manifest.json``, and the one class that reads and writes a run.

``RunFolder(path)`` owns every file of a run (``results.RUN_FILES``): the plan (``plan.json``, ``items.jsonl``,
``records.jsonl``), the resume point (``state.json`` → ``RunState``), the raw service output
(``output_items.jsonl``), the normalized rows (``results.jsonl``) and the provenance (``manifest.json`` →
``Manifest``). Every write is atomic (``_io.atomic_open``). Both models keep fields they do not know
(``extra="allow"``) and are written with only the fields that were set, so a file written by an older version
loads and is written back unchanged. A damaged file is a ``RunFolderError`` naming the file and the field.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ._io import atomic_open, loads, write_json, write_jsonl
from .dataset.records import QueryRecord
from .errors import InputError, UsageError
from .mapping.plan import Plan
from .results import RUN_FILES, ResultRow

__all__ = ["FAILED_STATUSES", "LoadedRun", "Manifest", "RunFolder", "RunFolderError", "RunPart", "RunState"]

_M = TypeVar("_M", bound=BaseModel)

# statuses after which a part is submitted again on --resume
FAILED_STATUSES = ("failed", "canceled", "cancelled")
# the files a run writes once it has executed: stale after a reset
_OUTPUT_FILES = ("results", "manifest", "output_items")
_CHUNK_BYTES = 4 << 20  # JSONL lines parsed and validated at once (bounded memory)


class RunFolderError(InputError):
    """A file of a run folder is damaged: not JSON, not an object, or a field missing or of the wrong type."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")

    def dump(self) -> dict[str, Any]:
        """The JSON object to write: only the fields that were read or set, unknown ones included."""
        return self.model_dump(mode="json", exclude_unset=True)


class RunPart(_Record):
    """One service run of the eval: the rows ``offset .. offset+count-1`` of the plan."""

    offset: int
    count: int
    run_id: str | None = None
    status: str | None = None
    bytes: int | None = None  # the rows' serialized size: inline when at most INLINE_MAX_BYTES
    source: str | None = None  # "file_content" (inline) | "file_id" (uploaded dataset)
    dataset_id: str | None = None
    continuation_token: str | None = None
    report_url: str | None = None
    result_counts: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    replaced_runs: list[dict[str, Any]] | None = None  # earlier failed/canceled runs of this part

    def replace_failed(self) -> None:
        """Remember the failed run of this part before it is submitted again (``--resume``)."""
        self.replaced_runs = [*(self.replaced_runs or []), {"run_id": self.run_id, "status": self.status}]
        self.error = None
        self.__pydantic_fields_set__.discard("error")


class RunState(_Record):
    """``state.json``: what ran where — the resume point, saved as soon as each service id exists."""

    backend: str
    backend_identity: dict[str, Any] = {}
    plan_sha256: str
    dataset_sha256: str | None = None
    dataset_path: str | None = None
    created_at: str | None = None
    status: str  # new | eval_created | submitted | completed | failed | canceled
    endpoint: str | None = None
    api_version: str | None = None
    eval_id: str | None = None
    evaluators: list[dict[str, Any]] | None = None
    runs: list[RunPart] | None = None
    collected_items: int | None = None
    finished_at: str | None = None

    @classmethod
    def for_plan(cls, plan: Plan, backend: str, identity: dict[str, Any], created_at: str | None) -> RunState:
        """The state of a new run of ``plan``."""
        return cls(
            backend=backend,
            backend_identity=identity,
            plan_sha256=plan.fingerprint(),
            dataset_sha256=plan.dataset_sha256,
            dataset_path=plan.dataset_path,
            created_at=created_at,
            status="new",
        )

    def same_run(self, plan: Plan, backend: str, identity: dict[str, Any]) -> bool:
        """Is this a run of this plan, dataset and backend (same endpoint / judge)?"""
        return (
            self.plan_sha256 == plan.fingerprint()
            and self.dataset_sha256 == plan.dataset_sha256
            and self.backend == backend
            and self.backend_identity == identity
        )

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs or [] if r.run_id]


class Manifest(_Record):
    """``manifest.json``: provenance of a finished run. Backends add their own fields (endpoint, requests_sent,
    local judges...), kept as extras; every field is optional so hand-written and older manifests load."""

    tool: str | None = None
    tool_version: str | None = None
    python: str | None = None
    backend: str | None = None
    status: str | None = None
    plan_name: str | None = None
    plan_sha256: str | None = None
    dataset_path: str | None = None
    dataset_sha256: str | None = None
    mapping_path: str | None = None
    criteria: list[dict[str, Any]] | None = None
    rows: int | None = None
    results: int | None = None
    verdicts: dict[str, int] | None = None
    per_criterion: dict[str, dict[str, int]] | None = None
    warnings: list[str] | None = None
    resumed: bool | None = None
    timings: dict[str, Any] | None = None
    eval_id: str | None = None
    run_ids: list[str | None] | None = None
    report_url: str | None = None
    evaluators: list[dict[str, Any]] | None = None


class LoadedRun(NamedTuple):
    """What a report reads: the manifest (with ``state.json``'s status when it has none), plan, records, rows."""

    manifest: dict[str, Any]
    plan: Plan
    records: list[QueryRecord]
    results: list[ResultRow]


def _field_error(path: Path, exc: ValidationError) -> RunFolderError:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    problem = "missing" if first["type"] == "missing" else first["msg"]
    return RunFolderError(problem, file=str(path), field=field, hint=_HINT)


_HINT = "restore the file, or run again with --force to start a new run in this folder"


class RunFolder:
    """The files of one run, read and written atomically. ``path`` need not exist yet."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def file(self, key: str) -> Path:
        """The path of one of ``RUN_FILES`` (``"state"``, ``"results"``...)."""
        return self.path / RUN_FILES[key]

    # -- state and manifest ------------------------------------------------------------------------------------
    def _read_object(self, key: str, model: type[_M]) -> _M | None:
        path = self.file(key)
        if not path.is_file():
            return None
        try:
            data = loads(path.read_bytes())
        except ValueError as exc:
            raise RunFolderError(f"not valid JSON: {exc}", file=str(path), hint=_HINT) from None
        if not isinstance(data, dict):
            raise RunFolderError(f"expected a JSON object, got {type(data).__name__}", file=str(path), hint=_HINT)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise _field_error(path, exc) from None

    def read_state(self) -> RunState | None:
        """``state.json``, or None when the folder has none."""
        return self._read_object("state", RunState)

    def write_state(self, state: RunState) -> None:
        write_json(self.file("state"), state.dump())

    def read_manifest(self) -> Manifest | None:
        """``manifest.json``, or None when the folder has none."""
        return self._read_object("manifest", Manifest)

    def write_manifest(self, manifest: Manifest) -> None:
        write_json(self.file("manifest"), manifest.dump())

    def is_finished(self, state: RunState | None, plan: Plan, backend: str, identity: dict[str, Any]) -> bool:
        """Does this folder (whose ``state.json`` is ``state``) hold a completed run of this plan, ready to reuse?"""
        return (
            state is not None
            and state.status == "completed"
            and state.same_run(plan, backend, identity)
            and self.file("results").is_file()
        )

    # -- plan ----------------------------------------------------------------------------------------------------
    def has_plan(self) -> bool:
        return self.file("plan").is_file()

    def write_plan(self, plan: Plan) -> None:
        """``plan.json`` (without rows), ``items.jsonl`` and ``records.jsonl``."""
        write_json(self.file("plan"), plan.model_dump(mode="json", exclude={"items", "records"}))
        write_jsonl(self.file("items"), plan.items)
        write_jsonl(self.file("records"), plan.records)

    def read_plan(self, *, items: bool = True, records: bool = True) -> Plan:
        """The plan saved in the folder: ``plan.json`` + ``items.jsonl`` + ``records.jsonl`` (a report that streams
        the records with ``iter_records``, or needs no items, leaves them out)."""
        path = self.file("plan")
        if not path.is_file():
            raise UsageError(f"{self.path} is not a run folder: {RUN_FILES['plan']} is missing")
        data = loads(path.read_bytes())
        if not isinstance(data, dict):
            raise RunFolderError("expected a JSON object", file=str(path), hint=_HINT)
        if "items" not in data:
            data["items"] = self._jsonl("items") if items else []
        if records and "records" not in data:
            data["records"] = self._jsonl("records")
        try:
            return Plan.model_validate(data)
        except ValidationError as exc:
            raise _field_error(path, exc) from None

    def _jsonl(self, key: str) -> list[Any]:
        path = self.file(key)
        if not path.is_file():
            return []
        with open(path, "rb") as fh:
            return [_parse_line(path, n, line) for n, line in enumerate(fh, 1) if line.strip()]

    def reset(self) -> None:
        """Create the folder and remove what an earlier run left (results, manifest, output items)."""
        self.path.mkdir(parents=True, exist_ok=True)
        for key in _OUTPUT_FILES:
            self.file(key).unlink(missing_ok=True)

    # -- rows ----------------------------------------------------------------------------------------------------
    def output_items_writer(self) -> AbstractContextManager[IO[Any]]:
        """A binary file for the raw output items (one JSON line each), put in place when the block succeeds."""
        return atomic_open(self.file("output_items"))

    def write_results(self, rows: Iterable[ResultRow]) -> int:
        return write_jsonl(self.file("results"), (r.model_dump(mode="json") for r in rows))

    def iter_results(self) -> Iterator[ResultRow]:
        """The ``ResultRow`` s of ``results.jsonl``, in file order."""
        yield from self._iter_validated("results", ResultRow, "a result row")

    def iter_records(self, plan: Plan) -> Iterator[QueryRecord]:
        """The query records (``records.jsonl``, else ``plan.json``'s ``records``)."""
        if not self.file("records").exists():
            yield from (QueryRecord.model_validate(r) for r in plan.records)
            return
        yield from self._iter_validated("records", QueryRecord, "a query record")

    def _iter_validated(self, key: str, model: type[_M], what: str) -> Iterator[_M]:
        """Lines validated a few MiB at a time (one call for thousands of rows); a chunk that fails is redone
        line by line, so the error names the first bad line."""
        path = self.file(key)
        try:
            fh = path.open("rb")
        except FileNotFoundError:
            raise RunFolderError(
                "not found (is this a run folder written by `foundry-bridge run`?)", file=str(path)
            ) from None
        adapter = TypeAdapter(list[model])  # type: ignore[valid-type]
        lineno = 0
        with fh:
            while lines := fh.readlines(_CHUNK_BYTES):
                first, lineno = lineno + 1, lineno + len(lines)
                try:
                    rows: list[_M] = adapter.validate_python([loads(line) for line in lines if line.strip()])
                except ValueError:
                    rows = [_validate_line(path, n, ln, model, what) for n, ln in enumerate(lines, first) if ln.strip()]
                yield from rows

    def load(self) -> LoadedRun:
        """Everything a report reads; the manifest is optional, ``plan.json`` and ``results.jsonl`` are not."""
        if not self.path.is_dir():
            raise RunFolderError(
                "not a directory (give the run folder written by `foundry-bridge run`)", file=str(self.path)
            )
        manifest = self.report_manifest()
        plan = self.read_plan(records=False)
        records = list(self.iter_records(plan))
        if not records:
            raise RunFolderError(
                "no query records (records.jsonl missing or empty, and none in plan.json)", file=str(self.path)
            )
        return LoadedRun(manifest, plan, records, list(self.iter_results()))

    def report_manifest(self) -> dict[str, Any]:
        """``manifest.json`` as a dict ({} when absent), with ``state.json``'s status when it has none."""
        manifest = self.read_manifest()
        raw = manifest.dump() if manifest is not None else {}
        state = self.read_state() if "status" not in raw else None
        if state is not None and state.status:
            raw["status"] = state.status
        return raw


def _parse_line(path: Path, lineno: int, line: bytes) -> Any:
    try:
        return loads(line)
    except ValueError as exc:
        raise RunFolderError(f"not valid JSON: {exc}", file=str(path), line=lineno) from None


def _validate_line(path: Path, lineno: int, line: bytes, model: type[_M], what: str) -> _M:
    obj = _parse_line(path, lineno, line)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise RunFolderError(f"not {what}: {exc}", file=str(path), line=lineno) from None
