"""One CLI: every command's ``--help`` gives every option a help text and ends with the command's exit codes;
``run`` groups its options per backend and refuses one that its backend ignores; old spellings still work, with a
deprecation note; docs/cli.md is what the click tree generates."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli, main
from foundry_bridge.commands._exit_codes import COMMON, EXIT_CODES, GATE, INCONCLUSIVE, exit_codes

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
QRELS = ROOT / "tests" / "data" / "reference" / "trec_eval" / "qrels.test"
RUN = ROOT / "tests" / "data" / "reference" / "trec_eval" / "results.test"


def _commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(cli)

    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, f"{path} {name}".strip())

    yield from walk(cli, "")


COMMANDS = list(_commands())


def _help(path: str) -> str:
    result = CliRunner().invoke(cli, [*path.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p or "(root)" for p, _ in COMMANDS])
def test_every_option_has_help_and_every_help_ends_with_its_exit_codes(path: str, command: click.Command) -> None:
    text = _help(path)
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"`foundry-bridge {path}`: {'/'.join(param.opts)} has no help text"
    tail = text.rstrip().rsplit("\n\n", 1)[-1]
    assert tail.lstrip().startswith("Exit codes:"), f"`foundry-bridge {path} --help` does not end with its exit codes"
    flat = " ".join(tail.split())
    for code in exit_codes(path):
        assert re.search(rf"[:;] {code} ", flat), f"`foundry-bridge {path} --help` omits exit code {code}"


def test_the_exit_code_table_is_the_exception_tree() -> None:
    from foundry_bridge.comparison import CompareGateFailed, CompareGateInconclusive
    from foundry_bridge.errors import FoundryBridgeError, UsageError

    assert set(EXIT_CODES) == {path for path, _ in COMMANDS}
    assert (FoundryBridgeError.exit_code, UsageError.exit_code) == (1, 2) and set(COMMON) == {0, 1, 2}
    assert CompareGateFailed.exit_code == GATE and GATE in exit_codes("compare")
    assert CompareGateInconclusive.exit_code == INCONCLUSIVE and INCONCLUSIVE in exit_codes("compare")


def test_run_help_shows_the_options_in_sections_per_backend() -> None:
    text = _help("run")
    sections = re.findall(r"^(\S[^\n]*):$", text, flags=re.MULTILINE)
    assert [s for s in sections if s.endswith("options") or s == "Options"] == [
        "Options",
        "cloud and mock options",
        "mock options",
        "local options",
    ]
    local = text.split("local options:")[1]
    assert "--judge-model" in local and "--concurrency" in local
    assert "--judge-model" not in text.split("local options:")[0]


@pytest.mark.parametrize(
    ("backend", "given", "named"),
    [
        ("mock", ["--judge-model", "gpt"], "--judge-model"),
        ("mock", ["--concurrency", "4"], "--concurrency"),
        ("mock", ["--no-cache"], "--no-cache"),
        ("local", ["--max-rows-per-run", "3"], "--max-rows-per-run"),
        ("local", ["--endpoint", "https://x.services.ai.azure.com/api/projects/p"], "--endpoint"),
    ],
)
def test_run_refuses_an_option_its_backend_ignores(
    backend: str, given: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", str(SAMPLE), "--backend", backend, "--out", str(tmp_path / "r"), "-q", *given])
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    assert named in err and f"the {backend} backend" in err, err
    assert not (tmp_path / "r").exists()


def test_metrics_old_output_spelling_still_writes_with_a_deprecation_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    for flag, path in (("--out", new), ("-o", old), ("--output", old)):
        with pytest.raises(SystemExit) as exited:
            main(["metrics", "--qrels", str(QRELS), "--run", str(RUN), flag, str(path), "-q"])
        assert exited.value.code == 0
        err = capsys.readouterr().err
        assert ("Deprecated:" in err and "--out" in err) == (flag != "--out"), err
    assert new.read_bytes() == old.read_bytes()
    assert "--output" not in _help("metrics")


def test_docs_cli_md_is_generated_from_the_click_tree() -> None:
    from cli_doc_helpers import CLI_DOC, cli_doc

    assert CLI_DOC.read_text(encoding="utf-8") == cli_doc(), "docs/cli.md is stale: python tests/cli_doc_helpers.py"
