"""``foundry-bridge traces``: rebuild a dataset from OpenTelemetry GenAI / OpenInference traces (OTLP JSON)."""

from __future__ import annotations

from pathlib import Path

import click

from ._options import quiet_option

__all__ = ["command"]

_SHOWN = 5  # problems printed on stderr; all are in the problems file


@click.command(name="traces")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="JSONL to write.")
@click.option("--since", default=None, help="Keep traces that started at or after this ISO 8601 time.")
@click.option("--until", default=None, help="Keep traces that started before this ISO 8601 time.")
@click.option("--service", "services", multiple=True, help="Keep traces of this service.name (repeatable).")
@click.option("--where", "where", multiple=True, help="Keep traces with a span attribute ATTR=VALUE (repeatable).")
@click.option(
    "--sample", type=click.IntRange(1, None), default=None, help="Draw N rows at random, without replacement."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Which rows --sample draws (reproducible).")
@click.option("--stratify", default=None, help="With --sample: draw within the strata of this span attribute.")
@click.option(
    "--redact",
    "redact_fields",
    multiple=True,
    help="Write this text field as its SHA-256 (query, context, response, content; repeatable).",
)
@click.option(
    "--group",
    type=click.Choice(["trace", "turn"]),
    default="trace",
    show_default=True,
    help="One row per trace (its last model call), or per conversation turn within a trace.",
)
@quiet_option
def command(
    files: tuple[Path, ...],
    out: Path,
    since: str | None,
    until: str | None,
    services: tuple[str, ...],
    where: tuple[str, ...],
    sample: int | None,
    seed: int,
    stratify: str | None,
    redact_fields: tuple[str, ...],
    group: str,
    quiet: bool,
) -> None:
    """Rebuild a dataset from FILES: OTLP JSON traces (one `resourceSpans` export a line, or one a file; gzip too)
    of OpenTelemetry GenAI or OpenInference spans. One row per request: its query, the ranking it retrieved, the
    context actually sent to the model, the response, and the trace and span ids. Read it with
    mappings/traces.yaml. Traces that cannot give a row are counted, and each is written with its trace id and the
    fix to OUT's `.problems.jsonl`; with --sample the sampling design goes to OUT's `.sampling.json`."""
    from ..errors import DatasetError
    from ..traces import rebuild_dataset, side_files
    from ._options import refuse_overwrite
    from ._progress import command_progress

    refuse_overwrite({"--out": out, **{f"--out ({k})": p for k, p in side_files(out).items()}}, files)
    progress, done = command_progress(quiet)
    s = rebuild_dataset(
        files, out, since=since, until=until, services=services, where=where, sample=sample, seed=seed,
        stratify=stratify, redact_fields=redact_fields, group=group, progress=progress,
    )  # fmt: skip
    done()
    problems = sum(s.problems.values())
    if s.rows == 0 and problems:
        first = next(iter(s.problems))
        raise DatasetError(
            f"no request could be rebuilt from {s.traces} trace(s): {problems} problem(s), first kind {first!r}; "
            f"each is in {s.files['problems']}",
            file=", ".join(map(str, files)),
        )
    click.echo(f"read {s.spans} spans in {s.traces} traces: {s.rows} requests rebuilt, {s.written} written to {out}")
    for kind, n in sorted({**s.problems, **s.notes}.items()):
        click.echo(f"{kind}: {n}", err=True)
    if problems:
        import orjson

        lines = Path(s.files["problems"]).read_bytes().splitlines()
        for raw in [ln for ln in lines if orjson.loads(ln)["kind"] in s.problems][:_SHOWN]:
            p = orjson.loads(raw)
            click.secho(f"WARNING: {p['file']}:{p['line']}: trace {p['trace_id']}: {p['message']} (fix: {p['fix']})",
                        fg="red", err=True)  # fmt: skip
        click.echo(f"{problems} trace(s) gave no row: all are listed in {s.files['problems']}", err=True)
    if "design" in s.files:
        click.echo(f"sampling design: {s.files['design']}")
