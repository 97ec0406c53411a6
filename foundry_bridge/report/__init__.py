"""One report: Foundry scores and local metrics merged, per query and in aggregate; and run comparison.

- ``build_report(run_dir) -> Report`` reads a run folder; ``render_json`` / ``render_markdown`` /
  ``render_html`` / ``render_text`` (a terminal) are pure functions of the report; ``write_labelling_queue``
  writes the holes to label next.
- ``compare_runs([run_a, run_b, ...]) -> Comparison`` pairs queries across runs and tests the differences, each
  metric by its kind's test (``metrics.significance``, the one comparison engine), in one table and one family;
  ``compare_run_files(qrels, [run_a, run_b, ...])`` does the same for run files scored at compare time, and
  ``all_pairs`` ranks the runs and tests every pair.
- ``trust_section(run_dir, verdicts)`` is the report's "Can the judge be trusted?" section (docs/trust.md).
"""

from __future__ import annotations

from . import _frames, _model
from ._build import ReportError, build_report, foundry_key
from ._compare import (
    CompareGateFailed,
    CompareGateInconclusive,
    Comparison,
    MetricComparison,
    compare_runs,
    noise_bands_by_key,
    parse_fail_on,
)
from ._compare_files import compare_run_files
from ._compare_render import (
    deltas_svg,
    render_comparison_html,
    render_comparison_json,
    render_comparison_markdown,
    render_comparison_text,
)
from ._gate_trust import judge_trust_by_key
from ._gates import GateSpec, load_gate_file
from ._html import render_html
from ._markdown import render_markdown
from ._model import STAGES, QueryRow, Report, report_json_schema
from ._plain import render_text
from ._queue import write_labelling_queue
from ._render import FORMATS, queries_path, render, render_json
from ._stages import STAGE_RULES, attribute_stage
from ._trust import render_trust_html, render_trust_markdown, trust_section, write_verdict_queue_for

_model.FRAMES = _frames  # the DataFrames stand above the build: plugged in here (see _model.Frames)

__all__ = [
    "FORMATS",
    "STAGES",
    "STAGE_RULES",
    "CompareGateFailed",
    "CompareGateInconclusive",
    "Comparison",
    "GateSpec",
    "MetricComparison",
    "QueryRow",
    "Report",
    "ReportError",
    "attribute_stage",
    "build_report",
    "compare_run_files",
    "compare_runs",
    "deltas_svg",
    "foundry_key",
    "judge_trust_by_key",
    "load_gate_file",
    "noise_bands_by_key",
    "parse_fail_on",
    "queries_path",
    "render",
    "render_comparison_html",
    "render_comparison_json",
    "render_comparison_markdown",
    "render_comparison_text",
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
