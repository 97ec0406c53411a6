"""The exception hierarchy: one base class, input errors that point at file, line and field.

    FoundryBridgeError            anything this package raises on purpose (CLI exit 1)
    ├── InputError (ValueError)   bad user input, located: file, line, field, hint
    │   ├── DatasetError          a dataset row or file is wrong
    │   └── MappingError          a mapping / testing-criteria file is wrong
    ├── BackendError              a backend could not finish (failed run, retries exhausted, ...)
    └── UsageError                conflicting or missing command-line options (CLI exit 2)

HTTP failures from Foundry reuse azure-core's ``HttpResponseError`` family (see ``foundry``).
"""

from __future__ import annotations

import re

__all__ = [
    "BackendError",
    "DatasetError",
    "FoundryBridgeError",
    "InputError",
    "MappingError",
    "UsageError",
    "describe_os_error",
    "located",
    "redact",
]


class FoundryBridgeError(Exception):
    """Base class of every error raised on purpose by foundry_bridge."""

    exit_code = 1


class InputError(FoundryBridgeError, ValueError):
    """Bad input, located as precisely as known: ``file:line: field: message (fix: hint)``."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return located(self.message, file=self.file, line=self.line, field=self.field, hint=self.hint)


class DatasetError(InputError):
    """A dataset file or row is malformed or inconsistent."""


class MappingError(InputError):
    """A mapping file, or hand-written testing criteria, is wrong."""


class BackendError(FoundryBridgeError):
    """A backend could not complete: failed or canceled run, retries exhausted, missing dependency."""


class UsageError(FoundryBridgeError):
    """Command-line options that conflict or are missing."""

    exit_code = 2


def located(
    message: str, *, file: str | None = None, line: int | None = None, field: str | None = None, hint: str | None = None
) -> str:
    """``file:line: field: message (fix: hint)``, leaving out what is unknown."""
    where = ""
    if file:
        where = file + (f":{line}" if line is not None else "")
    elif line is not None:
        where = f"line {line}"
    parts = [p for p in (where, field) if p]
    text = (": ".join(parts) + ": " if parts else "") + message
    if hint:
        text += f" (fix: {hint})"
    return text


_SECRET_PATTERNS = [
    # any Authorization scheme (Bearer, Basic, Digest, SharedKey...): keep the scheme, hide the credentials;
    # quoted (JSON, reprs) up to the closing quote, as a header line up to the end of the line
    re.compile(r"(?i)([\"']authorization[\"']\s*:\s*[\"'][A-Za-z][\w-]*\s+)[^\"']+"),
    re.compile(r"(?i)(\bauthorization\s*[:=]\s*[A-Za-z][\w-]*\s+)[^\r\n]+"),
    re.compile(r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9\-_.~+/]+=*"),
    re.compile(
        r"(?i)((?:\b|_)(?:[a-z-]*key|access_token|token|secret|password|sig)\s*[\"']?\s*[:=]\s*[\"']?)"
        r"[^\s'\"&,;}]+"
    ),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+(?=@)"),  # password in https://user:pass@host
]


def redact(text: str) -> str:
    """Replace credentials in ``text`` by ``***``: every ``Authorization`` scheme's credentials (Bearer, Basic,
    Digest...), bare ``Bearer``/``Basic`` tokens, ``*key=``/``token``/``secret``/``password``/``sig`` values,
    connection-string keys and the password of ``scheme://user:password@host``."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "***", text)
    return text


_OS_ERROR_HINTS = {
    "ENOSPC": "free some space or write to another location (--out)",
    "EDQUOT": "free some space or write to another location (--out)",
    "EACCES": "choose a location you may write to (--out), or change its permissions",
    "EPERM": "choose a location you may write to (--out), or change its permissions",
    "EROFS": "the file system is read-only: write to another location (--out)",
    "ENOENT": "check the path",
    "ENOTDIR": "a part of the path is a file, not a folder: choose another path",
    "EISDIR": "the path is a folder: give a file path",
    "EEXIST": "remove the file or choose another path",
    "EMFILE": "too many open files: raise the limit (ulimit -n) or close other programs",
}


def describe_os_error(exc: OSError) -> str:
    """``'<path>': <OS reason> (fix: <hint>)`` for an operating-system error, with no traceback-worthy detail."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    reason = exc.strerror or str(exc)
    path = exc.filename if exc.filename is not None else None
    where = f"{path!s}" + (f" -> {exc.filename2!s}" if getattr(exc, "filename2", None) else "") if path else None
    hint = _OS_ERROR_HINTS.get(name)
    return located(f"{reason}" + (f" [{name}]" if name else ""), file=where, hint=hint)
