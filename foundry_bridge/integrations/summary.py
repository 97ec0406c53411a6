"""What ``report`` and ``compare`` hand to the CI they run in: the GitHub step summary, OpenTelemetry, JUnit.

``$GITHUB_STEP_SUMMARY`` names a Markdown file that GitHub Actions shows on the run's summary page; every step
appends to it. When it is set, ``report`` appends the Markdown report and ``compare`` the comparison, whatever
format they print (``FOUNDRY_BRIDGE_STEP_SUMMARY=0`` turns this off). GitHub refuses a step's summary file above
1 MiB (1024k, what is in the file already counted: one ``run:`` may call report and compare), so a text that would
pass it is cut at a line boundary below it, with a note saying where the rest is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ..report import Comparison, Report
    from .otel import Exporter, Source

__all__ = ["STEP_SUMMARY_LIMIT", "append_step_summary", "publish_comparison", "publish_report"]

STEP_SUMMARY_LIMIT = 1024 * 1024  # bytes GitHub accepts per step
_CUT_NOTE = "\n\n> foundry-bridge: cut here to fit GitHub's 1 MiB step summary; the full text is in the job's output.\n"


def _fit(text: str, limit: int) -> bytes:
    """``text`` in at most ``limit`` bytes: whole, or cut at a line with the note (nothing when even that won't
    fit)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return data
    note = _CUT_NOTE.encode("utf-8")
    if limit < len(note) + 1:
        return b""
    head = data[: limit - len(note)]
    cut = head.rfind(b"\n")
    return (head[:cut] if cut > 0 else head).decode("utf-8", "ignore").encode("utf-8") + note


def append_step_summary(markdown: str, *, env: Mapping[str, str] | None = None) -> Path | None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` (a blank line before and after); return the file, or None
    when the variable is unset or empty, or ``FOUNDRY_BRIDGE_STEP_SUMMARY`` is ``0``."""
    env = os.environ if env is None else env
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target or env.get("FOUNDRY_BRIDGE_STEP_SUMMARY", "1") == "0":
        return None
    path = Path(target)
    used = path.stat().st_size if path.exists() else 0
    with path.open("ab") as fh:
        fh.write(_fit("\n" + markdown.rstrip("\n") + "\n\n", STEP_SUMMARY_LIMIT - used))
    return path


def publish_report(
    report: Report,
    *,
    otel: str | None = None,
    otel_endpoint: str | None = None,
    otel_sources: Sequence[Source] = ("foundry", "local"),
    echo: Callable[[str], object],
) -> None:
    """``report``'s CI side: the Markdown report to the step summary, and with ``otel`` the evaluation events."""
    from ..report import render_markdown

    path = append_step_summary(render_markdown(report))
    if path is not None:
        echo(f"appended the Markdown report to {path} (GITHUB_STEP_SUMMARY)")
    if otel is not None:
        from .otel import emit_evaluation_events

        n = emit_evaluation_events(
            report, exporter=cast("Exporter", otel), endpoint=otel_endpoint, sources=otel_sources
        )
        echo(f"emitted {n} gen_ai.evaluation.result events ({otel})")


def publish_comparison(
    comparison: Comparison, *, fail_on: tuple[str, ...], junit: Path | None, echo: Callable[[str], object]
) -> None:
    """``compare``'s CI side: the Markdown comparison to the step summary, and with ``junit`` the JUnit XML file."""
    from ..report import render_comparison_markdown

    path = append_step_summary(render_comparison_markdown(comparison))
    if path is not None:
        echo(f"appended the comparison to {path} (GITHUB_STEP_SUMMARY)")
    if junit is not None:
        from .junit import write_junit

        cases, failures = write_junit(comparison, junit, fail_on=fail_on)
        echo(f"wrote {junit}: {cases} test case(s), {failures} failed (JUnit XML)")
