"""Offline validation: check criteria (from a mapping or hand-written) against the catalog and the data, in one
streaming pass, collecting every problem with file, line, field, message, fix hint and severity.

Rules are listed in docs/validation.md; each has a stable ``code``. Memory: constant in the number of rows.
Duplicate ``query_id`` detection uses a fixed-size Bloom filter (16 MiB) during the pass and keeps only the rows
whose id may have been seen before; when there are any, a second pass over the ids alone resolves them exactly.
"""

from __future__ import annotations

import os
import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._text import did_you_mean
from ..catalog import CATALOG, EvaluatorSpec
from ..dataset.parse import RowParser, compile_path, float_label_problem, get_path
from ..dataset.problems import Problem, Severity
from ..errors import InputError, MappingError
from ..mapping.loader import ParamTypeError, expand_param, load_mapping, packaged_mapping_path, param_type_problem
from ..mapping.model import Mapping

__all__ = ["MAX_DOCUMENTS", "ValidationReport", "validate", "validate_criteria_file", "validate_dataset"]

MAX_DOCUMENTS = 10_000  # Foundry's limit per list (retrieved_documents and retrieval_ground_truth)
_MAX_KEYS_KEPT = 1_000  # distinct row keys remembered for did-you-mean hints
_ZERO_RESULT_LINES = 5  # lines named in the zero_result warning
_TEMPLATE = re.compile(r"^\{\{\s*(item|sample)\.([^}\s]+)\s*\}\}$")
_CANONICAL_ITEM_FIELDS = (
    "query_id",
    "query",
    "kind",
    "context",
    "response",
    "ground_truth",
    "retrieved_documents",
    "retrieval_ground_truth",
)


@dataclass
class ValidationReport:
    """Every problem found (at most ``max_per_code`` listed per code; all counted) and the counts."""

    problems: list[Problem] = field(default_factory=list)
    rows: int = 0
    by_code: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    warnings: int = 0
    max_per_code: int = 20

    def add(self, problem: Problem) -> None:
        self.by_code[problem.code] += 1
        if problem.severity == "error":
            self.errors += 1
        else:
            self.warnings += 1
        if self.by_code[problem.code] <= self.max_per_code:
            self.problems.append(problem)

    @property
    def ok(self) -> bool:
        return self.errors == 0

    @property
    def omitted(self) -> dict[str, int]:
        """Per code, how many problems were counted but not listed."""
        return {c: n - self.max_per_code for c, n in self.by_code.items() if n > self.max_per_code}

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "counts": {
                "rows": self.rows,
                "errors": self.errors,
                "warnings": self.warnings,
                "by_code": dict(sorted(self.by_code.items())),
                "omitted": self.omitted,
            },
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass
class _Criterion:
    """A testing criterion resolved against the catalog: which item field feeds which input."""

    name: str
    spec: EvaluatorSpec
    fields: dict[str, str]  # input → item field
    label_min: int = 0
    label_max: int = 4
    where: str = ""  # field path of the criterion in its file

    def field_of_type(self, input_type: str) -> str | None:
        """The item field bound to this criterion's first input of ``input_type`` (labels, documents)."""
        return next((f for inp, f in self.fields.items() if self.spec.input(inp).type == input_type), None)


# -- criteria checks ----------------------------------------------------------------------------------------------


def _line_finder(file: str | None) -> Any:
    """A function field-path-tuple → line for a YAML/JSON criteria file (JSON is YAML), or always None."""
    if file is None:
        return lambda loc: None
    from .._yaml import compose_bounded
    from ..mapping.loader import _line_of

    try:
        node = compose_bounded(Path(file).read_text(encoding="utf-8"), file=file)
    except (OSError, InputError):  # pragma: no cover - the file was parsed before; lines are a nicety
        return lambda loc: None
    return lambda loc: _line_of(node, loc)


def _check_spec(
    evaluator: Any, where: str, loc: tuple[Any, ...], file: str | None, lines: Any, report: ValidationReport
) -> EvaluatorSpec | None:
    if not isinstance(evaluator, str) or not evaluator:
        report.add(Problem("error", "missing_evaluator", "evaluator name is missing", file, lines(loc), where))
        return None
    spec = CATALOG.get(evaluator)
    if spec is not None:
        return spec
    guess = did_you_mean(evaluator, list(CATALOG)) or did_you_mean(f"builtin.{evaluator}", list(CATALOG))
    report.add(
        Problem(
            "error",
            "unknown_evaluator",
            f"{evaluator!r} is not a known builtin evaluator",
            file,
            lines(loc),
            where,
            f"did you mean {guess!r}?" if guess else f"known: {', '.join(CATALOG)}",
        )
    )
    return None


def _check_init(
    spec: EvaluatorSpec,
    init: dict[str, Any],
    where: str,
    loc: tuple[Any, ...],
    file: str | None,
    lines: Any,
    report: ValidationReport,
    environ: dict[str, str] | None,
) -> dict[str, Any]:
    """Unknown init params, values of the wrong catalog type, missing deployment.

    Returns the init with env vars expanded (a ``${VAR}`` alone converted to an int/float parameter's type, as the
    plan does); a value that failed is kept as None.
    """
    expanded: dict[str, Any] = {}
    for key, value in init.items():
        if key not in spec.param_names:
            guess = did_you_mean(key, spec.param_names)
            hint = f"did you mean {guess!r}?" if guess else f"accepted: {', '.join(spec.param_names)}"
            report.add(
                Problem(
                    "error",
                    "unknown_init_param",
                    f"{key!r} is not an initialization parameter of {spec.name}",
                    file,
                    lines((*loc, key)),
                    f"{where}.{key}",
                    hint,
                )
            )
            continue
        ptype = spec.param(key).type
        try:
            expanded[key] = expand_param(value, ptype, environ=environ, where=f"{where}.{key}")
        except MappingError as exc:
            code = "bad_init_type" if isinstance(exc, ParamTypeError) else "env_not_set"
            report.add(Problem("error", code, exc.message, file, lines((*loc, key)), f"{where}.{key}", exc.hint))
            expanded[key] = None
            continue
        problem = param_type_problem(expanded[key], ptype)
        if problem is not None:
            message, hint = problem
            report.add(
                Problem("error", "bad_init_type", f"{key} {message}", file, lines((*loc, key)), f"{where}.{key}", hint)
            )
            expanded[key] = None
    if spec.needs_deployment:
        dep = expanded.get("deployment_name", "missing")
        if "deployment_name" not in init:
            report.add(
                Problem(
                    "error",
                    "missing_deployment",
                    f"{spec.name} is an LLM judge and needs deployment_name",
                    file,
                    lines(loc),
                    f"{where}.deployment_name",
                    'add deployment_name: "${AZURE_AI_MODEL_DEPLOYMENT_NAME}"',
                )
            )
        elif dep is not None and (not isinstance(dep, str) or not dep.strip()):
            report.add(
                Problem(
                    "error",
                    "missing_deployment",
                    "deployment_name is empty",
                    file,
                    lines((*loc, "deployment_name")),
                    f"{where}.deployment_name",
                    "name the judge model deployment",
                )
            )
    return expanded


def _label_range(
    spec: EvaluatorSpec, init: dict[str, Any], mapping_labels: tuple[int, int] | None
) -> tuple[int, int] | None:
    """The (min, max) label range a criterion with a labels input validates against.

    None if it has no labels input, or if a bound was rejected by ``_check_init`` (reported there as an error; kept
    as None): the range Foundry would use is then unknown, so labels are not range-checked against a guess.
    """
    if not any(i.type == "labels" for i in spec.inputs):
        return None
    bounds: list[int] = []
    for name, fallback in zip(
        ("ground_truth_label_min", "ground_truth_label_max"), mapping_labels or (None, None), strict=True
    ):
        if name in init:
            value = init[name]
            if value is None:
                return None  # rejected and reported by _check_init
        else:
            value = fallback
            if value is None and name in spec.param_names:
                value = spec.param(name).default
        if value is None:
            return None  # the evaluator has no such bound
        if not isinstance(value, int) or isinstance(value, bool):
            # _check_init rejects these; reaching here is a bug, never a silent skip
            raise TypeError(f"{name} {value!r} is not an integer")
        bounds.append(value)
    return bounds[0], bounds[1]


def _static_label_warnings(c: _Criterion, file: str | None, line: int | None, report: ValidationReport) -> None:
    if c.label_max >= 10:
        report.add(
            Problem(
                "warning",
                "label_max_fidelity",
                f"ground_truth_label_max is {c.label_max}: Foundry's fidelity metric mis-weights labels when the "
                "maximum is 10 or more (it sorts labels as strings)",
                file,
                line,
                f"{c.where}.ground_truth_label_max",
                f"rescale labels to 0-9 (e.g. round(label * 9 / {c.label_max})) or ignore fidelity",
            )
        )
    if c.label_min >= c.label_max:
        report.add(
            Problem(
                "error",
                "bad_label_range",
                f"ground_truth_label_max ({c.label_max}) must be greater than ground_truth_label_min ({c.label_min})",
                file,
                line,
                c.where,
            )
        )


def _criteria_from_mapping(
    mapping: Mapping, file: str | None, report: ValidationReport, environ: dict[str, str] | None
) -> list[_Criterion]:
    from ..mapping.builder import available_fields

    lines = _line_finder(file)
    out: list[_Criterion] = []
    names: set[str] = set()
    produced = set(available_fields(mapping))
    for i, entry in enumerate(mapping.evaluators):
        where = f"evaluators[{i}]"
        loc: tuple[Any, ...] = ("evaluators", i)
        spec = _check_spec(entry.evaluator, f"{where}.evaluator", (*loc, "evaluator"), file, lines, report)
        if spec is None:
            continue
        name = entry.name or spec.short_name
        if entry.name is not None and name in names:
            report.add(
                Problem(
                    "error",
                    "duplicate_criterion_name",
                    f"criterion name {name!r} is used twice",
                    file,
                    lines((*loc, "name")),
                    f"{where}.name",
                    "give each evaluator entry a distinct `name`",
                )
            )
        names.add(name)
        init = _check_init(spec, entry.init, f"{where}.init", (*loc, "init"), file, lines, report, environ)
        fields: dict[str, str] = {}
        for key, target in entry.inputs.items():
            if key not in spec.input_names:
                report.add(_not_an_input(key, spec, file, lines((*loc, "inputs", key)), f"{where}.inputs.{key}"))
                continue
            fields[key] = target
        for inp in spec.input_names:
            if inp in fields:
                continue
            if inp in spec.required_inputs or inp in produced:
                fields[inp] = inp
        rng = _label_range(spec, init, (mapping.labels.min, mapping.labels.max))
        c = _Criterion(name, spec, fields, where=f"{where}.init")
        if rng is not None:
            c.label_min, c.label_max = rng
            _static_label_warnings(c, file, lines((*loc, "init")) or lines(loc), report)
        out.append(c)
    return out


def _not_an_input(key: str, spec: EvaluatorSpec, file: str | None, line: int | None, where: str) -> Problem:
    guess = did_you_mean(key, spec.input_names)
    if guess is not None and guess.lower() == key.lower():
        return Problem(
            "error", "input_wrong_case", f"input {key!r} has the wrong case", file, line, where, f"write {guess!r}"
        )
    return Problem(
        "error",
        "unknown_input",
        f"{key!r} is not an input of {spec.name}",
        file,
        line,
        where,
        f"did you mean {guess!r}?" if guess else f"inputs: {', '.join(spec.input_names)}",
    )


def _criteria_from_wire(criteria: Any, file: str | None, report: ValidationReport) -> list[_Criterion]:
    """Hand-written ``testing_criteria`` (a list, or a whole eval-create body)."""
    lines = _line_finder(file)
    prefix: tuple[Any, ...] = ()
    if isinstance(criteria, dict) and "testing_criteria" in criteria:
        criteria = criteria["testing_criteria"]
        prefix = ("testing_criteria",)
    if not isinstance(criteria, list):
        report.add(
            Problem(
                "error",
                "bad_criteria_file",
                "expected a JSON list of testing_criteria or an eval-create body with `testing_criteria`",
                file,
                None,
                "",
            )
        )
        return []
    out: list[_Criterion] = []
    names: set[str] = set()
    for i, crit in enumerate(criteria):
        loc = (*prefix, i)
        where = f"testing_criteria[{i}]"
        if not isinstance(crit, dict):
            report.add(Problem("error", "bad_criterion", "a criterion must be a JSON object", file, lines(loc), where))
            continue
        if crit.get("type") != "azure_ai_evaluator":
            report.add(
                Problem(
                    "warning",
                    "not_checked",
                    f"criterion type {crit.get('type')!r} is not azure_ai_evaluator; not checked",
                    file,
                    lines((*loc, "type")),
                    f"{where}.type",
                )
            )
            continue
        name = crit.get("name")
        if not isinstance(name, str) or not name:
            report.add(
                Problem(
                    "error",
                    "missing_name",
                    "criterion name is missing",
                    file,
                    lines(loc),
                    f"{where}.name",
                    "every criterion needs a unique `name`",
                )
            )
            name = f"#{i}"
        elif name in names:
            report.add(
                Problem(
                    "error",
                    "duplicate_criterion_name",
                    f"criterion name {name!r} is used twice",
                    file,
                    lines((*loc, "name")),
                    f"{where}.name",
                    "give each criterion a distinct `name`",
                )
            )
        names.add(name)
        spec = _check_spec(
            crit.get("evaluator_name"), f"{where}.evaluator_name", (*loc, "evaluator_name"), file, lines, report
        )
        if spec is None:
            continue
        init = crit.get("initialization_parameters") or {}
        if not isinstance(init, dict):
            report.add(
                Problem(
                    "error",
                    "bad_init",
                    "initialization_parameters must be an object",
                    file,
                    lines((*loc, "initialization_parameters")),
                    f"{where}.initialization_parameters",
                )
            )
            init = {}
        init = _check_init(
            spec,
            init,
            f"{where}.initialization_parameters",
            (*loc, "initialization_parameters"),
            file,
            lines,
            report,
            None,
        )
        dm = crit.get("data_mapping")
        fields: dict[str, str] = {}
        if not isinstance(dm, dict):
            report.add(
                Problem(
                    "error",
                    "missing_data_mapping",
                    "data_mapping is missing",
                    file,
                    lines(loc),
                    f"{where}.data_mapping",
                    "map each input to a {{item.<field>}} template",
                )
            )
            dm = {}
        for key, template in dm.items():
            kloc = (*loc, "data_mapping", key)
            kwhere = f"{where}.data_mapping.{key}"
            if key not in spec.input_names:
                report.add(_not_an_input(key, spec, file, lines(kloc), kwhere))
                continue
            m = _TEMPLATE.match(template) if isinstance(template, str) else None
            if m is None:
                report.add(
                    Problem(
                        "error",
                        "bad_template",
                        f"{template!r} is not a {{{{item.<field>}}}} template",
                        file,
                        lines(kloc),
                        kwhere,
                        f'write "{{{{item.{key}}}}}"',
                    )
                )
                continue
            if m.group(1) == "sample":
                report.add(
                    Problem(
                        "error",
                        "sample_template",
                        f"{template!r} needs a model or agent target; a dataset run has only item fields",
                        file,
                        lines(kloc),
                        kwhere,
                        f'map it to a dataset field: "{{{{item.{key}}}}}"',
                    )
                )
                continue
            fields[key] = m.group(2)
        mapped = set(fields) | {k for k in dm if k in spec.input_names}  # a bad template is reported already
        if not any(all(g in mapped for g in group) for group in spec.input_groups) and dm:
            best = min(spec.input_groups, key=lambda g: sum(x not in mapped for x in g))
            missing = [x for x in best if x not in mapped]
            report.add(
                Problem(
                    "error",
                    "missing_input_mapping",
                    f"{spec.name} needs input(s) {', '.join(missing)} in data_mapping",
                    file,
                    lines((*loc, "data_mapping")),
                    f"{where}.data_mapping",
                    ", ".join(f'"{x}": "{{{{item.{x}}}}}"' for x in missing),
                )
            )
        rng = _label_range(spec, init, None)
        c = _Criterion(name, spec, fields, where=f"{where}.initialization_parameters")
        if rng is not None:
            c.label_min, c.label_max = rng
            _static_label_warnings(c, file, lines((*loc, "initialization_parameters")) or lines(loc), report)
        out.append(c)
    return out


# -- data checks ---------------------------------------------------------------------------------------------------


_BLOOM_BITS = 1 << 27  # 16 MiB of filter, whatever the number of rows
_BLOOM_PROBES = 8  # bits per id; false candidates stay below 1 in 10,000 datasets of a million distinct ids
_CHUNK = 1 << 12  # ids hashed into the filter per numpy step (its temporaries: ~1 MB)

# the second pass: given the candidate hashes, yield (query id, line) for every row that may hold one of them
Rescan = Callable[[set[int]], Iterable[tuple[Any, int | None]]]


class _IdFilter:
    """Pass 1 of duplicate query-id detection: a fixed-size Bloom filter over the ids' 64-bit hashes.

    ``add`` buffers a hash; every ``_CHUNK`` hashes are tested against the filter and set in it with numpy. A hash
    whose bits were all set already, or that repeats within its chunk, is kept as a candidate: every repeated id is
    one, and an id seen once is one only by chance (a false positive, resolved by the second pass).
    """

    def __init__(self, bits: int | None = None, probes: int | None = None) -> None:
        self.bits = _BLOOM_BITS if bits is None else bits
        self.probes = _BLOOM_PROBES if probes is None else probes
        self.table: Any = None  # numpy uint8[bits / 8], allocated at the first flush
        self.pending = array("q")
        self.positive = array("q")  # candidate hashes, unique per chunk; compacted as it doubles
        self.compact_at = _CHUNK

    def add(self, h: int) -> None:
        self.pending.append(h)
        if len(self.pending) >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        import numpy as np

        if not self.pending:
            return
        if self.table is None:
            self.table = np.zeros((self.bits + 7) // 8, dtype=np.uint8)
        h = np.frombuffer(self.pending, dtype=np.uint64)
        self.pending = array("q")
        # double hashing: probe i is (low 32 bits + i * odd high 32 bits) mod the filter size
        step = (h >> np.uint64(32)) | np.uint64(1)
        probe = np.arange(self.probes, dtype=np.uint64)[:, None]
        pos = ((h & np.uint64(0xFFFFFFFF)) + probe * step) % np.uint64(self.bits)
        byte = (pos >> np.uint64(3)).astype(np.intp)
        mask = np.left_shift(np.uint8(1), (pos & np.uint64(7)).astype(np.uint8))
        seen = np.all(self.table[byte] & mask, axis=0)
        hs = np.sort(h)
        again = hs[1:][hs[1:] == hs[:-1]]  # ids repeated within this chunk
        cand = np.concatenate([h[seen], again])
        if cand.size:
            self.positive.frombytes(np.unique(cand).tobytes())
            if len(self.positive) >= self.compact_at:  # one entry per repeated id, not per repeated row
                self.positive = array("q", np.unique(np.frombuffer(self.positive, dtype=np.int64)).tobytes())
                self.compact_at = 2 * len(self.positive) + _CHUNK
        np.bitwise_or.at(self.table, byte.ravel(), mask.ravel())

    def candidates(self) -> set[int]:
        """The hashes (as Python's signed ``hash`` values) of every id that may occur more than once."""
        import numpy as np

        self._flush()
        self.table = None
        if not self.positive:
            return set()
        return set(np.unique(np.frombuffer(self.positive, dtype=np.int64)).tolist())


def _is_id(qid: Any) -> bool:
    return isinstance(qid, str | int) and not isinstance(qid, bool)


class _DataChecker:
    """Per-row checks of item values against the criteria; state for duplicates and never-seen fields."""

    def __init__(self, criteria: list[_Criterion], report: ValidationReport, source: str, threshold: int) -> None:
        self.criteria = criteria
        self.report = report
        self.source = source
        self.threshold = threshold
        self.ids = _IdFilter()
        self.seen_fields: set[str] = set()
        self.raw_keys: set[str] = set()
        self.deferred: dict[str, list[Problem]] = {}  # item field → missing-input problems (capped)
        self.deferred_count: Counter[str] = Counter()
        # the narrowest input type each field is read as, and the criteria reading labels/documents
        self.label_checks = [(c, c.field_of_type("labels"), c.field_of_type("documents")) for c in criteria]
        self.label_checks = [t for t in self.label_checks if t[1] is not None]
        # zero_result, per (criterion, retrieved field): [rows with a non-zero label and none retrieved,
        # rows whose labels are all 0, first lines of the former...]
        self.zero_result: defaultdict[tuple[str, str | None], list[int]] = defaultdict(lambda: [0, 0])
        self.bad_documents: set[str] = set()  # document fields of the current row that got an error
        self.kind_labels_field = self.label_checks[0][1] if self.label_checks else "retrieval_ground_truth"
        self.groups = [(c, [[(x, c.fields.get(x)) for x in g] for g in c.spec.input_groups]) for c in criteria]
        self.field_types: dict[str, str] = {}
        # where a missing item field is reported: (file, line, note) for the current row; None → this file, row line
        self.locate: Callable[[str, int | None], tuple[str, int | None, str]] | None = None
        order = {"string": 0, "documents": 0, "labels": 0, "string_or_messages": 1, "string_object_or_messages": 2}
        for c in criteria:
            for inp, f in c.fields.items():
                t = c.spec.input(inp).type
                if f not in self.field_types or order[t] < order[self.field_types[f]]:
                    self.field_types[f] = t

    def _add(
        self, severity: Severity, code: str, message: str, line: int | None, field_: str, hint: str | None = None
    ) -> None:
        self.report.add(Problem(severity, code, message, self.source, line, field_, hint))

    def query_id(self, qid: Any, line: int | None) -> None:
        if _is_id(qid):
            self.ids.add(hash(str(qid)))

    def finish(self, field_sources: dict[str, str], rescan: Rescan | None = None) -> None:
        """Duplicate query ids, and fields no row had (one error instead of one per row).

        ``rescan`` is the second pass over the ids, run only when the filter found candidates.
        """
        if self.report.rows == 0:
            self.report.add(
                Problem(
                    "error", "empty_dataset", "the dataset has no rows", self.source, None, "", "nothing to evaluate"
                )
            )

        candidates = self.ids.candidates()
        if candidates and rescan is not None:
            self._duplicate_ids(rescan, candidates)
        self._zero_result_warnings()
        for f in sorted(self.deferred):
            if f not in self.seen_fields:
                src = field_sources.get(f, f)
                candidates = sorted(self.raw_keys | self.seen_fields)
                guess = did_you_mean(src.split(".")[-1], candidates)
                wrong_case = guess is not None and guess.lower() == src.split(".")[-1].lower()
                self.report.add(
                    Problem(
                        "error",
                        "field_wrong_case" if wrong_case else "field_not_in_data",
                        f"no row has the field {src!r} that {', '.join(self._readers(f))} read",
                        self.source,
                        None,
                        src,
                        (f"wrong case: the data has {guess!r}" if wrong_case else f"did you mean {guess!r}?")
                        if guess
                        else f"fields in the data: {', '.join(candidates[:20])}",
                    )
                )
            else:
                for p in self.deferred[f]:
                    self.report.add(p)
                extra = self.deferred_count[f] - len(self.deferred[f])
                if extra > 0:  # counted, not listed
                    self.report.by_code["missing_input"] += extra
                    self.report.errors += extra

    def _duplicate_ids(self, rescan: Rescan, candidates: set[int]) -> None:
        """Pass 2: the exact first line of each candidate id; its later rows are duplicates, false ones vanish."""
        first_line: dict[str, int] = {}  # only candidate ids: usually none, at most the repeated ones
        try:
            for qid, line in rescan(candidates):
                if not _is_id(qid):
                    continue
                key = str(qid)
                if hash(key) not in candidates:
                    continue
                if key not in first_line:
                    first_line[key] = line
                    continue
                self._add(
                    "error",
                    "duplicate_query_id",
                    f"query_id is already used on line {first_line[key]}",
                    line,
                    "query_id",
                    "give every query a unique id",
                )
        except OSError as exc:
            self._add("error", "missing_file", f"dataset file could not be read again: {exc.strerror}", None, "")

    def _zero_result_warnings(self) -> None:
        """One ``zero_result`` warning per document_retrieval criterion, if any row with a non-zero label
        retrieved none: Foundry's integer-0 branch. Rows whose labels are all 0 (negative queries) take the same
        branch as expected; they are only counted in the message."""
        for (name, df), (missed, negative, *lines) in self.zero_result.items():
            if not missed:
                continue
            where = ", ".join(map(str, lines)) + (", ..." if missed > len(lines) else "")
            also = (
                f"; the {negative} row(s) whose labels are all 0 (negative queries) get the same 0, as expected"
                if negative
                else ""
            )
            self._add(
                "warning",
                "zero_result",
                f"{missed} row(s) retrieve no document with a non-zero label although one is labelled "
                f"(line{'s' if missed > 1 else ''} {where}): Foundry reports the integer 0 for ndcg@3, xdcg@3, "
                f"fidelity, top1_relevance and top3_max_relevance on them and fails them (criterion {name!r}){also}",
                None,
                df or "retrieved_documents",
                "nothing to fix if the search really missed those documents; a query with no answer in the corpus "
                "should have all its labels 0",
            )

    def _readers(self, f: str) -> list[str]:
        return [f"{c.name}.{inp}" for c in self.criteria for inp, fld in c.fields.items() if fld == f]

    def row(
        self, item: dict[str, Any], line: int | None, *, declared_kind: str | None, raw_keys: Iterable[str]
    ) -> None:
        if len(self.raw_keys) < _MAX_KEYS_KEPT:  # for did-you-mean only; bounded whatever the rows hold
            self.raw_keys.update(raw_keys)
        present = {k for k, v in item.items() if v is not None}
        self.seen_fields |= present
        # required inputs
        for c, groups in self.groups:
            if any(all(f in present for _, f in g) for g in groups):
                continue
            best = min(groups, key=lambda g: sum(f not in present for _, f in g))
            for inp, f in best:
                if f is None or f in present:
                    continue
                self.deferred_count[f] += 1
                bucket = self.deferred.setdefault(f, [])
                if len(bucket) < self.report.max_per_code:
                    source, at, note = self.locate(f, line) if self.locate else (self.source, line, "")
                    bucket.append(
                        Problem(
                            "error",
                            "missing_input",
                            f"required input {inp!r} of criterion {c.name!r} is missing (item field {f!r}){note}",
                            source,
                            at,
                            f,
                            "fill the field in every row, or drop the evaluator",
                        )
                    )
        # types
        self.bad_documents.clear()
        for f, t in self.field_types.items():
            v = item.get(f)
            if v is None:
                continue
            if t in ("string", "string_or_messages", "string_object_or_messages"):
                self._check_string(f, v, t, line)
            elif t == "documents":
                errors = self.report.errors
                self._check_documents(f, v, line)
                if self.report.errors > errors:  # Foundry rejects the row: no quirk warnings for it
                    self.bad_documents.add(f)
            elif t == "labels":
                self._check_labels(f, v, line)
        for c, lf, df in self.label_checks:
            self._check_label_ranges(c, lf, df, item, line)
        # empty query / response, kind vs labels
        for name in ("query", "response"):
            v = item.get(name)
            if isinstance(v, str) and not v.strip():
                self._add("warning", f"empty_{name}", f"{name} is empty", line, name)
        self._check_kind(item, declared_kind, line)

    def _check_string(self, f: str, v: Any, t: str, line: int) -> None:
        if isinstance(v, str):
            return
        if t != "string" and (isinstance(v, list) or (t == "string_object_or_messages" and isinstance(v, dict))):
            return
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            self._add(
                "error",
                "context_not_string",
                f"{f} is a list of {len(v)} chunks, not a string",
                line,
                f,
                'join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model',
            )
        else:
            self._add("error", "not_a_string", f"{f} must be a string, got {type(v).__name__}", line, f)

    def _check_documents(self, f: str, docs: Any, line: int) -> None:
        if not isinstance(docs, list):
            self._add("error", "not_a_list", f"{f} must be a list of {{document_id, relevance_score}}", line, f)
            return
        if len(docs) > MAX_DOCUMENTS:
            self._add(
                "error",
                "too_many_documents",
                f"{len(docs)} documents in {f}; Foundry accepts at most {MAX_DOCUMENTS}",
                line,
                f,
                f"keep the top {MAX_DOCUMENTS}",
            )
        seen: set[Any] = set()
        prev: float | None = None
        order_warned = False
        for i, d in enumerate(docs):
            if not isinstance(d, dict):
                self._add("error", "not_an_object", f"{f}[{i}] must be an object", line, f"{f}[{i}]")
                continue
            doc_id = d.get("document_id")
            if doc_id is None:
                self._add("error", "missing_id", "document_id is missing", line, f"{f}[{i}].document_id")
            elif isinstance(doc_id, int) and not isinstance(doc_id, bool):
                self._add(
                    "warning",
                    "numeric_id",
                    f"document_id {doc_id} is a number; Foundry compares ids by value "
                    "and type, foundry_bridge reads it as a string",
                    line,
                    f"{f}[{i}].document_id",
                    "write ids as JSON strings",
                )
            if doc_id is not None and isinstance(doc_id, str | int) and not isinstance(doc_id, bool):
                key = str(doc_id)
                if key in seen:
                    self._add(
                        "warning",
                        "duplicate_document_id",
                        f"document {key!r} appears twice in {f}: Foundry keeps the last score, "
                        "foundry_bridge's metrics the first position",
                        line,
                        f"{f}[{i}].document_id",
                        "remove the duplicate",
                    )
                seen.add(key)
            s = d.get("relevance_score")
            if s is None:
                self._add(
                    "error",
                    "missing_score",
                    "relevance_score is missing; Foundry requires a number",
                    line,
                    f"{f}[{i}].relevance_score",
                    "set dataset.fields.retrieved_documents.scores_from_rank: true to send scores from rank",
                )
                prev = None
                continue
            if not isinstance(s, int | float) or isinstance(s, bool):
                self._add(
                    "error",
                    "bad_score",
                    f"relevance_score must be a number, got {s!r}",
                    line,
                    f"{f}[{i}].relevance_score",
                )
                prev = None
                continue
            if prev is not None and s > prev and not order_warned:
                order_warned = True
                self._add(
                    "warning",
                    "order_disagrees_with_scores",
                    f"list order disagrees with relevance_score order at rank {i + 1} ({s} > {prev}): Foundry "
                    "ranks by score, so this list is scored in another order than it was shown",
                    line,
                    f"{f}[{i}].relevance_score",
                    "set dataset.fields.retrieved_documents.scores_from_rank: true to synthesize monotone "
                    "scores from rank",
                )
            prev = s

    def _check_labels(self, f: str, labels: Any, line: int) -> None:
        if not isinstance(labels, list):
            self._add("error", "not_a_list", f"{f} must be a list of {{document_id, query_relevance_label}}", line, f)
            return
        if not labels:
            self._add(
                "error",
                "empty_ground_truth",
                f"{f} is empty; Foundry requires at least one label",
                line,
                f,
                "label at least one document, or drop the row from document_retrieval",
            )
        if len(labels) > MAX_DOCUMENTS:
            self._add(
                "error",
                "too_many_documents",
                f"{len(labels)} labels in {f}; Foundry accepts at most {MAX_DOCUMENTS}",
                line,
                f,
            )
        seen: set[str] = set()
        for i, g in enumerate(labels):
            if not isinstance(g, dict):
                self._add("error", "not_an_object", f"{f}[{i}] must be an object", line, f"{f}[{i}]")
                continue
            doc_id = g.get("document_id")
            if doc_id is None:
                self._add("error", "missing_id", "document_id is missing", line, f"{f}[{i}].document_id")
            else:
                key = str(doc_id)
                if key in seen:
                    self._add(
                        "warning",
                        "duplicate_document_id",
                        f"document {key!r} is labelled twice in {f}: Foundry keeps the last label, "
                        "foundry_bridge's metrics the first",
                        line,
                        f"{f}[{i}].document_id",
                        "keep one label per document",
                    )
                seen.add(key)
            label = g.get("query_relevance_label")
            if isinstance(label, bool) or not isinstance(label, int):
                if isinstance(label, float):
                    message, hint = float_label_problem(label)
                    self._add("error", "label_not_integer", message, line, f"{f}[{i}].query_relevance_label", hint)
                elif label is None:
                    self._add("error", "missing_label", "label is missing", line, f"{f}[{i}].query_relevance_label")
                else:
                    self._add(
                        "error",
                        "label_not_integer",
                        f"label must be an integer, got {label!r}",
                        line,
                        f"{f}[{i}].query_relevance_label",
                        "write labels as JSON integers",
                    )

    def _check_label_ranges(self, c: _Criterion, lf: str, df: str | None, item: dict[str, Any], line: int) -> None:
        """Labels within the criterion's range, and the document_retrieval quirks that depend on the labels.

        One pass over the labels builds ``label_of`` (id → label, the last one winning, as in Foundry); the retrieved
        list is walked only for ``holes_below_min`` (min ≥ 1) and, up to its first labelled document, to tell
        ``zero_result`` (counted here, reported once by ``finish``) from ``nan_fidelity``.
        """
        labels = item.get(lf)
        if not isinstance(labels, list):
            return
        label_of: dict[str, Any] = {}
        valid = True  # every label an in-range int: Foundry scores the row (otherwise it rejects it; errors say so)
        for i, g in enumerate(labels):
            if not isinstance(g, dict):
                valid = False
                continue
            v = g.get("query_relevance_label")
            if g.get("document_id") is None:
                valid = False
            else:
                label_of[str(g["document_id"])] = v
            if not isinstance(v, int) or isinstance(v, bool):
                valid = False
                continue
            if not c.label_min <= v <= c.label_max:
                valid = False
                side = "below ground_truth_label_min" if v < c.label_min else "above ground_truth_label_max"
                bound = c.label_min if v < c.label_min else c.label_max
                self._add(
                    "error",
                    "label_out_of_range",
                    f"label {v} is {side} {bound} (criterion {c.name!r})",
                    line,
                    f"{lf}[{i}].query_relevance_label",
                    "fix the label, or declare the range in the mapping's `labels` (min/max)",
                )
        docs = item.get(df) if df else None
        if not isinstance(docs, list):
            return
        if c.label_min >= 1:
            holes = [
                str(d.get("document_id"))
                for d in docs
                if isinstance(d, dict)
                and d.get("document_id") is not None
                and str(d.get("document_id")) not in label_of
            ]
            if holes:
                self._add(
                    "warning",
                    "holes_below_min",
                    f"{len(holes)} retrieved document(s) without a label ({holes[0]!r}...): Foundry counts "
                    f"a hole as label 0, below ground_truth_label_min {c.label_min} ('irrelevant'), so "
                    "holes rank below documents judged irrelevant",
                    line,
                    df,
                    "label every retrieved document, or use labels from 0",
                )
        if not (valid and docs and label_of) or df in self.bad_documents or len(labels) > MAX_DOCUMENTS:
            return  # rows Foundry rejects, and empty lists (its float 0.0 branch), stop here
        if not any(label_of.values()):  # all labels 0 (a negative query): Foundry's integer 0 is expected; counted
            self.zero_result[(c.name, df)][1] += 1
            return
        found = any(
            label_of.get(str(doc_id))
            for d in docs
            if isinstance(d, dict) and (doc_id := d.get("document_id")) is not None
        )
        if not found:
            counts = self.zero_result[(c.name, df)]
            counts[0] += 1
            if len(counts) < 2 + _ZERO_RESULT_LINES:
                counts.append(line)
        elif c.label_min and max(label_of.values()) == c.label_min:  # min 0: all-0 rows returned above
            self._add(
                "warning",
                "nan_fidelity",
                f"every label equals ground_truth_label_min {c.label_min} ('irrelevant'): Foundry's fidelity divides "
                "by zero here, so it reports NaN and fails",
                line,
                lf,
                "expected for a query with no relevant document; with labels from 0 (0 = irrelevant, "
                "ground_truth_label_min: 0) Foundry reports 0 instead",
            )

    def _check_kind(self, item: dict[str, Any], declared: str | None, line: int) -> None:
        if declared not in ("positive", "negative"):
            return
        labels = item.get(self.kind_labels_field)
        if labels is None:
            labels = item.get("retrieval_ground_truth")
        if not isinstance(labels, list):
            return
        values = [g.get("query_relevance_label") for g in labels if isinstance(g, dict)]
        relevant = any(isinstance(v, int) and not isinstance(v, bool) and v >= self.threshold for v in values)
        if declared == "positive" and not relevant:
            self._add(
                "warning",
                "positive_without_relevant",
                f"kind is positive but no label reaches the relevance threshold {self.threshold}",
                line,
                "kind",
                "label the passage that answers it, or mark the query negative",
            )
        elif declared == "negative" and relevant:
            self._add(
                "warning",
                "negative_with_relevant",
                f"kind is negative but a label reaches the relevance threshold {self.threshold}",
                line,
                "kind",
                "a negative query has no answer in the corpus: check the label or the kind",
            )


# -- entry points --------------------------------------------------------------------------------------------------


def _mapping_field_sources(mapping: Mapping) -> dict[str, str]:
    """Item field → the dataset path it is read from (for messages about fields no row has)."""
    f = mapping.dataset.fields
    out: dict[str, str] = {}
    for name in ("query_id", "query", "kind", "context", "response", "ground_truth"):
        p = getattr(f, name)
        if p:
            out[name] = p
    if f.retrieved_documents:
        out["retrieved_documents"] = f.retrieved_documents.path
    if f.retrieval_ground_truth:
        out["retrieval_ground_truth"] = f.retrieval_ground_truth.path
    out.update(f.extra)
    return out


def validate_dataset(
    data: str | os.PathLike[str],
    criteria: list[_Criterion],
    mapping: Mapping,
    report: ValidationReport,
    *,
    raw_items: bool = False,
    relevance_threshold: int | None = None,
) -> None:
    """One streaming pass over ``data``; problems go into ``report``.

    ``raw_items``: the criteria's templates name the rows' own top-level keys (hand-written criteria); otherwise
    they name item fields produced by ``mapping``.
    """
    threshold = mapping.metrics.relevance_threshold if relevance_threshold is None else relevance_threshold
    source = str(data)
    if mapping.dataset.format == "trec" and not raw_items:
        _validate_trec(data, criteria, mapping, report, threshold)
        return
    checker = _DataChecker(criteria, report, source, threshold)
    parser = RowParser(mapping, source=source, relevance_threshold=threshold, records=False)
    try:
        fh = open(data, "rb")  # noqa: SIM115 - closed below
    except (FileNotFoundError, IsADirectoryError):
        report.add(Problem("error", "missing_file", "dataset file not found (a JSONL file)", source, None, ""))
        return
    needed = {f for c in criteria for f in c.fields.values()}
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            report.rows += 1
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                report.add(
                    Problem(
                        "error",
                        "bad_json",
                        f"malformed JSON line: {str(exc).split(':', 1)[0]}",
                        source,
                        lineno,
                        "",
                        "each line must be one complete JSON object",
                    )
                )
                continue
            if not isinstance(row, dict):
                report.add(Problem("error", "not_an_object", "a row must be a JSON object", source, lineno, ""))
                continue
            if raw_items:
                qid = row.get("query_id")
                checker.query_id(qid, lineno)
                kind = row.get("kind")
                checker.row(row, lineno, declared_kind=kind if isinstance(kind, str) else None, raw_keys=row.keys())
                continue
            parsed = parser.parse(row, lineno)
            for p in parsed.problems:
                report.add(p)
            if parsed.int_ids:
                report.add(
                    Problem(
                        "warning",
                        "numeric_id",
                        f"{parsed.int_ids} document id(s) are JSON numbers; read as strings ('1' and 1 "
                        "become the same id)",
                        source,
                        lineno,
                        "document_id",
                        "write ids as JSON strings",
                    )
                )
            full = parsed.item
            if full is None:
                checker.query_id(_unparsed_query_id(row, mapping), lineno)
                continue
            checker.query_id(full["query_id"], lineno)
            item = {f: full.get(f) for f in needed}
            for name in ("query", "response", "retrieval_ground_truth"):
                item.setdefault(name, full.get(name))
            checker.row(
                item,
                lineno,
                declared_kind=full["kind"] if parsed.kind_source == "declared" else None,
                raw_keys=row.keys(),
            )
    checker.finish(
        {} if raw_items else _mapping_field_sources(mapping),
        lambda candidates: _jsonl_query_ids(data, mapping, raw_items, threshold, candidates),
    )


def _unparsed_query_id(row: dict[str, Any], mapping: Mapping) -> Any:
    """The id counted for duplicates in a row the parser rejected: a top-level field only."""
    f = mapping.dataset.fields.query_id
    return row.get(f) if "." not in f else None


def _jsonl_query_ids(
    data: str | os.PathLike[str], mapping: Mapping, raw_items: bool, threshold: int, candidates: set[int]
) -> Iterator[tuple[Any, int]]:
    """Pass 2 of duplicate detection: (query id, line) of the rows whose id may hash to a candidate.

    Reads only the JSON of each line; a row is parsed in full (to take its id exactly as pass 1 did) only when a
    cheap look at its id field hits a candidate hash.
    """

    def hit(v: Any) -> bool:
        return _is_id(v) and hash(str(v)) in candidates

    field_ = mapping.dataset.fields.query_id
    path = compile_path(field_)
    parser = RowParser(mapping, source=str(data), relevance_threshold=threshold, records=False)
    with open(data, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(row, dict):
                continue
            if raw_items:
                yield row.get("query_id"), lineno
                continue
            if not (hit(get_path(row, path)) or ("." not in field_ and hit(row.get(field_)))):
                continue
            full = parser.parse(row, lineno).item
            yield (full["query_id"] if full is not None else _unparsed_query_id(row, mapping)), lineno


def _validate_trec(
    data: str | os.PathLike[str],
    criteria: list[_Criterion],
    mapping: Mapping,
    report: ValidationReport,
    threshold: int,
) -> None:
    from ..dataset.trec import read_trec

    base = Path(data)
    if not base.is_dir():
        report.add(
            Problem(
                "error",
                "missing_file",
                "TREC input is a directory holding the qrels, run and queries files",
                str(data),
                None,
                "",
            )
        )
        return
    problems: list[Problem] = []
    files = mapping.dataset.trec
    checker = _DataChecker(criteria, report, str(base / files.run), threshold)
    needed = {f for c in criteria for f in c.fields.values()}
    response_lines: dict[str, int] = {}
    # a missing field that only responses.jsonl can hold is reported there; the rest at the query's run line
    not_responses = {"query_id", "retrieved_documents", "retrieval_ground_truth"} | (
        {"query"} if files.queries else set()
    )
    responses = str(base / files.responses) if files.responses else None
    qid = ""

    def locate(f: str, line: int | None) -> tuple[str, int | None, str]:
        if responses is None or f in not_responses:
            return checker.source, line, ""
        at = response_lines.get(qid)
        return responses, at, "" if at is not None else f"; no responses row for query {qid!r}"

    checker.locate = locate
    for rec in read_trec(
        base, mapping, relevance_threshold=threshold, problems=problems, response_lines=response_lines
    ):
        report.rows += 1
        line = rec.line  # None for a query with no run line (only judged, or only in queries/responses)
        qid = rec.query_id
        checker.query_id(rec.query_id, line)
        full = rec.item()
        item = {f: full.get(f) for f in needed}
        for name in ("query", "response", "retrieval_ground_truth"):
            item.setdefault(name, full.get(name))
        checker.row(item, line, declared_kind=rec.kind if rec.kind_source == "declared" else None, raw_keys=full.keys())
    for p in problems:
        report.add(p)
    checker.finish(
        {},
        lambda _: (
            (rec.query_id, rec.line) for rec in read_trec(base, mapping, relevance_threshold=threshold, problems=[])
        ),
    )


def validate(
    data: str | os.PathLike[str],
    *,
    mapping: Mapping | str | os.PathLike[str] | None = None,
    criteria_file: str | os.PathLike[str] | None = None,
    relevance_threshold: int | None = None,
    environ: dict[str, str] | None = None,
    max_per_code: int = 20,
) -> ValidationReport:
    """Validate ``data`` against a mapping (path, model or None for the default) or hand-written criteria.

    Never raises for bad input: every problem, including an unreadable mapping, is in the report.
    """
    report = ValidationReport(max_per_code=max_per_code)
    if criteria_file is not None:
        criteria = validate_criteria_file(criteria_file, report)
        validate_dataset(data, criteria, Mapping(), report, raw_items=True, relevance_threshold=relevance_threshold)
        _sort(report)
        return report
    if isinstance(mapping, Mapping):
        model, file = mapping, None
    else:
        file = str(packaged_mapping_path()) if mapping is None else str(mapping)
        try:
            model = load_mapping(file)
        except InputError as exc:
            report.add(Problem("error", "bad_mapping", exc.message, exc.file, exc.line, exc.field, exc.hint))
            return report
    criteria = _criteria_from_mapping(model, file, report, environ)
    validate_dataset(data, criteria, model, report, relevance_threshold=relevance_threshold)
    _sort(report)
    return report


def _sort(report: ValidationReport) -> None:
    """Problems grouped by file (in order of first appearance), then by line; file-level ones first."""
    rank: dict[str | None, int] = {}
    for p in report.problems:
        rank.setdefault(p.file, len(rank))
    report.problems.sort(key=lambda p: (rank[p.file], p.line or 0))


def validate_criteria_file(path: str | os.PathLike[str], report: ValidationReport) -> list[_Criterion]:
    """Parse and check a JSON file of testing_criteria (or an eval-create body); problems go into ``report``."""
    file = str(path)
    try:
        data = orjson.loads(Path(path).read_bytes())
    except FileNotFoundError:
        report.add(Problem("error", "missing_file", "criteria file not found", file, None, ""))
        return []
    except orjson.JSONDecodeError as exc:
        report.add(Problem("error", "bad_json", f"malformed JSON: {exc}", file, None, ""))
        return []
    return _criteria_from_wire(data, file, report)
