"""Rewrite docs/cli.md from the click tree: ``python tests/cli_doc_helpers.py`` (test_cli_help checks it)."""

from __future__ import annotations

from pathlib import Path

from foundry_bridge.cli import cli
from foundry_bridge.commands._cli_doc import render_cli_doc

CLI_DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def cli_doc() -> str:
    """What docs/cli.md should hold."""
    return render_cli_doc(cli)


if __name__ == "__main__":
    CLI_DOC.write_text(cli_doc(), encoding="utf-8")
