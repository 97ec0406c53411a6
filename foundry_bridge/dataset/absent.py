"""A mapped field absent from a row: the ``missing_field`` rule, written once for the gate
(``foundry_bridge.validate._rows``, which reports every row) and the readers that refuse the first such row
(``read_records(..., require_ranking=True)``, what ``metrics`` reads through).

The ranking is required in every row read through a mapping that names one: a row whose ranking path is absent or
null is an error (``[]`` is a legal empty ranking; a dataset without rankings sets
``dataset.fields.retrieved_documents: null``). Any other field absent from a row is an error only when the row has an
unread top-level key close to it (a misspelling): the fix is then a did-you-mean ranked by the field's role
(``parse.fits_role``: a list of labels is never offered for a string field), else the fix to write ``[]``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

from .._text import did_you_mean
from .parse import FIELD_TYPES, ParsedRow, compile_path, field_setting, fits_role, get_path, rename_hint, value_role
from .problems import Problem
from .spec import FieldPaths

__all__ = [
    "MISSING_FIELD",
    "NO_RANKING",
    "RANKING",
    "absent_field",
    "close_key",
    "field_role",
    "field_sources",
    "fits_field",
    "read_keys",
    "refuse_absent_ranking",
    "rename_fix",
    "user_path",
]

RANKING = "retrieved_documents"
# the rule's message (``field``: the path the mapping reads; ``how``: missing or null; ``role``: ``field_role``)
MISSING_FIELD = "{field!r} is {how}: {role}"
NO_RANKING = (
    "write [] for a query that retrieved nothing (a dataset without rankings sets "
    "dataset.fields.retrieved_documents: null)"
)


def field_sources(fields: FieldPaths) -> dict[str, str]:
    """Item field → the dataset path the mapping reads it from (the lists: their ``path``; extras included)."""
    out: dict[str, str] = {}
    for name in ("query_id", "query", "kind", "context", "response", "ground_truth"):
        p = fields.kind_path if name == "kind" else getattr(fields, name)
        if p:
            out[name] = p
    if fields.retrieved_documents:
        out[RANKING] = fields.retrieved_documents.path
    if fields.retrieval_ground_truth:
        out["retrieval_ground_truth"] = fields.retrieval_ground_truth.path
    out.update(fields.extra)
    return out


_ITEM_PATH = re.compile(r"([A-Za-z_]\w*)(?:\[(\d+)\](?:\.(\w+))?)?")


def user_path(field: str, fields: FieldPaths) -> str:
    """The path in the user's rows of an item field path a check names, by the mapping's ``fields``
    (``retrieval_ground_truth[2].query_relevance_label`` → ``gold[2].grade``); unchanged when it names no mapped
    item field."""
    m = _ITEM_PATH.fullmatch(field)
    sources = field_sources(fields)
    if m is None or m.group(1) not in sources:
        return field
    name, index, key = m.groups()
    base = ".".join(compile_path(sources[name]))
    if index is None:
        return base
    if key is None:
        return f"{base}[{index}]"
    entry = fields.retrieved_documents if name == RANKING else fields.retrieval_ground_truth
    keys = {} if entry is None or name not in (RANKING, "retrieval_ground_truth") else entry.model_dump()
    got = keys.get(key)
    return f"{base}[{index}].{got if isinstance(got, str) else key}"


def read_keys(sources: dict[str, str]) -> set[str]:
    """The top-level row keys the mapping reads (those of ``field_sources``' paths): never a misspelling."""
    return {path[0] for path in map(compile_path, sources.values()) if path}


def field_role(f: str, which: str) -> str:
    """What the mapping reads at ``f``'s path, for the message (``which``: ``this`` row's, ``each`` row's)."""
    if f == RANKING:
        return f"the mapping reads {which} query's ranking there (a query that retrieved nothing has [])"
    return f"the mapping reads the query's {f} there"


def fits_field(f: str, sources: dict[str, str], role: str, input_type: str | None = None) -> bool:
    """Whether a top-level value of ``role`` (``parse.value_role``) can hold ``f``: itself, of ``input_type`` (the
    type a criterion reads it as) or else its canonical type (``parse.FIELD_TYPES``); for a nested path
    (``meta.kind``) the object on its way."""
    if len(compile_path(sources.get(f, f))) > 1:
        return role == "object"
    return fits_role(input_type or FIELD_TYPES.get(f), role)


def close_key(
    f: str, raw: dict[str, Any], sources: dict[str, str], keys: Iterable[str], input_type: str | None = None
) -> str | None:
    """The key among ``keys`` (unread top-level keys of ``raw``) closest to the top of ``f``'s path whose value can
    play ``f``'s role (``fits_field``), or None; only when that top key is absent or null in ``raw`` (a nested path
    whose top is there has no top-level misspelling)."""
    top = compile_path(sources.get(f, f))[:1]
    if not top or raw.get(top[0]) is not None:
        return None
    pool = sorted(keys)
    if not pool:
        return None
    return did_you_mean(top[0], pool, fits=lambda k: fits_field(f, sources, value_role(raw[k]), input_type))


def rename_fix(f: str, key: str, holder: str, sources: dict[str, str]) -> str:
    """The did-you-mean fix for ``f`` when ``holder`` (``the row has``, ``the rows have``) ``key`` at the top of its
    path: rename the key, or point the mapping's setting at it."""
    path = compile_path(sources.get(f, f))
    return rename_hint(path[0], key, holder, field_setting(f), ".".join((key, *path[1:])))


def absent_field(
    f: str, raw: dict[str, Any], sources: dict[str, str], keys: Collection[str], input_type: str | None = None
) -> dict[str, str] | None:
    """The ``missing_field`` rule's parameters (``how``, ``role``, ``suggestion``) for mapped field ``f`` absent
    (or null) in the row ``raw``, ``keys`` being its unread keys (none: no did-you-mean); None when ``f`` is not the
    ranking and no key is close to it (an optional field left out)."""
    guess = close_key(f, raw, sources, keys, input_type)
    if guess is None and f != RANKING:
        return None
    null = get_path(raw, compile_path(sources[f])) is None
    return {
        "how": "null" if null else "missing",
        "role": field_role(f, "this"),
        "suggestion": NO_RANKING if guess is None else rename_fix(f, guess, "the row has", sources),
    }


def refuse_absent_ranking(
    parsed: ParsedRow, raw: dict[str, Any], sources: dict[str, str], *, file: str | None, line: int
) -> None:
    """A usable row (``parsed.record`` set) without its ranking (``parsed.missing``) made unusable: no record, the
    ``missing_field`` problem first, as ``validate`` words and locates it (``line``: a table's row index)."""
    if parsed.record is None or RANKING not in parsed.missing or RANKING not in sources:
        return
    params = absent_field(RANKING, raw, sources, raw.keys() - read_keys(sources))
    assert params is not None  # the ranking always gets its problem
    field = sources[RANKING]
    message = MISSING_FIELD.format(field=field, **params)
    parsed.problems.insert(0, Problem("error", "missing_field", message, file, line, field, params["suggestion"]))
    parsed.record = None
