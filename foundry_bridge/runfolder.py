"""The run folder: typed ``state.json`` and ``manifest.json``, and the one class that reads and writes a run.

``RunFolder(path)`` owns every file of a run (``results.RUN_FILES``): the plan (``plan.json``, ``items.jsonl``,
``records.jsonl``), the resume point (``state.json`` → ``RunState``), the raw service output
(``output_items.jsonl``), the normalized rows (``results.jsonl``) and the provenance (``manifest.json`` →
``Manifest``). Every write is atomic (``_io.atomic_open``). Both models keep fields they do not know
(``extra="allow"``) and are written with only the fields that were set, so a file written by an older version
loads and is written back unchanged. A damaged file is a ``RunFolderError`` naming the file, line and field.

One process owns a folder: ``lock()`` takes an OS-level lock (``filelock``: ``flock`` / ``LockFileEx``, released by
the operating system when the process dies) and writes who holds it beside the lock; a second process is
refused at once with a ``RunFolderBusyError`` naming the holder. ``check_consistent`` compares the counts
``manifest.json`` and ``state.json`` record with the files (``DamagedRunFolderError``), so a truncated or mixed
folder is never reused or reported as finished.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ._io import atomic_open, dumps, loads, write_json
from .dataset.records import QueryRecord
from .errors import FoundryBridgeError, InputError, describe_os_error, option, spelled
from .mapping.plan import JsonlRows, Plan, write_rows
from .results import RUN_FILES, ResultRow

__all__ = [
    "FAILED_STATUSES",
    "RESULT_COLUMNS",
    "DamagedRunFolderError",
    "Manifest",
    "RunFolder",
    "RunFolderBusyError",
    "RunFolderError",
    "RunPart",
    "RunState",
    "ServiceIdsNotSavedError",
    "judge_identities",
]

_M = TypeVar("_M", bound=BaseModel)

# statuses after which a part is submitted again on --resume
FAILED_STATUSES = ("failed", "canceled", "cancelled")
# the files a run writes once it has executed: stale after a reset
_OUTPUT_FILES = ("results", "manifest", "output_items")
_CHUNK_BYTES = 4 << 20  # JSONL lines parsed and validated at once (bounded memory)
# a result row's fields (``results.ResultRow``) as results.jsonl holds them, each with its declared SQL type
RESULT_COLUMNS = {
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
    "properties": "JSON",
}
_BATCH_ROWS = 65_536  # result rows made into ``ResultRow`` s at once
_REQUIRED = ("row", "criterion", "evaluator", "metric")  # the fields a result row cannot be without
LOCK_FILE = ".foundry-bridge.lock"  # the OS-level lock of the folder
HOLDER_FILE = ".foundry-bridge.lock.json"  # who holds it: pid, host, since


class RunFolderError(InputError):
    """A run folder cannot be read: a file missing, damaged (not JSON, not an object, a field missing or of the
    wrong type), or the files disagree. ``report.ReportError`` is this class."""


class DamagedRunFolderError(RunFolderError):
    """The files of a finished run disagree with each other (counts, ids): never reused or reported as is."""


class RunFolderBusyError(RunFolderError):
    """Another process holds the folder's lock."""


class ServiceIdsNotSavedError(FoundryBridgeError):
    """Resources exist on the service but ``state.json`` could not be written: the message lists their ids and the
    state to write back by hand, so nothing is orphaned silently."""

    @classmethod
    def from_os_error(cls, exc: OSError, folder: RunFolder, state: RunState) -> ServiceIdsNotSavedError:
        ids = ", ".join(f"{kind} {value}" for kind, value in state.service_ids())
        return cls(
            f"could not save the service ids: {describe_os_error(exc)}. These exist on the service and are NOT "
            f"recorded in {folder.path}: {ids}. Once the cause is fixed, either write this line to "
            f"{folder.file('state')} and run `foundry-bridge run --resume {folder.path}`, or delete them on the "
            f"service and run again with --force: {dumps(state.dump()).decode()}"
        )


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

    def service_ids(self) -> list[tuple[str, str]]:
        """``(kind, id)`` of every resource created on the service: the eval, each run, each uploaded dataset."""
        ids = [("eval", self.eval_id)] if self.eval_id else []
        for part in self.runs or []:
            ids += [("run", part.run_id)] if part.run_id else []
            ids += [("dataset", part.dataset_id)] if part.dataset_id else []
        return ids


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

    def judges(self) -> dict[str, str | None]:
        """Each criterion's judge, as one string to tell two runs' judges apart (``compare``'s judge drift).

        The local backend: the model that answered (``local.judges``), ``@`` its endpoint, and the evaluation
        library whose prompts it was asked with (``azure-ai-evaluation 1.x``): a new library version is a new judge
        version. The service (cloud, emulator): the criterion's ``deployment_name`` and, when the service echoed
        one, the evaluator's version (``builtin.relevance 3``). None: the criterion has no judge the run names
        (document_retrieval, a judge without a deployment such as groundedness_pro, a hand-written manifest)."""
        local = _object((self.model_extra or {}).get("local"))
        answered, library = _object(local.get("judges")), local.get("library")
        versions = {
            e.get("name"): (e.get("evaluator_name"), e.get("evaluator_version"))
            for e in self.evaluators or []
            if isinstance(e, dict)
        }
        out: dict[str, str | None] = {}
        for c in self.criteria or []:
            name, init = c.get("name"), _object(c.get("init"))
            if not isinstance(name, str):
                continue
            judge = answered.get(name)
            if isinstance(judge, dict) and judge.get("model"):
                where = f" @ {judge['endpoint']}" if judge.get("endpoint") else ""
                out[name] = f"{judge['model']}{where}" + (f" ({library})" if library else "")
            elif init.get("deployment_name"):
                evaluator, version = versions.get(name, (None, None))
                out[name] = str(init["deployment_name"]) + (f" ({evaluator} {version})" if version else "")
            else:
                out[name] = None
        return out


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def judge_identities(run_dir: str | os.PathLike[str]) -> dict[str, str | None]:
    """{criterion: its judge or None} of the run in ``run_dir`` (``Manifest.judges``); {} without a manifest."""
    manifest = RunFolder(run_dir).read_manifest()
    return {} if manifest is None else manifest.judges()


def _field_error(path: Path, exc: ValidationError) -> RunFolderError:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    problem = "missing" if first["type"] == "missing" else first["msg"]
    return RunFolderError(problem, file=str(path), field=field, hint=_HINT)


_HINT = "restore the file, or run again with --force to start a new run in this folder"
_NOT_A_RUN = "not found (is this a run folder written by `foundry-bridge run`?)"


def _read_json(path: Path, hint: str | None = _HINT) -> Any:
    try:
        return loads(path.read_bytes())
    except FileNotFoundError:
        raise RunFolderError(_NOT_A_RUN, file=str(path)) from None
    except ValueError as exc:
        raise RunFolderError(f"not valid JSON: {exc}", file=str(path), hint=hint) from None


def _count_lines(path: Path) -> int | None:
    """The non-blank lines of a JSONL file (None when it does not exist)."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return None
    with fh:
        return sum(1 for line in fh if line.strip())


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
        data = _read_json(path)
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

    def check_consistent(
        self, *, results: int | None = None, rows: int | None = None, require_manifest: bool = False
    ) -> None:
        """Raise ``DamagedRunFolderError`` when ``manifest.json`` disagrees with ``state.json`` (another plan or
        eval: files of two runs mixed) or with the files: ``results`` rows and plan ``rows`` (counted here when not
        given), and the output items ``state.json`` says were collected. A missing manifest is damage only when
        ``require_manifest`` (a finished run writes it last; hand-written folders may have none)."""
        manifest, state = self.read_manifest(), self.read_state()
        if manifest is None:
            if require_manifest:
                raise self._damaged(f"{RUN_FILES['manifest']} is missing although {RUN_FILES['state']} says completed")
            return
        if state is not None:
            for name, recorded, stated in (
                ("plan_sha256", manifest.plan_sha256, state.plan_sha256),
                ("eval_id", manifest.eval_id, state.eval_id),
            ):
                if recorded and stated and recorded != stated:
                    raise self._damaged(
                        f"{RUN_FILES['manifest']} and {RUN_FILES['state']} describe different runs "
                        f"({name} {recorded} vs {stated}): the files of two runs are mixed"
                    )
        counted = [
            ("results", manifest.results, _count_lines(self.file("results")) if results is None else results),
            ("items", manifest.rows, _count_lines(self.file("items")) if rows is None else rows),
        ]
        if state is not None and results is None:
            counted.append(("output_items", state.collected_items, _count_lines(self.file("output_items"))))
        for key, expected, found in counted:
            if expected is not None and found is not None and found != expected:
                source = RUN_FILES["state" if key == "output_items" else "manifest"]
                raise self._damaged(f"{RUN_FILES[key]} holds {found} rows but {source} records {expected}")

    def _damaged(self, problem: str) -> DamagedRunFolderError:
        return DamagedRunFolderError(
            f"damaged run folder: {problem}",
            file=str(self.path),
            hint=f"`foundry-bridge run --resume {self.path}` collects the results again from the service (cloud), "
            "or run again with --force to start over",
        )

    # -- ownership -----------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Own the folder for the block: an OS-level lock (created with the folder), the holder's pid, host and
        start time written beside it; ``RunFolderBusyError`` at once when another process holds it. The
        operating system releases the lock of a process that dies, so a killed run never blocks the next one."""
        from filelock import FileLock, Timeout

        created = not self.path.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.path / LOCK_FILE), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise self._busy() from None
        try:
            since = datetime.now(UTC).isoformat(timespec="seconds")
            write_json(self.path / HOLDER_FILE, {"pid": os.getpid(), "host": socket.gethostname(), "since": since})
            yield
        finally:
            with contextlib.suppress(OSError):
                (self.path / HOLDER_FILE).unlink()
                if created and [p.name for p in self.path.iterdir()] == [LOCK_FILE]:  # nothing was written
                    (self.path / LOCK_FILE).unlink()
            lock.release()
            if created:
                with contextlib.suppress(OSError):
                    self.path.rmdir()  # only if empty: a folder this block created and left unused

    def _busy(self) -> RunFolderBusyError:
        try:
            holder = loads((self.path / HOLDER_FILE).read_bytes())
        except (OSError, ValueError):
            holder = None
        if isinstance(holder, dict):
            pid = holder.get("pid")
            who = f"process {pid} on {holder.get('host')}, since {holder.get('since')}"
            stop = f"wait for it to finish, or stop it first (kill {pid} on {holder.get('host')})"
        else:
            who, stop = "another process (it has not recorded itself yet)", "wait for it to finish"
        return RunFolderBusyError(
            f"in use by {who}",
            file=str(self.path),
            hint=f"{stop}; or choose another {spelled('out=', '--out')} folder. {option('force')} never takes over a "
            "folder in use",
        )

    # -- plan ----------------------------------------------------------------------------------------------------
    def has_plan(self) -> bool:
        return self.file("plan").is_file()

    def write_plan(self, plan: Plan) -> None:
        """``plan.json`` (without rows), ``items.jsonl`` and ``records.jsonl``, the rows streamed (spooled rows are
        copied line by line, never parsed)."""
        write_json(self.file("plan"), plan.model_dump(mode="json", exclude={"items", "records"}))
        write_rows(self.file("items"), plan.items)
        write_rows(self.file("records"), plan.records)

    def read_plan(self, *, items: bool = True, records: bool = True) -> Plan:
        """The plan saved in the folder: ``plan.json`` + ``items.jsonl`` + ``records.jsonl``, the rows as
        ``JsonlRows`` (each line checked now, parsed again only when read; a report that streams the records with
        ``iter_records``, or needs no items, leaves them out)."""
        path = self.file("plan")
        data = _read_json(path)
        if not isinstance(data, dict):
            raise RunFolderError(f"expected a JSON object, got {type(data).__name__}", file=str(path), hint=_HINT)
        if "items" not in data:
            data["items"] = self._jsonl("items") if items else []
        if records and "records" not in data:
            data["records"] = self._jsonl("records")
        try:
            return Plan.model_validate(data)
        except ValidationError as exc:
            raise _field_error(path, exc) from None

    def _jsonl(self, key: str) -> Sequence[dict[str, Any]]:
        path = self.file(key)
        if not path.is_file():
            return []

        def check(lineno: int, line: bytes) -> None:
            if not isinstance(_parse_line(path, lineno, line), dict):
                raise RunFolderError("not a JSON object", file=str(path), line=lineno, hint=_HINT)

        return JsonlRows.open(path, check)

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
        """``results.jsonl``, written as ``rows`` are produced (put in place once they are all written); the
        number of rows. Each line is pydantic's JSON of the row: the bytes ``dumps(row.model_dump(mode="json"))``
        gives (NaN as null, the same float and Unicode spelling), three times faster."""
        n = 0
        with atomic_open(self.file("results")) as fh:
            for row in rows:
                fh.write(row.__pydantic_serializer__.to_json(row) + b"\n")
                n += 1
        return n

    def results_sql(self, fields: Sequence[str] = tuple(RESULT_COLUMNS)) -> str:
        """The one reading of ``results.jsonl``: a DuckDB ``SELECT`` of ``fields`` over its lines in file order, each
        of its declared type (``RESULT_COLUMNS``), never inferred; a row without a required field fails the query.
        Run it inside ``results_errors`` (a line that is not a result row is then named). A run that has not
        finished (or a folder that is not a run's) says so here."""
        path = self.file("results")
        if not path.exists():
            state = self.read_state()
            if state is not None and state.status != "completed":
                raise RunFolderError(
                    f"not written yet: the run has not finished ({RUN_FILES['state']} says {state.status!r})",
                    file=str(path),
                    hint=f"`foundry-bridge run --resume {self.path}` finishes it, or run again with --force",
                )
            raise RunFolderError(_NOT_A_RUN, file=str(path))
        select = ", ".join(_sql_name(k) for k in fields)
        if path.stat().st_size == 0:
            return f"SELECT {', '.join(f'NULL::{RESULT_COLUMNS[k]} AS {_sql_name(k)}' for k in fields)} LIMIT 0"
        types = ", ".join(f"{_sql_name(k)}: '{t}'" for k, t in RESULT_COLUMNS.items())
        literal = "".join(f"[{c}]" if c in "[*?" else c for c in str(path)).replace("'", "''")  # not a pattern
        missing = " OR ".join(f"{_sql_name(k)} IS NULL" for k in _REQUIRED)
        return (
            f"SELECT {select} FROM read_json('{literal}', format = 'newline_delimited', columns = {{{types}}}) "
            f"WHERE CASE WHEN {missing} THEN error('a result row without one of {', '.join(_REQUIRED)}') ELSE true END"
        )

    @contextlib.contextmanager
    def results_errors(self) -> Iterator[None]:
        """Run a query of ``results_sql`` inside: an error of the engine reading ``results.jsonl`` becomes a
        ``RunFolderError`` naming the file and the first line that is not a result row (found by validating the
        lines one at a time, only once the engine has failed)."""
        import duckdb

        try:
            yield
        except duckdb.OutOfMemoryException:
            raise  # the engine's limit, not the file (the CLI says how to raise it)
        except duckdb.Error as exc:
            path = self.file("results")
            with path.open("rb") as fh:
                for lineno, line in enumerate(fh, 1):
                    if line.strip():
                        _validate_line(path, lineno, line, ResultRow, "a result row")
            raise RunFolderError(
                f"cannot be read as result rows: {exc}", file=str(path), hint=_line_hint(path)
            ) from None

    def iter_results(self) -> Iterator[ResultRow]:
        """The ``ResultRow`` s of ``results.jsonl``, in file order (read by ``results_sql``, a batch at a time)."""
        import duckdb

        sql = self.results_sql()
        con = duckdb.connect(config={"memory_limit": "256MB", "threads": 1})  # one thread: file order, no buffer
        con.execute("SET enable_progress_bar = false")
        try:
            with self.results_errors():
                for batch in con.sql(sql).to_arrow_reader(_BATCH_ROWS):
                    for row in batch.to_pylist():
                        props = row["properties"]
                        row["properties"] = None if props is None else loads(props)
                        yield ResultRow.model_construct(**row)
        finally:
            con.close()

    def iter_records(self, plan: Plan) -> Iterator[QueryRecord]:
        """The query records (``records.jsonl``, else ``plan.json``'s ``records``)."""
        if not self.file("records").exists():
            yield from (QueryRecord.model_validate(r) for r in plan.records)
            return
        yield from self._iter_validated("records", QueryRecord, "a query record")

    def records_at(self, rows: Iterable[int], plan: Plan) -> dict[int, QueryRecord]:
        """The query records at ``rows`` (0-based, in file order, the run's row numbers); every other line is
        skipped unparsed and the read stops after the last one wanted: the few records a page shows, at the cost of
        scanning lines, not of validating them."""
        wanted = set(rows)
        if not wanted:
            return {}
        if not self.file("records").exists():
            return {i: QueryRecord.model_validate(r) for i, r in enumerate(plan.records) if i in wanted}
        path, out, row = self.file("records"), {}, 0
        with path.open("rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                if row in wanted:
                    out[row] = _validate_line(path, lineno, line, QueryRecord, "a query record")
                    if len(out) == len(wanted):
                        break
                row += 1
        return out

    def _iter_validated(self, key: str, model: type[_M], what: str) -> Iterator[_M]:
        """Lines validated a few MiB at a time (one call for thousands of rows); a chunk that fails is redone
        line by line, so the error names the first bad line."""
        path = self.file(key)
        try:
            fh = path.open("rb")
        except FileNotFoundError:
            raise RunFolderError(_NOT_A_RUN, file=str(path)) from None
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

    def require_dir(self) -> None:
        """Raise ``RunFolderError`` unless the folder exists."""
        if not self.path.is_dir():
            raise RunFolderError(
                "not a directory (give the run folder written by `foundry-bridge run`)", file=str(self.path)
            )

    def report_manifest(self) -> dict[str, Any]:
        """``manifest.json`` as a dict ({} when absent), with ``state.json``'s status when it has none."""
        manifest = self.read_manifest()
        raw = manifest.dump() if manifest is not None else {}
        state = self.read_state() if "status" not in raw else None
        if state is not None and state.status:
            raw["status"] = state.status
        return raw


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _line_hint(path: Path) -> str:
    """How to recover a damaged JSONL file of the folder: output files are collected again, inputs restored."""
    if path.name in (RUN_FILES["results"], RUN_FILES["output_items"]):
        return (
            f"`foundry-bridge run --resume {path.parent}` collects the results again from the service (cloud), "
            "or run again with --force"
        )
    return _HINT


def _parse_line(path: Path, lineno: int, line: bytes) -> Any:
    try:
        return loads(line)
    except ValueError as exc:
        raise RunFolderError(f"not valid JSON: {exc}", file=str(path), line=lineno, hint=_line_hint(path)) from None


def _validate_line(path: Path, lineno: int, line: bytes, model: type[_M], what: str) -> _M:
    obj = _parse_line(path, lineno, line)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise RunFolderError(f"not {what}: {exc}", file=str(path), line=lineno, hint=_line_hint(path)) from None
