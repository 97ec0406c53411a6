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
    re.compile(r"(?i)(authorization\s*[:=]\s*bearer\s+)[^\s'\",]+"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9\-_.~+/]+=*"),
    re.compile(
        r"(?i)((?:\b|_)(?:[a-z-]*key|access_token|token|secret|password|sig)\s*[\"']?\s*[:=]\s*[\"']?)"
        r"[^\s'\"&,;}]+"
    ),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+(?=@)"),  # password in https://user:pass@host
]


def redact(text: str) -> str:
    """Replace bearer tokens, keys and SAS signatures in ``text`` by ``***``."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "***", text)
    return text
