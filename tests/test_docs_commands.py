"""Every `foundry-bridge …` command in README.md and docs/*.md runs as written, from a fresh clone, on the bundled
files — so the docs cannot drift from the tool.

The convention the docs follow (docs/architecture.md, "Commands in the docs"):

- A fenced block tagged ``bash``, ``sh`` or ``console`` holds commands. Each line that starts with
  ``foundry-bridge`` (``$ foundry-bridge`` in a ``console`` block, whose other lines are output) is run, in the
  order of the text; ``\\`` continues a line, ``> FILE`` sends the output to a file, a trailing ``&`` is dropped.
  A comment saying ``exit N`` is the status the command must end with; otherwise 0. Other lines (``pytest``,
  ``python``) are not run.
- A fenced block tagged ``text`` is a synopsis (``foundry-bridge plan DATA [--mapping M]``): not run, but every
  ``--option`` it names must exist on that command. An untagged block may not hold a ``foundry-bridge`` line.
- An HTML comment on the line before the fence marks a block that needs more than this machine:
  ``<!-- docs-test: cloud -->`` runs against the emulator on 127.0.0.1 (``AZURE_AI_PROJECT_ENDPOINT`` points at
  it, ``AZURE_AI_MODEL_DEPLOYMENT_NAME`` is set, the credential chain gives a token);
  ``<!-- docs-test: judge -->`` against the tests' fake OpenAI-compatible judge (the ``--judge-endpoint`` value
  is replaced by its URL); ``<!-- docs-test: server -->`` starts the server with ``--port 0`` in a subprocess,
  waits for its address and stops it.

Commands run in-process (``main([...])``) in a scratch copy of samples/, mappings/ and examples/: README.md first,
then each docs page in a copy of the README's folder (a page may use ``runs/demo`` and ``runs/other`` from the
tour). ``$VAR`` is expanded from the test's environment only; any other variable fails the test. An OTLP
receiver on 127.0.0.1 stands in for the collector of ``report --otel otlp``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from otlp_helpers import otlp_receiver

from foundry_bridge.cli import cli, main
from foundry_bridge.foundry import StaticTokenCredential
from foundry_bridge.local.fake_judge import FakeJudgeServer
from foundry_bridge.mock import FoundryEmulator, serve

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_TAGS = {"bash", "sh", "shell", "console"}
MARKERS = {"cloud", "judge", "server"}
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_MARKER = re.compile(r"^<!--\s*docs-test:\s*(\w+)\s*-->$")
_EXIT = re.compile(r"#.*\bexit (\d+)\b")
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


@dataclass(frozen=True)
class Command:
    page: Path
    line: int
    text: str
    marker: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def expected_exit(self) -> int:
        found = _EXIT.search(self.text)
        return int(found.group(1)) if found else 0


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    tag: str
    marker: str | None
    lines: tuple[tuple[int, str], ...]


def blocks(page: Path) -> Iterator[Block]:
    """The fenced blocks of a Markdown page, each with its tag and the docs-test marker on the line before it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        before = lines[i - 1].strip() if i else ""
        marked = _MARKER.match(before)
        start, body = i, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append((i + 1, lines[i]))
            i += 1
        yield Block(page, start + 1, opened.group(2), marked.group(1) if marked else None, tuple(body))
        i += 1


def commands(block: Block) -> list[Command]:
    """The ``foundry-bridge`` commands of a command block, continuation lines joined."""
    found: list[Command] = []
    pending: tuple[int, str] | None = None
    for number, raw in block.lines:
        text = raw.strip()
        if pending is not None:
            first, joined = pending
            text = joined + " " + text
            number = first
            pending = None
        elif block.tag == "console":
            if not text.startswith("$ "):
                continue  # output
            text = text[2:].strip()
        if text.endswith("\\"):
            pending = (number, text[:-1].rstrip())
            continue
        if _is_foundry_bridge(text):
            found.append(Command(block.page, number, text, block.marker))
    return found


def _is_foundry_bridge(text: str) -> bool:
    first = text.split(maxsplit=1)[0] if text.split() else ""
    return first == "foundry-bridge" or first.endswith("/foundry-bridge")


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


# -- the text follows the convention ---------------------------------------------------------------------------
def test_every_foundry_bridge_block_is_tagged_commands_or_synopsis_and_markers_are_known() -> None:
    problems = []
    for block in all_blocks():
        has_command = any(_is_foundry_bridge(t.strip().removeprefix("$ ")) for _, t in block.lines)
        where = f"{block.page.relative_to(ROOT)}:{block.line}"
        if has_command and block.tag not in COMMAND_TAGS | {"text", "python"}:
            problems.append(f"{where}: tag the block `bash` (commands run by this test) or `text` (a synopsis)")
        if block.marker is not None and block.marker not in MARKERS:
            problems.append(f"{where}: unknown docs-test marker {block.marker!r} (one of {sorted(MARKERS)})")
        if block.marker is not None and block.tag not in COMMAND_TAGS:
            problems.append(f"{where}: a docs-test marker belongs before a command block")
    assert problems == []


def _command_of(words: list[str]) -> tuple[click.Command, list[str]]:
    """The click command a synopsis names (``catalog diff`` included) and the words after it."""
    ctx = click.Context(cli)
    command: click.Command = cli
    rest = words
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(ctx, rest[0])
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


def test_every_option_a_synopsis_names_exists_on_its_command() -> None:
    problems = []
    for block in all_blocks():
        if block.tag != "text":
            continue
        current: tuple[int, click.Command] | None = None
        for number, raw in block.lines:
            text = raw.strip()
            if _is_foundry_bridge(text):
                command, _ = _command_of(text.split()[1:])
                current = (number, command)
            elif not raw.startswith(" "):
                current = None  # another program's synopsis (pytest --foundry-bridge-gate ...)
            if current is None:
                continue
            known = {opt for p in current[1].params for opt in (*p.opts, *p.secondary_opts)} | {"--help"}
            for option in re.findall(r"(?<![\w-])--[a-z][\w-]*", text):
                if option not in known:
                    problems.append(f"{block.page.relative_to(ROOT)}:{number}: {current[1].name} has no {option}")
    assert problems == []


def test_the_docs_hold_the_commands_of_the_tour() -> None:
    """What the README's first hour promises is among the commands this test runs (so it cannot go untested)."""
    texts = [c.text for b in all_blocks() if b.tag in COMMAND_TAGS for c in commands(b)]
    for wanted in ("compare runs/demo runs/other", "report runs/demo --format html", "catalog diff", "run --resume"):
        assert any(wanted in t for t in texts), wanted


# -- every command runs -----------------------------------------------------------------------------------------
@dataclass
class World:
    """What the marked blocks run against, and the environment every command sees."""

    cloud_endpoint: str
    judge_url: str
    env: dict[str, str]


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[World]:
    import foundry_bridge.foundry as foundry

    monkeypatch.setattr(foundry, "default_credential", lambda **_: StaticTokenCredential("docs-token"))
    for name in ("GITHUB_STEP_SUMMARY", "AZURE_AI_PROJECT_ENDPOINT", "AZURE_AI_MODEL_DEPLOYMENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FOUNDRY_BRIDGE_CACHE_DIR", str(tmp_path / "judge-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with (
        serve(FoundryEmulator(polls_to_complete=0), "127.0.0.1", 0) as server,
        FakeJudgeServer() as judge,
        otlp_receiver() as (otlp, _),
    ):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", f"{otlp}/v1/logs")
        env = {"AZURE_AI_PROJECT_ENDPOINT": server.endpoint, "AZURE_AI_MODEL_DEPLOYMENT_NAME": "my-judge"}
        yield World(server.endpoint, f"http://127.0.0.1:{judge.port}/v1", env)


def _argv(command: Command, world: World) -> tuple[list[str], str | None]:
    """The words of ``command`` with ``$VAR`` expanded from the test's environment, and a ``> FILE`` target."""
    env = world.env if command.marker == "cloud" else {}

    def expand(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in env:
            raise AssertionError(f"{command.where}: ${name} is not defined for this block (mark it, or drop it)")
        return env[name]

    words = [_VAR.sub(expand, w) for w in shlex.split(command.text, comments=True)]
    if words and words[-1] == "&":
        words.pop()
    target = None
    if ">" in words:
        at = words.index(">")
        target, words = words[at + 1], words[:at]
    if command.marker == "judge" and "--judge-endpoint" in words:
        words[words.index("--judge-endpoint") + 1] = world.judge_url
    return words[1:], target


def _run_in_process(
    command: Command, world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    args, target = _argv(command, world)
    with monkeypatch.context() as m:
        if command.marker == "cloud":
            for name, value in world.env.items():
                m.setenv(name, value)
        capsys.readouterr()
        try:
            main(args)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        out, err = capsys.readouterr()
    if target is not None:
        Path(target).write_text(out, encoding="utf-8")
    return code, out, err


def _run_server(command: Command, world: World) -> tuple[int, str, str]:
    """Start the server the command names on a free port, read its address, stop it."""
    args, _ = _argv(command, world)
    if "--port" in args:
        args[args.index("--port") + 1] = "0"
    else:
        args += ["--port", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "foundry_bridge", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    return (0 if "listening on" in first else 1), first, err


def _scratch(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for part in ("samples", "mappings", "examples"):
        shutil.copytree(ROOT / part, folder / part)
    return folder


def test_every_documented_command_runs_as_written(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    failures: list[str] = []
    ran = 0
    tour = _scratch(tmp_path, "tour")
    for page in PAGES:
        if page.name == "README.md":
            folder = tour
        else:
            folder = tmp_path / page.stem
            shutil.copytree(tour, folder, symlinks=True)
        monkeypatch.chdir(folder)
        for block in blocks(page):
            if block.tag not in COMMAND_TAGS:
                continue
            for command in commands(block):
                ran += 1
                if command.marker == "server":
                    code, out, err = _run_server(command, world)
                else:
                    code, out, err = _run_in_process(command, world, capsys, monkeypatch)
                if code != command.expected_exit or "Traceback" in err:
                    tail = "\n    ".join((err or out).strip().splitlines()[-6:])
                    failures.append(
                        f"{command.where}: `{command.text}` exit {code}, want {command.expected_exit}\n    {tail}"
                    )
    print(f"{ran} documented commands run")
    assert failures == [], "\n".join(failures)
