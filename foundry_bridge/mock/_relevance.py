"""The emulator's stand-in for a document relevance judge (``judge-docs --backend mock``): a grade from lexical
overlap, never a model's judgement, so a pipeline can be run end to end offline and its numbers are reproducible.

grade = 3 when at least 60 % of the query's words (``tokens``: lower-cased, stopwords out) occur in the document,
2 from 40 %, 1 from 20 %, else 0. A document without text, or a query without words, gets no grade (``None``):
the caller counts it as ``unknown``.
"""

from __future__ import annotations

from ._scoring import tokens

__all__ = ["STAND_IN_CUTS", "stand_in_grade"]

STAND_IN_CUTS = ((0.6, 3), (0.4, 2), (0.2, 1))  # (share of the query's words found, grade), highest first


def stand_in_grade(query: str | None, text: str | None) -> tuple[int | None, str]:
    """(grade 0–3 or None, the reason) for one (query, document text) pair, by ``STAND_IN_CUTS``."""
    words, found = tokens(query), tokens(text)
    if not words or not found:
        return None, "mock stand-in: no " + ("query words" if not words else "document text") + " to compare"
    share = len(words & found) / len(words)
    grade = next((g for cut, g in STAND_IN_CUTS if share >= cut), 0)
    return grade, f"mock stand-in (lexical overlap, not a model): {share:.0%} of the query's words in the document"
