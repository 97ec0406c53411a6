"""The ``foundry-bridge`` command line: a thin shell over the library.

Each command lives in ``foundry_bridge/commands/<name>.py`` and is imported only when it runs, so
``foundry-bridge --help`` starts fast and never loads azure-ai-evaluation; this module imports click and the
exception tree only (the measure names in the help are read when the help is shown).
"""

from __future__ import annotations

import importlib
import sys
import traceback
import warnings

import click

from .commands._exit_codes import exit_codes_epilog
from .errors import FoundryBridgeError, FoundryBridgeWarning, cli_text, describe_os_error, redact

__all__ = ["main"]

# command name → (module under foundry_bridge.commands, one-line help; ``{measures}``: the measure names)
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("validate", "Check a dataset and a mapping (or hand-written criteria) offline."),
    "plan": ("plan", "Build the Foundry eval-create body and run items from a dataset."),
    "metrics": ("metrics", "Compute {measures} and the negative-query report."),
    "judge-docs": ("judge_docs", "Grade every retrieved document 0–3 with a judge: judge-labelled qrels."),
    "run": ("run", "Run the evaluation on Foundry (cloud), the emulator (mock) or locally."),
    "report": ("report", "Merge a run's Foundry results with local metrics into one report."),
    "compare": ("compare", "Compare two or more runs over the same queries."),
    "canaries": ("canaries", "Write judge canaries: deterministic perturbations of real rows, marked."),
    "traces": ("traces", "Rebuild a dataset from OpenTelemetry GenAI / OpenInference traces (OTLP JSON)."),
    "mock-server": ("mock_server", "Serve the Foundry evaluation API emulator on 127.0.0.1."),
    "schema": ("schema", "Write the JSON Schema of the mapping format."),
    "catalog": ("catalog", "Print the builtin evaluator contracts; `catalog diff` detects drift."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"foundry_bridge.commands.{COMMANDS[cmd_name][0]}")
        command: click.Command = module.command
        _end_with_exit_codes(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from .metrics.measures import measures_labels

        labels = measures_labels()
        with formatter.section("Commands"):
            formatter.write_dl([(name, help_.format(measures=labels)) for name, (_, help_) in COMMANDS.items()])


def _end_with_exit_codes(command: click.Command, name: str) -> None:
    """Append ``name``'s exit codes (one table: ``commands._exit_codes``) to its help, and to its subcommands'."""
    marker = exit_codes_epilog(name)
    if marker not in (command.epilog or ""):
        command.epilog = f"{command.epilog}\n\n{marker}" if command.epilog else marker
    if isinstance(command, click.Group):
        for sub_name, sub in command.commands.items():
            _end_with_exit_codes(sub, f"{name} {sub_name}")


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=exit_codes_epilog(""))
@click.version_option(package_name="foundry-bridge")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Connect local RAG evaluation data to Microsoft Foundry's evaluators, and add what Foundry does not report."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _shown(message: str) -> str:
    """A message as printed: secrets redacted, control characters from data made inert."""
    from ._text import printable  # imported where used: start-up stays cheap

    return printable(redact(message))


def _show_warning(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
    """The library's warnings as a red ``WARNING:`` line on stderr, in their command-line spelling."""
    if isinstance(message, FoundryBridgeWarning):
        click.secho(f"WARNING: {_shown(cli_text(message))}", fg="red", bold=True, err=True)
        return
    _python_showwarning(message, category, *args, **kwargs)  # type: ignore[arg-type]


_python_showwarning = warnings.showwarning


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: maps FoundryBridgeError to ``Error: ...`` (the message's command-line
    rendering: ``--force``, not ``force=True``) and its exit code; the library's warnings become ``WARNING:`` lines."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("always", FoundryBridgeWarning)
        warnings.showwarning = _show_warning
        _main(argv, debug)


def _main(argv: list[str] | None, debug: bool) -> None:
    try:
        code = cli.main(args=argv, prog_name="foundry-bridge", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except (FoundryBridgeError, OSError) as exc:  # an OSError (disk, permission, path): its path and OS reason
        if debug:  # through redact: a chained exception's message may hold a token or a SAS URL
            click.echo(redact("".join(traceback.format_exception(exc))).rstrip("\n"), err=True)
        text, code = (
            (cli_text(exc), exc.exit_code) if isinstance(exc, FoundryBridgeError) else (describe_os_error(exc), 1)
        )
        click.echo(f"Error: {_shown(text)}", err=True)
        sys.exit(code)
    except Exception as exc:
        if type(exc).__name__ != "OutOfMemoryException" or not type(exc).__module__.endswith("duckdb"):
            raise
        if debug:
            click.echo(redact("".join(traceback.format_exception(exc))).rstrip("\n"), err=True)
        click.echo(f"Error: {engine_memory_text()}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def engine_memory_text() -> str:
    """The one line for a query that ran out of the engine's memory limit, with the setting that raises it."""
    from ._io import ENGINE_MEMORY

    return (
        f"the query engine ran out of its memory limit ({ENGINE_MEMORY}) on this input (fix: raise it, e.g. "
        "FOUNDRY_BRIDGE_DUCKDB_MEMORY=1GB, and run the command again)"
    )
