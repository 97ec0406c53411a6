"""What ``report`` and ``compare`` hand to the CI they run in: the GitHub step summary, OpenTelemetry, JUnit.

``$GITHUB_STEP_SUMMARY`` names a Markdown file that GitHub Actions shows on the run's summary page; every step
appends to it. When it is set, ``report`` appends the Markdown report and ``compare`` the comparison, whatever
format they print (``FOUNDRY_BRIDGE_STEP_SUMMARY=0`` turns this off). GitHub refuses a step's summary file above
1 MiB (1024k, what is in the file already counted: one ``run:`` may call report and compare), so a text that would
pass it is cut at a line boundary below it, with a note saying where the whole text is: the ``--out`` file when
there is one, else the step's standard output (where the command printed it). A cut among the rows of a collapsed
``<details>`` block closes the block first, so the note, and whatever later steps append, render outside it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from .._text import printable

if TYPE_CHECKING:
    from ..comparison import Comparison
    from ..report import Report
    from .otel import Exporter, Source

__all__ = ["STEP_SUMMARY_LIMIT", "append_step_summary", "publish_comparison", "publish_report"]

STEP_SUMMARY_LIMIT = 1024 * 1024  # bytes GitHub accepts per step
_OPEN, _CLOSE = re.compile(rb"<details\b", re.IGNORECASE), re.compile(rb"</details\s*>", re.IGNORECASE)


def _closers(head: bytes) -> bytes:
    """A ``</details>`` (after a blank line, as Markdown needs) for each block ``head`` opens and leaves open."""
    return b"\n\n</details>" * max(0, len(_OPEN.findall(head)) - len(_CLOSE.findall(head)))


def _fit(text: str, limit: int, full_text: str | None = None) -> bytes:
    """``text`` in at most ``limit`` bytes: whole, or cut at a line with the open ``<details>`` blocks closed and
    the note (nothing when even the note won't fit). The cut moves up a line at a time until the closers fit too
    (at most a few lines: blocks do not nest deeply)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return data
    where = f"; the full text is in {full_text}" if full_text else ""
    note = f"\n\n> foundry-bridge: cut here to fit GitHub's 1 MiB step summary{where}.\n".encode()
    budget = limit - len(note)
    while budget > 0:
        head = data[:budget]
        cut = head.rfind(b"\n")
        head = (head[:cut] if cut > 0 else head).decode("utf-8", "ignore").encode("utf-8")
        closers = _closers(head)
        if len(head) + len(closers) + len(note) <= limit:
            return head + closers + note
        budget = len(head) - 1
    return b""


def append_step_summary(
    markdown: str, *, env: Mapping[str, str] | None = None, full_text: str | None = None
) -> Path | None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` (a blank line before and after); return the file, or None
    when the variable is unset or empty, or ``FOUNDRY_BRIDGE_STEP_SUMMARY`` is ``0``. ``full_text`` says where the
    whole text is, for the note of a cut (``this step's standard output``, a file); None: the note says only that
    it was cut."""
    env = os.environ if env is None else env
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target or env.get("FOUNDRY_BRIDGE_STEP_SUMMARY", "1") == "0":
        return None
    path = Path(target)
    used = path.stat().st_size if path.exists() else 0
    with path.open("ab") as fh:
        fh.write(_fit("\n" + printable(markdown).rstrip("\n") + "\n\n", STEP_SUMMARY_LIMIT - used, full_text))
    return path


def _where(out: Path | None) -> str:
    """Where ``report`` / ``compare`` put the whole text: the ``--out`` file, else the standard output."""
    return f"`{out}` (--out)" if out is not None else "this step's standard output"


def publish_report(
    report: Report,
    *,
    otel: str | None = None,
    otel_endpoint: str | None = None,
    otel_sources: Sequence[Source] = ("foundry", "local"),
    otel_parent: str | None = None,
    out: Path | None = None,
    echo: Callable[[str], object],
) -> None:
    """``report``'s CI side: the Markdown report to the step summary, and with ``otel`` the evaluation events
    (``otel_parent``: the W3C traceparent of their parent span). ``out``: the file ``report`` wrote (``--out``),
    named by the note of a cut summary."""
    from ..report import render_markdown

    path = append_step_summary(render_markdown(report), full_text=_where(out))
    if path is not None:
        echo(f"appended the Markdown report to {path} (GITHUB_STEP_SUMMARY)")
    if otel is not None:
        from .otel import emit_evaluation_events

        n = emit_evaluation_events(
            report,
            exporter=cast("Exporter", otel),
            endpoint=otel_endpoint,
            sources=otel_sources,
            traceparent=otel_parent,
        )
        echo(f"emitted {n} gen_ai.evaluation.result events ({otel})")


def publish_comparison(
    comparison: Comparison,
    *,
    junit: Path | None,
    out: Path | None = None,
    echo: Callable[[str], object],
) -> None:
    """``compare``'s CI side: the Markdown comparison to the step summary, and with ``junit`` the JUnit XML file.
    ``out``: the file ``compare`` wrote (``--out``), named by the note of a cut summary."""
    from ..comparison import render_comparison_markdown

    path = append_step_summary(render_comparison_markdown(comparison), full_text=_where(out))
    if path is not None:
        echo(f"appended the comparison to {path} (GITHUB_STEP_SUMMARY)")
    if junit is not None:
        from .junit import write_junit

        cases, failures = write_junit(comparison, junit)
        echo(f"wrote {junit}: {cases} test case(s), {failures} failed (JUnit XML)")
