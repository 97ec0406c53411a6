"""The documented CI files run: every `run:` (GitHub Actions) and `script:` (Azure DevOps) command of
examples/ci/, in order, with bash as each runner calls it, on the bundled sample with the emulator.

Steps that are actions or tasks (`uses:`, `task:`) belong to the hosted runner and are not run; the install step
(`pip install`, the network) is checked for what it installs and skipped: the package under test is on PATH.
In the Azure test the checkout is a pull request (a git repository whose origin/main holds the sample) whose
branch reverses every ranked list of the sample (scores kept descending), so rr@10 falls on seven
of the eleven positive queries (exact sign-flip p = 2/2^7): the gate must fail with exit 3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import JUnitXml

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / "examples" / "ci"
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
GATED = ["positive rr@10", "positive groundedness"]


def _coverage_cases(run: Path) -> list[str]:
    """One coverage case per Foundry metric of the run: keyed by the metric, or criterion/metric when they differ
    (docs/report.md)."""
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    keys = {r["metric"] if r["metric"] == r["criterion"] else f"{r['criterion']}/{r['metric']}" for r in rows}
    return [f"coverage {k}" for k in keys]


def _github_steps() -> tuple[dict[str, str], list[dict[str, Any]]]:
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text())
    (job,) = workflow["jobs"].values()
    env = {**workflow.get("env", {}), **job.get("env", {})}
    return env, [s for s in job["steps"] if "run" in s]


def _azure_steps() -> tuple[dict[str, str], list[dict[str, Any]]]:
    pipeline = yaml.safe_load((CI / "azure-pipelines.yml").read_text())
    return dict(pipeline["variables"]), [s for s in pipeline["steps"] if "script" in s]


def _workspace(tmp_path: Path) -> Path:
    """A checkout: the repository's samples, nothing else (the commands make baseline/, runs/, out/)."""
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "samples").symlink_to(ROOT / "samples")
    return work


def _env(variables: dict[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "OTEL_", "SYSTEM_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # foundry-bridge itself
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **variables, **extra}


def _run_steps(steps: list[dict[str, Any]], key: str, shell: list[str], cwd: Path, env: dict[str, str]) -> list[Any]:
    done = []
    for step in steps:
        name = step.get("name") or step.get("displayName") or ""
        if name == "Install foundry-bridge":
            assert step[key].strip() == 'pip install "foundry-bridge[otel]"'
            continue
        result = subprocess.run([*shell, step[key]], cwd=cwd, env=env, capture_output=True, text=True, check=False)
        done.append((name, result))
        if result.returncode != 0:
            break  # a failed step stops the job; `if: always()` / `condition: always()` steps are actions
    return done


def _pull_request(tmp_path: Path) -> Path:
    """A checkout of a pull request against main: main has the sample, the branch has it degraded."""
    work = tmp_path / "checkout"
    data = work / "samples" / "benefits" / "rag_eval.jsonl"
    data.parent.mkdir(parents=True)
    data.write_bytes(SAMPLE.read_bytes())
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-C", str(work)]
    steps = (
        ["init", "-q"],
        ["add", "."],
        ["commit", "-qm", "main"],
        ["update-ref", "refs/remotes/origin/main", "HEAD"],
    )
    for args in steps:
        subprocess.run([*git, *args], check=True, capture_output=True)
    _degrade(SAMPLE, data)
    return work


def _degrade(source: Path, out: Path) -> None:
    rows = source.read_text().splitlines()
    with out.open("w") as dst:
        for line in rows:
            row = json.loads(line)
            docs = row["retrieved_documents"][::-1]
            scores = sorted((d["relevance_score"] for d in docs), reverse=True)
            for d, s in zip(docs, scores, strict=True):
                d["relevance_score"] = s
            row["retrieved_documents"] = docs
            dst.write(json.dumps(row) + "\n")


def test_the_github_workflow_runs_green_and_fills_the_step_summary_and_otel(tmp_path: Path) -> None:
    from otlp_helpers import events, otlp_receiver

    pytest.importorskip("opentelemetry.sdk")
    variables, steps = _github_steps()
    work = _workspace(tmp_path)
    summary = tmp_path / "step_summary.md"
    with otlp_receiver() as (url, requests):
        env = _env(variables, GITHUB_STEP_SUMMARY=str(summary), OTEL_EXPORTER_OTLP_ENDPOINT=url)
        done = _run_steps(steps, "run", ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"], work, env)
    assert [(name, r.returncode) for name, r in done] == [
        ("Baseline dataset (the base branch's)", 0),
        ("Validate", 0),
        ("Evaluate baseline and candidate", 0),
        ("Report", 0),
        ("Gate", 0),
    ], done[-1][1].stderr
    text = summary.read_text()
    assert text.count("## foundry-bridge report\n") == 1 and text.count("## foundry-bridge compare\n") == 1
    assert (work / "out" / "report.html").read_text().startswith("<!DOCTYPE html>")
    xml = JUnitXml.fromfile(str(work / "out" / "junit.xml"))
    coverage = _coverage_cases(work / "runs" / "baseline")
    assert len(coverage) == 12  # document_retrieval's nine metrics, retrieval, groundedness, relevance
    assert sorted(c.name for suite in xml for c in suite) == sorted(GATED + coverage)
    assert (xml.tests, xml.failures) == (2 + 12, 0)
    report_step = dict(done)["Report"]
    (emitted,) = [line for line in report_step.stderr.splitlines() if "gen_ai.evaluation.result events" in line]
    received = events(requests)
    assert emitted == f"emitted {len(received)} gen_ai.evaluation.result events (otlp)" and received
    assert {name for _, name, _ in received} == {"gen_ai.evaluation.result"}


def test_the_azure_pipeline_gate_fails_a_regression_and_still_writes_junit_and_the_summary(tmp_path: Path) -> None:
    variables, steps = _azure_steps()
    work = _pull_request(tmp_path)
    env = _env(variables, SYSTEM_PULLREQUEST_TARGETBRANCH="refs/heads/main")
    done = _run_steps(steps, "script", ["bash", "--noprofile", "--norc", "-c"], work, env)
    assert [(name, r.returncode) for name, r in done] == [
        ("Baseline dataset (the target branch's)", 0),
        ("Evaluate and report", 0),
        ("Gate", 3),
    ], done[-1][1].stderr
    gate = dict(done)["Gate"]
    assert "Error: compare gate failed: candidate: positive rr@10 regressed by 0.2955" in gate.stderr
    assert f"##vso[task.uploadsummary]{work}/out/compare.md" in gate.stdout
    assert (work / "out" / "compare.md").read_text().startswith("## foundry-bridge compare")
    xml = JUnitXml.fromfile(str(work / "out" / "junit.xml"))
    failed = [c.name for suite in xml for c in suite if not c.is_passed]
    assert failed == ["positive rr@10"] and xml.tests == 2 + 12
    assert (work / "baseline" / "rag_eval.jsonl").read_bytes() == SAMPLE.read_bytes()  # main's, from git


def test_both_files_run_the_same_commands() -> None:
    def commands(steps: list[dict[str, Any]], key: str) -> list[str]:
        lines = " ".join(s[key].replace("\\\n", " ") for s in steps).split()
        return [lines[i + 1] for i, w in enumerate(lines) if w == "foundry-bridge"]

    assert commands(_github_steps()[1], "run") == commands(_azure_steps()[1], "script")
    assert _github_steps()[0] == _azure_steps()[0]


def _make_plan(target: str, venv: Path) -> list[str]:
    """The commands ``make TARGET`` would run in a fresh clone (``make -n``: printed, never run)."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(
        ["make", "-n", "-C", str(ROOT), f"VENV={venv}", target], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.splitlines()


def test_make_demo_installs_the_runtime_only_and_make_test_adds_the_test_extra(tmp_path: Path) -> None:
    """``make demo`` installed the whole test extra (mypy, ruff, polars, datasets...: 2 min, 1.5 GB) editable, with
    setuptools' "compat editable mode will be removed" banner. The demo installs the package and its runtime
    dependencies only, no editable hook; ``make test`` adds the extra, editable (compat: mypy follows it)."""
    demo = _make_plan("demo", tmp_path / "venv")
    installs = [line for line in demo if " install " in line and "--upgrade pip" not in line]
    assert installs and all("[test]" not in line and "-e " not in line and "editable" not in line for line in installs)
    assert any(line.endswith("foundry-bridge report runs/demo --format md --human-verdicts "
                              "samples/benefits/human_verdicts.jsonl") for line in demo)  # fmt: skip
    test = _make_plan("test", tmp_path / "venv")
    assert any("-e '.[test]'" in line and "editable_mode=compat" in line for line in test)
