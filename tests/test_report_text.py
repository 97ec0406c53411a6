"""``report`` in a terminal (issue #36): plain aligned text, no Markdown, as ``compare`` prints; ``-q`` the headline
only; ``--format md`` stays Markdown. Expected numbers by hand from the fixture's judge scores (``JUDGE_SCORES``)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from report_helpers import write_run

from foundry_bridge.cli import cli


def _report(run: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["report", str(run), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _table(text: str, first_header: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header + "  "))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_text_is_plain_and_aligned(tmp_path: Path) -> None:
    text = _report(write_run(tmp_path / "run"), "--format", "text")
    for token in ("**", "\\_", "|---", "| ", "&lt;", "&amp;", "`"):
        assert token not in text, token
    assert text.startswith("foundry-bridge report\n=====================\n")
    stages = _table(text, "stage")
    assert stages[0].split() == ["stage", "queries", "share", "what", "to", "fix", "which"]
    assert set(stages[1]) <= {"-", " "}
    column = stages[0].index("queries")  # every row's count starts under its header
    counts = {line.split("  ")[0]: line[column:].split()[0] for line in stages[2:]}
    assert counts["search"] == "1" and counts["assembly"] == "1" and counts["generation"] == "5"
    assert counts["unknown"] == "1" and counts["ok"] == "6"  # q02's groundedness errored: unknown
    # the drill-down in text: q06's dropped passage in its documents table, its judge's reason without bold
    q06 = text[text.index("Query q06 (assembly)") : text.index("Query q04 (generation)")]
    assert any(line.split() == ["3", "pol-parttime-01", "0.770", "3", "(relevant)", "dropped:", "relevant,", "not",
                                "in", "the", "context"] for line in q06.splitlines())  # fmt: skip
    assert "Dropped: pol-parttime-01 (rank 3, label 3): Part-time employees" in q06
    assert "- relevance: 2 (fail) — hand-chosen 2" in text


def test_quiet_text_is_the_headline_only(tmp_path: Path) -> None:
    text = _report(write_run(tmp_path / "run"), "--format", "text", "-q")
    lines = text.splitlines()
    assert len(lines) == 2, text
    # by hand (test_report_answers_first): judges' means over the 11 positive queries; n02 of 3 negatives answered
    for bit in ("retrieval mean 4.455", "groundedness mean 4.200", "relevance mean 4.545", "answered anyway 1/3"):
        assert bit in lines[0], bit
    assert lines[1] == "stages: search 1 · assembly 1 · generation 5 · ok 6 · unknown 1"


def test_markdown_stays_markdown(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    md = _report(run, "--format", "md", "-q")
    assert md.startswith("## foundry-bridge report") and "| stage | queries | share |" in md
    assert _report(run) == md  # not a terminal: Markdown by default
