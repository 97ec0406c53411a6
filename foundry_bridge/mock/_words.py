"""Content words, as every lexical stand-in of the emulator reads them (mock judges, graders, safety)."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["tokens"]

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORD_TEXT = (
    "a an the of to in on and or for is are was were be been being it its this that these those with as at by "
    "from what which who whom how do does did i you my your our we they he she them their there here not no can "
    "will would should could may might has have had about into than then so if"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def tokens(value: Any) -> set[str]:
    """Lower-cased alphanumeric words of a value (JSON-encoded if not a string), minus common English stopwords."""
    if value is None:
        return set()
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return {t for t in _WORD.findall(text.lower()) if t not in _STOPWORDS}
