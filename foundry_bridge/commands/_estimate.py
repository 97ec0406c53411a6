"""What ``plan --estimate`` and ``run --estimate`` print (their options are in ``_options``, which command
modules load at start-up): the cost preflight of ``foundry_bridge.estimate``, and ``estimate.json`` beside the plan
files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._options import ESTIMATE_KEY, RUN_ESTIMATE_KEY

__all__ = ["judge_docs_calls", "show_estimate", "show_run_estimate"]

DEFAULT_JUDGE_DOCS_K = 10  # judge-docs' --k default


def show_estimate(plan: Any, out: Path | None) -> bool:
    """Print the estimate when ``--estimate`` was given (and write ``out/estimate.json``); True if it was."""
    opts = click.get_current_context().meta.get(ESTIMATE_KEY, {})
    if not opts.get("estimate"):
        if opts.get("budget_from"):
            from ..errors import UsageError

            raise UsageError("--budget-from prices the label budget inside the cost preflight: add --estimate")
        return False
    from .._io import write_json
    from ..errors import UsageError
    from ..estimate import Price, PriceTable, estimate_plan, load_prices

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
    cached, backend = None, None
    if opts.get("judge_endpoint"):
        from ..local import LocalBackend
        from ..local._probe import cache_probe

        backend = LocalBackend(opts["judge_endpoint"], opts.get("judge_model"), cache_dir=opts.get("cache_dir"))
        cached = cache_probe(backend, plan.criteria)
    estimate = estimate_plan(
        plan.criteria,
        plan.items,
        encoding=opts.get("encoding"),
        prices=prices,
        cached=cached,
        budget_from=opts.get("budget_from") or (),
        own=judge_docs_calls(plan, asked=bool(opts.get("judge_docs")), local=backend),
    )
    click.echo("\n".join(estimate.lines()))
    if out is not None:
        write_json(out / "estimate.json", estimate.to_dict())
    return True


def show_run_estimate(plan: Any, backend: Any) -> None:
    """With ``run --estimate``: the estimate on stderr, the local backend's cache probed (what this run sends)."""
    if not click.get_current_context().meta.get(RUN_ESTIMATE_KEY):
        return
    import os

    from ..estimate import estimate_plan
    from ..local import LocalBackend

    cached = None
    if isinstance(backend, LocalBackend) and backend.use_cache:
        from ..local._probe import cache_probe

        cached = cache_probe(backend, plan.criteria)
    encoding = os.environ.get("FOUNDRY_BRIDGE_ENCODING") or None
    estimate = estimate_plan(plan.criteria, plan.items, encoding=encoding, cached=cached)
    click.echo("\n".join(estimate.lines()), err=True)


def judge_docs_calls(plan: Any, *, asked: bool, local: Any = None) -> list[Any]:
    """``judge-docs``' per-document calls over the plan's records (``estimate.OwnPrompt``), when the mapping has a
    ``judge_docs`` section or ``asked`` (``plan --judge-docs``): to its ``k`` (default 10), priced by its ``model``;
    with a local backend, the calls its cache answers. Empty otherwise."""
    spec = plan.mapping.judge_docs
    if spec is None and not asked:
        return []
    from ..dataset.records import QueryRecord
    from ..estimate import OwnPrompt
    from ..judged import MAX_OUTPUT_TOKENS, RUBRIC_VERSION, cached_requests, judge_requests

    k = spec.k if spec is not None else DEFAULT_JUDGE_DOCS_K
    records = (QueryRecord.model_validate(r) for r in plan.records)
    requests, documents, no_text = judge_requests(records, k)
    model = spec.model if spec is not None else None
    out = [
        OwnPrompt(
            name="judge-docs",
            evaluator=f"{documents} document(s) to depth {k}, graded 0–3",
            prompt=f"foundry-bridge document relevance rubric {RUBRIC_VERSION}",
            requests=requests,
            max_output=MAX_OUTPUT_TOKENS,
            model=model,
            skipped=no_text,
            cached=None if local is None else cached_requests(local, requests),
        )
    ]
    if spec is not None and spec.coverage:
        from ..coverage import COVERAGE_VERSION, ceiling_requests
        from ..coverage import MAX_OUTPUT_TOKENS as COVERAGE_OUTPUT
        from ..judged import document_pairs

        recs = [QueryRecord.model_validate(r) for r in plan.records]
        for measure_name, sent in ceiling_requests(recs, document_pairs(recs, k)).items():
            out.append(
                OwnPrompt(
                    name=f"judge-docs {measure_name}",
                    evaluator=f"retrieval {measure_name}, one call per query at most (every document relevant)",
                    prompt=f"foundry-bridge retrieval {measure_name} rubric {COVERAGE_VERSION}",
                    requests=sent,
                    max_output=COVERAGE_OUTPUT,
                    model=model,
                )
            )
    return out
