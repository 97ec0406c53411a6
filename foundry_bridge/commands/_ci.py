"""The CI options of ``report`` and ``compare`` (``--otel``, ``--otel-endpoint``, ``--otel-metrics``,
``--junit``) and their calls.

The options are declared here and store their values in the click context (``expose_value=False``), so each
command gains one decorator and one call, not parameters: the commands' own signatures stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..integrations.otel import Source
    from ..report import Comparison, Report

__all__ = ["compare_ci_options", "publish_comparison", "publish_report", "report_ci_options"]

F = TypeVar("F", bound=Callable[..., Any])
_KEY = "foundry_bridge.ci."
_SOURCES: dict[str, tuple[Source, ...]] = {"all": ("foundry", "local"), "foundry": ("foundry",), "local": ("local",)}


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta[_KEY + str(param.name)] = value
    return value


def _get(name: str) -> Any:
    return click.get_current_context().meta.get(_KEY + name)


def report_ci_options(f: F) -> F:
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
        callback=_store,
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


def publish_report(report: Report) -> None:
    from ..integrations.summary import publish_report as publish

    sources = _SOURCES[_get("otel_metrics") or "all"]
    publish(report, otel=_get("otel"), otel_endpoint=_get("otel_endpoint"), otel_sources=sources, echo=_echo)


def publish_comparison(comparison: Comparison, fail_on: tuple[str, ...]) -> None:
    from pathlib import Path

    from ..integrations.summary import publish_comparison as publish

    junit = _get("junit")
    publish(comparison, fail_on=fail_on, junit=Path(junit) if junit else None, echo=_echo)
