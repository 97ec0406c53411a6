"""``--estimate`` and its options for ``plan`` (and any command holding a plan): the cost preflight of
``foundry_bridge.estimate`` printed, and written as ``estimate.json`` beside the plan files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["estimate_options", "show_estimate"]

_KEY = "foundry_bridge.estimate"  # where the options are kept in the click context's meta
_F = TypeVar("_F", bound=Callable[..., Any])


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta.setdefault(_KEY, {})[param.name or ""] = value
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
        click.option("--encoding", default=None, help="tiktoken encoding for --estimate (default o200k_base).", **kept),
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
        click.option("--judge-model", default=None, help="With --judge-endpoint: the judge model.", **kept),
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


def show_estimate(plan: Any, out: Path | None) -> bool:
    """Print the estimate when ``--estimate`` was given (and write ``out/estimate.json``); True if it was."""
    opts = click.get_current_context().meta.get(_KEY, {})
    if not opts.get("estimate"):
        return False
    from .._io import write_json
    from ..errors import UsageError
    from ..estimate import DEFAULT_ENCODING, Price, PriceTable, estimate_plan, load_prices

    prices = None
    if opts.get("prices") is not None:
        if opts.get("price_input") is not None or opts.get("price_output") is not None:
            raise UsageError("give either --prices FILE or --price-input/--price-output, not both")
        prices = load_prices(opts["prices"])
    elif (opts.get("price_input") is None) != (opts.get("price_output") is None):
        raise UsageError("--price-input and --price-output go together (prices per million tokens)")
    elif opts.get("price_input") is not None:
        if min(opts["price_input"], opts["price_output"]) < 0:
            raise UsageError("prices cannot be negative")
        prices = PriceTable({"*": Price(opts["price_input"], opts["price_output"])})
    cached = None
    if opts.get("judge_endpoint"):
        from ..local import LocalBackend
        from ..local._probe import cache_probe

        backend = LocalBackend(opts["judge_endpoint"], opts.get("judge_model"), cache_dir=opts.get("cache_dir"))
        cached = cache_probe(backend, plan.criteria)
    encoding = opts.get("encoding") or DEFAULT_ENCODING
    estimate = estimate_plan(plan.criteria, plan.items, encoding=encoding, prices=prices, cached=cached)
    click.echo("\n".join(estimate.lines()))
    if out is not None:
        write_json(out / "estimate.json", estimate.to_dict())
    return True


_RUN_KEY = "foundry_bridge.run_estimate"


def _remember_run(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta[_RUN_KEY] = value
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


def show_run_estimate(plan: Any, backend: Any) -> None:
    """With ``run --estimate``: the estimate on stderr, the local backend's cache probed (what this run sends)."""
    if not click.get_current_context().meta.get(_RUN_KEY):
        return
    import os

    from ..estimate import DEFAULT_ENCODING, estimate_plan
    from ..local import LocalBackend

    cached = None
    if isinstance(backend, LocalBackend) and backend.use_cache:
        from ..local._probe import cache_probe

        cached = cache_probe(backend, plan.criteria)
    encoding = os.environ.get("FOUNDRY_BRIDGE_ENCODING") or DEFAULT_ENCODING
    estimate = estimate_plan(plan.criteria, plan.items, encoding=encoding, cached=cached)
    click.echo("\n".join(estimate.lines()), err=True)
