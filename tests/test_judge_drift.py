"""Judge drift (issue #24 item 6): compare names each judge metric's two judges and flags a change of judge; with
--anchor OLD NEW (the same frozen rows judged by the old and the new judge) it tells "judge changed" from "system
changed" by the documented rule (compare._drift), the numbers checked against scipy and sklearn.

Hand-made run folders of the benefits sample (11 positive, 3 negative queries), relevance scores chosen here:
- a new judge that scores +1 on 10 of the 11 positive anchor rows, and the same system judged by it (+1 on 9 of
  11): the system's Δ is the judge's → "judge changed";
- the same judge (the anchor judged twice alike) and a better system (+1 on 7 of 11) → "system changed".
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from report_helpers import JUDGE_SCORES, write_run
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from foundry_bridge.cli import cli
from foundry_bridge.comparison import MetricComparison, compare_runs, render_comparison_markdown
from foundry_bridge.comparison._drift import drift_verdict
from foundry_bridge.errors import FoundryBridgeError
from foundry_bridge.runfolder import judge_identities

POSITIVE = [f"q{i:02d}" for i in range(1, 12)]
OLD = dict(zip(POSITIVE, [3, 2, 4, 3, 2, 3, 4, 3, 2, 3, 4], strict=True)) | {"n01": 2, "n02": 3, "n03": 2}
NO_SHIFT_SYSTEM = {"q02", "q05"}  # the new judge's +1 is missing on these rows of the compared runs
NO_SHIFT_ANCHOR = {"q08"}  # ... and on this anchor row
IMPROVED = ["q01", "q03", "q04", "q06", "q07", "q09", "q10"]  # the better system: +1 here


def _relevance(plus_one: set[str] | list[str]) -> dict[str, Any]:
    scores = copy.deepcopy(JUDGE_SCORES)
    scores["relevance"] = {q: s + (1 if q in plus_one else 0) for q, s in OLD.items()}
    return scores


def _manifest(deployment: str) -> dict[str, Any]:
    judges = [{"name": c, "evaluator": f"builtin.{c}", "init": {"deployment_name": deployment, "threshold": 3}}
              for c in ("retrieval", "groundedness", "relevance")]  # fmt: skip
    docret = {"name": "document_retrieval", "evaluator": "builtin.document_retrieval", "init": {}}
    return {"backend": "fixture", "status": "completed", "criteria": [docret, *judges]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("drift")
    shifted = set(OLD) - NO_SHIFT_SYSTEM - {"n01", "n02", "n03"}
    out = {
        "a": write_run(root / "a", scores=_relevance(set()), manifest=_manifest("gpt-4o")),
        "b_new_judge": write_run(root / "b_new_judge", scores=_relevance(shifted), manifest=_manifest("gpt-4.1")),
        "b_better": write_run(root / "b_better", scores=_relevance(IMPROVED), manifest=_manifest("gpt-4o")),
        "anchor_old": write_run(root / "anchor_old", scores=_relevance(set()), manifest=_manifest("gpt-4o")),
        "anchor_new": write_run(
            root / "anchor_new", scores=_relevance(set(POSITIVE) - NO_SHIFT_ANCHOR), manifest=_manifest("gpt-4.1")
        ),
        "anchor_again": write_run(root / "anchor_again", scores=_relevance(set()), manifest=_manifest("gpt-4o")),
    }
    humans = [{"query_id": q, "evaluator": "relevance", "score": OLD[q], "rater": "ana"} for q in POSITIVE]
    (root / "humans.jsonl").write_text("".join(json.dumps(h) + "\n" for h in humans))
    out["humans"] = root / "humans.jsonl"
    return out


def _t_half(diffs: list[float]) -> float:
    """Student's half-width t₀.₉₇₅,ₙ₋₁ · s/√n, by scipy."""
    n = len(diffs)
    return float(stats.t.ppf(0.975, n - 1) * stats.tstd(diffs) / math.sqrt(n))


def test_the_judge_of_each_criterion_is_read_from_the_manifest(runs) -> None:
    assert judge_identities(runs["b_new_judge"]) == {
        "document_retrieval": None,
        "retrieval": "gpt-4.1",
        "groundedness": "gpt-4.1",
        "relevance": "gpt-4.1",
    }
    local = _manifest("ignored") | {
        "local": {"library": "azure-ai-evaluation 1.9.0", "judges": {"relevance": {"model": "llama3", "endpoint": "http://h/v1"}}},
        "evaluators": [{"name": "groundedness", "evaluator_name": "builtin.groundedness", "evaluator_version": "4"}],
    }  # fmt: skip
    folder = write_run(runs["a"].parent / "local", manifest=local)
    got = judge_identities(folder)
    assert got["relevance"] == "llama3 @ http://h/v1 (azure-ai-evaluation 1.9.0)"
    assert got["groundedness"] == "ignored (builtin.groundedness 4)"
    assert judge_identities(runs["a"].parent / "nowhere") == {}


def test_different_judges_are_flagged_beside_their_metrics(runs) -> None:
    cmp = compare_runs([runs["a"], runs["b_new_judge"]], n_resamples=200)
    rel = cmp.get("b_new_judge", "relevance")
    assert rel.judges == ["gpt-4o", "gpt-4.1"] and rel.judges_differ
    assert cmp.get("b_new_judge", "relevance/pass").judges_differ
    assert cmp.get("b_new_judge", "rr@10").judges is None  # no judge scores a local measure
    assert cmp.drift is None
    same = compare_runs([runs["a"], runs["b_better"]], n_resamples=200).get("b_better", "relevance")
    assert same.judges == ["gpt-4o", "gpt-4o"] and not same.judges_differ
    md = render_comparison_markdown(cmp)
    assert "**better †**" in md
    assert "judges differ: gpt-4o → gpt-4.1; a difference here may be the judge, not the system" in md


def test_a_judge_that_scores_one_higher_on_the_anchor_explains_the_system_delta(runs) -> None:
    cmp = compare_runs(
        [runs["a"], runs["b_new_judge"]],
        anchor=(runs["anchor_old"], runs["anchor_new"]),
        anchor_verdicts=runs["humans"],
        n_resamples=200,
        correction="holm",
    )
    assert cmp.drift is not None
    assert cmp.drift.judges_old["relevance"] == "gpt-4o" and cmp.drift.judges_new["relevance"] == "gpt-4.1"
    row = next(r for r in cmp.drift.rows if r.metric == "relevance" and r.section == "positive")
    d_s = [0.0 if q in NO_SHIFT_SYSTEM else 1.0 for q in POSITIVE]
    d_j = [0.0 if q in NO_SHIFT_ANCHOR else 1.0 for q in POSITIVE]
    h_s, h_j = _t_half(d_s), _t_half(d_j)
    assert row.system_delta == pytest.approx(9 / 11) and row.anchor_shift == pytest.approx(10 / 11)
    assert row.system_high - row.system_delta == pytest.approx(h_s)
    assert row.anchor_high - row.anchor_shift == pytest.approx(h_j)
    assert row.anchor_n == 11 and row.system_significant and row.anchor_significant
    # the anchor's family: relevance (Wilcoxon over 10 tied +1s, exact: 2/2^10) and relevance/pass (McNemar: 3
    # discordant pairs, 2·(1/2)^3); Holm over the two
    assert row.anchor_p_adjusted == pytest.approx(2 * 2 / 2**10)
    assert row.net_delta == pytest.approx(-1 / 11)
    h_n = math.hypot(h_s, h_j)  # √(h_S² + h_J²)
    assert (row.net_low, row.net_high) == pytest.approx((-1 / 11 - h_n, -1 / 11 + h_n))
    assert row.verdict == "judge changed"
    # the humans gave the old judge's scores: the old judge agrees perfectly, the new one as sklearn says
    new = [OLD[q] + (0 if q in NO_SHIFT_ANCHOR else 1) for q in POSITIVE]
    human = [OLD[q] for q in POSITIVE]
    assert row.labeled == 11 and row.kappa_old == pytest.approx(1.0)
    assert row.kappa_new == pytest.approx(cohen_kappa_score(new, human, weights="quadratic", labels=[1, 2, 3, 4, 5]))
    passed = next(r for r in cmp.drift.rows if r.metric == "relevance/pass" and r.section == "positive")
    assert passed.kappa_new == pytest.approx(cohen_kappa_score([s >= 3 for s in new], [s >= 3 for s in human]))
    # a judge that did not move: no change
    assert next(r for r in cmp.drift.rows if r.metric == "groundedness" and r.section == "positive").verdict == (
        "no change"
    )
    # too few negative queries (3 < --min-paired 10) to decide
    assert next(r for r in cmp.drift.rows if r.metric == "relevance" and r.section == "negative").verdict == (
        "not decided"
    )


def test_the_same_judge_and_a_better_system_is_a_system_change(runs) -> None:
    cmp = compare_runs(
        [runs["a"], runs["b_better"]], anchor=(runs["anchor_old"], runs["anchor_again"]), n_resamples=200
    )
    assert cmp.drift is not None
    row = next(r for r in cmp.drift.rows if r.metric == "relevance" and r.section == "positive")
    d_s = [1.0 if q in IMPROVED else 0.0 for q in POSITIVE]
    h_s = _t_half(d_s)
    assert row.system_delta == pytest.approx(7 / 11) and row.system_significant
    assert (row.anchor_shift, row.anchor_low, row.anchor_high, row.anchor_significant) == (0.0, 0.0, 0.0, False)
    assert (row.net_low, row.net_high) == pytest.approx((7 / 11 - h_s, 7 / 11 + h_s))
    assert row.kappa_old is None and row.labeled == 0  # no human verdicts given
    assert row.verdict == "system changed"


def _row(delta: float | None, half: float, significant: bool, verdict: str = "better") -> MetricComparison:
    return MetricComparison.model_validate(
        {"candidate": "b", "section": "positive", "metric": "relevance", "higher_is_better": True, "n_paired": 20,
         "n_excluded": 0, "baseline_mean": 3.0, "candidate_mean": 3.0, "delta": delta,
         "ci_low": None if delta is None else delta - half, "ci_high": None if delta is None else delta + half,
         "p_value": 0.01, "test": "t", "significant": significant, "verdict": verdict, "wins": 0, "ties": 0,
         "losses": 0}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("system", "anchor", "expected"),
    [
        ((1.0, 0.3, True), (1.0, 0.3, True), "judge changed"),  # N = 0 ± 0.42
        ((0.2, 0.3, False), (1.0, 0.3, True), "both"),  # N = −0.8 ± 0.42: the judge's +1 hides a drop
        ((1.0, 0.3, True), (0.1, 0.3, False), "system changed"),
        ((0.1, 0.3, False), (0.1, 0.3, False), "no change"),
        ((None, 0.3, False), (1.0, 0.3, True), "not decided"),
    ],
)
def test_the_rule(system, anchor, expected) -> None:
    verdict, low, high = drift_verdict(_row(*system), _row(*anchor))
    assert verdict == expected
    if expected != "not decided":
        net, half = system[0] - anchor[0], 0.3 * 2**0.5
        assert (low, high) == pytest.approx((net - half, net + half))


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", *args, "--resamples", "200"], env={"GITHUB_STEP_SUMMARY": ""})
    if isinstance(result.exception, FoundryBridgeError):
        return result.exception.exit_code, result.output + str(result.exception)
    return result.exit_code, result.output


def test_the_cli_prints_the_drift_verdict_with_anchor(runs) -> None:
    code, out = _cli(
        str(runs["a"]), str(runs["b_new_judge"]), "--anchor", str(runs["anchor_old"]), str(runs["anchor_new"]),
        "--human-verdicts", str(runs["humans"]),
    )  # fmt: skip
    assert code == 0, out
    assert "### Judge drift" in out and "relevance: gpt-4o → gpt-4.1" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("| b\\_new\\_judge | positive | relevance |"))
    assert "**judge changed**" in line and "1 / " in line
    code, out = _cli(str(runs["a"]), str(runs["b_new_judge"]), "--format", "json", "--anchor",
                     str(runs["anchor_old"]), str(runs["anchor_new"]))  # fmt: skip
    data = json.loads(out)
    verdicts = {r["verdict"] for r in data["drift"]["rows"] if r["metric"] == "relevance"}
    assert verdicts == {"judge changed", "not decided"}  # positive / negative (3 queries: too few)


def test_the_cli_flags_different_judges_without_anchor(runs) -> None:
    code, out = _cli(str(runs["a"]), str(runs["b_new_judge"]))
    assert code == 0, out
    assert "judges differ: gpt-4o → gpt-4.1" in out and "### Judge drift" not in out
    code, out = _cli(str(runs["a"]), str(runs["b_new_judge"]), "--human-verdicts", str(runs["humans"]))
    assert code == 2 and "--anchor" in out
