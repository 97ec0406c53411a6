"""`run --backend local --repeats K`: every row judged K times, the repeat index in the response-cache key (a
cached re-run is free), and the report's judge noise read from the K run folders — against a fake judge on
127.0.0.1 whose noise is known: each distinct request is answered 5, then 3, then 5 … (so every row's score
varies by exactly that, and a threshold of 3 never flips the verdict)."""

from __future__ import annotations

import json
import statistics
import threading
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest, score_answer

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
MAPPING = ROOT / "mappings" / "default.yaml"


class Alternating:
    """The n-th time a request's text is seen: ``high`` (5) when n is odd, ``low`` (3) when even."""

    def __init__(self, high: int = 5, low: int = 3) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.high, self.low = high, low

    def __call__(self, request: JudgeRequest) -> FakeAnswer:
        with self.lock:
            self.seen[request.data] += 1
            n = self.seen[request.data]
        return score_answer(self.high if n % 2 else self.low)


def test_repeats_judge_each_row_k_times_cache_by_repeat_and_feed_the_noise(tmp_path: Path) -> None:
    subset = tmp_path / "subset.jsonl"  # 3 positive answered rows × 3 judges
    keep = ("q01", "q03", "q04")
    subset.write_text("".join(x for x in BENEFITS.read_text().splitlines(True) if json.loads(x)["query_id"] in keep))
    rule = Alternating()
    with FakeJudgeServer(rule) as judge:
        args = ["run", str(subset), "--mapping", str(MAPPING), "--backend", "local"]
        args += ["--judge-endpoint", judge.base_url, "--judge-model", "m", "--cache-dir", str(tmp_path / "cache")]
        args += ["--out", str(tmp_path / "run"), "--quiet", "--repeats", "3", "--concurrency", "1"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert judge.calls == 3 * 9  # every row × judge, three times: each repeat its own cache key
        folders = [tmp_path / "run", tmp_path / "run.repeat2", tmp_path / "run.repeat3"]
        assert all((f / "results.jsonl").is_file() for f in folders)
        judge.reset()
        again = CliRunner().invoke(cli, [*args, "--force"], catch_exceptions=False)
        assert again.exit_code == 0, again.output
        assert judge.calls == 0  # the cached re-run of all three repeats asks the judge nothing

    report = CliRunner().invoke(
        cli, ["report", str(folders[0]), "--format", "json", *(f"--repeat-run={f}" for f in folders[1:])]
    )
    assert report.exit_code == 0, report.output
    noise = {n["criterion"]: n for n in json.loads(report.output)["trust"]["noise"]}
    assert set(noise) == {"retrieval", "groundedness", "relevance"}
    expected_sd = statistics.stdev([5, 3, 5])  # every row: 5, 3, 5 across the three repeats
    for entry in noise.values():
        assert entry["runs"] == 3 and entry["noise"]["rows"] == 3
        assert abs(entry["noise"]["noise_sd"] - expected_sd) < 1e-9
        assert entry["noise"]["flip_rate"] == 0 and entry["flaky_queries"] == []  # 3 passes at threshold 3


def test_compare_calls_a_difference_inside_the_judges_noise_no_change(tmp_path: Path) -> None:
    """Baseline judged 3 times by a judge answering 5, 1, 5 (noise sd 2.31); the candidate's judge answers 4 on
    every row: Δ = −1 on every scored row, significant on its own, but inside the baseline judge's noise band."""

    def run(judge: FakeJudgeServer, out: Path, *extra: str) -> None:
        args = ["run", str(BENEFITS), "--mapping", str(MAPPING), "--backend", "local", "--judge-endpoint"]
        args += [judge.base_url, "--judge-model", "m", "--no-cache", "--out", str(out), "--quiet", *extra]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output

    with FakeJudgeServer(Alternating(5, 1)) as judge:
        run(judge, tmp_path / "base", "--repeats", "3")
    with FakeJudgeServer(lambda request: score_answer(4)) as judge:
        run(judge, tmp_path / "cand")
    args = [
        "compare",
        str(tmp_path / "base"),
        str(tmp_path / "cand"),
        "--format",
        "json",
        "--metric",
        "groundedness",
        "--quiet",
    ]
    plain = json.loads(CliRunner().invoke(cli, args).output)
    rel = next(m for m in plain["metrics"] if m["section"] == "positive")
    assert rel["delta"] == -1 and rel["verdict"] == "worse"  # on its own: a significant regression
    noisy = CliRunner().invoke(
        cli, [*args, f"--repeat-run={tmp_path / 'base.repeat2'}", "--repeat-run", str(tmp_path / "base.repeat3")]
    )
    assert noisy.exit_code == 0, noisy.output
    held = next(m for m in json.loads(noisy.output)["metrics"] if m["section"] == "positive")
    assert held["delta"] == -1 and held["verdict"] == "within judge noise" and not held["significant"]
