"""Rules of the codebase that keep it small and fast: one catalog, light start-up, documented commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from foundry_bridge.catalog import CATALOG
from foundry_bridge.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "foundry_bridge"
HEAVY = ("azure.ai.evaluation", "azure.identity", "pandas", "ranx", "pytrec_eval", "numba", "openai")


def test_no_module_but_the_catalog_hard_codes_an_evaluator_name() -> None:
    names = "|".join(re.escape(n) for n in CATALOG)
    pattern = re.compile(rf"[\"'](?:{names})[\"']")
    offenders = [
        f"{path.relative_to(ROOT)}:{lineno}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "catalog.py"
        for lineno, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == [], "evaluator names belong in catalog.py only"


def _modules_loaded_by(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return set(out.split())


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    loaded = _modules_loaded_by("import foundry_bridge, foundry_bridge.cli, foundry_bridge.metrics")
    assert {m for m in loaded if m.startswith(HEAVY)} == set()


def test_cli_help_loads_no_heavy_dependency() -> None:
    code = (
        "import sys\nfrom foundry_bridge.cli import main\nsys.argv=['foundry-bridge','--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    loaded = _modules_loaded_by(code)
    assert {m for m in loaded if m.startswith(HEAVY)} == set()


def test_every_command_has_help_and_is_documented() -> None:
    runner = CliRunner()
    docs = (ROOT / "README.md").read_text() + "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    for name in COMMANDS:
        result = runner.invoke(cli, [name, "--help"], catch_exceptions=False)
        assert result.exit_code == 0, name
        assert "Usage:" in result.output and len(result.output) > 200, name
        assert f"foundry-bridge {name}" in docs, f"`foundry-bridge {name}` is not documented"


def test_atomic_writes_leave_no_partial_file_and_usual_permissions(tmp_path: Path) -> None:
    import os
    import stat

    import pytest

    from foundry_bridge._io import atomic_open, write_json

    target = tmp_path / "out.json"
    write_json(target, {"a": 1})
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write(b"half")
        raise RuntimeError("crash mid-write")
    assert target.read_bytes() == b'{\n  "a": 1\n}\n'  # the old content survives
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left behind
    os.chmod(target, 0o600)  # a file the user restricted stays restricted when rewritten
    write_json(target, {"a": 2})
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_metrics_imports_no_io() -> None:
    """`foundry_bridge/metrics` is array code only: every import (top level, in functions, under TYPE_CHECKING) is
    numpy, a pure standard-library module, a sibling metrics module, or errors / catalog / _text (/_lazy)."""
    import ast

    pure_stdlib = {"__future__", "math", "dataclasses", "typing", "collections", "functools", "itertools", "re"}
    pure_stdlib |= {"operator", "ast"}  # attrgetter / ne; ast parses measure names: no state, no I/O
    allowed = pure_stdlib | {"numpy"}
    allowed_package = {"errors", "catalog", "_text", "_lazy", "metrics"}
    root = Path(__file__).resolve().parent.parent / "foundry_bridge" / "metrics"
    bad: list[str] = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 1:  # a sibling: from . import x / from .x import y
                    continue
                if node.level == 2:  # from .. import x / from ..x import y: the package's bottom layer only
                    target = node.module.split(".")[0] if node.module else None
                    targets = [target] if target else [alias.name for alias in node.names]
                    bad += [f"{path.name}:{node.lineno}: ..{t}" for t in targets if t not in allowed_package]
                    continue
                names = [node.module or ""]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "foundry_bridge":
                    if len(parts) < 2 or parts[1] not in allowed_package:
                        bad.append(f"{path.name}:{node.lineno}: {name}")
                elif parts[0] not in allowed:
                    bad.append(f"{path.name}:{node.lineno}: {name}")
    assert not bad, "foundry_bridge/metrics imports outside its allowed list:\n" + "\n".join(bad)
