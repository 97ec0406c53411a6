"""The abstention heuristic: does a response say "I don't know"?

A case-insensitive search for phrases such as "I don't know" or "couldn't find" (``DEFAULT_ABSTENTION_PHRASES``,
replaceable through the mapping's ``metrics.abstention_phrases``). It misses abstentions worded otherwise and flags
answers that merely contain such a phrase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["DEFAULT_ABSTENTION_PHRASES", "is_abstention"]

DEFAULT_ABSTENTION_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i don't have information",
    "i do not have information",
    "i don't have enough information",
    "i couldn't find",
    "i could not find",
    "i can't find",
    "i cannot find",
    "i was unable to find",
    "i wasn't able to find",
    "i can't answer",
    "i cannot answer",
    "i'm unable to answer",
    "i am unable to answer",
    "can't answer that",
    "cannot answer that",
    "no information about",
    "not mentioned in",
    "don't mention",
    "do not mention",
    "doesn't mention",
    "does not mention",
    "not covered in",
    "not in the provided",
    "not in the documents",
    "no relevant information",
    "unable to provide an answer",
)


@lru_cache(maxsize=32)
def _pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    parts = [re.escape(" ".join(p.lower().split())).replace("'", "['’]") for p in phrases if p.strip()]
    if not parts:
        return re.compile(r"(?!x)x")  # matches nothing
    return re.compile("|".join(parts))


def is_abstention(text: str | None, phrases: Sequence[str] | None = None) -> bool:
    """True if ``text`` contains one of ``phrases`` (case-insensitive, whitespace-normalized, ' and ’ alike).

    A heuristic, not a judgement: ``phrases=None`` uses ``DEFAULT_ABSTENTION_PHRASES``.
    """
    if not text:
        return False
    pattern = _pattern(tuple(DEFAULT_ABSTENTION_PHRASES if phrases is None else phrases))
    return pattern.search(" ".join(text.lower().split())) is not None
