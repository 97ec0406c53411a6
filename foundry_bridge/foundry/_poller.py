"""``RunPoller``: wait for an eval run to reach a terminal status, resumable from a text token.

The continuation token is base64url JSON ``{"v": 1, "endpoint", "api_version", "eval_id", "run_id"}`` — never a
pickle, safe to store in ``state.json`` and to read back in another process.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import BackendError
from ._exceptions import RunFailedError
from ._models import EvalRun

__all__ = ["MIN_POLL_INTERVAL", "RunPoller", "RunSource", "decode_token", "encode_token"]


class RunSource(Protocol):
    """What a poller needs of a client (``FoundryClient`` is one): the project it talks to, its sleep, and a GET
    of a run. The poller depends on this, not on the client, which builds pollers (``run_poller``)."""

    endpoint: str
    api_version: str | None
    sleep: Callable[[float], None]

    def get_run(self, eval_id: str, run_id: str) -> EvalRun: ...


_TOKEN_VERSION = 1


def encode_token(data: dict[str, Any]) -> str:
    raw = json.dumps({"v": _TOKEN_VERSION, **data}, sort_keys=True, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def decode_token(token: str) -> dict[str, Any]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise BackendError("not a foundry_bridge run continuation token") from exc
    if not isinstance(data, dict) or data.get("v") != _TOKEN_VERSION or "run_id" not in data:
        raise BackendError("not a foundry_bridge run continuation token (unknown version or fields)")
    return data


# The shortest wait between two polls of a run (a configured interval of 0 would poll in a tight loop).
MIN_POLL_INTERVAL = 0.01


class RunPoller:
    """Polls ``GET /evals/{eval_id}/runs/{run_id}`` with a growing interval until the run is terminal."""

    def __init__(
        self,
        client: RunSource,
        eval_id: str,
        run_id: str,
        *,
        run: EvalRun | None = None,
        interval: float = 2.0,
        max_interval: float = 30.0,
        backoff: float = 1.5,
        progress: Callable[[str, int, int | None], None] | None = None,
    ) -> None:
        self._client = client
        self.eval_id = eval_id
        self.run_id = run_id
        self._run = run
        self._interval = interval
        self._max_interval = max_interval
        self._backoff = backoff
        self._progress = progress
        self.polls = 0

    # -- azure-core LROPoller surface ---------------------------------------------------------------------------
    def status(self) -> str:
        """The last status seen (fetches once if nothing was seen yet)."""
        if self._run is None:
            self._update()
        return self._run.status if self._run is not None else "unknown"

    def done(self) -> bool:
        """True when the last status seen is terminal (does not poll)."""
        return self._run is not None and self._run.done

    def continuation_token(self) -> str:
        return encode_token(
            {
                "endpoint": self._client.endpoint,
                "api_version": self._client.api_version,
                "eval_id": self.eval_id,
                "run_id": self.run_id,
            }
        )

    @classmethod
    def from_continuation_token(cls, client: RunSource, token: str, **kwargs: Any) -> RunPoller:
        """A poller for the run named in ``token``; the client must point at the same project endpoint."""
        data = decode_token(token)
        if data.get("endpoint") and data["endpoint"].rstrip("/") != client.endpoint.rstrip("/"):
            raise BackendError(
                f"the continuation token belongs to project {data['endpoint']!r}, not {client.endpoint!r}"
            )
        return cls(client, data["eval_id"], data["run_id"], **kwargs)

    def wait(self, timeout: float | None = None) -> None:
        """Poll until terminal or until ``timeout`` seconds (wall clock plus time slept) have passed."""
        start = time.monotonic()
        slept = 0.0
        interval = max(self._interval, MIN_POLL_INTERVAL)  # never a busy loop, whatever the configuration
        if self._run is None or not self._run.done:
            self._update()
        while not self.done():
            elapsed = max(time.monotonic() - start, slept)
            if timeout is not None and elapsed >= timeout:
                return
            delay = interval if timeout is None else min(interval, max(0.0, timeout - elapsed))
            self._client.sleep(delay)
            slept += delay
            interval = max(MIN_POLL_INTERVAL, min(self._max_interval, interval * self._backoff))
            self._update()

    def result(self, timeout: float | None = None) -> EvalRun:
        """The terminal run. Raises ``RunFailedError`` for ``failed``/``canceled`` (with the service's error)
        and ``TimeoutError`` when ``timeout`` passes first."""
        self.wait(timeout)
        run = self._run
        if run is None or not run.done:
            raise TimeoutError(f"run {self.run_id} still {self.status()!r} after {timeout} s")
        if run.status != "completed":
            detail = run.error.describe() if run.error is not None else "the service gave no error details"
            raise RunFailedError(f"evaluation run {run.id} {run.status}: {detail}", run=run)
        return run

    @property
    def run(self) -> EvalRun | None:
        """The last run object seen."""
        return self._run

    def _update(self) -> None:
        self._run = self._client.get_run(self.eval_id, self.run_id)
        self.polls += 1
        if self._progress is not None:
            self._progress("polling", self.polls, None)

    def __repr__(self) -> str:
        status = self._run.status if self._run is not None else "unknown"
        return f"RunPoller(eval_id={self.eval_id!r}, run_id={self.run_id!r}, status={status!r})"
