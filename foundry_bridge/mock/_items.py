"""Output items: list (cursor pages, pass/fail filter) and get one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from ._common import EmulatorBase, _bad, _json_response, _not_found

__all__ = ["ItemRoutes"]


class ItemRoutes(EmulatorBase):
    """Output items: list (cursor pages, pass/fail filter) and get one."""

    def _list_output_items(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        self._run(eval_id, run_id)
        status = request.url.params.get("status")
        if status is not None and status not in ("pass", "fail"):
            raise _bad(f"status must be 'pass' or 'fail', got {status!r}", "status")
        items = self.store.output_items.get(run_id, [])
        index_of: Callable[[str], int | None] | None = _item_index
        if status is not None:
            passed = self.store.run_state[run_id].passed_rows
            items = [it for it, ok in zip(items, passed, strict=True) if ok == (status == "pass")]
            index_of = None
        page = self._page(request, items, index_of)
        return _json_response(200, page)

    def _get_output_item(
        self, request: httpx.Request, eval_id: str, run_id: str, item_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        self._run(eval_id, run_id)
        for item in self.store.output_items.get(run_id, []):
            if item["id"] == item_id:
                return _json_response(200, item)
        raise _not_found("Output item", item_id)


def _item_index(item_id: str) -> int | None:
    """Output item ``"N"`` sits at position N-1 of its run's list."""
    return int(item_id) - 1 if item_id.isdigit() else None
