"""The exception hierarchy: one base class, input errors that point at file, line and field.

    FoundryBridgeError            anything this package raises on purpose (CLI exit 1)
    ├── InputError (ValueError)   bad user input, located: file, line, field, hint
    │   ├── DatasetError          a dataset row or file is wrong
    │   └── MappingError          a mapping / testing-criteria file is wrong
    ├── BackendError              a backend could not finish (failed run, retries exhausted, ...)
    └── UsageError                conflicting or missing options (CLI exit 2)

HTTP failures from Foundry reuse azure-core's ``HttpResponseError`` family (see ``foundry``).

One message, two renderings: a message that names an option writes it once with ``option("force")`` (or
``spelled(python, cli)`` for a longer phrase); ``str(exc)`` reads ``force=True``, as a Python caller passes it, and
``exc.cli_text()`` (what the command line prints) reads ``--force``. ``FoundryBridgeWarning`` does the same for
warnings.
"""

from __future__ import annotations

import os
import re
import threading

__all__ = [
    "BackendError",
    "DatasetError",
    "FoundryBridgeError",
    "FoundryBridgeWarning",
    "InputError",
    "MappingError",
    "TwoWay",
    "UsageError",
    "cli_text",
    "describe_os_error",
    "for_cli",
    "for_python",
    "located",
    "option",
    "redact",
    "remember_secret",
    "spelled",
]

# A phrase with two spellings travels inside a message as START python SEP cli START (control characters no
# message holds); ``for_python`` / ``for_cli`` keep one side.
_START, _SEP = "\x1e", "\x1f"
_SPELLED = re.compile(f"{_START}([^{_START}{_SEP}]*){_SEP}([^{_START}]*){_START}")


def spelled(python: str, cli: str) -> str:
    """A phrase of a message written for both callers: ``python`` in ``str(exc)``, ``cli`` on the command line."""
    return f"{_START}{python}{_SEP}{cli}{_START}"


def option(keyword: str, value: object = True, *, cli: str | None = None) -> str:
    """An option named in a message: ``keyword=value`` for Python (``force=True``, ``out='runs/a'``) and
    ``--keyword value`` for the command line (``--force``, ``--out runs/a``; a flag when ``value`` is True), or
    ``cli`` when the command line spells it otherwise."""
    flag = "--" + keyword.replace("_", "-") + ("" if value is True else f" {value}")
    shown = value if value is True or not isinstance(value, str | os.PathLike) else os.fspath(value)
    return spelled(f"{keyword}={shown!r}", flag if cli is None else cli)


def for_python(text: str) -> str:
    """``text`` with each two-way phrase in its Python spelling."""
    return _SPELLED.sub(r"\1", text)


def for_cli(text: str) -> str:
    """``text`` with each two-way phrase in its command-line spelling."""
    return _SPELLED.sub(r"\2", text)


def cli_text(exc: BaseException) -> str:
    """What the command line prints for ``exc``: its command-line rendering when it has one, else ``str(exc)``."""
    return exc.cli_text() if isinstance(exc, FoundryBridgeError | TwoWay) else str(exc)


class FoundryBridgeError(Exception):
    """Base class of every error raised on purpose by foundry_bridge. A message may hold two-way phrases
    (``option``, ``spelled``): ``str(exc)`` spells them for Python, ``cli_text()`` for the command line."""

    exit_code = 1

    def __init__(self, *args: object) -> None:
        self.template = args[0] if args and isinstance(args[0], str) else None
        if self.template is not None:
            args = (for_python(self.template), *args[1:])
        super().__init__(*args)

    def cli_text(self) -> str:
        """The message as the command line prints it (options as ``--force`` rather than ``force=True``)."""
        return for_cli(self.template) if self.template is not None else str(self)


class TwoWay(BaseException):
    """A message with two renderings, like ``FoundryBridgeError``'s: ``str()`` for Python, ``cli_text()`` for the
    command line; the base of the warnings and interruptions that are not errors."""

    def __init__(self, message: str) -> None:
        self.template = message
        super().__init__(for_python(message))

    def cli_text(self) -> str:
        return for_cli(self.template)


class FoundryBridgeWarning(TwoWay, UserWarning):
    """A warning of foundry_bridge (the CLI prints ``cli_text`` as a red ``WARNING:`` line)."""


class InputError(FoundryBridgeError, ValueError):
    """Bad input, located as precisely as known: ``file:line: field: message (fix: hint)``. In a table (a
    DataFrame, parquet, Arrow...) ``row`` is the 0-based row index and ``column`` the column (``field`` too):
    ``file`` names the table alone, and the text reads ``pandas.DataFrame: row 5: context: ...``; in a file ``line``
    locates it and ``row``/``column`` are None."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
        row: int | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        self.hint = hint
        self.row = row
        self.column = field if row is not None else None
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return for_python(self._located())

    def cli_text(self) -> str:
        return for_cli(self._located())

    def _located(self) -> str:
        where = self.file if self.row is None else f"{self.file or 'table'}: row {self.row}"
        return located(self.message, file=where, line=self.line, field=self.field, hint=self.hint)


class DatasetError(InputError):
    """A dataset file or row is malformed or inconsistent."""


class MappingError(InputError):
    """A mapping file, or hand-written testing criteria, is wrong."""


class BackendError(FoundryBridgeError):
    """A backend could not complete: failed or canceled run, retries exhausted, missing dependency."""


class UsageError(FoundryBridgeError):
    """Options (command-line options, or the keywords of a library call) that conflict or are missing."""

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
    re.compile(r"()\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]+"),  # a bare JWT (an Entra access token) echoed back
]

# The secret values this process holds (a key read from the environment, a bearer token fetched): ``redact``
# removes each one wherever it appears, whatever the text around it. A tuple, longest first, replaced whole under
# the lock, so a reader never sees it change under it.
_KNOWN_SECRETS: tuple[str, ...] = ()
_KNOWN_LOCK = threading.Lock()
_MIN_SECRET_CHARS = 8  # a shorter value would hide ordinary words; no real key or token is that short


def remember_secret(value: str | None) -> None:
    """Make ``redact`` remove ``value`` itself from every text it cleans in this process from now on: what a
    server echoes back (``Incorrect API key provided: sk-…``) is caught by value, not only by its shape. Values
    shorter than 8 characters are ignored."""
    global _KNOWN_SECRETS
    if not value or len(value) < _MIN_SECRET_CHARS or value in _KNOWN_SECRETS:
        return
    with _KNOWN_LOCK:
        _KNOWN_SECRETS = tuple(sorted({*_KNOWN_SECRETS, value}, key=len, reverse=True))


def redact(text: str) -> str:
    """Replace credentials in ``text`` by ``***``: every secret value this process holds (``remember_secret``),
    every ``Authorization`` scheme's credentials (Bearer, Basic, Digest...), bare ``Bearer``/``Basic`` tokens and
    JWTs, ``*key=``/``token``/``secret``/``password``/``sig`` values, connection-string keys and the password of
    ``scheme://user:password@host``."""
    for value in _KNOWN_SECRETS:
        if value in text:
            text = text.replace(value, "***")
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
