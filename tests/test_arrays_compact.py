"""The compact per-query string columns of the metrics' arrays: they read back exactly what was stored."""

from __future__ import annotations

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


def test_codes_say_each_row_as_an_index_into_other_names() -> None:
    codes = Codes()
    for name in ["positive", "negative", "positive", "unknown"]:
        codes.append(name)
    assert codes.coded(["negative", "positive"]).tolist() == [1, 0, 1, -1]
    assert Codes().coded(["positive"]).tolist() == []
