"""Rows read through a mapping that does not fit them, said once for the mapping instead of once a row:

- ``EntryKeys``: a key of a document or label list's entries that the mapping spells otherwise than every entry
  has it (``relevance_score: scroe`` while each entry has ``score``);
- ``EveryRow``: no row has the query id where the mapping reads it (a forgotten ``--mapping``: the default
  mapping over rows with their own field names), or no row's kind is one the mapping can read (``answerable``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from .._text import did_you_mean
from ..dataset.absent import field_sources, read_keys
from ..dataset.parse import MISSING, compile_path, get_path
from ..dataset.problems import Problem
from ..dataset.spec import FieldPaths
from ..mapping.loader import mapping_line_finder, packaged_mapping_path
from ._rules import Context

__all__ = ["EntryKeys", "EveryRow"]

_ENTRY_CODES = {"missing_score", "missing_id", "missing_label"}  # what an entry without the key gets
_KEYS_NAMED = 30  # row keys a message names
# what the mapping reads at each key of an entry (the optional ones: a warning)
_WHAT = {
    "document_id": ("each entry's document id", "entry_key_not_in_data"),
    "relevance_score": ("each document's search score", "entry_key_not_in_data"),
    "query_relevance_label": ("each label's grade", "entry_key_not_in_data"),
    "content": ("each document's text", "entry_key_not_in_data/optional"),
    "title": ("each document's title", "entry_key_not_in_data/optional"),
}


def _is_default(mapping_file: str | None) -> bool:
    return mapping_file is not None and Path(mapping_file) == packaged_mapping_path()


class EntryKeys:
    """Decided on the first row whose list has object entries: when none of them has the key the mapping reads
    and a close key is in every one of them, one problem located at the mapping's key (or, for the default
    mapping, at the row), and no problem for an entry that lacks it (``said``)."""

    def __init__(self, fields: FieldPaths, mapping_file: str | None, data: str) -> None:
        self.data = data
        self.unit = "line"  # a table's rows are located by their index: "row"
        self.default = _is_default(mapping_file)
        self.file = None if self.default else mapping_file
        self.todo: list[tuple[str, str, tuple[str, ...], set[str]]] = []  # (list setting, key setting, path, read)
        self.said_fields: list[re.Pattern[str]] = []
        for name, entry in (
            ("retrieved_documents", fields.retrieved_documents),
            ("retrieval_ground_truth", fields.retrieval_ground_truth),
        ):
            if entry is None:
                continue
            keys = {k: v for k, v in entry.model_dump().items() if k != "path" and isinstance(v, str)}
            if getattr(entry, "scores_from_rank", False):
                keys.pop("relevance_score", None)
            read = {compile_path(v)[0] for v in keys.values() if v}
            for key_setting, key in keys.items():
                if len(compile_path(key)) == 1:
                    self.todo.append((name, key_setting, compile_path(entry.path), read))

    def check(self, row: dict[str, Any], line: int, ctx: Context, fields: FieldPaths) -> None:
        """Decide what the first row with entries tells (a fast no-op once every key is decided)."""
        if not self.todo:
            return
        left = []
        for name, key_setting, path, read in self.todo:
            value = get_path(row, path)
            entries = [e for e in value if type(e) is dict] if isinstance(value, list) else []
            if not entries:
                left.append((name, key_setting, path, read))
                continue
            key = getattr(getattr(fields, name), key_setting)
            if any(key in e for e in entries):
                continue
            common = set.intersection(*(set(e) for e in entries)) - read
            guess = did_you_mean(key, sorted(common))
            if guess is not None:
                self._say(ctx, name, key_setting, key, guess, ".".join(path), line)
        self.todo = left

    def _say(self, ctx: Context, name: str, key_setting: str, key: str, guess: str, where: str, line: int) -> None:
        setting = f"dataset.fields.{name}.{key_setting}"
        what, rule = _WHAT[key_setting]
        if self.default:
            fix = (
                f"did you mean {guess!r}? every entry has it: rename it to {key!r}, or set {setting}: {guess} in a "
                "mapping of your own (--mapping FILE)"
            )
        else:
            fix = f"did you mean {guess!r}? every entry has it: set {setting}: {guess}"
        self.said_fields.append(re.compile(re.escape(where) + r"\[\d+\]\." + re.escape(key)))
        line_of = mapping_line_finder(self.file)
        at = line_of(("dataset", "fields", name, key_setting)) if line_of is not None else None
        file, row = (self.file, f"{self.data} {self.unit} {line}") if self.file else (self.data, f"{self.unit} {line}")
        ctx.add(
            rule,
            setting,
            file=file,
            line=at if self.file else line,
            list=where,
            name=key,
            row=row,
            what=what,
            suggestion=fix,
        )

    def said(self, p: Problem) -> bool:
        """Whether ``p`` is an entry's missing key that ``check`` said once for the mapping."""
        return (
            bool(self.said_fields)
            and p.code in _ENTRY_CODES
            and p.field is not None
            and any(s.fullmatch(p.field) for s in self.said_fields)
        )


class EveryRow:
    """Problems of every row when the mapping does not fit the data, kept until the end: a query id absent where
    the mapping reads it (``missing_query_id``: a forgotten ``--mapping``), and a declared kind in the data's own
    words without the mapping's value lists (``bad_kind``: ``answerable``). When every row read through the
    mapping has one, one problem for the mapping, naming the mapping, the rows' keys or values; else each row's
    problem, as the reader worded it."""

    def __init__(self, fields: FieldPaths, mapping_file: str | None, ctx: Context) -> None:
        self.ctx = ctx
        self.field = fields.query_id
        self.path = compile_path(fields.query_id)
        self.kind = fields.kind if isinstance(fields.kind, str) else None  # value lists: each row says its value
        self.read = read_keys(field_sources(fields))
        self.default = _is_default(mapping_file)
        self.name = "default mapping" if self.default else (f"mapping {mapping_file}" if mapping_file else "mapping")
        self.rows = 0
        self.kept: dict[str, list[Problem]] = {"missing_query_id": [], "bad_kind": []}
        self.count: Counter[str] = Counter()
        self.keys: dict[str, None] = {}
        self.values: dict[str, None] = {}

    def keep(self, p: Problem, row: dict[str, Any]) -> bool:
        """Whether ``p`` (of a row read through the mapping) is kept until the end."""
        if p.code == "missing_query_id" and get_path(row, self.path) is MISSING:
            if len(self.keys) < _KEYS_NAMED:
                self.keys.update(dict.fromkeys(k for k in row if isinstance(k, str)))
        elif p.code == "bad_kind" and self.kind is not None:
            if len(self.values) < _KEYS_NAMED:
                self.values[repr(get_path(row, compile_path(self.kind)))] = None
        else:
            return False
        self.count[p.code] += 1
        if len(self.kept[p.code]) < self.ctx.report.max_per_code:
            self.kept[p.code].append(p)
        return True

    def finish(self) -> None:
        for code, kept in self.kept.items():
            count = self.count[code]
            if count and count < self.rows:  # some rows are fine: each other row's problem is its own error
                for p in kept:
                    self.ctx.report.add(p)
                if count > len(kept):
                    self.ctx.report.count(code, "error", count - len(kept))
            elif count and code == "bad_kind":
                self._no_kind()
            elif count:
                self._no_query_id()

    def _no_kind(self) -> None:
        values = ", ".join(self.values)
        fix = (
            f"say which of the data's values mean which in the mapping: dataset.fields.kind: {{field: {self.kind}, "
            "negative: [...]} (every other value is positive; docs/mapping.md), or set dataset.fields.kind: null to "
            "derive kind from the labels"
        )
        self.ctx.add("bad_kind/none", self.kind, values=values, suggestion=fix)

    def _no_query_id(self) -> None:
        keys = list(self.keys)[:_KEYS_NAMED]
        have = [k for k in keys if k in self.read]
        others = (
            f"; of the fields it reads, the rows have only {', '.join(map(repr, have))}"
            if have
            else f"; the rows have none of the fields it reads ({', '.join(sorted(self.read))})"
        )
        named = ", ".join(keys) or "no keys"
        guess = did_you_mean(self.path[-1], keys) if self.path else None
        if self.default:
            fix = (
                f"the rows have {named}: pass --mapping FILE, a mapping that names the rows' own fields "
                "(dataset.fields: {query_id: <the id key>, query: ..., retrieved_documents: {path: ...}}; see "
                "docs/mapping.md)"
            )
        elif guess is not None:
            fix = f"did you mean {guess!r}? set dataset.fields.query_id: {guess}"
        else:
            fix = f"the rows have {named}: set dataset.fields.query_id to the key that holds the query id"
        self.ctx.add("missing_query_id/none", self.field, mapping=self.name, others=others, suggestion=fix)
