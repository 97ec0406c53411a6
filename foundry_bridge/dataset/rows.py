"""The one row source of a JSONL dataset: each non-blank line read once, as ``Row(file, line, raw, parsed)``.

``parsed`` is what ``_json.decode`` makes of the line — the JSON value, or a ``JsonLimitError`` carried as data
(``bad_json``, ``not_utf8``, ``utf8_bom``, ``too_deep``, ``non_finite_number``: its code, message and fix). Every
reader of JSONL rows goes through here: ``read_records``/``iter_jsonl`` (plan, run, metrics' fallback, canaries),
``validate``'s pass and its second pass over candidate duplicate ids, the human-verdict files (``verdicts``), the
JSONL files of the TREC and BEIR layouts (``trec.json_lines``: responses, BEIR queries and corpus) and
``docret_jsonl``, so a line is decoded and judged by one function whichever command reads it. (``metrics``' reader,
``columnar``, decodes lines with msgspec; a line it cannot take goes through ``_json.decode`` for its record or
its error.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

from ._json import JsonLimitError, decode

__all__ = ["JsonLimitError", "Row", "jsonl_rows"]


class Row(NamedTuple):
    """One non-blank JSONL line: ``file``, ``line`` (1-based), its bytes ``raw`` (newline included), and
    ``parsed``: the decoded value, or the line's ``JsonLimitError`` (test with ``isinstance``)."""

    file: str
    line: int
    raw: bytes
    parsed: Any


def jsonl_rows(path: str | os.PathLike[str]) -> Iterator[Row]:
    """The rows of the JSONL file ``path``, in file order, blank lines skipped.

    The file is opened now: a missing file raises ``FileNotFoundError`` and a directory ``IsADirectoryError``
    before any row, so each caller words them (``read_records`` raises, ``validate`` reports).
    """
    fh = open(path, "rb")  # noqa: SIM115 - closed by _rows
    return _rows(fh, str(path))


def _rows(fh: IO[bytes], file: str) -> Iterator[Row]:
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.strip():
                yield Row(file, lineno, raw, decode(raw))
