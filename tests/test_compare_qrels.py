"""compare --qrels QRELS RUN… (issue #26, items 1 and 2): run files scored at compare time with trec_eval's -c values,
every pair tested, the systems ranked with compact letters, the win/tie/loss matrix and effect sizes.

The four runs (tests/trec_sweep_helpers.py) have tied scores, unjudged documents, a query the qrels do not judge,
two topics judged only 0 and a topic missing from one run. pytrec_eval (trec_eval's code) is the reference for the
per-topic values; trec_eval -c's mean counts a missing topic as 0 over every qrels topic.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from click.testing import CliRunner
from scipy import stats
from trec_sweep_helpers import (
    MISSING,
    SYSTEMS,
    read_trec_qrels,
    read_trec_run,
    topic_id,
    write_beir_json,
    write_jsonl,
    write_sweep,
)

from foundry_bridge.cli import cli
from foundry_bridge.comparison import compare_run_files, render_comparison_markdown
from foundry_bridge.comparison._files import score_run_files
from foundry_bridge.errors import FoundryBridgeError
from foundry_bridge.metrics.pairs import compact_letters, competition_ranks
from foundry_bridge.metrics.significance import paired_generator, sign_flip_test

# ours → pytrec_eval's (the runs are 30 deep: rr@100 is recip_rank, recall@100 is recall_100)
MEASURES = {"ndcg@10": "ndcg_cut_10", "ndcg@20": "ndcg_cut_20", "precision@5": "P_5", "recall@100": "recall_100"}
MEASURES.update({"rr@100": "recip_rank", "ap@100": "map", "bpref@100": "bpref"})  # newer registry measures
RESAMPLES = 2000


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    return write_sweep(tmp_path_factory.mktemp("sweep"))


def _pytrec(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(read_trec_qrels(qrels), set(MEASURES.values()))
    return evaluator.evaluate(read_trec_run(run))


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", *args], env={"GITHUB_STEP_SUMMARY": ""})
    if isinstance(result.exception, FoundryBridgeError):  # the console script's exit code (cli.main)
        return result.exception.exit_code, result.output + str(result.exception)
    return result.exit_code, result.output


def test_per_topic_values_and_means_equal_pytrec_eval_and_trec_eval_c(sweep) -> None:
    qrels, runs = sweep
    scored = score_run_files(qrels, list(runs.values()), list(MEASURES))
    topics = scored.topics
    assert topics == [topic_id(i) for i in range(40)]  # the qrels' topics; u1 (unjudged) left out
    comparison = compare_run_files(qrels, list(runs.values()), metrics=list(MEASURES), n_resamples=RESAMPLES)
    for (name, run), values, summary in zip(runs.items(), scored.values, comparison.runs, strict=True):
        reference = _pytrec(qrels, run)
        assert "u1" not in reference  # pytrec_eval, too, evaluates judged topics only
        for ours, theirs in MEASURES.items():
            expected = [reference[t][theirs] if t in reference else 0.0 for t in topics]  # -c: missing → 0
            assert values[ours] == pytest.approx(expected, abs=1e-12), (name, ours)
            # trec_eval -c's "all" line: the mean over every qrels topic
            assert summary.means[f"positive:{ours}"] == pytest.approx(sum(expected) / len(topics), abs=1e-12)
        if name == MISSING[0]:
            assert topic_id(MISSING[1]) not in reference
    assert any("u1" in w and "not in the qrels" in w for w in comparison.warnings)
    assert any(topic_id(MISSING[1]) in w and "-c" in w for w in comparison.warnings)


def test_a_pairs_p_value_and_interval_are_the_engines_on_the_same_differences(sweep) -> None:
    qrels, runs = sweep
    names = list(SYSTEMS)
    comparison = compare_run_files(qrels, list(runs.values()), metrics=["ndcg@10"], n_resamples=RESAMPLES)
    assert comparison.all_pairs is not None  # four runs: every pair by default
    a, b = _pytrec(qrels, runs["sys_b"]), _pytrec(qrels, runs["sys_c"])
    topics = [topic_id(i) for i in range(40)]
    d = np.array([b.get(t, {}).get("ndcg_cut_10", 0.0) - a[t]["ndcg_cut_10"] for t in topics])
    (row,) = [p for p in comparison.all_pairs.pairs if (p.baseline, p.candidate) == ("sys_b", "sys_c")]
    assert row.n_paired == 40 and row.delta == pytest.approx(d.mean(), abs=1e-12)
    rng = paired_generator(42, "|".join(sorted(["sys_b", "sys_c"])) + "|positive")
    p, _ = sign_flip_test(d, n_resamples=RESAMPLES, rng=rng)
    assert row.p_value == p
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert (row.ci_low, row.ci_high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert row.d_z == pytest.approx(d.mean() / d.std(), abs=1e-12)
    assert row.wins == int((d > 0).sum()) and row.losses == int((d < 0).sum()) and row.ties == int((d == 0).sum())
    # one family over every pair × measure, corrected by Holm: 6 pairs here
    assert comparison.exploratory_tests == 6
    assert set(comparison.all_pairs.systems) == set(names)


def _constructed(root: Path) -> tuple[Path, list[Path]]:
    """20 topics, one relevant document each (r1): `best` ranks it 1st, `mid1` 2nd, `mid2` 2nd but 3rd on one
    topic, `worst` never retrieves it. rr@10 means 1, 0.5, 0.4917, 0."""
    root.mkdir(parents=True, exist_ok=True)
    qrels = root / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 r1 1\n" for i in range(20)))
    placing = {"best": [1] * 20, "mid1": [2] * 20, "mid2": [2] * 19 + [3], "worst": [0] * 20}
    paths = []
    for name, ranks in placing.items():
        lines = []
        for i, rank in enumerate(ranks):
            docs = ["x1", "x2", "x3"]
            if rank:
                docs.insert(rank - 1, "r1")
            lines += [f"q{i} Q0 {d} {j + 1} {10 - j} {name}\n" for j, d in enumerate(docs)]
        path = root / f"{name}.trec"
        path.write_text("".join(lines))
        paths.append(path)
    return qrels, paths


def test_the_ranking_letters_and_win_tie_loss_matrix_of_a_constructed_case(tmp_path: Path) -> None:
    qrels, paths = _constructed(tmp_path)
    comparison = compare_run_files(qrels, [paths[2], paths[3], paths[0], paths[1]], metrics=["rr@10"])
    assert comparison.all_pairs is not None
    (ranking,) = comparison.all_pairs.rankings
    by_hand = [("best", 1.0, 1, "a"), ("mid1", 0.5, 2, "b"), ("mid2", (19 * 0.5 + 1 / 3) / 20, 3, "b")]
    by_hand.append(("worst", 0.0, 4, "c"))
    got = [(s.system, s.mean, s.rank, s.letters) for s in ranking.systems]
    assert got == [(n, pytest.approx(m, abs=1e-12), r, letter) for n, m, r, letter in by_hand]
    # mid1 and mid2 differ on one topic only (exact p = 1): the one pair that does not differ
    assert sorted(map(sorted, ranking.differ)) == sorted(
        sorted(p) for p in [("best", "mid1"), ("best", "mid2"), ("best", "worst"), ("mid1", "worst"), ("mid2", "worst")]
    )
    assert ranking.wtl["mid1"]["mid2"] == [1, 19, 0] and ranking.wtl["mid2"]["mid1"] == [0, 19, 1]
    assert ranking.wtl["best"]["worst"] == [20, 0, 0]
    text = render_comparison_markdown(comparison)
    assert "| 1 | best | 1 | a |" in text and "| 3 | mid2 | 0.492 | b |" in text


def test_compact_letters_when_not_differing_is_not_transitive() -> None:
    # A ~ B, B ~ C, A ≠ C: B shares a letter with each, A and C none (Piepho 2004's insert-and-absorb)
    assert compact_letters(["A", "B", "C"], [("A", "C")]) == {"A": "a", "B": "ab", "C": "b"}
    assert compact_letters(["A", "B", "C", "D"], [("A", "C"), ("A", "D"), ("B", "D")]) == {
        "A": "a",
        "B": "ab",
        "C": "bc",
        "D": "c",
    }
    assert compact_letters(["A", "B"], []) == {"A": "a", "B": "a"}
    assert competition_ranks([0.3, 0.5, 0.5, None]) == [3, 1, 1, 4]
    assert competition_ranks([2.0, 1.0], higher_is_better=False) == [2, 1]


def test_beir_json_and_jsonl_runs_and_beir_qrels_give_the_trec_runs_values(sweep, tmp_path: Path) -> None:
    qrels, runs = sweep
    run = runs["sys_b"]
    as_json = write_beir_json(run, tmp_path / "sys_b.json")
    as_jsonl = write_jsonl(run, tmp_path / "sys_b.jsonl")
    tsv = tmp_path / "test.tsv"
    lines = (ln.split() for ln in qrels.read_text().splitlines())
    tsv.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{lab}\n" for q, _, d, lab in lines))
    trec = score_run_files(qrels, [run], list(MEASURES)).values[0]
    for other_qrels, path in ((qrels, as_json), (qrels, as_jsonl), (tsv, run), (tsv, as_json)):
        values = score_run_files(other_qrels, [path], list(MEASURES)).values[0]
        for key in MEASURES:
            assert values[key].tolist() == trec[key].tolist(), (other_qrels.name, path.name, key)
    code, out = _cli("--qrels", str(qrels), str(run), str(as_json), str(as_jsonl), "--format", "json")
    assert code == 0, out
    pairs = json.loads(out)["all_pairs"]["pairs"]
    assert all(p["delta"] == 0 and p["wins"] == p["losses"] == 0 for p in pairs)  # the same run three times


def test_inputs_are_run_folders_or_run_files_with_qrels(sweep, tmp_path: Path) -> None:
    qrels, runs = sweep
    code, out = _cli(str(runs["sys_a"]), str(runs["sys_b"]))
    assert code == 2 and "not a run folder" in out and "--qrels" in out
    code, out = _cli("--qrels", str(qrels), str(tmp_path), str(runs["sys_b"]))
    assert code == 2 and "a folder" in out
    two = compare_run_files(qrels, [runs["sys_a"], runs["sys_b"]], n_resamples=RESAMPLES)
    assert two.all_pairs is None  # two runs: the one pair is the baseline's
    base_only = compare_run_files(qrels, list(runs.values()), all_pairs=False, n_resamples=RESAMPLES)
    assert base_only.all_pairs is None
    assert base_only.exploratory_tests + base_only.left_out_tests == 3 * 3  # 3 candidates × 3 default measures


def test_runs_of_one_file_name_are_told_apart_by_folder_or_by_label(tmp_path: Path) -> None:
    # issue #34 item 21: two files called run.txt were labelled `0:run` and `1:run`
    qrels, paths = _constructed(tmp_path / "c")
    runs = []
    for system in ("bm25", "dense"):
        (tmp_path / system).mkdir()
        runs.append(tmp_path / system / "run.txt")
        runs[-1].write_bytes(paths[0 if system == "bm25" else 1].read_bytes())
    comparison = compare_run_files(qrels, runs, metrics=["rr@10"])
    assert [r.label for r in comparison.runs] == ["bm25/run", "dense/run"]
    labelled = compare_run_files(qrels, runs, metrics=["rr@10"], labels=["BM25", "dense v2"])
    assert [r.label for r in labelled.runs] == ["BM25", "dense v2"]
    code, out = _cli(
        "--qrels",
        str(qrels),
        str(runs[0]),
        str(runs[1]),
        "--metric",
        "rr@10",
        "--label",
        "BM25",
        "--label",
        "dense v2",
        "--format",
        "json",
    )
    assert code == 0, out
    assert [r["label"] for r in json.loads(out)["runs"]] == ["BM25", "dense v2"]
    code, out = _cli("--qrels", str(qrels), str(runs[0]), str(runs[1]), "--label", "only one")
    assert code == 2 and "1 label(s), 2 runs" in out
