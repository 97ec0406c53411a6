"""Library first (#23 item 3): validate, plan, run (repeats, locking, resume), report and compare from Python,
through the same gate as the command line and without it; errors in Python's words (``force=True``), the command
line's in its own (``--force``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from foundry_bridge.cli import main
from foundry_bridge.errors import UsageError
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest, score_answer
from foundry_bridge.runner import plan_evaluation, run_evaluation
from foundry_bridge.validate import ValidationFailed, ValidationSkipped

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
SAMPLE_PATH = "samples/benefits/rag_eval.jsonl"  # as the README's recipe names it
Capture = pytest.CaptureFixture[str]


def readme_recipe() -> str:
    """The Python block of the README's "Python API" section, as a reader copies it."""
    section = (ROOT / "README.md").read_text().split("\n## Python API\n", 1)[1]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def _in_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The current directory as in a clone: samples/ and mappings/ at hand, no runs/ yet."""
    for name in ("samples", "mappings"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)


def _rows(context_none_at: int | None = None) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [json.loads(line) for line in BENEFITS.read_text().splitlines()]
    if context_none_at is not None:
        rows[context_none_at - 1]["context"] = None
    return rows


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_readme_python_recipe_validates_runs_reports_and_compares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    recipe = readme_recipe()
    calls = [recipe.index(f"{name}(") for name in ("validate", "run_evaluation", "build_report", "compare_runs")]
    assert calls == sorted(calls)  # the order a user follows: check, run, read, compare
    _in_a_checkout(tmp_path, monkeypatch)
    exec(compile(recipe, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("True 0 1\n")  # validate: no error, the sample's one warning
    assert "rows: 14" in out and "0 errored" in out and "## foundry-bridge report" in out
    assert "## foundry-bridge compare" in out and "Coverage of retrieval dropped: 1 → 0.929" in out
    assert (tmp_path / "runs" / "api" / "manifest.json").is_file()


def test_the_readme_recipe_refuses_a_row_whose_context_is_none_as_the_cli_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    bad = _jsonl(tmp_path / "bad.jsonl", _rows(context_none_at=5))
    _in_a_checkout(tmp_path, monkeypatch)
    with pytest.raises(ValidationFailed) as info:
        exec(compile(readme_recipe().replace(SAMPLE_PATH, str(bad)), "README.md", "exec"), {})
    assert capsys.readouterr().out.startswith("False 1 1\n")  # validate listed it; run_evaluation refused it
    error = f"{bad}:5: context: required input 'context' of criterion 'retrieval' is missing"
    assert str(info.value).startswith(error)
    assert "run_evaluation(): 1 validation error(s) in 14 row(s), nothing was written or submitted" in str(info.value)
    assert not (tmp_path / "runs").exists()

    with pytest.raises(SystemExit) as code:  # the command line: the same error, the same nothing written
        main(["run", str(bad), "--backend", "mock", "--out", "r"])
    err = capsys.readouterr().err
    assert code.value.code == 1 and f"Error: {error}" in err and "run: 1 validation error(s)" in err
    assert "--skip-validation sends unchecked data" in err and not (tmp_path / "r").exists()


def test_a_dataframe_goes_through_the_gate_and_names_its_row(tmp_path: Path) -> None:
    with pytest.raises(ValidationFailed) as info:
        run_evaluation(pd.DataFrame(_rows(context_none_at=5)), tmp_path / "r")
    assert info.value.report.errors == 1 and "context" in str(info.value) and not (tmp_path / "r").exists()
    with pytest.raises(UsageError, match=r"give out= \(the run folder\)"):
        run_evaluation(pd.DataFrame(_rows()))  # no dataset path, so no default folder under runs/


def test_skip_validation_is_a_python_warning_and_sends_the_row(tmp_path: Path) -> None:
    bad = _jsonl(tmp_path / "bad.jsonl", _rows(context_none_at=5))
    with pytest.warns(ValidationSkipped, match=r"run_evaluation\(\) skip_validation=True: NOTHING WAS CHECKED"):
        summary = run_evaluation(bad, tmp_path / "r", skip_validation=True)
    assert summary.per_criterion["retrieval"]["errored"] == 1  # what the gate keeps from being sent


def test_errors_name_the_python_keyword_and_the_cli_its_option(tmp_path: Path, capsys: Capture) -> None:
    out = tmp_path / "run"
    first = run_evaluation(BENEFITS, out)  # the emulator by default
    assert first.backend == "mock" and not first.reused
    assert run_evaluation(BENEFITS, out).reused  # same dataset, plan and backend: nothing sent again
    other = _jsonl(tmp_path / "other.jsonl", _rows()[:5])
    with pytest.raises(UsageError) as info:
        run_evaluation(other, out)
    message = str(info.value)
    assert message.endswith("already holds a run of another plan or dataset; use another out= folder, or force=True "
                            "to submit again")  # fmt: skip
    assert "--" not in message
    assert info.value.cli_text().endswith("use another --out folder, or --force to submit again")
    with pytest.raises(SystemExit):
        main(["run", str(other), "--backend", "mock", "--out", str(out)])
    assert "use another --out folder, or --force to submit again" in capsys.readouterr().err
    assert run_evaluation(other, out, force=True).rows == 5


def test_resume_reads_the_backend_and_the_plan_from_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_evaluation(BENEFITS, out, "mock")
    again = run_evaluation(out=out, resume=True)  # no data, no backend: the folder's own
    assert again.reused and again.backend == "mock" and again.rows == 14
    with pytest.raises(UsageError, match=r"nothing to resume .*: no state.json"):
        run_evaluation(BENEFITS, tmp_path / "empty", "mock", resume=True)


def test_repeats_judge_every_row_k_times_into_sibling_folders(tmp_path: Path) -> None:
    subset = _jsonl(tmp_path / "subset.jsonl", [r for r in _rows() if r["query_id"] in ("q01", "q03")])

    def rule(request: JudgeRequest) -> FakeAnswer:
        return score_answer(4)

    with FakeJudgeServer(rule) as judge:
        summary = run_evaluation(
            subset, tmp_path / "run", "local", repeats=2, judge_endpoint=judge.base_url, judge_model="m",
            cache_dir=tmp_path / "cache",
        )  # fmt: skip
        assert judge.calls == 2 * 2 * 3  # 2 rows × 3 judges, twice: each repeat its own cache key
    assert summary.repeat_dirs == [tmp_path / "run.repeat2"]
    assert (tmp_path / "run.repeat2" / "results.jsonl").is_file()
    with pytest.raises(UsageError, match=r"repeats= applies to a new backend='local' run"):
        run_evaluation(subset, tmp_path / "m", "mock", repeats=2)


def test_plan_evaluation_is_the_gate_and_the_plan(tmp_path: Path) -> None:
    plan = plan_evaluation(BENEFITS)
    assert len(plan.items) == 14 and plan.dataset_path == str(BENEFITS)
    with pytest.raises(ValidationFailed, match=r"plan_evaluation\(\): 1 validation error"):
        plan_evaluation(_jsonl(tmp_path / "bad.jsonl", _rows(context_none_at=5)))


def test_a_busy_folder_says_force_true_in_python_and_force_on_the_command_line(tmp_path: Path) -> None:
    from foundry_bridge.runfolder import RunFolder, RunFolderBusyError

    out = tmp_path / "run"
    with RunFolder(out).lock(), pytest.raises(RunFolderBusyError) as info:  # as if another process held it
        run_evaluation(BENEFITS, out)
    assert "force=True never takes over a folder in use" in str(info.value) and "out= folder" in str(info.value)
    assert "--force never takes over a folder in use" in info.value.cli_text()
