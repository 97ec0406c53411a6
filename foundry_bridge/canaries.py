"""Judge canaries generated from real rows: deterministic perturbations, each marked with what a trustworthy judge
must do, and the score of a judge on them. No model is involved.

A canary copies a positive query with an answer (never a negative, an abstaining response or a canary) and
perturbs its response one way: ``changed_number``, ``negated_condition`` (groundedness must fail),
``dropped_exception`` (response_completeness must fail), ``swapped_answer`` and ``abstention_on_positive``
(relevance and response_completeness must fail); the retrieval judge's verdict must stay the same. Its id is
``<original id>~<type>``; its row carries ``canary``, ``canary_of``, ``canary_expect`` and ``canary_change``.
Which rows become canaries is fixed by ``seed`` (a BLAKE2b hash of seed, type and id). docs/trust.md has the cases.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._io import atomic_open, dumps
from .catalog import CATALOG
from .dataset.records import QueryRecord
from .metrics.abstention import is_abstention

__all__ = [
    "ABSTENTION_TEXT",
    "CANARY_TYPES",
    "CanaryCase",
    "CanaryScore",
    "canary_rows",
    "expectation",
    "perturb",
    "record_row",
    "score_canaries",
    "write_canaries",
]

ABSTENTION_TEXT = "I could not find this in the provided documents."
SEPARATOR = "~"
Expect = Literal["fail", "same"]


def _judge(name: str) -> str:
    """The catalog's full name of a judge (``builtin.<name>``): a renamed evaluator fails at import, not silently."""
    full = f"builtin.{name}"
    if full not in CATALOG:
        raise RuntimeError(f"canaries: {full} is not in the catalog")
    return full


GROUNDEDNESS, RELEVANCE, COMPLETENESS, RETRIEVAL = (
    _judge(n) for n in ("groundedness", "relevance", "response_completeness", "retrieval")
)
CANARY_TYPES: dict[str, tuple[str, ...]] = {  # type → the judges that must fail it
    "changed_number": (GROUNDEDNESS,),
    "negated_condition": (GROUNDEDNESS,),
    "dropped_exception": (COMPLETENESS,),
    "swapped_answer": (RELEVANCE, COMPLETENESS),
    "abstention_on_positive": (RELEVANCE, COMPLETENESS),
}
_NEEDS_GROUND_TRUTH = {COMPLETENESS}

_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_NEGATIONS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\b(can)(not|'t)\b", re.I), lambda m: m.group(1)),
    (re.compile(r"\b(do|does|is|are|must|will|should)( not|n't)\b", re.I), lambda m: m.group(1)),
    (re.compile(r"\bcan\b", re.I), lambda m: m.group(0) + "not"),
    (re.compile(r"\b(is|are|was|were|will|must|should|may)\b", re.I), lambda m: m.group(0) + " not"),
    (
        re.compile(r"\b(you|they|we|employees) (get|have|keep|need|receive)\b", re.I),
        lambda m: m.expand(r"\1 do not \2"),
    ),
]


_EXCEPTION = re.compile(
    r",?\s+(?:unless|except(?: for| when| if)?|provided that|as long as|but only if)\b[^.;!?]*", re.I
)
_EXCEPTION_SENTENCE = re.compile(r"\s*\b(?:Exception|Except|However)\b[:,][^.!?]*[.!?]?", re.I)


def _changed_number(response: str, context: str) -> tuple[str, str] | None:
    """The first number the context also states (else the first number) plus one, its format kept."""
    found = list(_NUMBER.finditer(response))
    if not found:
        return None
    stated = [m for m in found if re.search(rf"(?<![\d.,]){re.escape(m.group(0))}(?![\d]|[.,]\d)", context)]
    m = (stated or found)[0]
    old = m.group(0)
    new = _plus_one(old)
    return response[: m.start()] + new + response[m.end() :], f"{old} -> {new}"


def _plus_one(number: str) -> str:
    """``number`` + 1 written the same way: thousands separators and decimals kept (``5,250`` → ``5,251``)."""
    decimals = len(number.split(".")[1]) if "." in number else 0
    value = float(number.replace(",", "")) + 1
    return f"{value:,.{decimals}f}" if "," in number else f"{value:.{decimals}f}"


def _negated(response: str) -> tuple[str, str] | None:
    """The first negation removed, else the first modal, copula or main verb negated."""
    for pattern, replace in _NEGATIONS:
        m = pattern.search(response)
        if m:
            new = replace(m)
            return response[: m.start()] + new + response[m.end() :], f"{m.group(0)!r} -> {new!r}"
    return None


def _dropped_exception(response: str) -> tuple[str, str] | None:
    """The first exception clause (``unless``, ``except``...) or ``Exception:``/``However,`` sentence cut."""
    for pattern in (_EXCEPTION, _EXCEPTION_SENTENCE):
        m = pattern.search(response)
        if m and response[: m.start()].strip():
            return response[: m.start()] + response[m.end() :], f"dropped {m.group(0).strip()!r}"
    return None


def perturb(kind: str, record: QueryRecord, partner: QueryRecord | None = None) -> tuple[str, str] | None:
    """``(new response, what changed)`` for one canary type, or None when the row does not allow it."""
    response = record.response or ""
    if kind == "changed_number":
        return _changed_number(response, record.context or "")
    if kind == "negated_condition":
        return _negated(response)
    if kind == "dropped_exception":
        return _dropped_exception(response)
    if kind == "swapped_answer":
        if partner is None or not partner.response or partner.response == response:
            return None
        return partner.response, f"the response of {partner.query_id!r}"
    if kind == "abstention_on_positive":
        return ABSTENTION_TEXT, "an abstention on a query the documents answer"
    raise ValueError(f"unknown canary type {kind!r}; the types are {', '.join(CANARY_TYPES)}")


def expectation(kind: str, record: QueryRecord) -> dict[str, Expect]:
    """What a trustworthy judge must do on this canary: evaluator → ``fail`` (or ``same`` as on the original)."""
    out: dict[str, Expect] = {
        judge: "fail"
        for judge in CANARY_TYPES[kind]
        if judge not in _NEEDS_GROUND_TRUTH or record.ground_truth is not None
    }
    out[RETRIEVAL] = "same"
    return out


def _eligible(record: QueryRecord) -> bool:
    """A positive query with an answer (not an abstention, by the report's heuristic) that is no canary yet."""
    return (
        record.kind == "positive"
        and bool(record.response)
        and not is_abstention(record.response)
        and not record.extra.get("canary")
    )


def _rank(seed: int, kind: str, query_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{kind}:{query_id}".encode(), digest_size=8).digest(), "big")


def canary_rows(
    records: Sequence[QueryRecord], *, per_type: int = 10, seed: int = 0, types: Iterable[str] | None = None
) -> Iterator[QueryRecord]:
    """Up to ``per_type`` canaries of each type, from eligible rows chosen by ``seed``; types in table order, each
    type's canaries in the order of their rows. A swapped answer takes the next eligible row's response. A canary
    no judge would have to fail (a dropped clause on a row without ground truth) is not made."""
    eligible = [r for r in records if _eligible(r)]
    chosen_types = list(CANARY_TYPES) if types is None else list(types)
    for kind in chosen_types:
        if kind not in CANARY_TYPES:
            raise ValueError(f"unknown canary type {kind!r}; the types are {', '.join(CANARY_TYPES)}")
        made: list[tuple[int, QueryRecord]] = []
        for pos in sorted(range(len(eligible)), key=lambda i: (_rank(seed, kind, eligible[i].query_id), i)):
            rec = eligible[pos]
            partner = eligible[(pos + 1) % len(eligible)] if len(eligible) > 1 else None
            change = perturb(kind, rec, partner)
            if change is None or "fail" not in expectation(kind, rec).values():
                continue  # the row does not allow it, or no judge would have to fail it (no ground truth)
            made.append((pos, _canary(rec, kind, *change)))
            if len(made) == per_type:
                break
        yield from (r for _, r in sorted(made, key=lambda pair: pair[0]))


def _canary(rec: QueryRecord, kind: str, response: str, change: str) -> QueryRecord:
    marks = {
        "canary": kind,
        "canary_of": rec.query_id,
        "canary_expect": expectation(kind, rec),
        "canary_change": change,
    }
    update = {"query_id": rec.query_id + SEPARATOR + kind, "response": response, "extra": {**rec.extra, **marks}}
    return rec.model_copy(update=update)


def record_row(record: QueryRecord) -> dict[str, Any]:
    """A record as a JSONL row in Foundry's field names (``mappings/default.yaml`` reads it), document text kept;
    ``kind`` written only when it was declared (else the labels derive it again)."""
    row: dict[str, Any] = {"query_id": record.query_id}
    if record.query is not None:
        row["query"] = record.query
    if record.kind_source == "declared":
        row["kind"] = record.kind
    row["retrieved_documents"] = [d.model_dump(exclude_none=True) for d in record.retrieved_documents]
    if record.retrieval_ground_truth is not None:
        row["retrieval_ground_truth"] = [g.model_dump() for g in record.retrieval_ground_truth]
    for name in ("context", "response", "ground_truth"):
        if getattr(record, name) is not None:
            row[name] = getattr(record, name)
    row.update(record.extra)
    return row


def write_canaries(
    records: Iterable[QueryRecord],
    out: str | os.PathLike[str],
    *,
    per_type: int = 10,
    seed: int = 0,
    types: Iterable[str] | None = None,
    include_originals: bool = True,
) -> dict[str, int]:
    """Write the original rows (unless ``include_originals`` is false) then the canaries to ``out``; returns the
    number of canaries of each type (0 for a type no row allowed)."""
    rows = list(records)
    counts = dict.fromkeys(CANARY_TYPES if types is None else types, 0)
    with atomic_open(Path(out)) as fh:
        if include_originals:
            for rec in rows:
                fh.write(dumps(record_row(rec)) + b"\n")
        for canary in canary_rows(rows, per_type=per_type, seed=seed, types=types):
            counts[str(canary.extra["canary"])] += 1
            fh.write(dumps(record_row(canary)) + b"\n")
    return counts


@dataclass(frozen=True)
class CanaryCase:
    """One canary as the report sees it: its id, type, original row and expectations."""

    query_id: str
    kind: str
    of: str
    expect: Mapping[str, Expect]

    @classmethod
    def from_record(cls, record: QueryRecord) -> CanaryCase | None:
        """The case of a generated canary row (``canary`` one of the types; ``canary_of`` or the id's
        ``<id>~<type>`` names the original); None for any other row, hand-written canaries included."""
        kind = record.extra.get("canary")
        if kind not in CANARY_TYPES:
            return None
        of = record.extra.get("canary_of") or record.query_id.rsplit(SEPARATOR, 1)[0]
        return cls(record.query_id, str(kind), str(of), expectation(str(kind), record))


@dataclass
class CanaryScore:
    """A judge on one canary type: canaries it caught, missed (ids listed) and could not be scored on."""

    kind: str
    evaluator: str
    expect: Expect
    caught: int = 0
    missed: list[str] = field(default_factory=list)
    unscored: int = 0


def score_canaries(cases: Iterable[CanaryCase], passed: Mapping[tuple[str, str], bool | None]) -> list[CanaryScore]:
    """Caught / missed / unscored per (type, evaluator). ``passed`` maps (query_id, evaluator) to the judge's pass
    verdict (None or absent: not scored). ``fail`` is caught when the canary failed; ``same`` when the canary's
    verdict equals its original's."""
    scores: dict[tuple[str, str], CanaryScore] = {}
    for case in cases:
        for evaluator, want in case.expect.items():
            score = scores.setdefault((case.kind, evaluator), CanaryScore(case.kind, evaluator, want))
            got = passed.get((case.query_id, evaluator))
            base = passed.get((case.of, evaluator)) if want == "same" else False
            if got is None or base is None:
                score.unscored += 1
            elif (got is False) if want == "fail" else (got == base):
                score.caught += 1
            else:
                score.missed.append(case.query_id)
    order = {k: i for i, k in enumerate(CANARY_TYPES)}
    return sorted(scores.values(), key=lambda s: (order[s.kind], s.expect, s.evaluator))
