"""``foundry-bridge canaries``: write judge canaries, deterministic perturbations of real rows, next to them."""

from __future__ import annotations

from pathlib import Path

import click

from ._options import mapping_option

__all__ = ["command"]


@click.command(name="canaries")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="JSONL to write.")
@mapping_option("Mapping file (YAML) to read DATA with. Default: the packaged mappings/default.yaml.", exists=False)
@click.option("--per-type", type=click.IntRange(1, 1_000_000), default=10, show_default=True, help="Canaries per type.")
@click.option("--seed", type=int, default=0, show_default=True, help="Which rows become canaries (deterministic).")
@click.option("--type", "types", multiple=True, help="Only these canary types (repeatable). Default: every type.")
@click.option("--only-canaries", is_flag=True, help="Write the canaries without the original rows.")
def command(
    data: Path,
    out: Path,
    mapping_path: Path | None,
    per_type: int,
    seed: int,
    types: tuple[str, ...],
    only_canaries: bool,
) -> None:
    """Write DATA's rows and judge canaries made from them to OUT (Foundry field names: run it with the default
    mapping). Each canary is a positive query whose response was changed one way — a number, a negated condition,
    a dropped exception clause, another query's answer, an abstention — and is marked with what a trustworthy judge
    must do (``canary_expect``). No model is used; the same DATA and seed write the same file."""
    from ..canaries import CANARY_TYPES, write_canaries
    from ..dataset.reader import read_records
    from ..errors import UsageError
    from ..mapping import load_mapping
    from ._options import refuse_overwrite

    refuse_overwrite({"--out": out}, [data, mapping_path])
    unknown = [t for t in types if t not in CANARY_TYPES]
    if unknown:
        raise UsageError(f"unknown canary type(s) {', '.join(unknown)}; the types are {', '.join(CANARY_TYPES)}")
    mapping = load_mapping(mapping_path)
    records = read_records(data, mapping)
    counts = write_canaries(
        records, out, per_type=per_type, seed=seed, types=types or None, include_originals=not only_canaries
    )
    for kind, n in counts.items():
        click.echo(f"{kind}: {n}")
    click.echo(f"wrote {sum(counts.values())} canaries to {out}")
