"""#36 item 5: every prefix of the verdict queue is a probability sample — labelling the first n lines of the
queue file the CLI writes, for any n, gives corrected means that cover the truth and are unbiased.

The population: a 300-row mock run judged by groundedness and relevance (both 1–5, pass at 3); the rows where
the two judges disagree on pass/fail are the ones the queue favours (twice the share). A known human truth, seeded
once: each judge's score moved by −1, 0, +1 with probability .15/.70/.15 where the judges agree and .40/.40/.20
where they disagree (the judge is too high there), clipped to 1–5; human pass = score ≥ 3. The queue's earlier
order (highest π first) put the disagreement rows first, so a user who labelled its first lines got biased means.

Each of ``REPS`` seeds orders the queue as ``report --verdict-queue`` does (``queue_order`` per judge,
``queue_merge``) and labels its first 20, 60 or 200 lines (about 10, 30 and 100 labels per judge); the labels'
probabilities are recomputed from the lines' own fields (``inclusion_array``) and the means estimated as the report
does (``estimate_mean``). One seed goes through the CLI end to end (the file it writes, its first lines labelled, the
JSON report read back) and must match the library loop to 1e-9. Tolerance (docs/trust.md): coverage of each
95 % interval ≥ 0.95 − 3 Monte Carlo SE of its own count; |bias| ≤ 3 Monte Carlo SE.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.columns import RunColumns
from foundry_bridge.dataset.verdicts import HumanVerdict, inclusion_array
from foundry_bridge.metrics.ppi import QueueDraw, estimate_mean, queue_merge, queue_order
from foundry_bridge.report._trust import _collect, _spread

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
SEED = 36
ROWS = 300
REPS = 200
LINES = (20, 60, 200)
SCALE = (1.0, 2.0, 3.0, 4.0, 5.0)
MAPPING = """version: 1
dataset:
  format: jsonl
  fields: {query_id: query_id, query: query, kind: kind, context: context, response: response,
           ground_truth: ground_truth}
evaluators:
  - evaluator: builtin.groundedness
    init: {deployment_name: gpt-4o-mini, threshold: 3}
  - evaluator: builtin.relevance
    init: {deployment_name: gpt-4o-mini, threshold: 3}
"""


class Population:
    """The run's judges (evaluator, score, passed), the rows' ids and the human truth of each judge."""

    def __init__(self, run: Path) -> None:
        cols = _collect(RunColumns.open(run))
        self.ids = list(cols.query_ids)
        self.spread = _spread(cols)
        self.judges = [(j.evaluator, cols.real(j.score), cols.real(j.passed)) for j in cols.judges.values()]
        rng = np.random.default_rng(SEED)
        self.human: list[tuple[np.ndarray, np.ndarray]] = []
        for _, score, _ in self.judges:
            p = np.where(self.spread[:, None] > 0, [0.40, 0.40, 0.20], [0.15, 0.70, 0.15])
            step = (rng.random(score.size)[:, None] > np.cumsum(p, axis=1)).sum(axis=1) - 1
            hs = np.clip(score + step, 1, 5)
            self.human.append((hs, (hs >= 3).astype(float)))

    def queue(self, seed: int, lines: int) -> list[tuple[int, QueueDraw]]:
        """The first ``lines`` (judge, draw) of the queue ``report --verdict-queue-seed seed`` writes."""
        orders = [
            queue_order(score, np.full(score.size, np.nan), spread=self.spread, seed=seed + k)
            for k, (_, score, _) in enumerate(self.judges)
        ]
        return queue_merge(orders, lines)

    def estimates(self, labelled: list[tuple[int, QueueDraw]]) -> list[dict[str, Any]]:
        """Per judge, the report's estimates from these labelled queue lines: {scale: MeanEstimates}."""
        verdicts = [
            HumanVerdict(
                self.ids[d.index],
                self.judges[k][0],
                self.human[k][0][d.index],
                None,
                None,
                0,
                None,
                None,
                (d.place, d.share, d.next_key),
            )
            for k, d in labelled
        ]
        out = []
        for k, (evaluator, score, passed) in enumerate(self.judges):
            hs, hp = self.human[k]
            mine = [d for j, d in labelled if j == k]
            pi = inclusion_array(verdicts, evaluator, self.ids).probability
            ys, yp = np.full(score.size, np.nan), np.full(score.size, np.nan)
            rows = [d.index for d in mine]
            ys[rows], yp[rows] = hs[rows], hp[rows]
            out.append(
                {
                    "score": estimate_mean(score, ys, scale=SCALE, probability=pi),
                    "pass": estimate_mean(passed, yp, scale=(0, 1), probability=pi),
                }
            )
        return out

    def truth(self, k: int, what: str) -> float:
        hs, hp = self.human[k]
        return float((hs if what == "score" else hp).mean())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("prefix")
    rows = [json.loads(x) for x in SAMPLE.read_text().splitlines()]
    rows = [r for r in rows if r.get("kind") == "positive"]
    data = base / "data.jsonl"
    data.write_text("".join(json.dumps(rows[i % len(rows)] | {"query_id": f"s{i:04d}"}) + "\n" for i in range(ROWS)))
    (base / "map.yaml").write_text(MAPPING)
    args = ["run", str(data), "--mapping", str(base / "map.yaml"), "--backend", "mock", "--out", str(base / "r")]
    made = CliRunner().invoke(cli, [*args, "--quiet"])
    assert made.exit_code == 0, made.output
    return base / "r"


def test_every_prefix_of_the_queue_covers_the_truth_without_bias(run: Path) -> None:
    pop = Population(run)
    assert 0.05 < float(pop.spread.mean()) < 0.5  # the design favours some rows: not a uniform sample
    for lines in LINES:
        got: dict[tuple[int, str, str], list[tuple[float, float, float]]] = {}
        for seed in range(REPS):
            for k, means in enumerate(pop.estimates(pop.queue(1000 + seed, lines))):
                for what, m in means.items():
                    for name in ("human_only", "ppi", "ppi_plus"):
                        e = getattr(m, name)
                        got.setdefault((k, what, name), []).append((e.mean, e.low, e.high))
        for (k, what, name), values in got.items():
            truth = pop.truth(k, what)
            a = np.asarray(values)
            bias, se = float(a[:, 0].mean() - truth), float(a[:, 0].std(ddof=1) / math.sqrt(len(a)))
            shown = a[~np.isnan(a[:, 1])]
            cover = float(((shown[:, 1] <= truth) & (truth <= shown[:, 2])).mean()) if len(shown) else math.nan
            floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / max(1, len(shown)))
            print(f"{lines} lines, judge {k} {what} {name}: bias {bias:+.4f} (SE {se:.4f}), cover {cover:.3f}")
            assert abs(bias) <= 3 * se + 1e-12, (lines, k, what, name, bias, se)
            if len(shown) >= 50:
                assert cover >= floor, (lines, k, what, name, cover, floor)
                assert (shown[:, 2] > shown[:, 1]).all() and (shown[:, 1] <= shown[:, 0] + 1e-12).all()
            else:
                assert lines == LINES[0]  # only the shortest prefix may leave an interval unshown


def test_the_cli_queue_is_the_library_order_and_its_report_weights_a_labelled_prefix(run: Path, tmp_path: Path) -> None:
    """One round end to end: `report --verdict-queue` (seed 7, 200 lines), the first 60 lines labelled by the
    truth, `report --human-verdicts` read back: the same estimates as the loop above. Then a gap (line 3 left
    blank): the labels after it are left out, and the report says so."""
    pop, runner, queue = Population(run), CliRunner(), tmp_path / "q.jsonl"
    made = runner.invoke(
        cli,
        [
            *["report", str(run), "--format", "json", "--out", str(tmp_path / "rep.json")],
            *["--verdict-queue", str(queue), "--verdict-queue-size", "200", "--verdict-queue-seed", "7"],
        ],
    )
    assert made.exit_code == 0, made.output
    lines = [json.loads(x) for x in queue.read_text().splitlines()]
    want = pop.queue(7, 200)
    evaluators = [e for e, _, _ in pop.judges]
    assert [(x["evaluator"], x["query_id"], x["queue_place"]) for x in lines] == [
        (evaluators[k], pop.ids[d.index], d.place) for k, d in want
    ]
    library = pop.estimates(want[:60])
    report = _report(runner, run, queue, lines, pop, blank=set(), first=60)
    for k, evaluator in enumerate(evaluators):
        entry = next(j for j in report["trust"]["judges"] if j["evaluator"] == evaluator)
        for what, key in (("score", "score_mean"), ("pass", "pass_rate")):
            for name in ("human_only", "ppi", "ppi_plus"):
                mine, theirs = getattr(library[k][what], name), entry["trust"][key][name]
                for field in ("mean", "low", "high"):
                    assert theirs[field] == pytest.approx(getattr(mine, field), rel=1e-9, abs=1e-12)
    gap = _report(runner, run, queue, lines, pop, blank={2}, first=60)
    judge = lines[2]["evaluator"]
    entry = next(j for j in gap["trust"]["judges"] if j["evaluator"] == judge)
    place = lines[2]["queue_place"]
    after = sum(1 for x in lines[3:60] if x["evaluator"] == judge)
    assert entry["trust"]["n_labeled"] == sum(1 for x in lines[:2] if x["evaluator"] == judge)
    assert any(
        f"{after} labels on {judge} are at verdict-queue places after place {place}" in m for m in entry["missing"]
    )


def _report(
    runner: CliRunner,
    run: Path,
    queue: Path,
    lines: list[dict[str, Any]],
    pop: Population,
    *,
    blank: set[int],
    first: int,
) -> dict[str, Any]:
    """The JSON report of ``run`` with the queue's first ``first`` lines (but ``blank``) labelled by the truth."""
    evaluators = [e for e, _, _ in pop.judges]
    filled = []
    for i, x in enumerate(lines):
        if i < first and i not in blank:
            k, row = evaluators.index(x["evaluator"]), pop.ids.index(x["query_id"])
            x = x | {"score": float(pop.human[k][0][row])}
        filled.append(json.dumps(x) + "\n")
    labelled = queue.with_name("labelled.jsonl")
    labelled.write_text("".join(filled))
    out = queue.with_name("report.json")
    got = runner.invoke(
        cli, ["report", str(run), "--human-verdicts", str(labelled), "--format", "json", "--out", str(out)]
    )
    assert got.exit_code == 0, got.output
    return dict(json.loads(out.read_text()))
