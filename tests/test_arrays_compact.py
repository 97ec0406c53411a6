"""The compact per-query string columns of the metrics' arrays: they read back exactly what was stored."""

from __future__ import annotations

import numpy as np

from foundry_bridge.metrics._arrays import Codes, Texts


def test_texts_hold_any_string_and_none() -> None:
    values = ["q1", "", None, "Zürich ✓", "\ud800lone", "q1"]
    texts = Texts()
    for v in values[:3]:
        texts.append(v)
    more = Texts()
    for v in values[3:]:
        more.append(v)
    texts.extend(more)
    assert len(texts) == 6
    assert list(texts) == values
    assert texts[-1] == "q1" and texts[1:3] == ["", None]
    assert texts == values


def test_texts_sort_keys_sort_as_python_strings() -> None:
    values = ["b", "a", "ab", "é", "z", "", "a"]
    texts = Texts()
    for v in values:
        texts.append(v)
    order = np.argsort(texts.sort_keys(), kind="stable").tolist()
    assert order == sorted(range(len(values)), key=lambda i: values[i])


def test_codes_join_parts_with_other_names() -> None:
    a, b = Codes(), Codes()
    for k in ["positive", "negative", "positive"]:
        a.append(k)
    for k in ["unknown", "negative"]:
        b.append(k)
    a.extend(b)
    assert list(a) == ["positive", "negative", "positive", "unknown", "negative"]
    assert a.mask("negative").tolist() == [False, True, False, False, True]
    assert a.mask("absent").tolist() == [False] * 5
