"""The context-assembly check: relevant documents that were retrieved in the top k but not sent to the model.

For each query, each *relevant* top-k document (label ≥ threshold, after removing later duplicates) whose
``content`` is known is looked up in the query's ``context`` (the exact string sent to the model):

- both texts are whitespace-normalized (every run of whitespace becomes one space; ends stripped);
- the document is **present** if its normalized text occurs in the normalized context, or if the context was cut
  inside it: the context *ends with* a prefix of the document of at least ``min_prefix_chars`` characters (or the
  whole document when it is shorter) — so a context truncated to a token budget still counts the passage it cut;
- otherwise it is **dropped**: "the best passage was retrieved but dropped before generation".

A query is ``checked`` when it has a context and every relevant top-k document has content (a query with no
relevant top-k document and a context is checked, vacuously). Matching is exact text after normalization:
a document that was rewritten, summarized or re-chunked before assembly is reported as dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ._arrays import check_threshold

__all__ = ["DEFAULT_MIN_PREFIX_CHARS", "assembly_check", "check_query", "contains_document", "normalize_ws"]

DEFAULT_MIN_PREFIX_CHARS = 40


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def contains_document(context: str, content: str, *, min_prefix_chars: int = DEFAULT_MIN_PREFIX_CHARS) -> str | None:
    """``"contained"``, ``"truncated"`` (the context ends inside the document) or ``None`` (absent).

    Both arguments must already be whitespace-normalized (``normalize_ws``).
    """
    if not content:
        return "contained"
    if content in context:
        return "contained"
    need = min(min_prefix_chars, len(content))
    head = content[:need]
    start = context.find(head, max(0, len(context) - len(content)))
    while start != -1:
        if content.startswith(context[start:]):
            return "truncated"
        start = context.find(head, start + 1)
    return None


def check_query(
    query_id: str,
    context: str | None,
    relevant: Sequence[tuple[str, str | None]],
    *,
    min_prefix_chars: int = DEFAULT_MIN_PREFIX_CHARS,
) -> dict[str, Any]:
    """One query's result from its context and its relevant top-k documents as ``(document_id, content)``."""
    relevant_ids = [doc_id for doc_id, _ in relevant]
    unchecked = [doc_id for doc_id, content in relevant if content is None]
    row: dict[str, Any] = {
        "query_id": query_id,
        "checked": context is not None and not unchecked,
        "relevant_top_k": relevant_ids,
        "dropped_relevant": [],
        "truncated_relevant": [],
        "no_content": unchecked,
        "has_context": context is not None,
    }
    if context is None:
        return row
    ctx = normalize_ws(context)
    for doc_id, content in relevant:
        if content is None:
            continue
        found = contains_document(ctx, normalize_ws(content), min_prefix_chars=min_prefix_chars)
        if found is None:
            row["dropped_relevant"].append(doc_id)
        elif found == "truncated":
            row["truncated_relevant"].append(doc_id)
    return row


def assembly_check(
    records: Iterable[Any],
    *,
    k: int,
    relevance_threshold: int,
    min_prefix_chars: int = DEFAULT_MIN_PREFIX_CHARS,
) -> list[dict[str, Any]]:
    """One dict per record (a ``QueryRecord`` or alike): ``query_id``, ``checked`` (had a context and content for
    every relevant top-k document), ``relevant_top_k``, ``dropped_relevant`` (relevant top-k ids whose content is
    not in the context), ``truncated_relevant`` (present only as a prefix at the context's end), ``no_content``,
    ``has_context``."""
    t = check_threshold(relevance_threshold)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    out: list[dict[str, Any]] = []
    for rec in records:
        labels = {g.document_id: g.query_relevance_label for g in rec.retrieval_ground_truth or ()}
        seen: dict[str, str | None] = {}
        for doc in rec.retrieved_documents:
            if doc.document_id not in seen:
                seen[doc.document_id] = doc.content
                if len(seen) == k:
                    break
        relevant = [(d, c) for d, c in seen.items() if labels.get(d, 0) >= t]
        out.append(check_query(rec.query_id, rec.context, relevant, min_prefix_chars=min_prefix_chars))
    return out
