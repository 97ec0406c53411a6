"""Data rules: each row's item values against the criteria (required inputs present, strings, document and label
lists, kind against labels), and what is only known at the end (no rows, fields no row had, duplicate ids).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Collection
from typing import Any

from .._text import did_you_mean
from ..catalog import INPUT_TYPE_ORDER
from ..dataset.absent import (
    RANKING,
    absent_field,
    close_key,
    field_role,
    fits_field,
    read_keys,
    rename_fix,
    user_path,
)
from ..dataset.parse import (
    MISSING,
    compile_path,
    fits_role,
    float_label_problem,
    missing_key_hint,
    quoted_number_hint,
    rename_hint,
    value_role,
)
from ..dataset.problems import Problem
from ..dataset.records import derive_kind
from ..dataset.spec import FieldPaths
from ._criteria import Criterion
from ._docret import MAX_DOCUMENTS, LabelChecks
from ._duplicates import DuplicateIds, Rescan, is_id, near_differences, near_key
from ._mapped import EntryKeys, EveryRow
from ._report import ValidationReport
from ._rules import Context

__all__ = ["Locate", "RowChecker"]

_EDGE_SPACE = re.compile(r"(?:^|\x00)\s|\s(?:\x00|$)")  # an id (in a NUL-joined list) with surrounding space
_MAX_KEYS_KEPT = 1_000  # distinct row keys remembered for did-you-mean hints
_STRINGS = ("string", "string_or_messages", "string_object_or_messages")

_FILL = "fill the field in every row, or drop the evaluator"

# where a missing item field is reported: (file, line, note) for the current row
Locate = Callable[[str, int | None], tuple[str, int | None, str]]


class RowChecker:
    """Per-row checks of item values against the criteria; state for duplicates and never-seen fields.

    ``sources`` (rows read through a mapping): item field → the dataset path it is read from. A field absent from
    a row is then reported when a criterion needs it (``missing_input``), when it is the ranking (every item carries
    it, the local metrics rank it; ``[]`` is an empty ranking), or when the row has an unread key close to it
    (``missing_field``, with a did-you-mean); a field absent from every row without a close key is one the dataset
    does not have. ``hints``: look for such keys in the rows (not in items a reader built, TREC's).
    """

    def __init__(
        self,
        criteria: list[Criterion],
        report: ValidationReport,
        source: str,
        threshold: int,
        *,
        sources: dict[str, str] | None = None,
        hints: bool = True,
        fields: FieldPaths | None = None,
        mapping_file: str | None = None,
    ) -> None:
        self.criteria = criteria
        self.report = report
        self.entry_keys = EntryKeys(fields, mapping_file, source) if fields is not None else None
        drop = self.entry_keys.said if self.entry_keys is not None else None
        rename = functools.cache(functools.partial(user_path, fields=fields)) if fields is not None else None
        # ``ctx`` names the item fields the checks name in the user's own paths (``user_ctx``: paths already so)
        self.ctx = Context(report, source, rename=rename, drop=drop)
        self.user_ctx = Context(report, source, drop=drop)
        self.every_row = EveryRow(fields, mapping_file, self.user_ctx) if fields is not None else None
        self.fields = fields
        self.source = source
        self.threshold = threshold
        self.ids = DuplicateIds()
        self.labels = LabelChecks(criteria, self.ctx)
        self.seen_fields: set[str] = set()
        self.raw_keys: dict[str, str] = {}  # row key → the role of its first value (``value_role``)
        self.sources = sources or {}
        self.mapped = sources is not None
        self.hints = hints
        # the rows' keys something reads: the mapping's paths, or for items as they are the criteria's templates,
        # the id and the kind
        self.read_keys = read_keys(self.sources)
        if not self.mapped:
            self.read_keys = {"query_id", "kind", *(f for c in criteria for f in c.fields.values())}
        self.deferred: dict[str, list[Problem]] = {}  # item field → missing-input/field problems (capped)
        self.mapped_rows = 0  # rows read through the mapping, and in how many of them each field was absent
        self.absent_rows: Counter[str] = Counter()
        self.deferred_count: Counter[str] = Counter()
        self.groups = [(c, [[(x, c.fields.get(x)) for x in g] for g in c.spec.input_groups]) for c in criteria]
        self.locate: Locate | None = None  # None → this file, the row's line
        self.field_types: dict[str, str] = {}
        for c in criteria:
            for inp, f in c.fields.items():
                t = c.spec.input(inp).type
                if f not in self.field_types or INPUT_TYPE_ORDER[t] < INPUT_TYPE_ORDER[self.field_types[f]]:
                    self.field_types[f] = t
        self.id_lists = [f for f, t in self.field_types.items() if t in ("documents", "labels")]

    def query_id(self, qid: Any, line: int | None) -> None:
        self.ids.add(qid)

    def row(
        self,
        item: dict[str, Any],
        line: int | None,
        *,
        declared_kind: str | None,
        raw: dict[str, Any],
        absent: Collection[str] = (),
    ) -> None:
        """Check one row's ``item``; ``raw`` is the row as read (its keys, for did-you-mean hints), ``absent`` the
        fields whose path is not in it (``ParsedRow.missing``)."""
        if len(self.raw_keys) < _MAX_KEYS_KEPT:  # for did-you-mean only; bounded whatever the rows hold
            for key in raw.keys() - self.raw_keys.keys():
                self.raw_keys[key] = value_role(raw[key])
        present = {k for k, v in item.items() if v is not None}
        self.seen_fields |= present.difference(absent) if absent else present
        reported = self._missing_inputs(present, line, raw)
        if self.mapped:
            self._absent(absent, raw, line, reported)
        self.row_ids: list[set[str]] = []  # the document ids of each list, filled by the type checks
        bad_documents = self._types(item, line)
        self._near_document_ids(item, line)
        self.labels.row(item, line, bad_documents)
        for name in ("query", "response"):
            v = item.get(name)
            if isinstance(v, str) and not v.strip():
                self.ctx.add(f"empty_{name}", name, line=line)
        self._check_kind(item, declared_kind, line)

    def reader_problems(self, problems: list[Problem], raw: dict[str, Any], line: int) -> None:
        """Report what the reader found in ``raw``, a row read through the mapping, after what the row tells about
        the mapping itself, which is said once (``EntryKeys``, ``EveryRow``)."""
        assert self.entry_keys is not None and self.every_row is not None and self.fields is not None
        self.entry_keys.check(raw, line, self.user_ctx, self.fields)
        self.every_row.rows += 1
        for p in problems:
            if not self.every_row.keep(p, raw):
                self.ctx.report_problem(p)

    def _missing_inputs(self, present: set[str], line: int | None, raw: dict[str, Any]) -> set[str]:
        """Required inputs without a value, deferred: a field no row has is one error at the end, not one a row.
        Returns the fields reported for this row."""
        reported: set[str] = set()
        for c, groups in self.groups:
            if not groups or any(all(f in present for _, f in g) for g in groups):
                continue  # no groups: a model grader, whose input messages read the row
            best = min(groups, key=lambda g: sum(f not in present for _, f in g))
            for inp, f in best:
                if f is None or f in present:
                    continue
                reported.add(f)
                guess = self._close_key(f, raw)
                suggestion = _FILL if guess is None else self._rename(f, guess, "the row has")
                self._defer(f, line, "missing_input", f, input=inp, criterion=c.name, suggestion=suggestion)
        return reported

    def _absent(
        self, absent: Collection[str], raw: dict[str, Any], line: int | None, reported: Collection[str]
    ) -> None:
        """Mapped fields absent from a row that no criterion reported: the ranking always, any other one when the
        row has an unread key close to it (a misspelling); deferred as the missing inputs are. Called for every
        usable row read through the mapping (a row with a reader's error is checked no further, as for inputs)."""
        self.mapped_rows += 1
        if not absent:
            return
        counts = self.absent_rows
        for f in absent:
            counts[f] += 1
        unread = raw.keys() - self.read_keys if self.hints else set()
        if not unread and RANKING not in absent:
            return  # the usual case (an optional field absent): no key could be a misspelling of it
        for f in absent:
            if f in reported or f not in self.sources:
                continue
            params = absent_field(f, raw, self.sources, unread, self.field_types.get(f))
            if params is not None:
                self._defer(f, line, "missing_field", self.sources[f], **params)

    def _defer(self, f: str, line: int | None, rule: str, field: str, **params: Any) -> None:
        """Keep the problem of ``f`` missing from the row at ``line`` for ``finish`` (listed up to the cap)."""
        self.deferred_count[f] += 1
        bucket = self.deferred.setdefault(f, [])
        if len(bucket) < self.report.max_per_code:
            source, at, note = self.locate(f, line) if self.locate else (self.source, line, "")
            ctx = self.user_ctx if rule == "missing_field" else self.ctx  # its field is the row's path already
            bucket.append(ctx.problem(rule, field, file=source, line=at, note=note, **params))

    def _close_key(self, f: str, raw: dict[str, Any]) -> str | None:
        """An unread top-level key of ``raw`` close to where ``f`` is read from (``absent.close_key``), or None."""
        if not self.hints:
            return None
        return close_key(f, raw, self.sources, raw.keys() - self.read_keys, self.field_types.get(f))

    def _fits(self, f: str, role: str) -> bool:
        return fits_field(f, self.sources, role, self.field_types.get(f))

    def _rename(self, f: str, key: str, holder: str) -> str:
        """The did-you-mean fix for ``f`` read from a path whose top key ``holder`` spells ``key``."""
        return rename_fix(f, key, holder, self.sources) if self.mapped else rename_hint(f, key, holder, None)

    def _types(self, item: dict[str, Any], line: int | None) -> set[str]:
        """Type checks of every field a criterion reads; returns the document fields that got an error."""
        bad_documents: set[str] = set()
        for f, t in self.field_types.items():
            v = item.get(f)
            if v is None:
                continue
            if t in _STRINGS:
                self._check_string(f, v, t, line)
            elif t == "documents":
                errors = self.report.errors
                self._check_documents(f, v, line)
                if self.report.errors > errors:  # Foundry rejects the row: no quirk warnings for it
                    bad_documents.add(f)
            elif t == "labels":
                self._check_labels(f, v, line)
        return bad_documents

    def _check_string(self, f: str, v: Any, t: str, line: int | None) -> None:
        if isinstance(v, str):
            return
        if t != "string" and (isinstance(v, list) or (t == "string_object_or_messages" and isinstance(v, dict))):
            return
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            self.ctx.add("context_not_string", f, line=line, chunks=len(v))
        else:
            self.ctx.add("not_a_string", f, line=line, type=type(v).__name__)

    def _check_documents(self, f: str, docs: Any, line: int | None) -> None:
        if not isinstance(docs, list):
            self.ctx.add("not_a_list/documents", f, line=line)
            return
        if len(docs) > MAX_DOCUMENTS:
            self.ctx.add("too_many_documents", f, line=line, count=len(docs), limit=MAX_DOCUMENTS)
        seen: set[str] = set()
        self.row_ids.append(seen)
        previous: float | None = None
        order_warned = False
        for i, d in enumerate(docs):
            if not isinstance(d, dict):
                self.ctx.add("not_an_object/entry", f"{f}[{i}]", line=line)
                continue
            doc_id = d.get("document_id")
            if isinstance(doc_id, str) and doc_id not in seen:  # the usual case, without a call
                seen.add(doc_id)
            else:
                self._check_document_id(f, i, doc_id, seen, line)
            s = d.get("relevance_score")
            if s is None or not isinstance(s, int | float) or isinstance(s, bool):
                rule = "missing_score" if s is None else "bad_score"
                self.ctx.add(rule, f"{f}[{i}].relevance_score", line=line, score=s, hint=quoted_number_hint(s))
                previous = None
                continue
            if previous is not None and s > previous and not order_warned:
                order_warned = True
                field = f"{f}[{i}].relevance_score"
                self.ctx.add("order_disagrees_with_scores", field, line=line, rank=i + 1, score=s, previous=previous)
            previous = s

    def _check_document_id(self, f: str, i: int, doc_id: Any, seen: set[str], line: int | None) -> None:
        """A missing, numeric or repeated document id (a string id seen for the first time is checked inline)."""
        field = f"{f}[{i}].document_id"
        if doc_id is None:
            self.ctx.add("missing_id", field, line=line)
            return
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
            return
        if isinstance(doc_id, int):
            self.ctx.add("numeric_id", field, line=line, id=doc_id)
        key = str(doc_id)
        if key in seen:
            self.ctx.add("duplicate_document_id", field, line=line, id=key, list=f)
        seen.add(key)

    def _near_document_ids(self, item: dict[str, Any], line: int | None) -> None:
        """Document ids of one row (retrieved and labelled lists alike) that differ only by case, surrounding
        whitespace, Unicode normalization or zero-width characters: metrics and Foundry match ids exactly."""
        ids = set().union(*self.row_ids)
        joined = "\x00".join(ids)
        if joined.isascii() and joined.lower() == joined and not _EDGE_SPACE.search(joined):
            return  # the usual case: lowercase ASCII ids without surrounding spaces cannot be near duplicates
        if len({near_key(i) for i in ids}) == len(ids):
            return
        first: dict[str, tuple[str, str, int]] = {}  # near key → the first id, its list and index
        for f in self.id_lists:
            entries = item.get(f)
            for i, d in enumerate(entries if isinstance(entries, list) else ()):
                doc_id = d.get("document_id") if isinstance(d, dict) else None
                if not is_id(doc_id):
                    continue
                other, at, index = first.setdefault(near_key(str(doc_id)), (str(doc_id), f, i))
                if other != str(doc_id):
                    how = near_differences(str(doc_id), other)
                    field = f"{f}[{i}].document_id"
                    params = {"id": str(doc_id), "other": other, "list": at, "first": index, "how": how}
                    self.ctx.add("near_duplicate_document_id", field, line=line, **params)

    def _check_labels(self, f: str, labels: Any, line: int | None) -> None:
        if not isinstance(labels, list):
            self.ctx.add("not_a_list/labels", f, line=line)
            return
        if not labels:
            self.ctx.add("empty_ground_truth", f, line=line)
        if len(labels) > MAX_DOCUMENTS:
            self.ctx.add("too_many_documents/labels", f, line=line, count=len(labels), limit=MAX_DOCUMENTS)
        seen: set[str] = set()
        self.row_ids.append(seen)
        for i, g in enumerate(labels):
            if not isinstance(g, dict):
                self.ctx.add("not_an_object/entry", f"{f}[{i}]", line=line)
                continue
            doc_id = g.get("document_id")
            if doc_id is None:
                self.ctx.add("missing_id", f"{f}[{i}].document_id", line=line)
            else:
                key = str(doc_id)
                if key in seen:
                    self.ctx.add("duplicate_document_id/labels", f"{f}[{i}].document_id", line=line, id=key, list=f)
                seen.add(key)
            self._check_label(g, f"{f}[{i}].query_relevance_label", line)

    def _check_label(self, entry: dict[str, Any], field: str, line: int | None) -> None:
        label = entry.get("query_relevance_label", MISSING)
        if isinstance(label, int) and not isinstance(label, bool):
            return
        if isinstance(label, float):
            message, hint = float_label_problem(label)
            self.ctx.add("label_not_integer/float", field, line=line, message=message, hint=hint)
        elif label is MISSING:
            fix = missing_key_hint(entry, "query_relevance_label", "document_id", None)
            self.ctx.add("missing_label", field, line=line, hint=fix)
        elif label is None:
            self.ctx.add("missing_label", field, line=line)
        else:
            self.ctx.add("label_not_integer", field, line=line, label=label)

    def _check_kind(self, item: dict[str, Any], declared: str | None, line: int | None) -> None:
        if declared not in ("positive", "negative"):
            return
        labels = item.get(self.labels.labels_field)
        if labels is None:
            labels = item.get("retrieval_ground_truth")
        if not isinstance(labels, list):
            return
        values = [g.get("query_relevance_label") for g in labels if isinstance(g, dict)]
        ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        relevant = derive_kind(None, ints, self.threshold)[0] == "positive"
        if declared == "positive" and not relevant:
            self.ctx.add("positive_without_relevant", "kind", line=line, threshold=self.threshold)
        elif declared == "negative" and relevant:
            self.ctx.add("negative_with_relevant", "kind", line=line, threshold=self.threshold)

    # -- at the end of the pass ---------------------------------------------------------------------------------

    def finish(self, rescan: Rescan | None = None) -> None:
        """No rows, duplicate query ids, zero_result, and fields no row had (one error instead of one per row).

        ``rescan`` is the second pass over the ids, run only when the filter found candidates.
        """
        if self.report.rows == 0:
            self.ctx.add("empty_dataset")
        if self.every_row is not None:
            self.every_row.finish()
        self.ids.report(rescan, self.ctx)
        self.labels.finish()
        for f in sorted(self.deferred):
            if f in self.seen_fields or (f in self.sources and self.absent_rows[f] < self.mapped_rows):
                for p in self.deferred[f]:
                    self.report.add(p)
                extra = self.deferred_count[f] - len(self.deferred[f])
                if extra > 0:  # counted, not listed
                    self.report.count(self.deferred[f][0].code, "error", extra)
            else:
                self._field_not_in_data(self.sources.get(f, f), f)

    def _field_not_in_data(self, src: str, f: str) -> None:
        """One error for a field no row has: the criteria that read it, or the mapping (the ranking, or a field
        rows spell with a close key); the did-you-mean ranks the data's keys by the field's role first."""
        candidates = sorted(self.raw_keys.keys() | self.seen_fields)
        leaf = src.split(".")[-1]
        readers = ", ".join(f"{c.name}.{inp}" for c in self.criteria for inp, fld in c.fields.items() if fld == f)
        if self.deferred[f][0].code == "missing_field":
            top = compile_path(src)[:1]
            unread = [k for k in self.raw_keys if k not in self.read_keys and (k,) != top]
            guess = did_you_mean(top[0], unread, fits=lambda k: self._fits(f, self.raw_keys[k])) if top else None
            hint = self._rename(f, guess, "the rows have") if guess else None
            if guess is None and f == RANKING:
                # no row has a ranking, no key spells one and no criterion reads it: a judge-only dataset under a
                # mapping that did not say so; said once, not refused (a misspelling above, or a criterion, is)
                self.user_ctx.add("no_ranking", src)
                return
            if guess is None:
                hint = f"fields in the data: {', '.join(candidates[:20])}"
            self.user_ctx.add("missing_field/none", src, role=field_role(f, "each"), suggestion=hint)
            return
        wrong_case = next((c for c in candidates if c.lower() == leaf.lower()), None)
        if wrong_case is not None:
            self.user_ctx.add("field_wrong_case", src, readers=readers, guess=wrong_case)
            return
        kind = self.field_types.get(f)
        guess = did_you_mean(
            leaf, candidates, fits=lambda k: k not in self.raw_keys or fits_role(kind, self.raw_keys[k])
        )
        hint = f"did you mean {guess!r}?" if guess else f"fields in the data: {', '.join(candidates[:20])}"
        self.user_ctx.add("field_not_in_data", src, readers=readers, suggestion=hint)
