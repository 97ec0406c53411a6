"""The local measures, each declared once, and measures as values: ``parse_measure("ndcg(gain=exp)@3")``.

A ``MeasureDef`` is the declaration (name, aliases, parameters, definition, direction, NaN rule); a ``Measure`` is
a value whose ``str()`` is canonical (``rr@10``, ``ndcg(gain=exp)@3``), round-trips through ``parse_measure`` and
drives ``==`` and ``hash``. ``Measure.key`` is the one name of a computed column everywhere. Spellings: names and
aliases case-insensitive (``MRR@10``, ``P@5``, trec_eval's ``P_5``, ``ndcg_cut_10``, ``recip_rank``...), keyword
parameters with literal values, ``@k``; parsed with ``ast``, nothing evaluated. A new measure: declare it here and
compute its column in ``ranking.compute``; measures declared ``default=False`` are computed only when asked for.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._text import did_you_mean
from ..errors import UsageError

__all__ = [
    "ALL_COLUMNS",
    "COLUMNS",
    "MEASURES",
    "Measure",
    "MeasureDef",
    "Param",
    "Variant",
    "column_names",
    "expand",
    "is_measure_name",
    "measure_for_key",
    "measures_help",
    "measures_labels",
    "parse_measure",
]

_FORM = "NAME[(PARAM=VALUE, ...)][@K], e.g. rr@10 or ndcg(gain=exp)@3"
_MAX_LEN = 200


@dataclass(frozen=True)
class Param:
    """A measure parameter: its type, default, allowed values (``None``: any of the type) and meaning."""

    type: type
    default: Any
    choices: tuple[Any, ...] | None = None
    desc: str = ""


@dataclass(frozen=True)
class Variant:
    """A parameter setting the kernels compute under its own column name (``ndcg(gain=exp)`` → ``ndcg_exp``)."""

    params: tuple[tuple[str, Any], ...]
    column: str
    definition: str
    default: bool = True  # in the default output (every measure at every k), else computed when asked for


_NO_RELEVANT = "undefined when the query has no relevant label (n_rel = 0)"


@dataclass(frozen=True)
class MeasureDef:
    """One local measure, declared once.

    ``definition`` is the one-line text of the report; ``nan_rule`` says when a query's value is undefined (NaN,
    ``null`` in JSON); ``label`` the name in help texts; ``mean_label`` the name of the mean beside the report's
    column (``MRR``); ``bounds`` the range of a value (``None``: unbounded); ``variants`` name the non-default
    parameter settings the kernels compute.
    """

    name: str
    definition: str
    higher_is_better: bool = True
    nan_rule: str = _NO_RELEVANT
    label: str = ""  # default: "{name}@k"
    aliases: tuple[str, ...] = ()
    params: Mapping[str, Param] = field(default_factory=dict)
    variants: tuple[Variant, ...] = ()
    bounds: tuple[float, float] | None = (0.0, 1.0)
    mean_label: str | None = None
    default: bool = True
    trec_eval: str = ""
    uncut: bool = False  # without @k: the whole ranking (trec_eval's map, Rprec, bpref), not every k

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", self.label or f"{self.name}@k")


_ALWAYS = "always defined (all retrieved top-k documents when none is relevant)"
_GAIN = Param(str, "linear", ("linear", "exp"), "linear: gain = label; exp: gain = 2^label − 1")
_IDEAL_ZERO = "undefined when the ideal DCG is 0 (no label > 0); the relevance threshold does not apply"
_CONDENSED = Param(bool, False, (False, True), "True: unjudged documents removed from the ranking first")


def _condensed(column: str, name: str) -> Variant:
    """The condensed-list variant of a measure (trec_eval -J, pytrec_eval ``judged_docs_only_flag``)."""
    return Variant(
        (("condensed", True),), f"{column}_cond", f"{name} on the ranking without its unjudged documents", False
    )


MEASURES: dict[str, MeasureDef] = {
    d.name: d
    for d in (
        MeasureDef(
            "rr",
            "1/rank of the first relevant document within the top k, else 0 (mean = MRR)",
            label="MRR",
            aliases=("mrr", "recip_rank"),  # recip_rank: trec_eval's (uncut: give a k ≥ the run's depth)
            mean_label="MRR",
            params={"condensed": _CONDENSED},
            variants=(_condensed("rr", "rr"),),
        ),
        MeasureDef(
            "recall",
            "relevant documents in the top k ÷ all relevant documents (n_rel)",
            trec_eval="recall",
            params={"condensed": _CONDENSED},
            variants=(_condensed("recall", "recall"),),
        ),
        MeasureDef(  # ÷ k also when fewer than k were retrieved
            "precision",
            "relevant documents in the top k ÷ k",
            aliases=("p",),  # P@5: trec_eval's, ir_measures' name
            trec_eval="P",
            params={"condensed": _CONDENSED},
            variants=(_condensed("precision", "precision"),),
        ),
        MeasureDef(
            "hit",
            "1 if any relevant document is in the top k (mean = hit rate)",
            aliases=("hit_rate",),
            trec_eval="success",
        ),
        MeasureDef(
            "distracting",
            "non-relevant documents ranked above the first relevant one within the top k",
            higher_is_better=False,
            nan_rule=_ALWAYS,
            bounds=None,
        ),
        MeasureDef(
            "ndcg",
            "trec_eval ndcg_cut: gain = label, discount 1/log2(rank+1), ideal from all labels",
            nan_rule=_IDEAL_ZERO,
            label="NDCG@k",
            params={"gain": _GAIN, "condensed": _CONDENSED},
            variants=(
                Variant((("gain", "exp"),), "ndcg_exp", "as ndcg with gain 2^label − 1"),
                _condensed("ndcg", "ndcg"),
            ),
            trec_eval="ndcg_cut",
        ),
        MeasureDef(
            "ap",
            "Σ over relevant documents at rank r ≤ k of (relevant in the top r ÷ r), ÷ n_rel (mean = MAP; trec_eval "
            "map_cut_k; without @k the whole ranking: trec_eval map)",
            label="MAP@k",
            aliases=("map",),  # trec_eval's map: without @k, uncut
            mean_label="MAP",
            params={"condensed": _CONDENSED},
            variants=(_condensed("ap", "ap"),),
            default=False,
            trec_eval="map_cut",
            uncut=True,
        ),
        MeasureDef(
            "rprec",
            "relevant documents in the top R ÷ R, R = n_rel, on the ranking cut at k (without @k the whole ranking: "
            "trec_eval Rprec)",
            label="R-precision",
            aliases=("r_precision",),
            params={"condensed": _CONDENSED},
            variants=(_condensed("rprec", "rprec"),),
            default=False,
            uncut=True,
        ),
        MeasureDef(
            "bpref",
            "Σ over relevant documents in the top k of 1 − min(judged non-relevant above it, R) ÷ min(R, N), ÷ R "
            "(R = n_rel, N = judged non-relevant qrels documents; 1 when N = 0; unjudged documents are ignored; "
            "without @k the whole ranking: trec_eval bpref)",
            default=False,
            uncut=True,
        ),
        MeasureDef(
            "judged",
            "judged documents (a qrels label ≥ 0) in the top k ÷ k (ir_measures Judged@k; trec_eval 1 − unj_k)",
            nan_rule="always defined",
            default=False,
        ),
    )
}

# trec_eval's cut names: P_5, recall_100, success_10, ndcg_cut_10, map_cut_10 (any case)
_TREC_CUT = re.compile(
    r"^(" + "|".join(d.trec_eval for d in MEASURES.values() if d.trec_eval) + r")_([0-9]+)$", re.IGNORECASE
)


def _trec_cut(text: str) -> Measure | None:
    """``P_5`` → ``precision@5``: a trec_eval cut name as a measure, or None."""
    m = _TREC_CUT.match(text.strip())
    if m is None:
        return None
    d = next(d for d in MEASURES.values() if d.trec_eval.lower() == m.group(1).lower())
    return Measure.of(d.name, None, int(m.group(2)))


def _lookup(name: str) -> tuple[MeasureDef, dict[str, Any]]:
    """The declaration a name, alias or variant column name stands for, and the parameters that spelling fixes."""
    key = name.lower()
    for d in MEASURES.values():
        if key == d.name or key in d.aliases:
            return d, {}
        for v in d.variants:
            if key == v.column:
                return d, dict(v.params)
    known = [s for d in MEASURES.values() for s in (d.name, *d.aliases, *(v.column for v in d.variants))]
    guess = did_you_mean(key, known)
    hint = f"; did you mean {guess!r}?" if guess else f"; known measures: {', '.join(known)}"
    raise UsageError(f"unknown measure {name!r}{hint}")


def _check_value(d: MeasureDef, name: str, value: Any) -> Any:
    if name not in d.params:
        allowed = ", ".join(d.params) or "none"
        raise UsageError(f"measure {d.name!r} has no parameter {name!r}; its parameters: {allowed}")
    p = d.params[name]
    if isinstance(value, bool) is not (p.type is bool) or not isinstance(value, p.type):
        if p.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        else:
            raise UsageError(f"{d.name}({name}=...): expected a {p.type.__name__}, got {value!r}")
    if p.choices is not None and value not in p.choices:
        raise UsageError(f"{d.name}({name}=...) must be one of {', '.join(map(str, p.choices))}, got {value!r}")
    return value


def _fmt_value(value: Any) -> str:
    return value if isinstance(value, str) and value.isidentifier() else repr(value)


@dataclass(frozen=True, eq=False)
class Measure:
    """A registered measure with its non-default parameters (in declaration order) and an optional cutoff.

    Build one with ``parse_measure`` or ``Measure.of``; ``m(gain="exp")`` sets parameters and ``m @ 10`` the
    cutoff, each returning a new value.
    """

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    cutoff: int | None = None

    @classmethod
    def of(cls, name: str, params: Mapping[str, Any] | None = None, cutoff: int | None = None) -> Measure:
        """The measure ``name`` (a name, alias or variant column) with ``params`` checked against its declaration."""
        d, fixed = _lookup(name)
        given = dict(params or {})
        for key, value in given.items():
            if key in fixed and _check_value(d, key, value) != fixed[key]:
                raise UsageError(f"{name!r} already means {d.name}({key}={_fmt_value(fixed[key])})")
        merged = {**fixed, **{k: _check_value(d, k, v) for k, v in given.items()}}
        kept = tuple((k, merged[k]) for k in d.params if k in merged and merged[k] != d.params[k].default)
        if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1):
            raise UsageError(f"{d.name}@{cutoff!r}: the cutoff must be an integer >= 1")
        return cls(d.name, kept, cutoff)

    def __call__(self, **params: Any) -> Measure:
        return Measure.of(self.name, {**dict(self.params), **params}, self.cutoff)

    def __matmul__(self, k: int) -> Measure:
        return Measure.of(self.name, dict(self.params), k)

    def __str__(self) -> str:
        args = _pairs(self.params)
        return self.name + (f"({args})" if args else "") + (f"@{self.cutoff}" if self.cutoff is not None else "")

    def __repr__(self) -> str:
        return f"Measure({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Measure) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    @property
    def spec(self) -> MeasureDef:
        return MEASURES[self.name]

    def _variant(self) -> Variant | None:
        return next((v for v in self.spec.variants if v.params == self.params), None)

    @property
    def column(self) -> str:
        """The kernels' name for this setting, without the cutoff: ``rr``, ``ndcg_exp``."""
        if not self.params:
            return self.name
        variant = self._variant()
        if variant is None:
            raise UsageError(f"{self}: this parameter setting is not computed locally")
        return variant.column

    @property
    def key(self) -> str:
        """The per-query column (and report metric key): ``rr@10``, ``ndcg_exp@3``."""
        return self.column + (f"@{self.cutoff}" if self.cutoff is not None else "")

    @property
    def definition(self) -> str:
        variant = self._variant() if self.params else None
        return variant.definition if variant is not None else self.spec.definition

    @property
    def higher_is_better(self) -> bool:
        return self.spec.higher_is_better


# every column the kernels compute, in output order: for each k, these columns
ALL_COLUMNS: tuple[Measure, ...] = tuple(
    Measure.of(v) for d in MEASURES.values() for v in (d.name, *(x.column for x in d.variants))
)


def _is_default(m: Measure) -> bool:
    variant = m._variant() if m.params else None
    return m.spec.default and (variant is None or variant.default)


# the default output (the ``metrics`` and ``report`` columns): the measures and variants declared ``default``
COLUMNS: tuple[Measure, ...] = tuple(m for m in ALL_COLUMNS if _is_default(m))


def column_names(every: bool = False) -> tuple[str, ...]:
    """The kernels' column names without cutoff, in output order: ``rr``, ``recall``, ..., ``ndcg_exp`` (the
    default output; ``every``: also those computed only when asked for, ``ap``, ``bpref``, ``ndcg_cond``...)."""
    return tuple(m.column for m in (ALL_COLUMNS if every else COLUMNS))


def _literal(node: ast.expr, spec: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value
    if isinstance(node, ast.Name):  # a bare choice: gain=exp
        return node.id
    raise UsageError(f"measure {spec!r}: parameter values must be literals; expected {_FORM}")


def _parse_head(node: ast.expr, spec: str) -> tuple[str, dict[str, Any]]:
    if isinstance(node, ast.Name):
        return node.id, {}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        if any(kw.arg is None for kw in node.keywords):
            raise UsageError(f"measure {spec!r}: expected {_FORM}")
        return node.func.id, {str(kw.arg): _literal(kw.value, spec) for kw in node.keywords}
    raise UsageError(f"measure {spec!r}: expected {_FORM}")


def parse_measure(spec: str | Measure) -> Measure:
    """``"rr@10"``, ``"MRR@10"``, ``"ndcg(gain=exp)@3"``, ``"ndcg_exp@3"`` → a ``Measure`` (a ``UsageError``
    naming the expected form, the known measures or the allowed parameters otherwise)."""
    if isinstance(spec, Measure):
        return spec
    trec = _trec_cut(spec)
    if trec is not None:
        return trec
    text = spec.strip()
    if not text or len(text) > _MAX_LEN:
        raise UsageError(f"measure {spec!r}: expected {_FORM}")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise UsageError(f"measure {spec!r}: expected {_FORM}") from None
    cutoff: int | None = None
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.MatMult):
        right = tree.right
        if not (isinstance(right, ast.Constant) and type(right.value) is int):
            raise UsageError(f"measure {spec!r}: the cutoff after @ must be an integer; expected {_FORM}")
        cutoff, tree = right.value, tree.left
    name, params = _parse_head(tree, spec)
    return Measure.of(name, params, cutoff)


def expand(measures: Sequence[Measure], ks: Sequence[int]) -> tuple[tuple[Measure, ...], tuple[int, ...]]:
    """Each measure at its own cutoff, or at every k of ``ks`` when it has none — except a measure declared
    ``uncut`` (``ap``/``map``, ``rprec``, ``bpref``), which without a cutoff stays uncut: the whole ranking, as
    trec_eval computes it — (distinct, in the given order), and the sorted cutoffs they need. A parameter setting
    the kernels do not compute is a ``UsageError``."""
    out: dict[Measure, None] = {}
    for m in measures:
        for at_k in [m] if m.cutoff is not None or m.spec.uncut else [m @ k for k in ks]:
            _ = at_k.column  # computable?
            out[at_k] = None
    if not out:
        raise UsageError("no cutoff: give the measure a cutoff (rr@10) or a k")
    return tuple(out), tuple(sorted({m.cutoff for m in out if m.cutoff is not None}))


def is_measure_name(spec: str) -> bool:
    """Whether ``spec`` starts with a registered name, alias or variant column (``MRR@10``: yes; ``groundedness``,
    ``document_retrieval/ndcg@3``: no) — i.e. whether ``parse_measure`` is the parser it is meant for."""
    head = spec.strip()
    if _TREC_CUT.match(head):
        return True
    end = next((i for i, ch in enumerate(head) if not (ch.isalnum() or ch == "_")), len(head))
    if head[end : end + 1] not in ("", "@", "(", " "):
        return False
    try:
        _lookup(head[:end])
    except UsageError:
        return False
    return True


def measure_for_key(key: str) -> Measure | None:
    """The local measure a report/per-query column key names (``ndcg_exp@3``), or ``None`` for any other key."""
    name, _, k = key.partition("@")
    try:
        d, fixed = _lookup(name)
    except UsageError:
        return None
    if name != d.name and name not in (v.column for v in d.variants):
        return None  # an alias (mrr@10) is a spelling, not a column key
    return Measure.of(name, fixed, int(k)) if k.isdigit() and int(k) >= 1 else None


def measures_help() -> str:
    """The measures for help texts: ``rr (alias mrr), ..., ndcg(gain=linear|exp)``."""
    parts = []
    for d in MEASURES.values():
        args = ", ".join(f"{n}={'|'.join(map(str, p.choices or ()))}" for n, p in d.params.items())
        names = [*d.aliases, *(f"{v.column} = {d.name}({_pairs(v.params)})" for v in d.variants)]
        parts.append(d.name + (f"({args})" if args else "") + (f" ({'; '.join(names)})" if names else ""))
    return ", ".join(parts)


def measures_labels() -> str:
    """The measures' names for a one-line help: ``MRR, recall@k, ..., NDCG@k``."""
    return ", ".join(d.label for d in MEASURES.values())


def _pairs(params: tuple[tuple[str, Any], ...]) -> str:
    return ", ".join(f"{k}={_fmt_value(v)}" for k, v in params)
