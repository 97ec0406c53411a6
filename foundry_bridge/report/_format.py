"""Small formatting helpers shared by the renderers (numbers, Markdown escaping)."""

from __future__ import annotations

import re

__all__ = ["fmt_num", "fmt_pct", "md_escape"]

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
