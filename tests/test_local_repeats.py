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
    """The n-th time a request's text is seen: 5 when n is odd, 3 when even."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: JudgeRequest) -> FakeAnswer:
        with self.lock:
            self.seen[request.data] += 1
            n = self.seen[request.data]
        return score_answer(5 if n % 2 else 3)


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
