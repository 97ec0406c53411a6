"""The input limits every JSON reader shares: UTF-8 only (no BOM), nesting at most ``MAX_DEPTH`` levels, finite
numbers, and duplicate keys found (orjson keeps the last value of a key written twice, silently).

``loads`` decodes one document (a JSONL line, a criteria file) with orjson and raises ``JsonLimitError`` (a code,
a message and a fix, without the location: the caller knows the file and line) for what breaks a limit; a plain
syntax error stays orjson's ``JSONDecodeError`` so the TREC and BEIR readers keep their own ``bad_json`` wording.
``decode`` is the one decoding of a JSONL row (``dataset.rows``) and ``decode_document`` of a whole JSON file (the
criteria file): each returns the value, or the error as data — a ``JsonLimitError`` whose code ``bad_json`` says
``malformed JSON line: <orjson's reason>`` with its fix, the same words whichever command reads the row. Depth is only
walked when the text holds more than ``MAX_DEPTH`` brackets, and duplicate keys only looked for when the text has
more colons than the decoded value accounts for, so a usual row costs two byte counts and one re-encoding.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = [
    "BOM",
    "MAX_DEPTH",
    "JsonLimitError",
    "bom_error",
    "decode",
    "decode_document",
    "duplicate_keys",
    "line_and_offset",
    "loads",
    "utf8_error",
]

MAX_DEPTH = 64  # nesting levels of objects and lists, as for YAML (foundry_bridge._yaml.MAX_DEPTH)
BOM = b"\xef\xbb\xbf"
_NON_FINITE = re.compile(rb"(?<![\w\"])-?(?:NaN|Infinity)(?![\w\"])")


class JsonLimitError(ValueError):
    """A document outside the input limits: ``code`` (a validation code), ``message`` and ``hint`` (the fix).

    ``reason`` (``bad_json`` only): orjson's whole message (``unexpected character: line 1 column 5 (char 4)``);
    ``line`` (``decode_document``'s ``not_utf8`` only): the line of the bad byte in the document.
    """

    def __init__(self, code: str, message: str, hint: str, *, reason: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.hint, self.reason, self.line = code, message, hint, reason, line


def utf8_error(exc: UnicodeDecodeError, offset: int | None = None) -> JsonLimitError:
    """The error (located by the caller: file, line) for bytes that are not UTF-8; ``offset``: the bad byte's
    offset in its line (default ``exc.start``, for a decoded line)."""
    byte = exc.object[exc.start]
    return JsonLimitError(
        "not_utf8",
        f"not UTF-8: byte 0x{byte:02x} at byte offset {exc.start if offset is None else offset} of the line "
        f"({exc.reason})",
        "save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8` if it is Latin-1",
    )


def bom_error() -> JsonLimitError:
    return JsonLimitError(
        "utf8_bom",
        "the file starts with a UTF-8 byte order mark (BOM), which JSON Lines and TREC files must not have",
        "drop the BOM, e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE` (or save as UTF-8 without BOM)",
    )


def line_and_offset(raw: bytes, pos: int) -> tuple[int, int]:
    """(1-based line, byte offset in that line) of byte ``pos`` of a whole-file document."""
    return raw.count(b"\n", 0, pos) + 1, pos - (raw.rfind(b"\n", 0, pos) + 1)


def loads(raw: bytes) -> Any:
    """One JSON document within the limits; ``JsonLimitError`` for a BOM, bytes that are not UTF-8, nesting deeper
    than ``MAX_DEPTH``, or NaN/Infinity/a number beyond a double; orjson's ``JSONDecodeError`` for bad syntax."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _diagnose(raw, str(exc)) or exc from None
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _too_deep(value):
        raise _depth_error()
    return value


def decode(raw: bytes) -> Any:
    """The JSON value of one row ``raw``, or its ``JsonLimitError`` returned (never raised): a limit broken, or
    bad syntax as ``bad_json`` (``malformed JSON line: <reason up to its first colon>``)."""
    try:
        return loads(raw)
    except JsonLimitError as exc:
        return exc
    except orjson.JSONDecodeError as exc:
        reason = str(exc)
        return JsonLimitError(
            "bad_json",
            f"malformed JSON line: {reason.split(':', 1)[0]}",
            "each line must be one complete JSON object",
            reason=reason,
        )


def decode_document(raw: bytes) -> Any:
    """``decode`` for a whole file: bytes that are not UTF-8 are found first and located (``line``, and the byte
    offset in that line in the message), whatever else is wrong."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, offset = line_and_offset(raw, exc.start)
        bad = utf8_error(exc, offset)
        bad.line = line
        return bad
    return decode(raw)


def _depth_error() -> JsonLimitError:
    return JsonLimitError(
        "too_deep",
        f"JSON nested deeper than {MAX_DEPTH} levels",
        f"flatten the value: a row needs a few levels of objects and lists (limit: {MAX_DEPTH})",
    )


def _diagnose(raw: bytes, reason: str) -> JsonLimitError | None:
    """What breaks a limit in a document orjson refused, or None for a plain syntax error."""
    if raw.startswith(BOM):
        return bom_error()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return utf8_error(exc)
    if "depth limit" in reason or "recursion" in reason.lower():
        return _depth_error()
    if "infinity" in reason.lower() or _NON_FINITE.search(raw):
        return JsonLimitError(
            "non_finite_number",
            "NaN, Infinity or a number beyond a double (such as 1e400) is not a JSON number",
            "write a finite number (Python's json.dumps writes NaN for float('nan'): use allow_nan=False), or null",
        )
    return None


def _too_deep(value: Any) -> bool:
    if type(value) is not dict and type(value) is not list:
        return False
    stack = [(value, 1)]
    while stack:
        obj, depth = stack.pop()
        children = obj.values() if type(obj) is dict else obj
        for child in children:
            if type(child) is dict or type(child) is list:
                if depth + 1 > MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False


def duplicate_keys(raw: bytes, value: Any) -> list[tuple[str, int, int]]:
    """``(key, first position, second position)`` (1-based, in the key order of its object) for every key written
    twice in one object of the document ``raw`` decoded as ``value``.

    Cheap test first: every key is followed by a colon and orjson escapes no colon, so unless a key was dropped
    (or the text escapes a colon as ``\\u003a``) the text and ``value`` re-encoded have as many colons.
    """
    if raw.count(b":") == orjson.dumps(value).count(b":") and b"\\u003" not in raw:
        return []
    found: list[tuple[str, int, int]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        first: dict[str, int] = {}
        for i, (key, _) in enumerate(items, 1):
            if key in first:
                found.append((key, first[key], i))
            else:
                first[key] = i
        return dict(items)

    json.loads(raw, object_pairs_hook=pairs)
    return found
