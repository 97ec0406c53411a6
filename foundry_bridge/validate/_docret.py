"""Document-retrieval rules: labels within the criterion's range, and the Foundry quirks that depend on them.

One pass over a row's labels builds ``label_of`` (id → label, the last one winning, as in Foundry); the retrieved
list is walked only for ``holes_below_min`` (min ≥ 1) and, up to its first labelled document, to tell
``zero_result`` (counted per row, reported once per criterion by ``finish``) from ``nan_fidelity``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..dataset.problems import LISTED_ROWS
from ._criteria import Criterion
from ._rules import Context

__all__ = ["MAX_DOCUMENTS", "LabelChecks", "LocateLabel", "range_note"]

MAX_DOCUMENTS = 10_000  # Foundry's limit per list (retrieved_documents and retrieval_ground_truth)
_ZERO_RESULT_LINES = 5  # lines named in the zero_result warning
_NONE_YET = 2**63  # a span's start: above any label the arrays hold


def range_note(c: Criterion, low: int | None = None, high: int | None = None) -> str:
    """What range ``c`` checks labels against and where it comes from, with the span of the data's labels
    (``low``-``high``; None: no row had one) and, when they stop below the maximum, how to declare the top."""
    note = f"criterion {c.name!r} checks labels against {c.label_min}-{c.label_max}, {c.range_source}"
    if low is None or high is None:
        return note + "; no row has an integer label"
    note += f"; the data's labels span {low}-{high}"
    if c.label_min <= high < c.label_max:
        if c.max_from == "mapping":
            declare = f"declare `labels: {{min: {c.label_min}, max: {high}}}` in the mapping"
        else:
            declare = f"set ground_truth_label_max: {high} in its {c.max_from}"
        note += f": if {high} is the top grade, {declare}, so that a {high + 1} is an error"
    return note


# where the i-th label of a row's labels field is reported: (file, line); ``None`` → the row's file and line
LocateLabel = Callable[[str, int], tuple[str, int] | None]


class LabelChecks:
    """The checks of every criterion that reads labels (and, for document_retrieval, a retrieved list)."""

    def __init__(self, criteria: list[Criterion], ctx: Context) -> None:
        self.ctx = ctx
        self.checks = [(c, lf, c.field_of_type("documents")) for c in criteria if (lf := c.field_of_type("labels"))]
        # per criterion: the lowest and highest integer label of the data, for the note on the range
        self.spans = [[_NONE_YET, -_NONE_YET] for _ in self.checks]
        # per (criterion, retrieved field): [rows with a non-zero label and none retrieved, rows whose labels are
        # all 0, first lines of the former...]
        self.zero_result: defaultdict[tuple[str, str | None], list[Any]] = defaultdict(lambda: [0, 0])
        self.locate: LocateLabel | None = None  # labels read from another file than the rows (TREC, BEIR qrels)

    @property
    def labels_field(self) -> str:
        """The labels field the kind of a row is judged by."""
        return self.checks[0][1] if self.checks else "retrieval_ground_truth"

    def row(self, item: dict[str, Any], line: int | None, bad_documents: set[str]) -> None:
        """``bad_documents``: the retrieved fields of this row that got an error (Foundry rejects the row)."""
        for (c, lf, df), span in zip(self.checks, self.spans, strict=True):
            labels = item.get(lf)
            if not isinstance(labels, list):
                continue
            label_of, valid = self._in_range(c, lf, labels, line, span)
            docs = item.get(df) if df else None
            if not isinstance(docs, list):
                continue
            if c.label_min >= 1:
                self._holes(c, df, docs, label_of, line)
            if not (valid and docs and label_of) or df in bad_documents or len(labels) > MAX_DOCUMENTS:
                continue  # rows Foundry rejects, and empty lists (its float 0.0 branch), stop here
            self._zero_or_nan(c, lf, df, docs, label_of, line)

    def _in_range(
        self, c: Criterion, lf: str, labels: list[Any], line: int | None, span: list[int]
    ) -> tuple[dict[str, Any], bool]:
        """(id → label, whether every label is an in-range integer: Foundry scores the row, else rejects it);
        ``span`` widened to the integer labels seen."""
        label_of: dict[str, Any] = {}
        valid = True
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
            if v < span[0]:
                span[0] = v
            if v > span[1]:
                span[1] = v
            if not c.label_min <= v <= c.label_max:
                valid = False
                below = v < c.label_min
                side = "below ground_truth_label_min" if below else "above ground_truth_label_max"
                bound = c.label_min if below else c.label_max
                field = f"{lf}[{i}].query_relevance_label"
                file, at = (self.locate(lf, i) if self.locate else None) or (None, line)
                params = {"label": v, "side": side, "bound": bound, "criterion": c.name}
                self.ctx.add("label_out_of_range", field, file=file, line=at, **params)
        return label_of, valid

    def _holes(self, c: Criterion, df: str | None, docs: list[Any], label_of: dict[str, Any], line: int | None) -> None:
        holes = [
            str(d["document_id"])
            for d in docs
            if isinstance(d, dict) and d.get("document_id") is not None and str(d["document_id"]) not in label_of
        ]
        if holes:
            self.ctx.add(
                "holes_below_min", df or "", line=line, count=len(holes), first=holes[0], label_min=c.label_min
            )

    def _zero_or_nan(
        self, c: Criterion, lf: str, df: str | None, docs: list[Any], label_of: dict[str, Any], line: int | None
    ) -> None:
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
            if len(counts) < 2 + LISTED_ROWS:
                counts.append(line)
        elif c.label_min and max(label_of.values()) == c.label_min:  # min 0: all-0 rows returned above
            self.ctx.add("nan_fidelity", lf, line=line, label_min=c.label_min)

    def finish(self) -> None:
        """One ``zero_result`` warning per document_retrieval criterion, if any row with a non-zero label
        retrieved none: Foundry's integer-0 branch. Rows whose labels are all 0 (negative queries) take the same
        branch as expected; they are only counted in the message. Then a note per criterion on its label range."""
        for (c, _, _), span in zip(self.checks, self.spans, strict=True):
            self.ctx.report.notes.append(range_note(c, span[0], span[1]) if span[0] <= span[1] else range_note(c))
        for (name, df), (missed, negative, *lines) in self.zero_result.items():
            if not missed:
                continue
            shown = lines[:_ZERO_RESULT_LINES]
            where = ", ".join(map(str, shown)) + (", ..." if missed > len(shown) else "")
            negatives = (
                f"; the {negative} row(s) whose labels are all 0 (negative queries) get the same 0, as expected"
                if negative
                else ""
            )
            lines_text = f"line{'s' if missed > 1 else ''} {where}"
            field = df or "retrieved_documents"
            listed = tuple(n for n in lines if n is not None)
            self.ctx.add(
                "zero_result", field, count=missed, lines=lines_text, criterion=name, negatives=negatives, at=listed
            )
