"""Issue #36's 35-query pair, from run files (--qrels): 8 queries lose their one relevant document from the top 3 on
every ranking metric, none gains. Every output says "worse" for rr@3, gated or not."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.comparison import compare_run_files

WORSE = 8


def _write(tmp_path: Path) -> tuple[Path, Path, Path]:
    qrels, a, b = tmp_path / "qrels.txt", tmp_path / "a.trec", tmp_path / "b.trec"
    qrels.write_text("".join(f"q{i:02d} 0 rel{i} 1\n" for i in range(35)), encoding="utf-8")
    for path, moved in ((a, 0), (b, WORSE)):
        lines = []
        for i in range(35):
            docs = [f"x{i}_{r}" for r in range(5)]
            docs.insert(4 if i < moved else 0, f"rel{i}")  # rank 5 (out of the top 3) or rank 1
            lines += [f"q{i:02d} Q0 {d} {r + 1} {10 - r} sys\n" for r, d in enumerate(docs)]
        path.write_text("".join(lines), encoding="utf-8")
    return qrels, a, b


METRICS = ["rr@3", "recall@3", "ndcg@3", "hit@3", "rr@4", "recall@4", "ndcg@4", "hit@4", "rr@10", "ndcg@10"]


def test_the_table_says_worse_without_a_gate_where_holm_over_the_copies_could_not(tmp_path: Path) -> None:
    qrels, a, b = _write(tmp_path)
    cmp = compare_run_files(qrels, [a, b], metrics=METRICS)
    rr3 = cmp.get("b", "rr@3")
    assert (rr3.losses, rr3.wins) == (WORSE, 0) and rr3.p_value == 2 / 2**WORSE
    assert rr3.family == "secondary" and rr3.correction.startswith("Westfall–Young")
    assert rr3.verdict == "worse" and rr3.p_adjusted == 2 / 2**WORSE  # the copies cost nothing
    holm = compare_run_files(qrels, [a, b], metrics=METRICS, correction="holm")
    assert holm.get("b", "rr@3").verdict == "no significant change"  # what Holm said before


def _compare(*args: str, env: dict[str, str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", *args], env=env)
    code = getattr(result.exception, "exit_code", result.exit_code)
    return int(code), result.stdout  # progress lines go to stderr


def test_every_output_says_worse_for_rr3_gated(tmp_path: Path) -> None:
    qrels, a, b = _write(tmp_path)
    summary, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    env = {"GITHUB_STEP_SUMMARY": str(summary), "FOUNDRY_BRIDGE_JUNIT": ""}
    base = ["--qrels", str(qrels), str(a), str(b), *(f"--metric={m}" for m in METRICS), "--fail-on", "rr@3"]
    code, text = _compare(*base, "--format", "text", "--junit", str(junit), env=env)
    assert code == 3
    assert text.splitlines()[0] == "foundry-bridge compare"
    first = text.splitlines()[3]  # the answer, under the title
    assert first.startswith("b is worse than a on rr@3: Δ -0.229") and "8 queries worse, 0 better" in first
    assert first.endswith("gate FAILED") and "\\_" not in text and "**" not in text
    row = next(line for line in text.splitlines() if line.startswith("positive  rr@3 "))
    assert row.split()[-2] == "worse"
    assert "regressed by 0.2286" in junit.read_text(encoding="utf-8")
    assert "verdict worse" in junit.read_text(encoding="utf-8")
    md = summary.read_text(encoding="utf-8")
    assert "**Gate: FAILED**" in md and "| positive | rr@3 |" in md
    assert "| primary | **worse** |" in next(ln for ln in md.splitlines() if ln.startswith("| positive | rr@3 |"))
    code, quiet = _compare(*base, "--format", "text", "-q", env={"GITHUB_STEP_SUMMARY": ""})
    assert code == 3 and quiet.splitlines()[0] == first and quiet.splitlines()[1].startswith("Gate: FAILED")
    assert len(quiet.splitlines()) < 8
    html_path = tmp_path / "c.html"
    code, _ = _compare(*base, "--format", "html", "--out", str(html_path), env={"GITHUB_STEP_SUMMARY": ""})
    page = html_path.read_text(encoding="utf-8")
    assert code == 3 and "<table>" in page and "<pre>" not in page and "&amp;lt;" not in page
    assert "<td>rr@3</td>" in page and "<strong>worse</strong>" in page
    assert page.index("b is worse than a on rr@3") < page.index("<svg")  # the answer first


def _dataset(path: Path, moved: int) -> Path:
    """The same pair as a dataset (one relevant document, at rank 5 on the first ``moved`` queries, else rank 1),
    the context and the answer equal in both: only the ranking differs."""
    import json

    rows = []
    for i in range(35):
        docs = [f"x{i}_{r}" for r in range(5)]
        docs.insert(4 if i < moved else 0, f"rel{i}")
        rows.append(
            {
                "query_id": f"q{i:02d}",
                "query": f"question {i} about topic {i}",
                "retrieved_documents": [
                    {"document_id": d, "relevance_score": 10 - r, "content": f"passage {d} on topic {i}"}
                    for r, d in enumerate(docs)
                ],
                "retrieval_ground_truth": [{"document_id": f"rel{i}", "query_relevance_label": 1}],
                "context": f"passage rel{i} on topic {i}",
                "response": f"the answer on topic {i}",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_run_folders_and_run_files_give_the_same_verdict_for_rr3(tmp_path: Path) -> None:
    """compare from run folders (the emulator's runs of the pair as datasets) says worse for rr@3, with the run
    files' Δ, p and W/T/L: one answer whichever input the team keeps."""
    import json

    env = {"GITHUB_STEP_SUMMARY": "", "FOUNDRY_BRIDGE_JUNIT": ""}
    for name, moved in (("a", 0), ("b", WORSE)):
        data = _dataset(tmp_path / f"{name}.jsonl", moved)
        result = CliRunner().invoke(cli, ["run", str(data), "--backend", "mock", "-q", "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    code, text = _compare(str(tmp_path / "a"), str(tmp_path / "b"), "--fail-on", "rr@3", "--format", "json", env=env)
    assert code == 3
    folders = json.loads(text)
    row = next(m for m in folders["metrics"] if m["metric"] == "rr@3" and m["section"] == "positive")
    qrels, a, b = _write(tmp_path)
    files = compare_run_files(qrels, [a, b], metrics=METRICS, fail_on=["rr@3"]).get("b", "rr@3")
    assert row["verdict"] == files.verdict == "worse"
    assert (row["losses"], row["wins"]) == (files.losses, files.wins) == (WORSE, 0)
    assert abs(row["delta"] - files.delta) < 1e-12 and row["p_value"] == files.p_value == 2 / 2**WORSE
    assert row["family"] == files.family == "primary"
