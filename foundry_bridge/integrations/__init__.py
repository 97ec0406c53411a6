"""Where a Foundry team already works: OpenTelemetry evaluation events, JUnit XML, the GitHub step summary.

Each module turns a built ``Report`` or ``Comparison`` into another tool's format; none of them computes a number
of its own. The third-party libraries (opentelemetry-sdk, its exporters) are imported inside the functions that
need them, so importing this package costs nothing.
"""

from .._lazy import lazy_getattr

__all__ = [
    "append_step_summary",
    "emit_evaluation_events",
    "evaluation_attributes",
    "gate_cases",
    "render_junit",
    "write_junit",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "append_step_summary": "summary",
        "emit_evaluation_events": "otel",
        "evaluation_attributes": "otel",
        "gate_cases": "junit",
        "render_junit": "junit",
        "write_junit": "junit",
    },
)
