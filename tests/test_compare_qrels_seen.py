"""The "What was seen" bullet of issue #26 that items 1 and 2 answer, through the CLI only (each fails on the code
before `compare --qrels`): compare could not read run files — every run had to become a run folder through
`run --backend mock`, whose validation refused unjudged queries, whose sweep table showed Foundry coverage and stage
counts meaningless for retrieval, and whose cutoffs were fixed when the folder was made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from trec_sweep_helpers import SYSTEMS, write_sweep

from foundry_bridge.cli import cli
from foundry_bridge.errors import FoundryBridgeError

STAGES = ("search", "assembly", "generation", "ok", "unknown")  # a run folder's stage columns


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    return write_sweep(tmp_path_factory.mktemp("sweep"))


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", *args], env={"GITHUB_STEP_SUMMARY": ""})
    if isinstance(result.exception, FoundryBridgeError):  # the console script's exit code (cli.main)
        return result.exception.exit_code, result.output + str(result.exception)
    return result.exit_code, result.output


def test_compare_reads_run_files_with_qrels_and_unjudged_queries(sweep) -> None:
    """What was seen: compare could not read run files (a run folder through `run --backend mock` first, whose
    validation refused the unjudged queries)."""
    qrels, runs = sweep
    code, out = _cli("--qrels", str(qrels), *map(str, runs.values()), "--format", "json", "--resamples", "1000")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["qrels"]["topics"] == 40 and doc["candidates"] == ["sys_b", "sys_c", "sys_d"]
    assert [r["metric"] for r in doc["all_pairs"]["rankings"]] == ["ndcg@10", "rr@10", "recall@10"]
    assert [s["system"] for s in doc["all_pairs"]["rankings"][0]["systems"]] == list(SYSTEMS)
    assert len(doc["all_pairs"]["pairs"]) == 6 * 3


def test_the_sweep_of_run_files_shows_no_foundry_coverage_or_stages(sweep) -> None:
    """What was seen: the sweep table showed `coverage 504/540` and `unknown 59` stages, meaningless for retrieval."""
    qrels, runs = sweep
    code, out = _cli("--qrels", str(qrels), *map(str, runs.values()), "--resamples", "1000")
    assert code == 0, out
    sweep_table = out.split("### Sweep", 1)[1].split("\n\n")[1]
    header = sweep_table.splitlines()[0]
    assert header == "| run | ndcg@10 | rr@10 | recall@10 |"
    assert "coverage" not in out and not any(f"| {s} |" in header for s in STAGES)
    assert "errored" not in out


def test_fail_on_any_cutoff_is_computed_from_qrels_and_runs(sweep) -> None:
    """What was seen: cutoffs were fixed when the folder was made (`--fail-on ndcg@20`: "not a metric of every
    run")."""
    qrels, runs = sweep
    worse = _cli("--qrels", str(qrels), str(runs["sys_a"]), str(runs["sys_d"]), "--fail-on", "ndcg@20")
    assert worse[0] == 3 and "ndcg@20 regressed" in worse[1]
    better = _cli("--qrels", str(qrels), str(runs["sys_d"]), str(runs["sys_a"]), "--fail-on", "ndcg@20")
    assert better[0] == 0, better[1]
    assert "Gate: passed" in better[1] and "ndcg@20" in better[1]
    # a measure the runs were never "made" at, at an odd cutoff, named in trec_eval's spelling's neighbour
    code, out = _cli("--qrels", str(qrels), str(runs["sys_a"]), str(runs["sys_b"]), "--metric", "P@7")
    assert code == 0 and "precision@7" in out
