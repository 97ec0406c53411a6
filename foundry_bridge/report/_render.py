"""Renderer dispatch: every renderer is a pure function of the ``Report``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ._model import Report

__all__ = ["FORMATS", "queries_path", "render", "render_json"]


def render_json(report: Report) -> str:
    """The report model as indented JSON (NaN never appears: undefined values are null; ``judged_vs_human`` only
    when ``report --human-qrels`` asked for it)."""
    exclude = None if report.judged_vs_human else {"judged_vs_human"}
    return report.model_dump_json(indent=2, exclude=exclude) + "\n"


def render_markdown(report: Report) -> str:
    """``_markdown.render_markdown``, imported at its first use."""
    from ._markdown import render_markdown

    return render_markdown(report)


def render_html(report: Report) -> str:
    """``_html.render_html``, imported at its first use."""
    from ._html import render_html

    return render_html(report)


FORMATS: dict[str, Callable[[Report], str]] = {"json": render_json, "md": render_markdown, "html": render_html}


def render(report: Report, fmt: str) -> str:
    """Render ``report`` as ``json``, ``md`` or ``html``."""
    try:
        return FORMATS[fmt](report)
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}") from None


def queries_path(out: str | Path, fmt: str = "parquet") -> Path:
    """Where ``report --out FILE`` writes every query's row: beside FILE, FILE's whole name plus
    ``.queries.parquet`` (``fmt`` jsonl: ``.queries.jsonl``; ``r.md`` → ``r.md.queries.parquet``, ``r.json`` →
    ``r.json.queries.parquet``), so the reports of one run in several formats, made with other options perhaps, each
    keep their own rows."""
    out = Path(out)
    return out.with_name(f"{out.name}.queries.{fmt}")
