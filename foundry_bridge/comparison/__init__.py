"""Compare runs: pair their queries (a join of the runs' tables), test each metric's paired differences
(``metrics.significance``, the one comparison engine), gate. Stands above ``report``, which never imports it.

- ``compare_runs([run_a, run_b, ...], options) -> Comparison`` compares run folders (``options``: a
  ``CompareOptions``, or its fields as keywords), each metric by its kind's test, in one
  table and one family; ``compare_run_files(qrels, [run_a, run_b, ...])`` does the same for run files scored at
  compare time, and ``all_pairs`` ranks the runs and tests every pair.
- ``render_comparison_json`` / ``_markdown`` / ``_html`` / ``_text`` are pure functions of a ``Comparison``.
"""

from __future__ import annotations

from ._compare import (
    CompareGateFailed,
    CompareGateInconclusive,
    CompareOptions,
    Comparison,
    MetricComparison,
    compare_runs,
    noise_bands_by_key,
    parse_fail_on,
)
from ._files import compare_run_files
from ._gate_trust import judge_trust_by_key
from ._gates import GateSpec, load_gate_file
from ._render import (
    deltas_svg,
    render_comparison_html,
    render_comparison_json,
    render_comparison_markdown,
    render_comparison_text,
)

__all__ = [
    "CompareGateFailed",
    "CompareGateInconclusive",
    "CompareOptions",
    "Comparison",
    "GateSpec",
    "MetricComparison",
    "compare_run_files",
    "compare_runs",
    "deltas_svg",
    "judge_trust_by_key",
    "load_gate_file",
    "noise_bands_by_key",
    "parse_fail_on",
    "render_comparison_html",
    "render_comparison_json",
    "render_comparison_markdown",
    "render_comparison_text",
]
