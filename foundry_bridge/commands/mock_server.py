"""``foundry-bridge mock-server``: serve the Foundry evaluation API emulator on a loopback port."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import click

from ..errors import UsageError
from ._options import Finite

__all__ = ["command", "parse_indices"]


def parse_indices(text: str | None) -> tuple[int, ...]:
    """``"0,3,7"`` → ``(0, 3, 7)``; UsageError on anything else."""
    if not text:
        return ()
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"expected comma-separated row/run indices such as 0,3,7; got {text!r}") from None
    if any(v < 0 for v in values):
        raise UsageError(f"indices are 0-based and must be >= 0; got {text!r}")
    return values


@click.command(
    "mock-server",
    epilog=(
        "Example: foundry-bridge mock-server --port 8765, then point the openai SDK at "
        "http://127.0.0.1:8765/api/projects/mock-project/openai/v1 (any api_key); with --tls, "
        "AIProjectClient(endpoint='https://127.0.0.1:8765/api/projects/mock-project', credential=...). "
        "See docs/mock.md."
    ),
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (loopback by default).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port; 0 picks a free one.")
@click.option("--project", default="mock-project", show_default=True, help="Project name shown in the endpoint.")
@click.option(
    "--polls-to-complete",
    default=2,
    show_default=True,
    type=click.IntRange(0, 10**6),
    help="GETs a run stays in_progress.",
)
@click.option(
    "--seconds-to-complete", default=0.0, show_default=True, type=Finite(0, 86400), help="Minimum run duration."
)
@click.option(
    "--docret-shape",
    type=click.Choice(["single", "per_metric"]),
    default="single",
    show_default=True,
    help="Document-retrieval results: version 3's one result with the measures under properties (single), or "
    "version 2's one result per measure (per_metric).",
)
@click.option("--strict-evaluators", is_flag=True, help="Refuse mapping mistakes at create (400), not as errored rows.")
@click.option(
    "--tls",
    is_flag=True,
    help="Serve HTTPS with a generated self-signed certificate (for azure-ai-projects, which sends its token "
    "only over TLS); prints how to trust it.",
)
@click.option(
    "--tls-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of the certificate files (default: ~/.cache/foundry-bridge/mock-tls; reused while valid).",
)
@click.option(
    "--max-body-mib",
    type=click.IntRange(1, 1 << 20),
    default=100,
    show_default=True,
    help="Largest request body (a dataset upload), in MiB: a larger one is answered 413 without being read.",
)
@click.option("--rate-limit-rate", type=Finite(0, 1), default=0.0, help="Fraction of requests answered 429.")
@click.option(
    "--rate-limit-every", type=click.IntRange(0, 10**9), default=0, help="Answer every N-th request with 429."
)
@click.option("--retry-after", type=Finite(0, 3600), default=1.0, show_default=True, help="Retry-After seconds.")
@click.option("--server-error-rate", type=Finite(0, 1), default=0.0, help="Fraction answered 5xx.")
@click.option(
    "--server-error-every", type=click.IntRange(0, 10**9), default=0, help="Answer every N-th request with 5xx."
)
@click.option(
    "--server-error-status", type=click.Choice(["500", "503"]), default="500", show_default=True, help="5xx status."
)
@click.option("--fault-only", metavar="REGEX", help='Limit HTTP faults to requests matching "METHOD /path".')
@click.option("--fail-runs", metavar="I,J", help="0-based run indices (creation order) that end `failed`.")
@click.option("--run-failure-rate", type=Finite(0, 1), default=0.0, help="Fraction of runs that fail.")
@click.option("--errored-rows", metavar="I,J", help="0-based rows whose results are errored in completed runs.")
@click.option("--errored-row-rate", type=Finite(0, 1), default=0.0, help="Fraction of rows errored.")
@click.option("--slow-polls", type=click.IntRange(0, 10**6), default=0, help="Extra polls before a run completes.")
@click.option("--slow-seconds", type=Finite(0, 86400), default=0.0, help="Extra seconds before a run completes.")
@click.option(
    "--seed", type=click.IntRange(-(2**63), 2**63 - 1), default=0, show_default=True, help="Seed of the fault RNG."
)
def command(
    host: str,
    port: int,
    project: str,
    polls_to_complete: int,
    seconds_to_complete: float,
    docret_shape: str,
    strict_evaluators: bool,
    tls: bool,
    tls_dir: Path | None,
    max_body_mib: int,
    **fault_options: Any,
) -> None:
    """Serve the Foundry evaluation API emulator over HTTP until Ctrl-C.

    The emulator keeps evals, runs, output items and uploaded datasets in memory, scores document retrieval
    with the project's local metrics and gives LLM judges a deterministic lexical-overlap MOCK score (never a
    real judgement). Fault options inject 429/5xx responses, failed runs, errored rows and slow runs.
    """
    from ..foundry._client import is_loopback
    from ..mock import FoundryEmulator
    from ..mock._server import MockServer, loopback_certificate, trust_instructions

    faults = _fault_config(**fault_options)
    emulator = FoundryEmulator(
        polls_to_complete=polls_to_complete,
        seconds_to_complete=seconds_to_complete,
        faults=faults,
        docret_shape=docret_shape,  # type: ignore[arg-type]
        strict_evaluators=strict_evaluators,
        record_calls=False,
    )
    certificate = None
    if tls:
        folder = (
            tls_dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "foundry-bridge" / "mock-tls"
        )
        certificate = loopback_certificate(folder)
    try:
        server = MockServer(emulator, host, port, project=project, tls=certificate, max_body=max_body_mib << 20)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    if not is_loopback(host):
        click.echo(f"warning: listening on {host}, not loopback: anyone who can reach it can use it", err=True)
    click.echo(f"Foundry emulator listening on {server.url}")
    click.echo(f"project endpoint: {server.endpoint}")
    click.echo(f"OpenAI base URL:  {server.openai_base_url}")
    for line in trust_instructions(certificate) if certificate is not None else ():
        click.echo(line)
    click.echo("Press Ctrl-C to stop.", err=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    click.echo("Foundry emulator stopped.", err=True)


def _fault_config(
    *,
    fault_only: str | None,
    fail_runs: str | None,
    errored_rows: str | None,
    server_error_status: str,
    **numbers: Any,
) -> Any:
    """The ``FaultConfig`` of the command's fault options; a bad setting (a regex, an index list) is a usage error."""
    from ..mock import FaultConfig

    try:
        return FaultConfig(
            server_error_status=int(server_error_status),
            only=fault_only,
            failed_runs=parse_indices(fail_runs),
            errored_rows=parse_indices(errored_rows),
            **numbers,
        )
    except UsageError:
        raise
    except Exception as exc:  # re.error or ValueError from the fault settings
        raise UsageError(f"bad fault option: {exc}") from exc
