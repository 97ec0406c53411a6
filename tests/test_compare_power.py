"""compare's power (issue #24, item 4): for each gated metric the minimum detectable effect at the current n and
the paired queries a given Δ needs with 80 % power, for the paired test the gate uses (planned as a paired t test
via the noncentral t), checked against statsmodels' ``TTestPower.solve_power`` in both directions.

The runs are test_compare_gates': relevance drops by 2 on seven of eleven positive queries (0 on four)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from report_helpers import JUDGE_SCORES, write_run
from statsmodels.stats.power import TTestPower

from foundry_bridge.cli import cli
from foundry_bridge.comparison import compare_runs, render_comparison_markdown

IMPROVED = ["q01", "q03", "q04", "q06", "q07", "q09", "q10"]
DIFFS = np.array([-2.0] * 7 + [0.0] * 4)  # bad − good relevance on the eleven positive queries


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("power")
    out = []
    for name, value in (("good", 5), ("bad", 3)):
        scores = copy.deepcopy(JUDGE_SCORES)
        for q in IMPROVED:
            scores["relevance"][q] = value
        out.append(write_run(root / name, scores=scores))
    return out


@pytest.mark.parametrize("n", [5, 12, 40, 300])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_the_minimum_detectable_effect_matches_statsmodels(n: int, alpha: float) -> None:
    from foundry_bridge.metrics.power import min_detectable_delta, min_detectable_dz

    expected = TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8, alternative="two-sided")
    assert min_detectable_dz(n, alpha) == pytest.approx(expected, rel=1e-5)
    assert min_detectable_delta(n, 0.4, alpha) == pytest.approx(0.4 * expected, rel=1e-5)


@pytest.mark.parametrize("d_z", [0.1, 0.25, 0.5, 1.2])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_the_queries_needed_match_statsmodels(d_z: float, alpha: float) -> None:
    from foundry_bridge.metrics.power import queries_needed

    expected = math.ceil(TTestPower().solve_power(effect_size=d_z, alpha=alpha, power=0.8, alternative="two-sided"))
    assert queries_needed(d_z * 0.3, 0.3, alpha) == max(2, expected)


def test_each_gated_metric_reports_its_power_in_json_and_markdown(runs) -> None:
    comparison = compare_runs(runs, fail_on=["relevance:0.5"], judge_tests=False)
    (check,) = comparison.gate["checks"]
    sd = float(DIFFS.std(ddof=1))
    power = check["power"]
    assert check["n_paired"] == DIFFS.size and power["n"] == DIFFS.size
    mde = sd * TTestPower().solve_power(nobs=DIFFS.size, alpha=0.05, power=0.8)
    assert power["mde"] == pytest.approx(mde, rel=1e-5)
    needed = math.ceil(TTestPower().solve_power(effect_size=0.5 / sd, alpha=0.05, power=0.8))
    assert power["delta"] == 0.5 and power["queries_needed"] == needed  # default Δ: the tolerated drop
    dumped = json.loads(comparison.model_dump_json())
    assert dumped["gate"]["checks"][0]["power"]["queries_needed"] == needed
    text = render_comparison_markdown(comparison)
    assert f"detects |Δ| ≥ {mde:.4g} at n = 11 (80% power, α = 0.05)" in text
    assert f"Δ = 0.5 needs {needed} paired queries" in text


def test_power_delta_asks_for_the_queries_a_given_delta_needs(runs) -> None:
    result = CliRunner().invoke(
        cli,
        ["compare", str(runs[0]), str(runs[1]), "--fail-on", "relevance", "--power-delta", "0.25", "--format", "json"],
        env={"GITHUB_STEP_SUMMARY": ""},
    )
    assert getattr(result.exception, "exit_code", None) == 3  # relevance regressed: the gate fails as before
    (check,) = json.loads(result.output[result.output.index("{") :])["gate"]["checks"]
    sd = float(DIFFS.std(ddof=1))
    needed = math.ceil(TTestPower().solve_power(effect_size=0.25 / sd, alpha=0.05, power=0.8))
    assert check["power"]["delta"] == 0.25 and check["power"]["queries_needed"] == needed
