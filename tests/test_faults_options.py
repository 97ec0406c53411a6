"""Absurd numbers on the command line are usage errors (exit 2) naming the option, never tracebacks or hangs.

Every numeric option of every command is tried with values outside what it can mean: zero or negative counts,
cutoffs past 64 bits, NaN and infinity, durations of centuries. Each goes through the console entry point
(``foundry_bridge.cli.main``), which turns a usage error into ``Error: ...`` and exit 2; anything else (a
traceback) escapes as an exception and fails the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_bridge.cli import main

ROOT = Path(__file__).resolve().parent.parent
QRELS = ROOT / "tests" / "data" / "reference" / "trec_eval" / "qrels.test"
RUN = ROOT / "tests" / "data" / "reference" / "trec_eval" / "results.test"
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
RUN_DIR = ROOT / "tests" / "data" / "runs" / "mock-3rows"
HUGE = str(10**20)  # past int64
METRICS = ["metrics", "--qrels", QRELS, "--run", RUN]

# (command line before the option, option, value): the option comes first so it is the one checked
CASES = [
    (METRICS, "--relevance-threshold", "1e20"),
    (METRICS, "--relevance-threshold", HUGE),
    (METRICS, "--k", "0"),
    (METRICS, "--k", "-3"),
    (METRICS, "--k", HUGE),
    (METRICS, "--surface-threshold", "nan"),
    (METRICS, "--surface-threshold", "inf"),
    (METRICS, "--surface-threshold", "1e400"),
    (["compare", RUN_DIR, RUN_DIR], "--alpha", "nan"),
    (["compare", RUN_DIR, RUN_DIR], "--alpha", "0"),
    (["compare", RUN_DIR, RUN_DIR], "--coverage-drop", "nan"),
    (["compare", RUN_DIR, RUN_DIR], "--coverage-drop", "2"),
    (["compare", RUN_DIR, RUN_DIR], "--resamples", str(10**12)),
    (["compare", RUN_DIR, RUN_DIR], "--seed", "-1"),
    (["compare", RUN_DIR, RUN_DIR], "--seed", HUGE),
    (["report", RUN_DIR], "--stage-k", "0"),
    (["report", RUN_DIR], "--stage-k", HUGE),
    (["validate", SAMPLE], "--max-per-rule", "0"),
    (["validate", SAMPLE], "--max-per-rule", HUGE),
    (["run", SAMPLE, "--backend", "mock"], "--max-rows-per-run", "0"),
    (["run", SAMPLE, "--backend", "mock"], "--max-rows-per-run", HUGE),
    (["run", SAMPLE, "--backend", "mock"], "--inline-max-bytes", "-1"),
    (["run", SAMPLE, "--backend", "mock"], "--inline-max-bytes", HUGE),
    (["run", SAMPLE, "--backend", "local"], "--concurrency", "0"),
    (["run", SAMPLE, "--backend", "local"], "--concurrency", "1000000"),
    (["run", SAMPLE, "--backend", "local"], "--cache-ttl", "nan"),
    (["run", SAMPLE, "--backend", "local"], "--cache-ttl", "-1"),
    (["run", SAMPLE, "--backend", "local"], "--cache-ttl", "0"),
    (["run", SAMPLE, "--backend", "local"], "--judge-timeout", "inf"),
    (["run", SAMPLE, "--backend", "local"], "--judge-retries", "21"),
    (["mock-server"], "--port", "70000"),
    (["mock-server"], "--polls-to-complete", HUGE),
    (["mock-server"], "--seconds-to-complete", "inf"),
    (["mock-server"], "--rate-limit-rate", "nan"),
    (["mock-server"], "--rate-limit-every", HUGE),
    (["mock-server"], "--retry-after", "nan"),
    (["mock-server"], "--retry-after", "1e300"),
    (["mock-server"], "--server-error-rate", "1.5"),
    (["mock-server"], "--server-error-every", "-1"),
    (["mock-server"], "--run-failure-rate", "nan"),
    (["mock-server"], "--errored-row-rate", "inf"),
    (["mock-server"], "--slow-polls", HUGE),
    (["mock-server"], "--slow-seconds", "1e300"),
    (["mock-server"], "--seed", str(10**30)),
]

MOCK_FAULTS = [
    f"rate_limit_every={10**23}",
    f"server_error_every={10**23}",
    f"slow_polls={HUGE}",
    "slow_seconds=1e300",
    "slow_seconds=inf",
    "retry_after=nan",
    "retry_after=-1",
    "rate_limit_rate=nan",
    f"errored_rows=1,{10**23}",
    f"failed_runs={10**23}",
    f"seed={10**27}",
]


def _exit_code(argv: list, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main([str(a) for a in argv])
    return int(exited.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(("before", "option", "value"), CASES, ids=[f"{c[0][0]} {c[1]} {c[2]}" for c in CASES])
def test_absurd_numeric_option_is_a_usage_error(before: list, option: str, value: str, capsys, tmp_path: Path):
    argv = [before[0], option, value, *before[1:], *(["--out", tmp_path / "o"] if before[0] == "run" else [])]
    code, err = _exit_code(argv, capsys)
    assert code == 2, err
    assert option in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("fault", MOCK_FAULTS)
def test_absurd_mock_fault_is_a_usage_error(fault: str, capsys, tmp_path: Path):
    argv = ["run", SAMPLE, "--backend", "mock", "--out", tmp_path / "o", "--mock-fault", fault]
    code, err = _exit_code(argv, capsys)
    assert code == 2, err
    assert "--mock-fault" in err and fault.split("=")[0] in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
