"""The emulator's stand-in for the OpenAI model graders ``label_model`` and ``score_model``: a deterministic
lexical-overlap rule, never a model's judgement, so a pipeline that grades through Foundry's wire format (judge-docs,
retrieval coverage and utilization) runs end to end offline and its numbers are reproducible.

- The **parts** of an item are the values its grader's ``input`` messages read through ``{{item.x}}`` /
  ``{{sample.x}}`` templates, in the order they appear (messages in order, templates left to right).
- **share** = the share of the first part's content words (``_scoring.tokens``: lower-cased, stopwords out) that
  occur in the other parts together. A first part without words, or other parts without any, is an errored row:
  there is nothing to compare (the caller of a judge counts it unknown).
- ``label_model``: ``labels`` are read in the order given, the worst first; with n labels the stand-in picks label
  ``min(n − 1, ⌊share · (n + 1)⌋)`` (exact integer arithmetic) — with TREC's 0–3 labels, 3 from 60 % of the
  words, 2 from 40 %, 1 from 20 % (``stand_in_cuts(4)``). It passes when the label is one of ``passing_labels``;
  its score is the boolean metric's 1.0 or 0.0 and its ``label`` the chosen label.
- ``score_model``: score = ``low + (high − low) · share`` on the criterion's ``range``; it passes at or above
  ``pass_threshold``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..wire import TEMPLATE, passes, render
from ._words import tokens

__all__ = ["check_grader", "grade", "grader_parts", "label_index", "rendered_messages", "stand_in_cuts"]


def stand_in_cuts(n: int) -> tuple[tuple[float, int], ...]:
    """``(share from which, label index)``, highest first, of ``label_index`` with ``n`` labels."""
    return tuple((i / (n + 1), i) for i in range(n - 1, 0, -1))


def label_index(found: int, words: int, n: int) -> int:
    """The label (0-based, worst first) of ``n`` for ``found`` of ``words`` first-part words in the rest."""
    return min(n - 1, found * (n + 1) // words)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def grader_parts(messages: Sequence[Any], item: Mapping[str, Any], sample: Mapping[str, Any] | None) -> list[Any]:
    """The values the ``input`` messages' templates read from the row, in order (None where absent)."""
    sources = {"item": item, "sample": sample or {}}
    out: list[Any] = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        for m in TEMPLATE.finditer(content if isinstance(content, str) else ""):
            out.append(render(m.group(0), sources))
    return out


def rendered_messages(
    messages: Sequence[Any], item: Mapping[str, Any], sample: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The ``input`` messages with their templates filled (an absent value leaves the text empty)."""
    sources = {"item": item, "sample": sample or {}}
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        text = content if isinstance(content, str) else ""
        filled = TEMPLATE.sub(lambda m: _text(render(m.group(0), sources)) or "", text)
        out.append({"role": message.get("role") if isinstance(message, Mapping) else None, "content": filled})
    return out


def _share(parts: Sequence[Any]) -> tuple[int, int] | str:
    """(first-part words found in the rest, first-part words), or why there is nothing to compare."""
    if len(parts) < 2:
        return "the grader's input reads fewer than two templated parts: nothing to compare"
    words = tokens(parts[0])
    rest: set[str] = set()
    for p in parts[1:]:
        rest |= tokens(p)
    if not words or not rest:
        return "no " + ("words in the first templated part" if not words else "text in the other parts") + " to compare"
    return len(words & rest), len(words)


def grade(kind: str, init: Mapping[str, Any], parts: Sequence[Any]) -> tuple[Any, bool, str | None, float | None, str]:
    """``(score, passed, label, threshold, reason)`` of one row for a ``label_model`` or ``score_model`` criterion
    (``kind``: the published metric's name); a ``ValueError`` (the row's error) when there is nothing to compare."""
    got = _share(parts)
    if isinstance(got, str):
        raise ValueError(got)
    found, words = got
    basis = f"{found} of the first part's {words} content word(s) in the other parts ({found / words:.0%})"
    if kind == "label_model":
        labels = [str(x) for x in init["labels"]]
        label = labels[label_index(found, words, len(labels))]
        passed = label in {str(x) for x in init["passing_labels"]}
        reason = f"Mock label (foundry_bridge emulator, lexical overlap, not a model): {basis} → {label!r}."
        return float(passed), passed, label, None, reason
    low, high = (float(x) for x in init["range"])
    value = low + (high - low) * found / words
    threshold = float(init["pass_threshold"])
    reason = (
        f"Mock score (foundry_bridge emulator, lexical overlap, not a model): {basis} → {value:g} on {low:g}–{high:g}."
    )
    return value, bool(passes(value, threshold)), None, threshold, reason


def check_grader(kind: str, init: Mapping[str, Any]) -> str | None:
    """Why a grader's init parameters cannot run (the create call's 400), or None: ``input`` messages of
    ``{role, content}``; ``labels`` non-empty and ``passing_labels`` among them; ``range`` two increasing
    numbers."""
    messages = init.get("input") or []
    if not messages or not all(isinstance(m, Mapping) and isinstance(m.get("content"), str) for m in messages):
        return "input must be a non-empty array of {role, content} messages"
    if kind == "label_model":
        labels = [str(x) for x in init.get("labels") or []]
        passing = [str(x) for x in init.get("passing_labels") or []]
        if not labels or not passing or not set(passing) <= set(labels):
            return "labels must be non-empty and every passing_labels entry one of them"
    else:
        bounds = init.get("range")
        if not (isinstance(bounds, list) and len(bounds) == 2 and all(isinstance(x, int | float) for x in bounds)):
            return f"range must be two increasing numbers, got {bounds!r}"
        if not bounds[0] < bounds[1]:
            return f"range must be two increasing numbers, got {bounds!r}"
    return None
