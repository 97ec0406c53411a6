"""``ItemPaged``: iterate items across pages; ``by_page(continuation_token=)`` to resume mid-way.

Built from two functions, as azure-core's pager is: ``fetch(token) -> page`` and
``extract(page) -> (next_token, items)``. A next token equal to the one just used means the service (or a
buggy cursor) would loop forever: that is an error, not a silent infinite loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from ..errors import BackendError

__all__ = ["ItemPaged", "PageIterator"]

T = TypeVar("T")


class PageIterator(Generic[T]):
    """Yields one list of items per page; ``continuation_token`` is the token of the *next* page."""

    def __init__(
        self,
        fetch: Callable[[str | None], Any],
        extract: Callable[[Any], tuple[str | None, list[T]]],
        continuation_token: str | None = None,
    ) -> None:
        self._fetch = fetch
        self._extract = extract
        self.continuation_token: str | None = continuation_token
        self._finished = False
        self._seen: set[str] = set() if continuation_token is None else {continuation_token}

    def __iter__(self) -> Iterator[list[T]]:
        return self

    def __next__(self) -> list[T]:
        if self._finished:
            raise StopIteration
        used = self.continuation_token
        page = self._fetch(used)
        next_token, items = self._extract(page)
        if next_token is not None and next_token in self._seen:
            raise BackendError(
                f"pagination did not advance: the cursor {next_token!r} came back after "
                f"{len(self._seen)} page(s); stopping instead of looping forever"
            )
        if next_token is not None:
            self._seen.add(next_token)
        self.continuation_token = next_token
        if next_token is None:
            self._finished = True
        return items


class ItemPaged(Generic[T]):
    """Iterating yields every item of every page, fetching pages lazily."""

    def __init__(
        self,
        fetch: Callable[[str | None], Any],
        extract: Callable[[Any], tuple[str | None, list[T]]],
    ) -> None:
        self.fetch = fetch
        self.extract = extract

    def by_page(self, continuation_token: str | None = None) -> PageIterator[T]:
        """Pages (lists of items), starting after ``continuation_token`` when given."""
        return PageIterator(self.fetch, self.extract, continuation_token)

    def __iter__(self) -> Iterator[T]:
        for page in self.by_page():
            yield from page

    def __repr__(self) -> str:
        return "<ItemPaged>"
