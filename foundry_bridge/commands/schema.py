"""``foundry-bridge schema``: write the JSON Schema of the mapping format."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["command"]


@click.command(name="schema")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the schema to FILE (e.g. mappings/mapping.schema.json) instead of standard output.",
)
def command(out: Path | None) -> None:
    """Write the JSON Schema of the mapping format, generated from the mapping model.

    Point your editor at it (the shipped mappings start with a `yaml-language-server: $schema=` comment) to get
    completion and checking while writing a mapping file.
    """
    from .._io import atomic_open
    from ..mapping.schema import mapping_json_schema_text

    text = mapping_json_schema_text()
    if out is None:
        click.echo(text, nl=False)
        return
    with atomic_open(out) as fh:
        fh.write(text.encode("utf-8"))
    click.echo(f"wrote {out}", err=True)
