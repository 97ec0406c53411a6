"""A pytest plugin: gate a pull request on a RAG comparison inside the test suite a team already runs.

Installed with the package (entry point ``pytest11``; or ``-p foundry_bridge.pytest_plugin``). Two ways in:

- ``pytest --foundry-bridge-gate BASELINE CANDIDATE --foundry-bridge-fail-on rr@10 ...`` runs one test item per
  gated check — the same cases as ``compare --junit`` (each ``--fail-on`` metric per section, and the Foundry
  metrics' coverage) — so ``-k``, ``--junitxml`` and the usual report apply to them. The gate's items run alone:
  the project's own tests are not collected (``pytest_ignore_collect``; any the arguments still bring, such as a
  ``testpaths`` file, are deselected) unless ``--foundry-bridge-gate-with-tests`` is given or test paths are named
  on the command line. The options have ini twins (``foundry_bridge_fail_on``, ``foundry_bridge_coverage_drop``,
  ``foundry_bridge_resamples``...) for ``[tool.pytest.ini_options]``.
- the ``foundry_bridge_gate`` fixture: ``foundry_bridge_gate(BASELINE, CANDIDATE, fail_on=[...])`` compares the
  runs and fails the calling test with the gate's reasons; it returns the ``Comparison`` otherwise.

This module is imported by every pytest session where the package is installed: it imports nothing but pytest
at the top; the report code is imported when a gate is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .comparison import Comparison
    from .integrations.junit import GateCase

__all__ = ["GateItem", "foundry_bridge_gate"]

_INI: dict[str, tuple[str, str, Any]] = {
    "fail_on": ("linelist", "metrics to gate on, [negative:]METRIC[:DELTA], one a line", []),
    "coverage_drop": ("string", "tolerated drop of a Foundry metric's coverage (0–1)", ""),
    "resamples": ("string", "resamples of the sign-flip test (default 10000)", "10000"),
    "seed": ("string", "seed of the comparison's random generator (default 42)", "42"),
    "alpha": ("string", "significance level (default 0.05)", "0.05"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("foundry-bridge", "gate on a foundry-bridge comparison of two run folders")
    group.addoption(
        "--foundry-bridge-gate",
        nargs=2,
        metavar=("BASELINE", "CANDIDATE"),
        default=None,
        help="compare two run folders and run one test per gated check, alone (see docs/ci.md)",
    )
    group.addoption(
        "--foundry-bridge-gate-with-tests",
        action="store_true",
        default=False,
        help="with --foundry-bridge-gate: run the project's tests too (also the case when test paths are given)",
    )
    group.addoption("--foundry-bridge-fail-on", action="append", default=None, metavar="[negative:]METRIC[:DELTA]")
    for name in ("coverage_drop", "resamples", "seed", "alpha"):
        group.addoption(f"--foundry-bridge-{name.replace('_', '-')}", default=None, help=_INI[name][1])
    for name, (kind, help_, default) in _INI.items():
        parser.addini(f"foundry_bridge_{name}", help_, type=kind, default=default)  # type: ignore[arg-type]


def _setting(config: pytest.Config, name: str) -> Any:
    value = config.getoption(f"--foundry-bridge-{name.replace('_', '-')}")
    return config.getini(f"foundry_bridge_{name}") if value is None else value


def _number(config: pytest.Config, name: str, kind: Callable[[str], Any]) -> Any:
    raw = _setting(config, name)
    if raw in ("", None):
        return None
    try:
        return kind(str(raw))
    except ValueError:
        raise pytest.UsageError(f"foundry-bridge: {name.replace('_', '-')} must be a number, got {raw!r}") from None


class GateItem(pytest.Item):
    """One gated check of the comparison, run as a test."""

    def __init__(self, *, case: GateCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        if self.case.failed or self.case.inconclusive:  # an inconclusive gate never passes silently
            raise _GateFailure(self.case)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, _GateFailure):
            return f"{self.case.message}\n{self.case.details}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"foundry-bridge gate: {self.case.candidate} {self.case.name}"


class _GateFailure(Exception):
    def __init__(self, case: GateCase) -> None:
        super().__init__(case.message)


def _gate_items(session: pytest.Session, config: pytest.Config) -> list[GateItem]:
    from .comparison import compare_runs
    from .errors import FoundryBridgeError
    from .integrations.junit import gate_cases

    baseline, candidate = config.getoption("--foundry-bridge-gate")
    fail_on = list(_setting(config, "fail_on") or [])
    try:
        comparison = compare_runs(
            [baseline, candidate],
            fail_on=fail_on,
            coverage_drop=_number(config, "coverage_drop", float),
            seed=_number(config, "seed", int),
            n_resamples=_number(config, "resamples", int),
            alpha=_number(config, "alpha", float),
        )
    except FoundryBridgeError as exc:
        raise pytest.UsageError(f"foundry-bridge gate: {exc}") from None
    cases = gate_cases(comparison)
    names = [f"foundry-bridge::{c.candidate}::{c.name}" for c in cases]
    return [GateItem.from_parent(session, name=n, nodeid=n, case=c) for n, c in zip(names, cases, strict=True)]


def _gate_alone(config: pytest.Config) -> bool:
    """``--foundry-bridge-gate`` without ``--foundry-bridge-gate-with-tests`` and without test paths on the command
    line (pytest's arguments then come from ``testpaths`` or the current directory: the whole suite)."""
    return (
        bool(config.getoption("--foundry-bridge-gate"))
        and not config.getoption("--foundry-bridge-gate-with-tests")
        and config.args_source != pytest.Config.ArgsSource.ARGS
    )


def pytest_ignore_collect(collection_path: Any, config: pytest.Config) -> bool | None:
    """The gate alone: nothing below pytest's starting directories is collected (nor imported)."""
    return True if _gate_alone(config) else None


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect, so they apply to the gate's items too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--foundry-bridge-gate"):
        return
    if _gate_alone(config) and items:  # a starting path that is a file itself is collected anyway
        config.hook.pytest_deselected(items=list(items))
        items.clear()
    items.extend(_gate_items(session, config))


@pytest.fixture
def foundry_bridge_gate() -> Callable[..., Comparison]:
    """``foundry_bridge_gate(baseline, candidate, fail_on=[...], coverage_drop=None, seed=42, resamples=10000,
    alpha=0.05)``: compare two run folders; fail the test with the gate's reasons, else return the comparison."""

    def gate(
        baseline: str, candidate: str, *, fail_on: Sequence[str] = (), resamples: int = 10_000, **kwargs: Any
    ) -> Comparison:
        from .comparison import compare_runs

        comparison = compare_runs([baseline, candidate], fail_on=list(fail_on), n_resamples=resamples, **kwargs)
        if comparison.gate.get("failed"):
            pytest.fail("foundry-bridge gate failed:\n" + "\n".join(comparison.gate["reasons"]), pytrace=False)
        if comparison.gate.get("inconclusive"):
            pytest.fail(
                "foundry-bridge gate inconclusive:\n" + "\n".join(comparison.gate["inconclusive"]), pytrace=False
            )
        return comparison

    return gate
