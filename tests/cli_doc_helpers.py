"""docs/cli.md, generated from the click tree: every option of every command with its help, which commands share
an option name, the exit codes (``_exit_codes``' table) and the deprecated spellings. ``python
tests/cli_doc_helpers.py`` rewrites the file; test_cli_help holds the committed one to this output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from foundry_bridge.cli import cli
from foundry_bridge.commands._exit_codes import exit_codes
from foundry_bridge.commands._options import DEPRECATED_KEY

CLI_DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"

_HEADER = """# The command line

Generated from the click tree by `python tests/cli_doc_helpers.py` (a test fails when this file and
the commands disagree): edit the commands' help, not this file. `foundry-bridge COMMAND --help` shows the same.
"""


def _commands(root: click.Group) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(root, info_name="foundry-bridge")

    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        if path:
            yield path, command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    yield from walk(sub, f"{path} {name}".strip())

    yield from walk(root, "")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _names(option: click.Option) -> str:
    return ", ".join(f"`{name}`" for name in (*option.opts, *option.secondary_opts))


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def _shared_table(commands: list[tuple[str, click.Command]]) -> list[str]:
    """Option name → the commands that take it (a name shared by several means the same thing in each)."""
    users: dict[str, list[str]] = {}
    for path, command in commands:
        for option in _options(command):
            users.setdefault(option.opts[-1] if option.opts[-1].startswith("--") else option.opts[0], []).append(path)
    lines = ["| option | commands |", "|---|---|"]
    lines += [f"| `{name}` | {', '.join(paths)} |" for name, paths in sorted(users.items()) if len(paths) > 1]
    return lines


def _section(path: str, command: click.Command) -> list[str]:
    ctx = click.Context(command, info_name=f"foundry-bridge {path}")
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f"## `foundry-bridge {path}`", "", f"`foundry-bridge {path} {usage}`", ""]
    lines += [_cell(command.get_short_help_str(limit=300)), ""]
    sections: dict[str, str] = getattr(command, "sections", {})
    lines += ["| option | backend | help |" if sections else "| option | help |"]
    lines += ["|---|---|---|" if sections else "|---|---|"]
    for option in _options(command):
        record = option.get_help_record(ctx)
        help_ = _cell(record[1] if record else option.help or "")
        scope = sections.get(option.name or "", "all").removesuffix(" options")
        lines.append(f"| {_names(option)} | {scope} | {help_} |" if sections else f"| {_names(option)} | {help_} |")
    codes = exit_codes(path)
    lines += ["", "Exit codes: " + "; ".join(f"{code} {_cell(text)}" for code, text in codes.items()) + ".", ""]
    return lines


def _deprecated(commands: list[tuple[str, click.Command]]) -> list[str]:
    rows = [
        f"| {path} | {', '.join(f'`{o}`' for o in p.opts)} | `{getattr(p, DEPRECATED_KEY)}` |"
        for path, command in commands
        for p in command.params
        if hasattr(p, DEPRECATED_KEY)
    ]
    head = ["## Deprecated spellings", "", "They still work for one release and print a note on stderr.", ""]
    return [*head, "| command | old | new |", "|---|---|---|", *rows, ""] if rows else []


def render_cli_doc(root: click.Group) -> str:
    """The whole of docs/cli.md, from ``root`` (``foundry_bridge.cli.cli``)."""
    commands = list(_commands(root))
    lines = [_HEADER, "## Options shared by several commands", ""]
    lines += ["An option name means the same thing in every command that takes it.", "", *_shared_table(commands), ""]
    for path, command in commands:
        lines += _section(path, command)
    lines += _deprecated(commands)
    return "\n".join(lines).rstrip("\n") + "\n"


def cli_doc() -> str:
    """What docs/cli.md should hold."""
    return render_cli_doc(cli)


if __name__ == "__main__":
    CLI_DOC.write_text(cli_doc(), encoding="utf-8")
