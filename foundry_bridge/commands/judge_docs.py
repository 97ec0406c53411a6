"""``foundry-bridge judge-docs``: grade every retrieved document 0–3 with a judge and write judge-labelled qrels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._options import Finite, quiet_option, refuse_overwrite

__all__ = ["command"]


@click.command(name="judge-docs")
@click.argument("data", type=click.Path(exists=True, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The qrels file to write.")
@click.option("--mapping", "mapping_path", type=click.Path(exists=True, dir_okay=False), help="Mapping file.")
@click.option(
    "--backend",
    type=click.Choice(["mock", "foundry", "local"]),
    default="mock",
    show_default=True,
    help="Who grades: the emulator's label_model stand-in, Foundry's label_model grader, or a local judge.",
)
@click.option(
    "--k", type=click.IntRange(1, 10_000), default=None, help="Grade the top k [mapping judge_docs.k, else 10]."
)
@click.option("--judge-endpoint", default=None, help="local: OpenAI-compatible judge endpoint.")
@click.option("--judge-model", default=None, help="local: judge model; foundry: the grader's model deployment.")
@click.option("--endpoint", default=None, help="foundry: project endpoint [$AZURE_AI_PROJECT_ENDPOINT].")
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="mock, foundry: the grader run's folder [OUT.run]; a finished run of the same plan there is reused.",
)
@click.option("--no-cache", is_flag=True, help="local: do not read or write the judge response cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="local: cache dir.")
@click.option("--concurrency", type=click.IntRange(1, 256), default=4, show_default=True, help="local: parallel calls.")
@click.option("--judge-timeout", type=Finite(0, 3600, min_open=True), default=60.0, help="local: s per request [60].")
@click.option("--judge-retries", type=click.IntRange(0, 20), default=3, help="local: retries of a failed request [3].")
@click.option("--resume", is_flag=True, help="mock, foundry: continue the unfinished grader run in --run-dir.")
@click.option("--force", is_flag=True, help="mock, foundry: grade again even where --run-dir holds a run.")
@click.option(
    "--coverage/--no-coverage",
    default=None,
    help="Also judge each query's retrieval coverage and utilization [mapping judge_docs.coverage, else no].",
)
@click.option("--estimate", is_flag=True, help="Count the judge calls (and those the cache answers); grade nothing.")
@quiet_option
def command(
    data: Path,
    out: Path,
    mapping_path: str | None,
    backend: str,
    k: int | None,
    estimate: bool,
    quiet: bool,
    endpoint: str | None,
    run_dir: Path | None,
    coverage: bool | None,
    resume: bool,
    force: bool,
    **local: Any,
) -> None:
    """Grade every document DATA ranks within --k, and every document of the context as sent, on a 0–3 scale
    (0 irrelevant, 1 related, 2 partially answers, 3 answers; Deepchecks' Platinum = 3, Gold = 2, Irrelevant = 0
    or 1) with a short reason, and write them as a TREC qrels file (OUT) plus its provenance (OUT.json: judge,
    rubric version and hash, scale, date, backend, unknown grades and every reason). A grade the judge could not
    give is unknown: counted, never written as 0. `metrics DATA --qrels OUT` then reports every ranking metric as
    judge-labelled; `--human-qrels` corrects them with the human labels you have, and `--queue-out` lists the
    queries to label next (read back with `--queue`). On mock and foundry the grades
    come from one label_model grader run through the same eval/run/poll path as `run` (its run folder: --run-dir);
    the mock backend is the emulator's deterministic stand-in (lexical overlap), not a model."""
    from ..judged import judge_documents, provenance_path
    from ..mapping import load_mapping
    from ._progress import command_progress

    if endpoint and backend != "foundry":
        raise click.UsageError(f"--endpoint is for --backend foundry, not {backend}")
    refuse_overwrite({"--out": out, "--out (provenance)": provenance_path(out)}, [data, mapping_path])
    judge = _local_backend(**local) if backend == "local" else None
    mapping = load_mapping(mapping_path)
    if k is None:
        from ._estimate import DEFAULT_JUDGE_DOCS_K

        k = mapping.judge_docs.k if mapping.judge_docs is not None else DEFAULT_JUDGE_DOCS_K
    if coverage is None:
        coverage = bool(mapping.judge_docs and mapping.judge_docs.coverage)
    if estimate:
        from ..judged import estimate_documents

        counts = estimate_documents(data, k=k, mapping=mapping, local=judge, coverage=coverage)
        click.echo(" ".join(f"{key}: {value}" for key, value in counts.items()))
        return
    progress, done = command_progress(quiet)
    foundry = {"endpoint": endpoint, "resume": resume, "force": force}
    foundry = {key: value for key, value in foundry.items() if value and backend != "local"}
    prov = judge_documents(
        data,
        out,
        backend=backend,
        k=k,
        mapping=mapping,
        local=judge,
        progress=progress,
        judge_model=local["judge_model"] if backend != "local" else None,
        run_dir=run_dir,
        foundry=foundry,
        coverage=coverage,
    )
    done()
    c = prov["counts"]
    grades = ", ".join(f"{g}: {n}" for g, n in c["by_grade"].items())
    click.echo(
        f"{c['documents']} documents of {c['queries']} queries: {c['labelled']} graded ({grades}), "
        f"{c['unknown']} unknown; wrote {out} and {provenance_path(out)} (judge-labelled, rubric "
        f"{prov['rubric']['version']} {prov['rubric']['sha256'][:12]})"
    )
    if "coverage" in prov:
        from ..coverage import summary_lines

        click.echo("\n".join(summary_lines(prov["coverage"]["summary"])))


def _local_backend(no_cache: bool, **options: Any) -> Any:
    """The judge of ``--backend local`` (``options``: ``LocalBackend``'s keywords, as the command names them)."""
    from ..local import LocalBackend

    return LocalBackend(use_cache=not no_cache, **options)
