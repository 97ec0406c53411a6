"""Human verdicts on judge metrics: the reader (JSONL or CSV), the arrays the agreement and PPI code take, and
the labelling queue written in the same format.

JSONL, one verdict a line: ``{"query_id": "q01", "evaluator": "groundedness", "score": 4, "rater": "ana"}`` —
``evaluator`` with or without ``builtin.``, ``score`` and/or ``passed``, ``rater`` and ``inclusion_probability``
optional; the verdict queue adds its place and design (``queue_*``, ``design``: ``inclusion_array`` recomputes
each label's probability for the prefix labelled). A line with neither score nor passed is counted in
``unfilled``; anything else wrong is a ``DatasetError`` naming file, line and field. CSV: the same columns, or a
human-evaluation template's wide sheet (id, reviewer and one column per question, mapped by ``questions=``; a
sheet keyed only by its prompt is refused). docs/trust.md describes both formats and what the wide reader assumes.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_open, dumps
from ..errors import DatasetError
from ..wire import to_number
from .rows import JsonLimitError, jsonl_rows

__all__ = [
    "HumanVerdict",
    "Inclusion",
    "QueueRow",
    "VerdictFile",
    "human_arrays",
    "inclusion_array",
    "read_verdicts",
    "write_verdict_queue",
]

ID_COLUMNS = ("query_id", "item_id", "response_id", "id")
RATER_COLUMNS = ("rater", "reviewer", "annotator", "user")
PROMPT_COLUMNS = ("user prompt", "user_prompt", "userprompt", "prompt")  # the portal export's key (any case)
_YES = {"yes", "y", "pass", "passed", "true", "thumbs up", "thumbsup", "👍", "good"}
_NO = {"no", "n", "fail", "failed", "false", "thumbs down", "thumbsdown", "👎", "bad"}
_HINT = 'each line: {"query_id": ..., "evaluator": ..., "score": <number> or "passed": true/false, "rater"?: ...}'


@dataclass(frozen=True)
class HumanVerdict:
    """One human verdict on one (query, evaluator), with where it was read."""

    query_id: str
    evaluator: str
    score: float | None
    passed: bool | None
    rater: str | None
    line: int
    inclusion_probability: float | None = None
    design: str | None = None
    queue: tuple[int, float, float] | None = None  # the verdict queue's (place, share, next key; inf: none)


@dataclass
class VerdictFile:
    """Every verdict of a file, and how many lines were left unfilled (no score and no passed)."""

    source: str
    verdicts: list[HumanVerdict] = field(default_factory=list)
    unfilled: int = 0

    def evaluators(self) -> list[str]:
        return sorted({v.evaluator for v in self.verdicts})

    def raters(self) -> list[str | None]:
        return sorted({v.rater for v in self.verdicts}, key=lambda r: (r is not None, r or ""))


def read_verdicts(path: str | os.PathLike[str], *, questions: Mapping[str, str] | None = None) -> VerdictFile:
    """Read a human-verdict file: ``.csv`` as CSV (long or wide, see the module), anything else as JSONL."""
    source = str(path)
    target = Path(path)
    if not target.is_file():
        raise DatasetError("human-verdict file not found", file=source, hint="give the path of a .jsonl or .csv file")
    out = VerdictFile(source)
    rows = _csv_rows(target, questions or {}) if target.suffix.lower() == ".csv" else _jsonl_rows(target)
    try:
        _collect(rows, out)
    except UnicodeDecodeError:
        raise DatasetError("the file is not UTF-8 text", file=source, hint="save the sheet as CSV UTF-8") from None
    return out


def _collect(rows: Iterable[HumanVerdict | None], out: VerdictFile) -> None:
    """Append every verdict to ``out`` (unfilled lines counted), refusing a second one by the same rater on the same
    query and evaluator (``builtin.x`` and ``x`` are one evaluator)."""
    source = out.source
    seen: dict[tuple[str, str, str | None], int] = {}
    for verdict in rows:
        if verdict is None:
            out.unfilled += 1
            continue
        key = (verdict.query_id, verdict.evaluator.removeprefix("builtin."), verdict.rater)
        if key in seen:
            raise DatasetError(
                f"query {verdict.query_id!r} has a second verdict on {verdict.evaluator!r} by the same rater "
                f"(first on line {seen[key]})",
                file=source,
                line=verdict.line,
                hint="keep one verdict per query, evaluator and rater; give each rater a name in 'rater'",
            )
        seen[key] = verdict.line
        out.verdicts.append(verdict)


def _jsonl_rows(path: Path) -> Iterator[HumanVerdict | None]:
    for _, lineno, _, row in jsonl_rows(path):
        if isinstance(row, JsonLimitError):
            msg = row.message if row.code == "bad_json" else f"malformed JSON line: {row.message}"
            raise DatasetError(msg, file=str(path), line=lineno, hint=_HINT)
        if not isinstance(row, dict):
            raise DatasetError("each line must be a JSON object", file=str(path), line=lineno, hint=_HINT)
        yield _verdict(row, str(path), lineno)


def _text(row: Mapping[str, Any], name: str, where: tuple[str, int], *, required: bool) -> str | None:
    value = row.get(name)
    if value is None or value == "":
        if required:
            raise _bad(where, name, f"missing {name}", _HINT)
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _bad(where, name, f"{name} must be a string, got {value!r}")
    return str(value)


def _bad(where: tuple[str, int], name: str, message: str, hint: str | None = None) -> DatasetError:
    """The error of field ``name`` of the line at ``where`` (file, line)."""
    return DatasetError(message, file=where[0], line=where[1], field=name, hint=hint)


def _verdict(row: Mapping[str, Any], source: str, line: int) -> HumanVerdict | None:
    where = (source, line)
    query_id = _text(row, "query_id", where, required=True)
    evaluator = _text(row, "evaluator", where, required=True)
    score = _score(row.get("score"), where)
    passed = _passed(row.get("passed"), where)
    if score is None and passed is None:
        return None
    assert query_id is not None and evaluator is not None
    rater = _text(row, "rater", where, required=False)
    design = _text(row, "design", where, required=False)
    queue = _queue_place(row, where)
    return HumanVerdict(query_id, evaluator, score, passed, rater, line, _probability(row, where), design, queue)


def _queue_place(row: Mapping[str, Any], where: tuple[str, int]) -> tuple[int, float, float] | None:
    """The verdict queue's ``queue_place`` (a whole number ≥ 1), ``queue_share`` (in (0, 1]) and ``queue_next_key``
    (≥ 0; null: no row after it): absent place → None."""
    place = _number(row.get("queue_place"))
    if place is None:
        return None
    share, after = _number(row.get("queue_share")), _number(row.get("queue_next_key"))
    for name, ok in (
        ("queue_place", math.isfinite(place) and place >= 1 and place.is_integer()),
        ("queue_share", share is not None and 0 < share <= 1),
        ("queue_next_key", after is None or after >= 0),
    ):
        if not ok:
            hint = (
                "keep the queue's fields as written, or remove every queue_* field (the label then counts as uniform)"
            )
            raise _bad(where, name, f"{name} must be what the verdict queue wrote, got {row.get(name)!r}", hint)
    assert share is not None
    return int(place), share, math.inf if after is None else after


def _probability(row: Mapping[str, Any], where: tuple[str, int]) -> float | None:
    """``inclusion_probability``: absent or empty → None; else a number in (0, 1]."""
    value = row.get("inclusion_probability")
    number = _number(value)
    if number is None:
        return None
    if not 0 < number <= 1:
        message = f"inclusion_probability must be a number in (0, 1], got {value!r}"
        hint = "keep the value the verdict queue wrote, or remove the field (the label then counts as uniform)"
        raise _bad(where, "inclusion_probability", message, hint)
    return number


def _number(value: Any) -> float | None:
    """A cell as a number: blank (absent, null, "") → None; a boolean or text that is no number → NaN (the caller's
    range check refuses it with its own field and fix)."""
    if value is None or value == "":
        return None
    number = to_number(value)
    return math.nan if number is None else number


def _score(value: Any, where: tuple[str, int]) -> float | None:
    number = _number(value)
    if number is None:
        return None
    if not math.isfinite(number):
        hint = "use the judge's scale (e.g. 1-5), or 'passed' for a yes/no verdict"
        raise _bad(where, "score", f"score must be a finite number, got {value!r}", hint)
    return number


def _passed(value: Any, where: tuple[str, int]) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _YES:
        return True
    if word in _NO:
        return False
    hint = "true/false (JSONL), or yes/no, pass/fail, thumbs up/thumbs down (CSV)"
    raise _bad(where, "passed", f"passed must be true or false, got {value!r}", hint)


def _csv_rows(path: Path, questions: Mapping[str, str]) -> Iterator[HumanVerdict | None]:
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        if "evaluator" in header:
            for lineno, row in enumerate(reader, 2):
                yield _verdict(row, str(path), lineno)
            return
        _refuse_prompt_only(header, path)
        id_col = _pick(header, ID_COLUMNS, path, "id column")
        rater_col = next((c for c in RATER_COLUMNS if c in header), None)
        asked = _question_columns(header, questions, path, skip={id_col, rater_col})
        for lineno, row in enumerate(reader, 2):
            for column, evaluator in asked.items():
                cell = {"query_id": row.get(id_col), "evaluator": evaluator, "rater": row.get(rater_col or "")}
                value = (row.get(column) or "").strip()
                cell["passed" if value.lower() in _YES | _NO else "score"] = value
                try:
                    verdict = _verdict(cell, str(path), lineno)
                except DatasetError as exc:  # name the sheet's column, not the field it feeds
                    raise DatasetError(exc.message, file=exc.file, line=exc.line, field=column, hint=exc.hint) from None
                yield verdict


def _refuse_prompt_only(header: Sequence[str], path: Path) -> None:
    """The portal's download names a response by its user prompt, not an id: say what to add."""
    prompt = next((h for h in header if h.lower() in PROMPT_COLUMNS), None)
    if prompt is None or any(name in header for name in ID_COLUMNS):
        return
    raise DatasetError(
        f"the CSV has no id column (one of {', '.join(ID_COLUMNS)}): its rows are keyed by {prompt!r}, as Foundry's "
        "human-evaluation download is, and a prompt is not a query id",
        file=str(path),
        line=1,
        hint="add a query_id column giving the dataset's query_id of each row's prompt (the other columns stay)",
    )


def _pick(header: Sequence[str], names: Sequence[str], path: Path, what: str) -> str:
    for name in names:
        if name in header:
            return name
    raise DatasetError(
        f"the CSV has no {what} (one of {', '.join(names)}); its columns are {', '.join(header) or 'none'}",
        file=str(path),
        line=1,
        hint="rename the column that identifies each row to query_id",
    )


def _question_columns(
    header: Sequence[str], questions: Mapping[str, str], path: Path, skip: set[Any]
) -> dict[str, str]:
    """Question column → evaluator: the mapping given, else headers that name an evaluator (``builtin.x`` or x)."""
    from ..catalog import CATALOG

    known = {name.removeprefix("builtin."): name for name in CATALOG}
    missing = [q for q in questions if q not in header]
    if missing:
        raise DatasetError(
            f"question column(s) not in the CSV: {', '.join(map(repr, missing))}",
            file=str(path),
            line=1,
            hint=f"the columns are {', '.join(header)}",
        )
    out = dict(questions)
    for column in header:
        if column not in out and column not in skip and column.removeprefix("builtin.") in known:
            out[column] = known[column.removeprefix("builtin.")]
    if not out:
        raise DatasetError(
            "no question column maps to an evaluator",
            file=str(path),
            line=1,
            hint="name the columns after evaluators (e.g. groundedness) or map them: questions={'<header>': "
            "'groundedness'} (the command line: --question '<header>=groundedness')",
        )
    return out


def _bare(evaluator: str) -> str:
    return evaluator.removeprefix("builtin.")


def _same_evaluator(a: str, b: str) -> bool:
    return _bare(a) == _bare(b)


def human_arrays(
    verdicts: Iterable[HumanVerdict], evaluator: str, query_ids: Sequence[str], *, what: str = "score"
) -> tuple[np.ndarray, list[str | None]]:
    """A raters × rows matrix (NaN = not rated) of ``score`` (or ``passed`` as 1/0) on ``evaluator``, rows in the
    order of ``query_ids`` (the run's), and the raters in row order. A verdict on a query the run does not have is
    left out (the report counts them); ``evaluator`` matches with or without the ``builtin.`` prefix.
    Its ``nanmean`` over axis 0 is the human value of each row for PPI; the matrix itself feeds Krippendorff's α."""
    position = {q: i for i, q in enumerate(query_ids)}
    chosen = [v for v in verdicts if _same_evaluator(v.evaluator, evaluator) and v.query_id in position]
    raters = sorted({v.rater for v in chosen}, key=lambda r: (r is not None, r or ""))
    row_of = {r: i for i, r in enumerate(raters)}
    out = np.full((len(raters), len(query_ids)), np.nan)
    for v in chosen:
        value = v.score if what == "score" else (None if v.passed is None else float(v.passed))
        if value is not None:
            out[row_of[v.rater], position[v.query_id]] = value
    return out, raters


@dataclass(frozen=True)
class Inclusion:
    """Each row's inclusion probability on one evaluator (NaN: none known), the rows labelled at a queue place after
    one left unlabelled (``beyond``: not part of the probability sample), and that first unlabelled place."""

    probability: np.ndarray
    beyond: np.ndarray
    gap: int | None


def inclusion_array(
    verdicts: Sequence[HumanVerdict], evaluator: str, query_ids: Sequence[str], *, source: str | None = None
) -> Inclusion:
    """Each row's inclusion probability on ``evaluator`` (in the order of ``query_ids``), the weights of
    ``metrics.ppi.ipw_ppi_mean``: a line's own ``inclusion_probability``, or, for the verdict queue's lines, the
    probability in the prefix of the queue that is labelled — lines 1…n labelled on any evaluator
    (``metrics.ppi.labelled_prefix``), ``prefix_probabilities`` with the key after line n. Labels on later lines are
    ``beyond``. Two verdicts at one place on different rows (two queues in one file) are a ``DatasetError``."""
    from ..metrics.ppi import labelled_prefix, prefix_probabilities

    position = {q: i for i, q in enumerate(query_ids)}
    out = np.full(len(query_ids), np.nan)
    places: dict[int, HumanVerdict] = {}
    for v in verdicts:
        mine = _same_evaluator(v.evaluator, evaluator) and v.query_id in position
        if mine and v.inclusion_probability is not None:
            out[position[v.query_id]] = v.inclusion_probability
        if v.queue is None:
            continue
        first = places.setdefault(v.queue[0], v)
        if (first.query_id, _bare(first.evaluator)) != (v.query_id, _bare(v.evaluator)):
            raise DatasetError(
                f"queue place {v.queue[0]} names two verdicts to give: {first.query_id!r} on {first.evaluator!r} "
                f"(line {first.line}) and {v.query_id!r} on {v.evaluator!r} — the file mixes two verdict queues",
                file=source,
                line=v.line,
                field="queue_place",
                hint="keep one queue's lines in a file, or remove the queue_* fields of the other's lines",
            )
    beyond = np.zeros(len(query_ids), dtype=bool)
    if not places:
        return Inclusion(out, beyond, None)
    n = labelled_prefix(list(places))
    last = places[n].queue if n else None
    threshold = last[2] if last is not None else math.inf
    for place, v in places.items():
        if not _same_evaluator(v.evaluator, evaluator) or v.query_id not in position or v.queue is None:
            continue
        if place <= n:
            out[position[v.query_id]] = prefix_probabilities(v.queue[1], threshold)
        else:
            beyond[position[v.query_id]] = True
    return Inclusion(out, beyond, n + 1 if beyond.any() else None)


@dataclass(frozen=True)
class QueueRow:
    """One line of the judge-verdict labelling queue: what to label and why (the judge's own verdict is left out,
    so the labeller is not anchored by it)."""

    query_id: str
    evaluator: str
    priority: int
    reason: str
    query: str | None = None
    response: str | None = None
    context: str | None = None
    design: str | None = None
    place: dict[str, Any] | None = None  # the verdict queue's queue_place, queue_u, queue_share, ... fields


def write_verdict_queue(rows: Iterable[QueueRow], path: str | os.PathLike[str]) -> int:
    """Write the queue as human-verdict JSONL (``score``/``passed``/``rater`` null, to fill in); returns the count.
    ``read_verdicts`` reads the file back, counting the lines not yet filled in as ``unfilled``."""
    n = 0
    with atomic_open(Path(path), sweep=True) as fh:
        for row in rows:
            line: dict[str, Any] = {"query_id": row.query_id, "evaluator": row.evaluator, "score": None, "passed": None}
            line |= {"rater": None, "priority": row.priority, "reason": row.reason}
            line |= ({"design": row.design} if row.design else {}) | (row.place or {})
            line |= {k: v for k, v in (("query", row.query), ("response", row.response), ("context", row.context)) if v}
            fh.write(dumps(line) + b"\n")
            n += 1
    return n
