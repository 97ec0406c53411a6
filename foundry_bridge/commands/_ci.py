"""The CI options of ``report`` and ``compare`` (``--otel``, ``--otel-endpoint``, ``--otel-metrics``,
``--otel-traceparent``, ``--junit``) and their calls.

The options are declared here and store their values in the click context (``expose_value=False``), so each
command gains one decorator and one call, not parameters: the commands' own signatures stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..comparison import Comparison
    from ..integrations.otel import Source
    from ..report import Report

__all__ = ["compare_ci_options", "junit_path", "publish_comparison", "publish_report", "report_ci_options"]

F = TypeVar("F", bound=Callable[..., Any])
_KEY = "foundry_bridge.ci."
_SOURCES: dict[str, tuple[Source, ...]] = {"all": ("foundry", "local"), "foundry": ("foundry",), "local": ("local",)}


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta[_KEY + str(param.name)] = value
    return value


def _get(name: str) -> Any:
    return click.get_current_context().meta.get(_KEY + name)


def _traceparent_origin(ctx: click.Context) -> str:
    source = ctx.get_parameter_source("otel_traceparent")
    return "TRACEPARENT" if source == click.core.ParameterSource.ENVIRONMENT else "--otel-traceparent"


def _store_otel(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Store, and once both ``--otel`` and a traceparent are known, check the traceparent: a bad one is refused
    before the report is built. Without ``--otel`` a ``$TRACEPARENT`` is not read at all."""
    _store(ctx, param, value)
    traceparent = ctx.meta.get(_KEY + "otel_traceparent")
    if ctx.meta.get(_KEY + "otel") and traceparent:
        from ..integrations.otel import parent_context

        parent_context(traceparent, origin=_traceparent_origin(ctx))
    return value


def report_ci_options(f: F) -> F:
    f = click.option(
        "--otel-traceparent",
        envvar="TRACEPARENT",
        expose_value=False,
        callback=_store_otel,
        metavar="TRACEPARENT",
        help="W3C traceparent (00-<trace id>-<span id>-<flags>) of the span the --otel events belong to, e.g. the "
        "CI job's; default: the TRACEPARENT variable.",
    )(f)
    f = click.option(
        "--otel-metrics",
        type=click.Choice(["all", "foundry", "local"]),
        default="all",
        expose_value=False,
        callback=_store,
        help="Which columns --otel sends: every metric (default), the Foundry/judge scores, or the local ones.",
    )(f)
    f = click.option(
        "--otel-endpoint",
        expose_value=False,
        callback=_store,
        help="OTLP logs URL (or Azure Monitor connection string) for --otel.",
    )(f)
    return click.option(
        "--otel",
        type=click.Choice(["otlp", "console", "azure-monitor"]),
        expose_value=False,
        callback=_store_otel,
        help="Also emit one OpenTelemetry gen_ai.evaluation.result event per query × metric (pip install "
        "'foundry-bridge[otel]'): OTLP/HTTP (OTEL_EXPORTER_OTLP_* variables), the console (stderr), or Azure "
        "Monitor (APPLICATIONINSIGHTS_CONNECTION_STRING). With $GITHUB_STEP_SUMMARY set, the Markdown report is "
        "appended to it. See docs/ci.md.",
    )(f)


def compare_ci_options(f: F) -> F:
    return click.option(
        "--junit",
        type=click.Path(dir_okay=False),
        expose_value=False,
        callback=_store,
        help="Also write the gate as JUnit XML: one test case per gated metric (delta, CI, p, the gate's p, the "
        "false-alarm rate across gates; a skipped case for an allowed empty gate). "
        "With $GITHUB_STEP_SUMMARY set, the Markdown comparison is appended to it. See docs/ci.md.",
    )(f)


def _echo(message: str) -> None:
    click.echo(message, err=True)


def publish_report(report: Report, out: Path | None) -> None:
    """``out``: the file the command wrote (``--out``), else None: it printed the report."""
    from ..integrations.summary import publish_report as publish

    sources = _SOURCES[_get("otel_metrics") or "all"]
    otel, endpoint, parent = _get("otel"), _get("otel_endpoint"), _get("otel_traceparent")
    publish(report, otel=otel, otel_endpoint=endpoint, otel_sources=sources, otel_parent=parent, out=out, echo=_echo)


def junit_path() -> Path | None:
    """``--junit``'s file, or None."""
    junit = _get("junit")
    return Path(junit) if junit else None


def publish_comparison(comparison: Comparison, out: Path | None) -> None:
    """``out``: the file the command wrote (``--out``), else None: it printed the comparison."""
    from ..integrations.summary import publish_comparison as publish

    publish(comparison, junit=junit_path(), out=out, echo=_echo)
