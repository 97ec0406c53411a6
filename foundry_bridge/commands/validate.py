"""``foundry-bridge validate``: check a dataset against a mapping (or hand-written criteria) offline."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ._options import mapping_option

if TYPE_CHECKING:
    from ..validate._report import ValidationReport

__all__ = ["command", "render_text", "skip_validation_option", "skipping_validation"]

_F = TypeVar("_F", bound=Callable[..., Any])
_SKIP = "foundry_bridge.skip_validation"  # where --skip-validation is kept in the click context's meta


def render_text(report: ValidationReport) -> str:
    """Readable report: one problem per line, the notes, then the counts."""
    from .._text import printable

    lines = [f"{p.severity}: {p}" for p in report.problems]
    for code, n in sorted(report.omitted.items()):
        lines.append(f"... and {n} more {code!r} problem(s) not listed")
    lines += [f"note: {n}" for n in report.notes]
    verdict = "OK" if report.ok else "FAILED"
    lines.append(f"{verdict}: {report.errors} error(s), {report.warnings} warning(s) in {report.rows} row(s)")
    return printable("\n".join(lines))


@click.command(name="validate")
@click.argument("data", type=click.Path(path_type=Path))
@mapping_option(exists=False)
@click.option(
    "--criteria",
    "criteria_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Hand-written testing criteria: a JSON list of Foundry testing_criteria, or a whole eval-create body.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format: one problem a line, or the whole report as JSON.",
)
@click.option(
    "--max-per-rule",
    type=click.IntRange(1, 1_000_000),
    default=20,
    show_default=True,
    help="List at most N problems of each kind (all are counted).",
)
def command(data: Path, mapping_path: Path | None, criteria_path: Path | None, fmt: str, max_per_rule: int) -> None:
    """Check DATA (a JSONL file, or a TREC directory) and its criteria offline, in one streaming pass.

    Every problem is listed with file, line, field, what is wrong and how to fix it. Exit status: 0 when
    there are no errors (warnings do not fail), 1 when there is at least one error.
    """
    from .._io import dumps
    from ..errors import UsageError
    from ..validate import validate

    if mapping_path is not None and criteria_path is not None:
        raise UsageError("--mapping and --criteria are mutually exclusive: criteria come from one or the other")
    report = validate(data, mapping=mapping_path, criteria_file=criteria_path, max_per_code=max_per_rule)
    if fmt == "json":
        click.echo(dumps(report.to_dict(), indent=True).decode("utf-8"))
    else:
        click.echo(render_text(report))
    if not report.ok:
        sys.exit(1)


def _remember_skip(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta[_SKIP] = value
    return value


def skip_validation_option(f: _F) -> _F:
    """``--skip-validation`` for a command that builds a plan (the value is not a parameter: read it with
    ``skipping_validation``, as the library's ``skip_validation=``)."""
    return click.option(
        "--skip-validation",
        is_flag=True,
        expose_value=False,
        callback=_remember_skip,
        help="Do not run the checks of `foundry-bridge validate` first (a loud warning says nothing was checked).",
    )(f)


def skipping_validation() -> bool:
    """Was ``--skip-validation`` given to the running command (the library's ``skip_validation=``)?"""
    return bool(click.get_current_context().meta.get(_SKIP, False))
