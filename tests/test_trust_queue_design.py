"""#24 item 2: the verdict queue samples rows with known probabilities, and the inverse-probability-weighted PPI
mean it feeds is unbiased for the humans' truth — a seeded simulation of a known population.

The population (fixed, ``ROWS`` rows): a human pass/fail with true pass rate 0.65; the first judge passes 15 % of
the rows the human fails (and every row the human passes); a second judge errs on 20 % of rows independently, so
the rows where the judges disagree are rich in the first judge's errors — the rows the queue favours. Each of
``REPS`` repetitions orders the queue (``queue_sample``, its own seed), labels its first ``SIZE`` rows and estimates the
pass rate from the drawn rows' human labels. Tolerance: |bias| within 2 Monte Carlo standard errors; coverage of
the 95 % interval ≥ 0.92 (0.95 − 3·√(.95·.05/REPS) ≈ 0.914).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.dataset.verdicts import read_verdicts
from foundry_bridge.errors import DatasetError
from foundry_bridge.metrics.ppi import (
    estimate_mean,
    ipw_ppi_mean,
    queue_order,
    queue_sample,
)

SEED = 20240624
ROWS = 2000
REPS = 300
SIZE = 100
TRUE_PASS = 0.65


def _population() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    human = (rng.random(ROWS) < TRUE_PASS).astype(float)
    judge = np.where(human == 1, 1.0, (rng.random(ROWS) < 0.15).astype(float))
    other = np.where(rng.random(ROWS) < 0.2, 1 - human, human)
    return human, judge, (judge != other).astype(float)


def _simulate(weighted: bool) -> tuple[float, float, float]:
    human, judge, spread = _population()
    truth = float(human.mean())
    unlabelled = np.full(ROWS, np.nan)
    means, covered = [], 0
    for rep in range(REPS):
        draws = queue_sample(judge, unlabelled, size=SIZE, spread=spread, seed=rep)
        rows = np.array([d.index for d in draws])
        h = np.full(ROWS, np.nan)
        h[rows] = human[rows]
        if weighted:
            pi = np.full(ROWS, np.nan)
            pi[rows] = [d.probability for d in draws]
            est = ipw_ppi_mean(judge, h, pi, scale=(0, 1))
        else:
            ppi = estimate_mean(judge, h, scale=(0, 1)).ppi
            assert ppi is not None
            est = ppi
        means.append(est.mean)
        covered += est.low <= truth <= est.high
    m = np.asarray(means)
    return float(m.mean() - truth), float(m.std(ddof=1) / math.sqrt(REPS)), covered / REPS


def test_queue_shares_have_a_floor_and_favour_disagreement() -> None:
    _human, judge, spread = _population()
    order = queue_order(judge, np.full(ROWS, np.nan), spread=spread)
    share = np.zeros(ROWS)
    share[[d.index for d in order]] = [d.share for d in order]
    assert len(order) == ROWS and share.sum() == pytest.approx(1.0)
    assert share.min() >= 0.2 / ROWS - 1e-12
    assert share[spread == 1].mean() > share[spread == 0].mean()  # disagreement rows are favoured


def test_queue_selected_ipw_ppi_mean_is_unbiased_and_covers() -> None:
    bias, se, coverage = _simulate(weighted=True)
    print(f"IPW PPI: bias {bias:+.4f}, MC SE {se:.4f}, coverage {coverage:.3f}")
    assert abs(bias) <= 2 * se
    assert coverage >= 0.92


def test_queue_selected_unweighted_ppi_mean_is_biased() -> None:
    """The same queue's labels through the unweighted PPI (weights ignored): the bias the issue measured."""
    bias, se, coverage = _simulate(weighted=False)
    print(f"unweighted PPI: bias {bias:+.4f}, MC SE {se:.4f}, coverage {coverage:.3f}")
    assert abs(bias) > 2 * se


def test_uniform_audit_sample_has_equal_probabilities() -> None:
    _human, judge, spread = _population()
    draws = queue_sample(judge, np.full(ROWS, np.nan), size=SIZE, spread=spread, audit=True)
    assert len(draws) == SIZE and max(d.probability for d in draws) == pytest.approx(min(d.probability for d in draws))
    assert all(d.design == "uniform audit" for d in draws)


SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "benefits"


def _mock_run(tmp_path: Path) -> tuple[CliRunner, Path]:
    runner = CliRunner()
    out = tmp_path / "r"
    run = runner.invoke(cli, ["run", str(SAMPLE / "rag_eval.jsonl"), "--backend", "mock", "--out", str(out), "--quiet"])
    assert run.exit_code == 0, run.output
    return runner, out


def test_the_queue_file_carries_probabilities_and_the_report_weights_by_them(tmp_path: Path) -> None:
    """`report --verdict-queue q.jsonl`, labels filled in, `report --human-verdicts q.jsonl`: the weighted PPI and
    the line saying so."""
    runner, run = _mock_run(tmp_path)
    queue = tmp_path / "q.jsonl"
    made = runner.invoke(cli, ["report", str(run), "--verdict-queue", str(queue), "--verdict-queue-size", "18"])
    assert made.exit_code == 0, made.output
    lines = [json.loads(x) for x in queue.read_text().splitlines()]
    assert len(lines) == 18 and all(0 < x["queue_share"] <= 1 and x["design"] for x in lines)
    assert read_verdicts(queue).verdicts == []  # unfilled: not verdicts yet
    rng = np.random.default_rng(SEED)
    filled = [x | {"passed": bool(rng.random() < 0.7)} for x in lines]
    queue.write_text("".join(json.dumps(x) + "\n" for x in filled))
    back = read_verdicts(queue).verdicts
    assert [v.queue for v in back] == [(x["queue_place"], x["queue_share"], x["queue_next_key"]) for x in lines]
    md = runner.invoke(cli, ["report", str(run), "--human-verdicts", str(queue), "--format", "md"])
    assert md.exit_code == 0, md.output
    assert "PPI\\+\\+ — labels weighted by 1/" in md.output  # Markdown-escaped
    assert "treated as a uniform sample" not in md.output
    data = json.loads(
        runner.invoke(cli, ["report", str(run), "--human-verdicts", str(queue), "--format", "json"]).output
    )
    rates = [j["trust"]["pass_rate"] for j in data["trust"]["judges"] if j["trust"]["n_labeled"]]
    assert rates and all(r["ppi"]["method"].startswith("PPI, inverse-probability weighted") for r in rates)


def test_labels_without_probabilities_are_said_to_be_treated_as_uniform(tmp_path: Path) -> None:
    runner, run = _mock_run(tmp_path)
    verdicts = SAMPLE / "human_verdicts.jsonl"
    md = runner.invoke(cli, ["report", str(run), "--human-verdicts", str(verdicts), "--format", "md"])
    assert md.exit_code == 0, md.output
    assert "PPI\\+\\+ — labels with no inclusion probability: treated as a uniform sample" in md.output


def test_an_inclusion_probability_off_zero_one_is_a_located_error(tmp_path: Path) -> None:
    bad = tmp_path / "v.jsonl"
    bad.write_text('{"query_id": "q1", "evaluator": "relevance", "passed": true, "inclusion_probability": 1.5}\n')
    with pytest.raises(DatasetError) as err:
        read_verdicts(bad)
    assert err.value.line == 1 and err.value.field == "inclusion_probability"
