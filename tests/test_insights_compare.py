"""`compare A B --foundry` end to end: two `run --backend cloud` folders on a loopback emulator, the second added to
the first's eval with `--eval-id`, and Foundry's comparison shown beside the local judge tests — its numbers checked
against Welch's two-sample test in the normal approximation (the emulator's documented statistic) computed with
scipy on the raw output items; and every run folder Foundry cannot compare refused with the fix."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from foundry_bridge.canaries import ABSTENTION_TEXT
from foundry_bridge.cli import main
from foundry_bridge.foundry import StaticTokenCredential
from foundry_bridge.mock import FoundryEmulator, serve
from foundry_bridge.mock._server import MockServer

scipy_stats = pytest.importorskip("scipy.stats")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as done:
            main([str(a) for a in args])
        out, err = capsys.readouterr()
        return int(done.value.code or 0), out, err

    return invoke


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[MockServer]:
    """The emulator on 127.0.0.1, as `foundry-bridge mock-server` serves it; the credential chain gives a token."""
    import foundry_bridge.foundry as foundry

    monkeypatch.setattr(foundry, "default_credential", lambda **_: StaticTokenCredential("loopback-token"))
    monkeypatch.setenv("AZURE_AI_MODEL_DEPLOYMENT_NAME", "my-judge")  # `--backend cloud` needs the judge named
    monkeypatch.chdir(tmp_path)  # nothing lands in the checkout
    with serve(FoundryEmulator(polls_to_complete=0), "127.0.0.1", 0) as running:
        yield running


@pytest.fixture
def worse(tmp_path: Path) -> Path:
    """The sample with three answers in four replaced by an abstention: the judges' scores drop."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    changed = [
        {**r, "response": ABSTENTION_TEXT} if i % 4 != 3 and r.get("response") else r for i, r in enumerate(rows)
    ]
    path = tmp_path / "worse.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in changed))
    return path


def _run(cli: Cli, server: MockServer, data: Path, out: Path, *extra: str) -> Path:
    code, _, err = cli("run", data, "--backend", "cloud", "--endpoint", server.endpoint, "--out", out, "-q", *extra)
    assert code == 0, err
    return out


def _eval_id(run: Path) -> str:
    return str(json.loads((run / "manifest.json").read_text())["eval_id"])


def _scores(run: Path) -> dict[tuple[str, str], np.ndarray]:
    """(criterion, metric) → the numeric scores of the raw output items, as the service returned them."""
    out: dict[tuple[str, str], list[float]] = {}
    for line in (run / "output_items.jsonl").read_text().splitlines():
        for res in json.loads(line)["results"]:
            score = res.get("score")
            if isinstance(score, int | float) and not isinstance(score, bool):
                out.setdefault((res["name"], res["metric"]), []).append(float(score))
    return {k: np.array(v) for k, v in out.items()}


def _welch_normal(base: np.ndarray, treat: np.ndarray) -> tuple[float, float]:
    """Δ = mean(t) − mean(b), p two-sided from z = Δ / √(s_b²/n_b + s_t²/n_t) (sample variances, ddof 1)."""
    delta = float(treat.mean() - base.mean())
    se = float(np.sqrt(base.var(ddof=1) / base.size + treat.var(ddof=1) / treat.size))
    if se == 0:
        return delta, 1.0 if delta == 0 else 0.0
    return delta, float(2 * scipy_stats.norm.sf(abs(delta) / se))


def test_compare_foundry_puts_the_emulators_welch_test_beside_the_local_rows(
    cli: Cli, server: MockServer, worse: Path, tmp_path: Path
) -> None:
    a = _run(cli, server, SAMPLE, tmp_path / "a")
    b = _run(cli, server, worse, tmp_path / "b", "--eval-id", _eval_id(a))
    emu = server.emulator
    assert len(emu.store.evals) == 1 and len(emu.store.runs) == 2  # B went into A's eval
    state_b = json.loads((b / "state.json").read_text())
    assert state_b["eval_id"] == _eval_id(a) and json.loads((b / "manifest.json").read_text())["eval_given"] is True

    code, out, err = cli("compare", a, b, "--foundry", "--format", "json")
    assert code == 0, err
    comparison = json.loads(out)
    fc = comparison["foundry_comparison"]
    run_a, run_b = (json.loads((r / "state.json").read_text())["runs"][0]["run_id"] for r in (a, b))
    assert fc["eval_id"] == _eval_id(a) and fc["error"] is None and fc["run_ids"] == {"a": run_a, "b": run_b}
    base, treat = _scores(a), _scores(b)
    foundry_rows = [r for r in fc["rows"] if r["foundry_effect"] is not None]
    assert {(r["criterion"], r["metric"]) for r in foundry_rows} == set(base)
    for row in foundry_rows:
        b_values, t_values = base[(row["criterion"], row["metric"])], treat[(row["criterion"], row["metric"])]
        delta, p = _welch_normal(b_values, t_values)
        assert row["candidate"] == "b"
        assert row["foundry_delta"] == pytest.approx(delta, abs=1e-12)
        assert row["foundry_p"] == pytest.approx(p, rel=1e-9, abs=1e-300)
        significant = row["foundry_effect"] in ("Improved", "Degraded", "Changed")
        assert significant == (p < 0.05) or row["foundry_effect"] == "TooFewSamples"
    ground = next(r for r in fc["rows"] if r["criterion"] == "groundedness" and r["metric"] == "groundedness")
    assert ground["foundry_effect"] == "Degraded" and ground["foundry_delta"] < 0  # abstentions are not grounded
    assert ground["local_verdict"] is not None and ground["local_test"]  # the local judge test beside it
    family = {(r["candidate"], r["key"]): r for r in comparison["judge_tests"]["rows"]}
    assert ground["local_verdict"] == family[("b", "groundedness:groundedness")]["verdict"]
    assert fc["disagreements"] == sum(1 for r in fc["rows"] if r["agree"] is False)

    c = _run(cli, server, SAMPLE, tmp_path / "c", "--eval-id", a)  # the baseline's rows again: a second treatment
    code, out, err = cli("compare", a, b, c, "--foundry", "--format", "json")
    assert code == 0, err
    three = json.loads(out)["foundry_comparison"]
    assert set(three["run_ids"]) == {"a", "b", "c"}
    same = [r for r in three["rows"] if r["candidate"] == "c" and r["foundry_effect"] is not None]
    assert same and all(r["foundry_delta"] == 0 and r["foundry_p"] == 1 for r in same)  # the same scores
    assert {r["foundry_effect"] for r in same} == {"Inconclusive"}
    foundry_side = ("criterion", "metric", "foundry_effect", "foundry_p", "foundry_delta")
    alone = [[r[k] for k in foundry_side] for r in fc["rows"]]
    assert [[r[k] for k in foundry_side] for r in three["rows"] if r["candidate"] == "b"] == alone  # as alone

    code, plain, _ = cli("compare", a, b, "--format", "json")
    without = json.loads(plain)
    assert code == 0 and "foundry_comparison" not in without
    comparison.pop("foundry_comparison")
    assert without == comparison  # the gate, verdicts and everything else: the same with and without Foundry

    code, md, _ = cli("compare", a, b, "--foundry")
    assert code == 0 and "### Foundry's comparison beside the local one" in md
    assert md.count("⚠ no:") == fc["disagreements"] and f"{fc['disagreements']} disagreement(s)." in md


def test_a_resumed_eval_id_run_creates_no_eval_and_keeps_its_eval(
    cli: Cli, server: MockServer, worse: Path, tmp_path: Path
) -> None:
    a = _run(cli, server, SAMPLE, tmp_path / "a")
    b = _run(cli, server, worse, tmp_path / "b", "--eval-id", _eval_id(a))
    (b / "manifest.json").unlink()  # as if collecting had been cut short: --resume collects again
    code, _, err = cli("run", "--resume", b, "-q")
    assert code == 0, err
    assert len(server.emulator.store.evals) == 1 and len(server.emulator.store.runs) == 2
    assert _eval_id(b) == _eval_id(a)
    code, _, err = cli("run", "--resume", b, "--eval-id", "eval_other", "-q")
    assert code == 2 and f"started with --eval-id {_eval_id(a)}" in err and "drop --eval-id" in err


def test_runs_foundry_cannot_compare_are_refused_with_the_fix(
    cli: Cli, server: MockServer, worse: Path, tmp_path: Path
) -> None:
    a = _run(cli, server, SAMPLE, tmp_path / "a")
    eval_a = _eval_id(a)
    runs_before = len(server.emulator.store.runs)

    def refused(*runs: Path) -> str:
        code, out, err = cli("compare", *runs, "--foundry", "--format", "json")
        assert code == 2 and out == "" and "Traceback" not in err  # a usage error, before any request
        return err

    other = _run(cli, server, worse, tmp_path / "other")  # a new eval of its own
    err = refused(a, other)
    assert f"in eval {_eval_id(other)}" in err and f"re-run the candidate with `--eval-id {eval_a}`" in err

    split = _run(cli, server, worse, tmp_path / "split", "--eval-id", a, "--max-rows-per-run", "7")  # A's eval
    assert _eval_id(split) == eval_a
    err = refused(a, split)
    assert "2 service runs" in err and "--max-rows-per-run 14" in err

    code, _, err = cli("run", worse, "--backend", "mock", "--out", tmp_path / "inproc", "-q")
    assert code == 0, err
    err = refused(a, tmp_path / "inproc")
    assert "in-process emulator (--backend mock)" in err and "foundry-bridge mock-server" in err
    assert "--backend cloud --endpoint http://127.0.0.1:PORT" in err

    nowhere = tmp_path / "nowhere"
    shutil.copytree(a, nowhere)
    state = json.loads((nowhere / "state.json").read_text())
    (nowhere / "state.json").write_text(json.dumps({k: v for k, v in state.items() if k != "endpoint"}))
    assert "records no Foundry endpoint" in refused(nowhere, a)
    assert len(server.emulator.store.runs) == runs_before + 3  # other, split's two parts: no insight request
    assert server.emulator._insights == {}


def test_no_credentials_is_an_error_line(
    cli: Cli, server: MockServer, worse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from azure.core.exceptions import ClientAuthenticationError

    import foundry_bridge.foundry as foundry

    a = _run(cli, server, SAMPLE, tmp_path / "a")
    b = _run(cli, server, worse, tmp_path / "b", "--eval-id", _eval_id(a))

    class NoLogin:
        def get_token(self, *scopes: str, **kwargs: Any) -> Any:
            raise ClientAuthenticationError("DefaultAzureCredential failed to retrieve a token")

    monkeypatch.setattr(foundry, "default_credential", lambda **_: NoLogin())
    code, out, err = cli("compare", a, b, "--foundry")
    assert code == 1 and out == "" and "no credentials for" in err and "az login" in err
    assert "Traceback" not in err


def test_a_comparison_the_service_fails_leaves_the_local_one_standing(
    cli: Cli, server: MockServer, worse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import foundry_bridge.foundry._insights as insights

    a = _run(cli, server, SAMPLE, tmp_path / "a")
    b = _run(cli, server, worse, tmp_path / "b", "--eval-id", _eval_id(a))
    real = insights.get_insight

    def failed(client: Any, insight_id: str) -> Any:
        return real(client, insight_id).model_copy(update={"state": "Failed", "result": None})

    monkeypatch.setattr(insights, "get_insight", failed)
    code, out, err = cli("compare", a, b, "--foundry", "--format", "json")
    assert code == 0, err
    fc = json.loads(out)["foundry_comparison"]
    assert fc["rows"] == [] and "ended 'Failed'" in fc["error"] and "the local comparison stands alone" in fc["error"]
    assert json.loads(out)["judge_tests"]["rows"]


def _folder(tmp_path: Path, name: str, **state: Any) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    body = {"backend": "cloud", "plan_sha256": "x", "status": "completed", "eval_id": "eval_1"}
    body |= {"endpoint": "https://a.services.ai.azure.com/api/projects/p"}
    body |= {"runs": [{"offset": 0, "count": 14, "run_id": f"run_{name}"}], **state}
    (folder / "state.json").write_text(json.dumps(body))
    return folder


def test_runs_of_another_project_or_judged_locally_are_refused_before_any_request(tmp_path: Path) -> None:
    from foundry_bridge.errors import UsageError
    from foundry_bridge.foundry._insights import request_comparison

    class NoRequest:
        def get_token(self, *scopes: str, **kwargs: Any) -> Any:
            raise AssertionError("no request may be made")

    base = _folder(tmp_path, "a")
    elsewhere = _folder(tmp_path, "b", endpoint="https://b.services.ai.azure.com/api/projects/p")
    with pytest.raises(UsageError, match="Foundry compares one project"):
        request_comparison([base, elsewhere], credential=NoRequest())
    local = _folder(tmp_path, "c", backend="local")
    with pytest.raises(UsageError, match=r"judged here \(--backend local\)"):
        request_comparison([base, local], credential=NoRequest())
