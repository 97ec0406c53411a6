"""All-pairs comparison of several systems on one measure: the ranking by mean and a compact letter display of which
systems differ (the tests themselves are ``significance``'s).

- ``competition_ranks``: rank 1 = the best mean by the measure's direction (higher is better unless told
  otherwise); equal means share the lowest rank of their group ("1224" ranking); a system without a mean ranks last.
- ``compact_letters``: Piepho's insert-and-absorb algorithm (J. Comput. Graph. Stat. 13(2), 2004). Start with one
  letter shared by every system; for each pair that differs, every letter held by both is split in two (one without
  each system of the pair); a letter whose systems all share another letter is absorbed. The result: two systems
  that differ share no letter, two that do not share at least one — also when "does not differ" is not transitive
  (A ~ B, B ~ C, A ≠ C: A "a", B "ab", C "b"). Letters are named in the ranking's order: the letter of the best
  system is "a" (past "z": "aa", "ab", …, then comma-separated).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["compact_letters", "competition_ranks"]


def competition_ranks(means: Sequence[float | None], *, higher_is_better: bool | None = True) -> list[int]:
    """Each system's rank by its mean: 1 = best, ties share the lowest rank of their group, no mean ranks last."""
    sign = -1.0 if higher_is_better is not False else 1.0
    keys = [(1, 0.0) if m is None else (0, sign * m) for m in means]
    return [1 + sum(1 for other in keys if other < key) for key in keys]


def _letter(i: int) -> str:
    """a, b, …, z, aa, ab, …: the i-th letter name."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        name = letters[r] + name
    return name


def compact_letters(order: Sequence[str], differ: Collection[tuple[str, str]]) -> dict[str, str]:
    """System → its letters (insert-and-absorb, see the module's docstring): systems sharing a letter do not
    differ significantly. ``order``: the systems best first (letters are named in this order); ``differ``: the
    pairs that differ significantly (either order)."""
    columns: list[set[str]] = [set(order)] if order else []
    for a, b in differ:
        split: list[set[str]] = []
        for col in columns:
            if a in col and b in col:
                split += [col - {a}, col - {b}]
            else:
                split.append(col)
        # absorb: drop a column contained in another (and duplicates), keeping the first
        kept: list[set[str]] = []
        for i, col in enumerate(split):
            bigger = any(col < other or (col == other and j < i) for j, other in enumerate(split) if j != i)
            if not bigger:
                kept.append(col)
        columns = kept
    position = {s: i for i, s in enumerate(order)}
    columns.sort(key=lambda col: sorted(position[s] for s in col))
    held: dict[str, list[str]] = {s: [] for s in order}
    for i, col in enumerate(columns):
        for s in col:
            held[s].append(_letter(i))
    glue = "" if len(columns) <= 26 else ","  # past z the names have two letters: "ab" would be ambiguous
    return {s: glue.join(names) for s, names in held.items()}
