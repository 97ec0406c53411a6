"""``foundry-bridge plan``: the eval-create body and the run items, built offline from a dataset and a mapping."""

from __future__ import annotations

from pathlib import Path

import click

from ._options import estimate_options, mapping_option
from .validate import skip_validation_option

__all__ = ["command"]


@click.command(name="plan")
@click.argument("data", type=click.Path(exists=True, path_type=Path))
@mapping_option("Mapping file (YAML). Default: the packaged mappings/default.yaml (Foundry field names).")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write DIR/eval.json (eval-create body) and DIR/items.jsonl (run items) instead of printing the body.",
)
@click.option("--name", default=None, help="Evaluation name (default: the dataset file name without extension).")
@click.option(
    "--format",
    "out_format",
    type=click.Choice(["foundry", "azd"]),
    default="foundry",
    help="With --out: `foundry` writes eval.json + items.jsonl; `azd` writes evals/azure.eval.yaml and its dataset "
    "for `azd ai eval` (the same criteria, explicit data mappings).",
)
@skip_validation_option
@estimate_options
def command(data: Path, mapping_path: Path | None, out: Path | None, name: str | None, out_format: str) -> None:
    """Build the Foundry eval-create body and run items for DATA (a JSONL file, or a TREC directory).

    Without --out, the eval-create body (`POST /openai/v1/evals`) is printed on standard output. With --out,
    DIR/eval.json holds it and DIR/items.jsonl holds one `{"item": {...}}` row per query, as sent in the run's
    `file_content`. `${VAR}` and `${VAR:-default}` in the mapping's init parameters are expanded from the
    environment. Nothing is sent anywhere. DATA and the mapping first pass the checks of `foundry-bridge
    validate`: on any error nothing is written and the exit status is 1.
    """
    from .._io import dumps, write_json
    from ..mapping.plan import write_rows
    from ..runner import plan_evaluation
    from ._estimate import show_estimate
    from ._options import refuse_overwrite
    from .validate import skipping_validation

    if out is not None:
        names = ("evals/azure.eval.yaml",) if out_format == "azd" else ("eval.json", "items.jsonl")
        refuse_overwrite({f"--out ({name_})": out / name_ for name_ in names}, [data, mapping_path])

    plan = plan_evaluation(data, mapping_path, name=name, skip_validation=skipping_validation())
    if show_estimate(plan, out) and out is None:
        return
    if out is None:
        click.echo(dumps(plan.eval_body, indent=True).decode("utf-8"))
        return
    if out_format == "azd":
        from ..mapping.azd import azd_eval_file

        written = azd_eval_file(plan, out)
        click.echo(f"wrote {written[0]} ({len(plan.criteria)} criteria) and {written[1]}", err=True)
        return
    write_json(out / "eval.json", plan.eval_body)
    n = write_rows(out / "items.jsonl", plan.items)
    click.echo(
        f"wrote {out / 'eval.json'} ({len(plan.criteria)} criteria) and {out / 'items.jsonl'} ({n} items)", err=True
    )
