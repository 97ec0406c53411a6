"""``foundry-bridge catalog``: print the bundled evaluator contracts; ``catalog diff``: compare them with a live,
saved or emulated ``GET /evaluators`` answer and exit 1 on any difference (drift)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from ..errors import BackendError, UsageError

__all__ = ["command"]


def _contract_lines(contract: Any, mapped: bool) -> list[str]:
    def inputs() -> str:
        required = set(contract.required_inputs or ())
        return ", ".join(f"{n}*" if n in required else n for n in contract.inputs) or "none"

    def metric(m: Any) -> str:
        span = "" if m.min_value is None and m.max_value is None else f" {m.min_value:g}–{_bound(m.max_value)}"
        return f"{m.name} ({m.type}{span}, {'higher' if m.higher_is_better else 'lower'} is better)"

    required_init = set(contract.required_init)
    init = ", ".join(f"{n}*" if n in required_init else n for n in contract.init_params) or "none"
    groups = (
        " or ".join("(" + ", ".join(g) + ")" for g in contract.input_groups) if len(contract.input_groups) > 1 else ""
    )
    head = f"{contract.name}  version {contract.version}  {contract.subtype}  [{', '.join(contract.categories)}]"
    return [
        head + ("  (mapped by this project's catalog)" if mapped else ""),
        f"  inputs:  {inputs()}" + (f"; needs {groups}" if groups else ""),
        f"  init:    {init}",
        f"  metrics: {'; '.join(metric(m) for m in contract.metrics)}",
    ]


def _bound(value: float | None) -> str:
    return "∞" if value is None else f"{value:g}"


@click.group(
    name="catalog",
    invoke_without_command=True,
    epilog="A * marks a required input or init parameter. `catalog diff --help` for drift detection.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the contracts as a GET /evaluators page (live spelling).")
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> None:
    """Print the bundled contracts of Foundry's 44 builtin evaluators (the published specs, July 2026): version,
    inputs, init parameters and metrics (type, range, direction)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..catalog import CATALOG
    from ..contracts import live_entry, published_contracts

    contracts = published_contracts()
    if as_json:
        click.echo(json.dumps({"value": [live_entry(c) for c in contracts.values()], "nextLink": ""}, indent=2))
        return
    for c in contracts.values():
        click.echo("\n".join(_contract_lines(c, c.name in CATALOG)))
    click.echo(f"{len(contracts)} builtin evaluators; {len(CATALOG)} mapped by this project's catalog", err=True)


def _read_file(path: Path) -> list[dict[str, Any]]:
    from ..contracts import live_entries

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    try:
        return live_entries(data)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from exc


def _read_live(endpoint: str | None, emulator: bool) -> list[dict[str, Any]]:
    """The ``type=builtin`` entries through the project's Foundry client: the endpoint's (its credential chain) or
    an in-process emulator's (a fake token)."""
    from azure.core.exceptions import AzureError

    from ..foundry import ENDPOINT_ENV, FoundryClient, StaticTokenCredential, default_credential, validate_endpoint

    try:
        if emulator:
            from ..mock import PROJECT_ENDPOINT, FoundryEmulator

            client = FoundryClient(PROJECT_ENDPOINT, StaticTokenCredential(), transport=FoundryEmulator().transport())
        else:
            url = validate_endpoint(endpoint or os.environ.get(ENDPOINT_ENV))
            client = FoundryClient(url, default_credential())
        with client:
            return list(client.list_evaluators("builtin"))
    except AzureError as exc:
        raise BackendError(f"could not read the evaluator catalog: {exc}") from exc


@command.command(name="diff")
@click.option("--endpoint", metavar="URL", help="Project endpoint to read (default: $AZURE_AI_PROJECT_ENDPOINT).")
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A saved GET /evaluators answer: a page, a list of pages or entries, or a recording.",
)
@click.option(
    "--emulator", is_flag=True, help="Compare with the emulator's catalog (in-process; mock-server serves the same)."
)
@click.option("--mapped", is_flag=True, help="Only the evaluators this project's catalog maps.")
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
def diff(endpoint: str | None, file: Path | None, emulator: bool, mapped: bool, as_json: bool) -> None:
    """List every difference between the bundled contracts and a project's live catalog (versions, inputs and
    input groups, init parameters, metrics), evaluators on one side only included. Exit status: 0 no drift,
    1 drift (or a read that failed: then an `Error:` line), 2 a usage error; a CI job running it notices when
    Foundry moves."""
    from ..catalog import CATALOG
    from ..contracts import contract_from_live, diff_contracts, published_contracts

    if sum(bool(x) for x in (endpoint, file, emulator)) > 1:
        raise UsageError("give one of --endpoint, --file and --emulator")
    label = "saved" if file else "emulator" if emulator else "live"
    entries = _read_file(file) if file else _read_live(endpoint, emulator)
    try:
        theirs = {c.name: c for c in map(contract_from_live, entries)}
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"the {label} catalog has an entry this tool cannot read: {exc!r}") from exc
    ours = published_contracts()
    differences = diff_contracts(ours, theirs, only=CATALOG if mapped else None)
    if as_json:
        click.echo(json.dumps([d.as_json() for d in differences], indent=2))
    else:
        for d in differences:
            click.echo(d.describe(label))
        evaluators = len({d.evaluator for d in differences})
        what = f"{len(differences)} difference(s) in {evaluators} evaluator(s)" if differences else "no drift"
        click.echo(f"{what}: bundled {len(ours)} contracts, {label} {len(theirs)} evaluators", err=True)
    if differences:
        raise SystemExit(1)
