"""A document as a list of blocks (headings, paragraphs, tables, lists, warnings), and its plain-text spelling for a
terminal: aligned columns, headings underlined, nothing escaped. The comparison (``comparison._render``) and the run
report (``_plain``) build their documents of these blocks; each renderer only spells them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .._text import printable

__all__ = ["Block", "Strong", "aligned", "blocks_text", "squeeze", "table"]


class Strong(str):
    """A cell or a line shown in bold (Markdown ``**``, HTML ``<strong>``; plain text as is)."""

    __slots__ = ()


@dataclass
class Block:
    kind: str  # h (heading), p (paragraph), gate, table, list, warn, md (Markdown of another renderer)
    text: str = ""
    level: int = 2
    headers: Sequence[str] = ()
    rows: list[Sequence[str]] = field(default_factory=list)
    items: Sequence[str] = ()


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Block:
    """A table block."""
    return Block("table", headers=headers, rows=list(rows))


def squeeze(text: str) -> str:
    """The text with one newline at its end."""
    return text.rstrip() + "\n"


def aligned(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A table as plain lines: each column as wide as its widest cell, a dashed rule under the header."""
    widths = [max(len(str(r[j])) for r in [headers, *rows]) for j in range(len(headers))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [headers, *rows]]
    return [lines[0], "  ".join("-" * w for w in widths), *lines[1:]]


def blocks_text(blocks: Iterable[Block]) -> str:
    """The blocks as plain text for a terminal (aligned columns, nothing escaped)."""
    out: list[str] = []
    for b in blocks:
        if b.kind == "h":
            out += [b.text, "=" * len(b.text) if b.level <= 2 else "-" * len(b.text)]
        elif b.kind in ("p", "md", "gate"):
            out.append(b.text)
        elif b.kind == "table":
            out += aligned(b.headers, b.rows)
        else:
            out += [("warning: " if b.kind == "warn" else "- ") + i for i in b.items]
        if b.kind != "list" or b.items:
            out.append("")
    return printable(squeeze("\n".join(out)))
