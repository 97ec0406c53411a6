"""Small text helpers shared by every layer."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

__all__ = ["builtin_entry", "did_you_mean", "endpoint_problem", "judge_object", "printable", "shown_url"]

# C0 and C1 control characters and DEL, but tab and newline (the structure of tables and lines); a lone surrogate
# (a file name's undecodable byte) and U+FFFE/U+FFFF, which UTF-8 and XML cannot hold
T = TypeVar("T")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def printable(text: str) -> str:
    """``text`` with every control character from data (C0, DEL, C1: ESC, BEL, CR, CSI...) shown as ``\\xNN``, so
    a query id can neither clear a terminal, retitle its window nor forge a link, and a file name's undecodable
    byte as ``\\udcNN``; tab and newline are kept. The one guard of every human-facing output: the Markdown and
    HTML renderers, the step summary, JUnit XML, the CLI's messages."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def did_you_mean(
    word: str,
    candidates: Iterable[str],
    *,
    fits: Callable[[str], bool] | None = None,
    prefix: bool = False,
) -> str | None:
    """The closest candidate to ``word``, or None: the same word in another case first, then the closest by
    ``difflib``'s ratio (at least 0.6); with ``prefix``, then the one candidate that ``word`` (3 characters or
    more) begins, an abbreviation (``neg`` → ``negative``).

    ``fits`` ranks by role before spelling: a candidate for which it is false (a key holding a string where a list
    of labels is read) is never suggested, however close its name."""
    pool = [c for c in candidates if fits is None or fits(c)]
    lowered = {c.lower(): c for c in pool}
    if word.lower() in lowered:
        return lowered[word.lower()]
    import difflib  # only on the error path: not a start-up cost

    close = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    if close:
        return close[0]
    if prefix and len(word) >= 3:
        started = [c for c in pool if c.lower().startswith(word.lower())]
        if len(started) == 1:
            return started[0]
    return None


def builtin_entry(table: Mapping[str, T], name: str, what: str) -> T:
    """``table``'s entry by Foundry name (``builtin.x``) or short name; ``KeyError`` with a did-you-mean."""
    found = table.get(name) or table.get(f"builtin.{name}")
    if found is not None:
        return found
    guess = did_you_mean(name, list(table)) or did_you_mean(f"builtin.{name}", list(table))
    hint = f"; did you mean {guess!r}?" if guess else f"; known: {', '.join(table)}"
    raise KeyError(f"unknown {what} {name!r}{hint}")


def shown_url(url: str) -> str:
    """``url`` as a message may show it: user-info replaced by ``***``, no query string, no fragment (where a key,
    a signature or a password would travel)."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc if "@" not in parts.netloc else "***@" + parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


def endpoint_problem(url: str, what: str) -> str | None:
    """Why an endpoint URL the project stores and sends to must be refused, or None; the message shows the URL
    without user-info (``shown_url``).

    - user-info (``https://user:password@host/...``): httpx would send it as ``Authorization: Basic`` in place of
      the bearer token or API key, and the URL is stored in ``state.json``;
    - a query string or fragment (``?api-key=…&code=…``): it would be stored in the run folder, the manifest and
      every cache key, and breaks the request URLs built on the endpoint."""
    parts = urlsplit(url.strip())
    if "@" in parts.netloc:
        return (
            f"{what} {shown_url(url)!r} carries a user name or password before '@': it would be stored in the run "
            "folder and sent as HTTP Basic auth in place of the token; remove it (keys go in an environment variable)"
        )
    if parts.query or parts.fragment or url.strip().endswith(("?", "#")):
        return (
            f"{what} {shown_url(url)!r} carries a query string or fragment (not shown): it would be stored in the run "
            "folder and break the request URLs; give the URL without '?…' (keys go in an environment variable)"
        )
    return None


def judge_object(content: str, key: str) -> tuple[dict[str, Any], Any]:
    """A judge's answer read as one JSON object (a code fence around it accepted) and its ``key``'s value (None when
    absent); a ``ValueError`` when the answer is not a JSON object."""
    from ._io import loads

    text = content.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        answer = loads(text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise ValueError(f"the judge's answer is not a JSON object: {content[:120]!r}")
    return answer, answer.get(key)
