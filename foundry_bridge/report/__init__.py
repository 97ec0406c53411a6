"""One report: Foundry scores and local metrics merged, per query and in aggregate.

- ``build_report(run_dir) -> Report`` reads a run folder; ``render_json`` / ``render_markdown`` /
  ``render_html`` / ``render_text`` (a terminal) are pure functions of the report; ``write_labelling_queue``
  writes the holes to label next.
- ``trust_section(run_dir, verdicts)`` is the report's "Can the judge be trusted?" section (docs/trust.md).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from . import _frames, _model
from ._build import ReportError, build_report, foundry_key
from ._model import STAGES, QueryRow, Report, report_json_schema
from ._queue import write_labelling_queue
from ._render import FORMATS, queries_path, render, render_json
from ._stages import STAGE_RULES, attribute_stage
from ._trust import render_trust_html, render_trust_markdown, trust_section, write_verdict_queue_for

_model.FRAMES = _frames  # the DataFrames stand above the build: plugged in here (see _model.Frames)

# the Markdown, HTML and terminal renderers, imported at their first use (a JSON report never loads them)
_RENDERERS = {"render_html": "._html", "render_markdown": "._markdown", "render_text": "._plain"}


def __getattr__(name: str) -> Any:
    if name in _RENDERERS:
        return getattr(import_module(_RENDERERS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FORMATS",
    "STAGES",
    "STAGE_RULES",
    "QueryRow",
    "Report",
    "ReportError",
    "attribute_stage",
    "build_report",
    "foundry_key",
    "queries_path",
    "render",
    "render_html",
    "render_json",
    "render_markdown",
    "render_text",
    "render_trust_html",
    "render_trust_markdown",
    "report_json_schema",
    "trust_section",
    "write_labelling_queue",
    "write_verdict_queue_for",
]
