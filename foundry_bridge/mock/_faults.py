"""Fault injection for the emulator: transient HTTP errors, failed runs, errored rows, slow completion.

Every fault is deterministic: rates draw from a ``random.Random(seed)`` owned by the emulator instance, and the
``*_every`` options fault exactly every N-th matching request (1-based: ``every=3`` faults requests 3, 6, 9...).
"""

from __future__ import annotations

import dataclasses
import random
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError, spelled

__all__ = ["FaultConfig", "FaultInjector", "TransientFault", "parse_faults"]

_FAULT = spelled("fault", "--mock-fault")  # how a message names one KEY=VALUE setting


_MAX_COUNT = 10**9
_BOUNDS: dict[str, tuple[float, float]] = {  # every number a fault takes: [low, high]; int64 for what is stored
    "rate_limit_rate": (0.0, 1.0),
    "server_error_rate": (0.0, 1.0),
    "run_failure_rate": (0.0, 1.0),
    "errored_row_rate": (0.0, 1.0),
    "rate_limit_every": (0, _MAX_COUNT),
    "server_error_every": (0, _MAX_COUNT),
    "slow_polls": (0, 10**6),
    "retry_after": (0.0, 3600.0),
    "slow_seconds": (0.0, 86400.0),
    "seed": (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class FaultConfig:
    """What to break, and how often. The default breaks nothing.

    Transient HTTP faults (answered before the request reaches a handler; ``only`` restricts them to requests
    whose ``"METHOD /path"`` matches the regular expression, e.g. ``r"^POST .*/runs$"``):

    - ``rate_limit_rate`` / ``rate_limit_every``: answer 429 with ``Retry-After: retry_after`` (seconds).
    - ``server_error_rate`` / ``server_error_every``: answer ``server_error_status`` (500 or 503).

    Run faults (decided when a run is created, 0-based in creation order across the emulator):

    - ``failed_runs`` / ``run_failure_rate``: the run ends ``failed`` with ``error = {code, message}``.
    - ``errored_rows`` / ``errored_row_rate``: inside a ``completed`` run, these rows' results are errored
      (``score: null``, ``sample.error.code = "FAILED_EXECUTION"``); ``errored_criteria`` limits this to the
      named testing criteria (empty: every criterion of the row).
    - ``slow_polls`` / ``slow_seconds``: the run needs that many more polls / seconds to finish.
    """

    rate_limit_rate: float = 0.0
    rate_limit_every: int = 0
    retry_after: float = 1.0
    server_error_rate: float = 0.0
    server_error_every: int = 0
    server_error_status: int = 500
    only: str | None = None
    failed_runs: tuple[int, ...] = ()
    run_failure_rate: float = 0.0
    run_error_code: str = "FAILED_EXECUTION"
    run_error_message: str = "The evaluation run failed (fault injected by the foundry_bridge emulator)."
    errored_rows: tuple[int, ...] = ()
    errored_row_rate: float = 0.0
    errored_criteria: tuple[str, ...] = ()
    slow_polls: int = 0
    slow_seconds: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name, (low, high) in _BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, int | float) and low <= value <= high):  # NaN too
                raise ValueError(f"FaultConfig.{name} must be within [{low:g}, {high:g}], got {value!r}")
        for name in ("failed_runs", "errored_rows"):
            if any(not 0 <= i <= _MAX_COUNT for i in getattr(self, name)):
                raise ValueError(f"FaultConfig.{name}: indices are 0-based and at most {_MAX_COUNT:g}")
        if self.server_error_status < 500 or self.server_error_status > 599:
            raise ValueError(f"FaultConfig.server_error_status must be a 5xx status, got {self.server_error_status}")
        if self.only is not None:
            try:
                re.compile(self.only)
            except re.error as exc:
                raise ValueError(f"FaultConfig.only is not a valid regular expression: {exc}") from None

    @property
    def any_transient(self) -> bool:
        return bool(self.rate_limit_rate or self.rate_limit_every or self.server_error_rate or self.server_error_every)


@dataclass(frozen=True)
class TransientFault:
    """An HTTP fault to answer instead of handling the request."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


class FaultInjector:
    """Applies a FaultConfig with its own seeded RNG and counters (one per emulator; not thread-safe alone)."""

    def __init__(self, config: FaultConfig) -> None:
        self.config = config
        self._rng = random.Random(config.seed)
        self._row_rng = random.Random(config.seed + 1)
        self._only = re.compile(config.only) if config.only else None
        self._matching = 0
        self.injected: list[tuple[int, str]] = []  # (status, "METHOD /path") of every transient fault answered

    def transient(self, method: str, path: str) -> TransientFault | None:
        """The fault to answer for this request, if any (429 is checked before 5xx)."""
        cfg = self.config
        if not cfg.any_transient:
            return None
        target = f"{method} {path}"
        if self._only is not None and not self._only.search(target):
            return None
        self._matching += 1
        n = self._matching
        fault: TransientFault | None = None
        rate_limited = (cfg.rate_limit_every and n % cfg.rate_limit_every == 0) or (
            cfg.rate_limit_rate and self._rng.random() < cfg.rate_limit_rate
        )
        if rate_limited:
            seconds = cfg.retry_after
            shown = int(seconds) if float(seconds).is_integer() else seconds
            fault = TransientFault(
                429,
                "429",
                f"Rate limit is exceeded. Try again in {shown} seconds. "
                "(fault injected by the foundry_bridge emulator)",
                {"Retry-After": str(shown)},
            )
        elif (cfg.server_error_every and n % cfg.server_error_every == 0) or (
            cfg.server_error_rate and self._rng.random() < cfg.server_error_rate
        ):
            status = cfg.server_error_status
            code = "ServiceUnavailable" if status == 503 else "InternalServerError"
            fault = TransientFault(status, code, f"{code} (fault injected by the foundry_bridge emulator)")
        if fault is not None:
            self.injected.append((fault.status, target))
        return fault

    def run_fails(self, run_index: int) -> bool:
        cfg = self.config
        return run_index in cfg.failed_runs or (cfg.run_failure_rate > 0 and self._rng.random() < cfg.run_failure_rate)

    def errored_rows(self, n_rows: int) -> set[int]:
        """The 0-based rows whose results are errored in a run of ``n_rows`` rows."""
        cfg = self.config
        rows = {i for i in cfg.errored_rows if 0 <= i < n_rows}
        if cfg.errored_row_rate > 0:
            rows |= {i for i in range(n_rows) if self._row_rng.random() < cfg.errored_row_rate}
        return rows


def parse_faults(specs: Iterable[str]) -> FaultConfig | None:
    """``KEY=VALUE`` settings (``rate_limit_every=3``, ``errored_rows=1,4``) → a ``FaultConfig`` (tuple fields take
    comma-separated values); None when there are none. ``UsageError`` names a bad one."""
    specs = tuple(specs)
    if not specs:
        return None
    hints = typing.get_type_hints(FaultConfig)
    known = {f.name for f in dataclasses.fields(FaultConfig)}
    values: dict[str, Any] = {}
    for spec in specs:
        key, sep, raw = spec.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            fields = ", ".join(sorted(known))
            raise UsageError(f"{_FAULT} {spec!r}: expected FIELD=VALUE with FIELD one of {fields}")
        values[key] = _coerce(hints[key], raw.strip(), spec)
    try:
        return FaultConfig(**values)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{_FAULT}: {exc}") from exc


def _coerce(hint: Any, raw: str, spec: str) -> Any:
    text = str(hint)
    try:
        if "tuple" in text:
            parts = [p.strip() for p in raw.split(",") if p.strip()]
            return tuple(int(p) for p in parts) if "int" in text else tuple(parts)
        if hint is bool:
            return raw.lower() in {"1", "true", "yes", "on"}
        if hint is int:
            return int(raw)
        if hint is float:
            return float(raw)
    except ValueError as exc:
        raise UsageError(f"{_FAULT} {spec!r}: {exc}") from exc
    return raw if raw.lower() not in {"none", ""} else None
