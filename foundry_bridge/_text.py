"""Small text helpers shared by every layer."""

from __future__ import annotations

import difflib

__all__ = ["did_you_mean"]


def did_you_mean(word: str, candidates: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """The closest candidate to ``word`` (case-insensitive first), or None."""
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered:
        return lowered[word.lower()]
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None
