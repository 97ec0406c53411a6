"""Output items: list (cursor pages, pass/fail filter) and get one — built from the run's compact output."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

import httpx

from ._common import EmulatorBase, _bad, _json_response, _not_found, list_envelope, page_positions

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
        limit, order, after = self._page_params(request)
        output = self.store.output_items.get(run_id)
        rows: Sequence[int] = range(len(output) if output is not None else 0)
        if output is not None and status is not None:
            rows = [i for i in rows if output.passed(i) == (status == "pass")]
        index = None if after is None else _position(rows, after)
        positions, has_more = page_positions(len(rows), limit, order, index, after)
        page = [output.item(rows[p]) for p in positions] if output is not None else []
        return _json_response(200, list_envelope(page, has_more))

    def _get_output_item(
        self, request: httpx.Request, eval_id: str, run_id: str, item_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        self._run(eval_id, run_id)
        output = self.store.output_items.get(run_id)
        if output is not None and item_id.isdigit() and 1 <= int(item_id) <= len(output):
            return _json_response(200, output.item(int(item_id) - 1))
        raise _not_found("Output item", item_id)


def _position(rows: Sequence[int], after: str) -> int:
    """Where output item ``after`` (``"N"`` is row N-1) sits in ``rows`` (sorted); -1 when it is not there."""
    if not after.isdigit() or str(int(after)) != after:
        return -1
    row = int(after) - 1
    at = bisect_left(rows, row)
    return at if at < len(rows) and rows[at] == row else -1
