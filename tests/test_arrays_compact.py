"""The compact per-query string columns of the metrics' arrays: they read back exactly what was stored."""

from __future__ import annotations

import numpy as np

from foundry_bridge.metrics._arrays import Codes, IdIndex, Texts, same_distinct


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


def _texts(values: list[str]) -> Texts:
    texts = Texts()
    for v in values:
        texts.append(v)
    return texts


def test_ids_pair_by_value_as_a_dict_built_in_row_order_does() -> None:
    rng = np.random.default_rng(5)
    base = [f"q{int(i)}" for i in rng.integers(0, 60, 200)]  # repeats, and ids the other lacks
    cand = [f"q{int(i)}" for i in rng.integers(20, 90, 150)] + ["é", "e"]
    last_row = {q: i for i, q in enumerate(cand)}  # the last one wins
    expected = [last_row.get(q, -1) for q in base]
    for a, b in ((base, cand), (_texts(base), _texts(cand))):
        assert IdIndex(a).rows_in(IdIndex(b)).tolist() == expected


def test_same_distinct_ids_are_equal_lists_without_a_repeat() -> None:
    ids = ["q2", "q10", "q1"]
    assert same_distinct(_texts(ids), _texts(ids)) and same_distinct(ids, list(ids))
    assert not same_distinct(_texts(ids), _texts(ids[::-1]))  # the same ids in another order
    assert not same_distinct(_texts(ids), _texts(ids[:2]))
    assert not same_distinct(_texts([*ids, "q1"]), _texts([*ids, "q1"]))  # a repeat: pair by value instead


def test_codes_say_each_row_as_an_index_into_other_names() -> None:
    codes = Codes()
    for name in ["positive", "negative", "positive", "unknown"]:
        codes.append(name)
    assert codes.coded(["negative", "positive"]).tolist() == [1, 0, 1, -1]
    assert Codes().coded(["positive"]).tolist() == []
