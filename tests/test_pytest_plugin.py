"""The pytest plugin through pytest's own machinery (pytester): gate items, ini options, the fixture, --junitxml.

Runs as in tests/test_junit.py: the baseline's relevance is 5 on seven positive queries where the candidate's is
3 (a regression of 14/11, exact p = 2/2^7); rr@10 is identical. Plugin auto-loading is switched off in the inner
sessions and the plugin named with ``-p``, so the test does not depend on how the package was installed; each
inner session is its own process (numpy cannot be imported twice in one, which an in-process run would need).
"""

from __future__ import annotations

import copy
import shutil
import tomllib
from pathlib import Path

import pytest
from junitparser import JUnitXml
from report_helpers import JUDGE_SCORES, write_run

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
IMPROVED = ["q01", "q03", "q04", "q06", "q07", "q09", "q10"]
COVERAGE = [f"coverage {k}" for k in ("document_retrieval/ndcg@3", "retrieval", "groundedness", "relevance")]


def _scores(relevance: float) -> dict:
    scores = copy.deepcopy(JUDGE_SCORES)
    for q in IMPROVED:
        scores["relevance"][q] = relevance
    return scores


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("plugin")
    return {
        "base": str(write_run(root / "base", scores=_scores(5))),
        "cand": str(write_run(root / "cand", scores=_scores(3))),
    }


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_app="def test_the_app_still_works():\n    assert True\n")
    return pytester


def _run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return p.runpytest_subprocess("-p", "foundry_bridge.pytest_plugin", "-p", "no:cacheprovider", "-rA", *args)


def test_the_gate_adds_one_test_per_gated_check(inner: pytest.Pytester, runs: dict[str, str]) -> None:
    gate = ["--foundry-bridge-gate", runs["base"], runs["cand"], "--foundry-bridge-resamples", "1000"]
    result = _run(inner, *gate, "--foundry-bridge-fail-on", "relevance", "--foundry-bridge-fail-on", "rr@10")
    result.assert_outcomes(passed=1 + len(COVERAGE), failed=1)  # rr@10, coverage; relevance (the gate alone)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*cand: positive relevance regressed by 1.273*", "*gate p = 0.01562*"])
    result.stdout.fnmatch_lines(["PASSED *foundry-bridge::cand::positive rr@10"])
    selected = _run(inner, *gate, "--foundry-bridge-fail-on", "relevance", "-k", "coverage")
    selected.assert_outcomes(passed=len(COVERAGE), deselected=1)  # -k applies to the gate's items


def test_the_gate_runs_its_items_alone_unless_the_tests_are_asked_for(
    inner: pytest.Pytester, runs: dict[str, str]
) -> None:
    """In a repository root, ``--foundry-bridge-gate A B`` runs the gate, not the repository's suite first: its test
    files are not even imported. The suite runs too with ``--foundry-bridge-gate-with-tests``, or when test paths
    are named on the command line."""
    inner.makepyfile(test_slow="raise RuntimeError('the whole suite was collected')\n")
    gate = ["--foundry-bridge-gate", runs["base"], runs["cand"], "--foundry-bridge-fail-on", "rr@10"]
    gate += ["--foundry-bridge-resamples", "1000"]
    alone = _run(inner, *gate)
    alone.assert_outcomes(passed=1 + len(COVERAGE))  # rr@10 and the coverage checks; no error, no app test
    assert alone.ret == pytest.ExitCode.OK
    (inner.path / "test_slow.py").unlink()
    both = _run(inner, *gate, "--foundry-bridge-gate-with-tests")
    both.assert_outcomes(passed=1 + 1 + len(COVERAGE))
    both.stdout.fnmatch_lines(["PASSED test_app.py::test_the_app_still_works"])
    named = _run(inner, "test_app.py", *gate)
    named.assert_outcomes(passed=1 + 1 + len(COVERAGE))
    named.stdout.fnmatch_lines(["PASSED test_app.py::test_the_app_still_works"])
    # a file as a starting path (testpaths) is collected, then deselected; the run folders sit in the project so
    # that pytest finds the ini file (as in the next test)
    inner.makeini("[pytest]\ntestpaths = test_app.py\n")
    for name in ("base", "cand"):
        shutil.copytree(runs[name], inner.path / "runs" / name)
    configured = _run(inner, "--foundry-bridge-gate", "runs/base", "runs/cand", *gate[3:])
    configured.assert_outcomes(passed=1 + len(COVERAGE), deselected=1)


def test_ini_options_configure_the_gate(inner: pytest.Pytester, runs: dict[str, str]) -> None:
    inner.makeini("[pytest]\nfoundry_bridge_fail_on =\n    relevance:1.5\nfoundry_bridge_resamples = 1000\n")
    # pytest finds its ini file from the paths on the command line: the run folders sit in the project, as in CI
    for name in ("base", "cand"):
        shutil.copytree(runs[name], inner.path / "runs" / name)
    runs = {name: f"runs/{name}" for name in ("base", "cand")}
    tolerant = _run(inner, "--foundry-bridge-gate", runs["base"], runs["cand"])
    tolerant.assert_outcomes(passed=1 + len(COVERAGE))  # a drop of 1.273 is within the tolerated 1.5
    strict = _run(inner, "--foundry-bridge-gate", runs["base"], runs["cand"], "--foundry-bridge-fail-on", "relevance")
    strict.assert_outcomes(passed=len(COVERAGE), failed=1)  # the command line wins over the ini file


def test_the_fixture_fails_the_calling_test_with_the_gates_reasons(
    inner: pytest.Pytester, runs: dict[str, str]
) -> None:
    inner.makepyfile(
        test_gate=f"""
def test_no_regression(foundry_bridge_gate):
    foundry_bridge_gate({runs["base"]!r}, {runs["cand"]!r}, fail_on=["relevance"], resamples=1000)

def test_same_run_passes(foundry_bridge_gate):
    comparison = foundry_bridge_gate({runs["base"]!r}, {runs["base"]!r}, fail_on=["relevance"], resamples=1000)
    assert (comparison.gate["checked"], comparison.gate["failed"], comparison.gate["reasons"]) == (True, False, [])
"""
    )
    result = _run(inner)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*foundry-bridge gate failed:*", "*cand: positive relevance regressed by 1.273*"])


def test_junitxml_holds_the_gate_cases(inner: pytest.Pytester, runs: dict[str, str], tmp_path: Path) -> None:
    xml = tmp_path / "pytest.xml"
    gate = ["--foundry-bridge-gate", runs["base"], runs["cand"], "--foundry-bridge-fail-on", "relevance"]
    _run(inner, *gate, "--foundry-bridge-resamples", "1000", f"--junitxml={xml}")
    cases = {(c.classname, c.name): c for suite in JUnitXml.fromfile(str(xml)) for c in suite}
    assert not cases["foundry-bridge.cand", "positive relevance"].is_passed  # pytest splits the node id at ::
    assert cases["foundry-bridge.cand", "coverage groundedness"].is_passed


def test_a_missing_run_folder_is_a_usage_error(inner: pytest.Pytester, tmp_path: Path) -> None:
    result = _run(inner, "--foundry-bridge-gate", str(tmp_path / "nope"), str(tmp_path / "nope2"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*foundry-bridge gate:*nope*"])


def test_the_plugin_is_declared_as_a_pytest11_entry_point_and_imports_only_pytest() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"foundry_bridge": "foundry_bridge.pytest_plugin"}
    import subprocess
    import sys

    code = "import foundry_bridge.pytest_plugin, sys; print(*sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    loaded = set(out.split())
    assert not {m for m in loaded if m.startswith(("foundry_bridge.report", "numpy", "pydantic", "opentelemetry"))}
