"""Small formatting helpers shared by the renderers (numbers, Markdown escaping)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Sequence

__all__ = ["fmt_num", "fmt_pct", "html_table", "md_escape", "md_table"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")


def fmt_num(value: float | None, digits: int = 3) -> str:
    """``0.79545`` → ``0.795``; integers stay short; None → ``–``."""
    if value is None:
        return "–"
    if float(value).is_integer() and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.{digits}f}"


def fmt_pct(num: int, den: int) -> str:
    """``8, 10`` → ``80% (8/10)``; nothing judged → ``–``."""
    if den == 0:
        return "–"
    return f"{100 * num / den:.0f}% ({num}/{den})"


def md_escape(text: object, limit: int | None = None) -> str:
    """Dataset text made inert in Markdown (and in the HTML a Markdown renderer produces)."""
    s = " ".join(str(text).split())
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def md_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table's lines: header, rule, a line per row (cells as given: escaped by the caller)."""
    return ["| " + " | ".join(head) + " |", "|---" * len(head) + "|", *("| " + " | ".join(r) + " |" for r in rows)]


def html_table(
    head: Sequence[str],
    rows: Iterable[Sequence[str]],
    td: Callable[[str], str] = lambda c: f"<td>{html.escape(c)}</td>",
) -> str:
    """An HTML table of text: the header cells escaped, each row's cells through ``td``."""
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(td(c) for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"
