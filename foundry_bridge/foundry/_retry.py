"""Retry decisions: which failures to retry, how long to wait, when to give up.

Retried: HTTP 408, 409, 429, 500–599 and connection-level errors (connect/read timeouts, resets). Wait: the
service's ``retry-after-ms`` (milliseconds) or ``Retry-After`` (seconds or an HTTP date) when present, else
capped exponential backoff ``min(backoff_max, backoff_base * 2**attempt)`` with ±25 % jitter. A Retry-After
longer than ``max_retry_after`` is not waited for: the request fails at once with a message saying so.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

__all__ = ["RETRY_STATUSES", "RetryPolicy", "parse_retry_after"]

# 5xx are transient, except 501 Not Implemented and 505 HTTP Version Not Supported: asking again changes nothing
RETRY_STATUSES = frozenset({408, 409, 429}) | (frozenset(range(500, 600)) - {501, 505})


def parse_retry_after(headers: httpx.Headers, *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait as the response asks (``retry-after-ms`` first, then ``Retry-After``), or None."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


@dataclass
class RetryPolicy:
    """Bounded retries with capped exponential backoff and jitter; ``sleep`` is injectable for tests."""

    max_retries: int = 6
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    jitter: float = 0.25
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def backoff(self, attempt: int) -> float:
        """Delay before retry number ``attempt + 1`` when the service gave no Retry-After."""
        base = min(self.backoff_max, self.backoff_base * (2**attempt))
        return max(0.0, base * (1 + self.jitter * (2 * self.rng.random() - 1)))

    def should_retry_status(self, status: int) -> bool:
        return status in RETRY_STATUSES
