"""Rules of the codebase that keep it small and fast: one catalog, light start-up, documented commands."""

from __future__ import annotations

import ast
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
HEAVY += ("pyarrow", "polars", "tiktoken", "datasets")  # the table readers and the cost preflight
HEAVY += ("scipy",)  # Student's t quantile: imported when an interval is computed


def _lines_matching(pattern: re.Pattern[str], *, outside: str) -> list[str]:
    """``path:line`` of every package line matching ``pattern``, in any module but the one named ``outside``."""
    return [
        f"{path.relative_to(ROOT)}:{lineno}"
        for path in PACKAGE.rglob("*.py")
        if path.name != outside
        for lineno, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]


def test_no_module_but_the_catalog_hard_codes_an_evaluator_name() -> None:
    names = "|".join(re.escape(n) for n in CATALOG)
    offenders = _lines_matching(re.compile(rf"[\"'](?:{names})[\"']"), outside="catalog.py")
    assert offenders == [], "evaluator names belong in catalog.py only"


def test_every_yaml_read_goes_through_the_bounded_loader() -> None:
    unbounded = re.compile(r"\byaml\.(safe_load|load|full_load|unsafe_load|compose|load_all|safe_load_all)\(")
    assert _lines_matching(unbounded, outside="_yaml.py") == [], "read YAML through foundry_bridge._yaml only"


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


def test_a_report_that_tests_nothing_loads_no_dataframe_or_evaluation_library(tmp_path: Path) -> None:
    """A run's report (no human verdicts, no repeats) once its tables are made reads them through the engine: pandas
    (0.4 s to import; pyarrow's conversions pull it in, so the first report, which writes the tables with Arrow,
    still pays it), the evaluation SDKs and the table readers stay unloaded."""
    from foundry_bridge import build_report, run_evaluation

    run = tmp_path / "run"
    run_evaluation(ROOT / "samples" / "benefits" / "rag_eval.jsonl", backend="mock", out=run)
    build_report(run)  # the tables, made
    code = (
        "import sys\nfrom foundry_bridge.cli import main\n"
        f"sys.argv=['foundry-bridge','report',{str(run)!r},'--format','json','--out',{str(tmp_path / 'r.json')!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    loaded = _modules_loaded_by(code)
    assert (tmp_path / "r.json").is_file()
    heavy = ("pandas", "azure.ai.evaluation", "azure.identity", "ranx", "pytrec_eval", "numba", "polars", "datasets")
    assert {m for m in loaded if m.startswith(heavy)} == set()


def test_compare_without_foundry_loads_no_azure_or_http_client(tmp_path: Path) -> None:
    """``compare A B`` of two run folders asks no service (no ``--foundry``): the Azure SDK and the HTTP client it
    would use stay unloaded."""
    from foundry_bridge import build_report, run_evaluation

    run = tmp_path / "run"
    run_evaluation(ROOT / "samples" / "benefits" / "rag_eval.jsonl", backend="mock", out=run)
    build_report(run)
    out = tmp_path / "c.json"
    code = (
        "import sys\nfrom foundry_bridge.cli import main\n"
        f"sys.argv=['foundry-bridge','compare',{str(run)!r},{str(run)!r},'--format','json','--out',{str(out)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    loaded = _modules_loaded_by(code)
    assert out.is_file()
    assert {m for m in loaded if m.startswith(("azure", "httpx", "foundry_bridge.foundry"))} == set()


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
    numpy, a pure standard-library module, a sibling metrics module, or errors / catalog / wire / _text (/_lazy)."""
    import ast

    pure_stdlib = {"__future__", "math", "dataclasses", "typing", "collections", "functools", "itertools", "re"}
    pure_stdlib |= {"operator", "ast", "array", "statistics"}  # attrgetter; measure names; buffers; NormalDist
    allowed = pure_stdlib | {"numpy", "scipy"}  # scipy: special functions only (metrics._dist: stdtrit, bdtr)
    allowed_package = {"errors", "catalog", "wire", "_text", "_lazy", "metrics"}  # wire: the pass/fail rule
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


# -- layering -------------------------------------------------------------------------------------------------
# Each unit (a subpackage or a top-level module of foundry_bridge) and the units it may import; an arrow runs
# only downwards. docs/architecture.md explains the table; change both together.
BASE = {"<root>", "_io", "_lazy", "_text", "_yaml", "errors", "catalog", "contracts", "results", "wire"}
LAYERS: dict[str, set[str]] = {
    **{unit: BASE for unit in BASE},
    "metrics": BASE,  # and test_metrics_imports_no_io narrows it to the pure part of BASE
    "dataset": BASE | {"metrics"},
    "mapping": BASE | {"dataset", "metrics"},
    "validate": BASE | {"dataset", "mapping", "metrics"},
    "runfolder": BASE | {"dataset", "mapping"},
    "runner_protocol": BASE | {"mapping", "runfolder"},
    "columns": BASE | {"metrics", "dataset", "mapping", "runfolder", "canaries"},
    "foundry": BASE | {"mapping", "runfolder", "runner_protocol"},
    "mock": BASE | {"metrics", "mapping"},
    "local": BASE | {"metrics", "mapping", "runfolder", "runner_protocol"},
    "runner": BASE
    | {"dataset", "mapping", "metrics", "validate", "runfolder", "runner_protocol"}
    | {"foundry", "mock", "local", "columns"},
    "report": BASE | {"metrics", "dataset", "mapping", "runfolder", "canaries", "columns"},
    "canaries": BASE | {"dataset", "metrics"},
    "traces": BASE,
    "estimate": BASE,
    "graded": BASE | {"mapping", "runfolder", "runner"},  # grader criteria run by the runner (#37)
    "coverage": BASE | {"graded", "local"},  # retrieval coverage and utilization (#37)
    "judged": BASE | {"dataset", "mapping", "metrics", "local", "mock", "graded", "coverage", "runfolder", "columns"},
    "comparison": BASE | {"metrics", "dataset", "mapping", "runfolder", "columns", "report"},
    "integrations": BASE | {"report", "comparison", "runfolder", "columns"},
    "pytest_plugin": BASE | {"report", "comparison", "integrations"},
    "commands": BASE
    | {"metrics", "dataset", "mapping", "validate", "runfolder", "runner_protocol", "runner"}
    | {"foundry", "mock", "local", "report", "comparison", "canaries", "estimate", "integrations", "columns", "traces"}
    | {"judged", "graded", "coverage"},
    "cli": BASE | {"metrics", "commands"},
    "__main__": {"cli"},
    "_evaluate": BASE | {"dataset", "mapping", "validate", "runner_protocol", "runner", "report", "comparison"},
}
# The package root is the public facade: it names every unit's exports, importing them only for type checkers
# (TYPE_CHECKING) and on first use (``__getattr__``), so every layer may still read ``__version__`` from it.
LAYERS["<root>"] = set(LAYERS)


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("__version__", "__init__"):
        return "<root>"
    return parts[1]


def _project_imports(path: Path, root: Path = ROOT, *, runtime_only: bool = False) -> list[tuple[int, str]]:
    """Every ``foundry_bridge`` name ``path`` imports, as a dotted path, at any depth (function bodies too, and
    ``if TYPE_CHECKING:`` blocks unless ``runtime_only``): ``from .x import y`` is ``<package>.x.y``, which names
    module ``x`` or, when ``y`` is one, its submodule."""
    module = ".".join(path.relative_to(root).with_suffix("").parts)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _operand_name(node.test) == "TYPE_CHECKING":
                node.body = []
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("foundry_bridge")):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            prefix = [*base, node.module] if node.module else base
            found += [(node.lineno, ".".join([*prefix, a.name])) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("foundry_bridge")]
    return found


def test_imports_point_down_the_layers() -> None:
    bad = []
    units = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _unit(".".join(path.relative_to(ROOT).with_suffix("").parts))
        units.add(source)
        allowed = LAYERS.get(source)
        assert allowed is not None, f"{path.relative_to(ROOT)}: unit {source!r} has no row in LAYERS"
        for lineno, target in _project_imports(path):
            if _unit(target) != source and _unit(target) not in allowed:
                bad.append(f"{path.relative_to(ROOT)}:{lineno}: {source} imports {target}")
    assert bad == [], "imports against the layering (docs/architecture.md):\n" + "\n".join(bad)
    assert units >= {"metrics", "dataset", "mapping", "runfolder", "foundry", "mock", "local", "report", "commands"}


def test_report_never_imports_compare() -> None:
    """compare stands above the report (it reads runs' tables and the report's models); the report knows nothing
    of it, at any depth, TYPE_CHECKING included."""
    assert "comparison" not in LAYERS["report"] and "report" in LAYERS["comparison"]
    found = [
        f"{path.relative_to(ROOT)}:{lineno}: {target}"
        for path in sorted((PACKAGE / "report").rglob("*.py"))
        for lineno, target in _project_imports(path)
        if _unit(target) == "comparison"
    ]
    assert found == [], "report/ imports comparison/ (move what both need down into report/ or metrics/)"


def test_the_layering_check_catches_an_upward_import(tmp_path: Path) -> None:
    probe = tmp_path / "foundry_bridge" / "dataset" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "from . import spec\nfrom .._io import dumps\n"
        "def f():\n    from ..report import build_report\n    import foundry_bridge.mapping.loader\n"
    )
    targets = [t for _, t in _project_imports(probe, tmp_path)]
    assert targets == [
        "foundry_bridge.dataset.spec",
        "foundry_bridge._io.dumps",
        "foundry_bridge.report.build_report",
        "foundry_bridge.mapping.loader",
    ]
    assert {_unit(t) for t in targets} - LAYERS["dataset"] - {"dataset"} == {"report", "mapping"}


# -- no import circle -----------------------------------------------------------------------------------------
# A circle is a strongly connected component of the graph of the package's files, an arrow for each import
# written in a file (at any depth, ``from . import x`` included), resolved to the file it loads. An import under
# ``if TYPE_CHECKING:`` is an arrow too (the type ties the two modules; hiding an import there breaks no circle),
# except in a package's ``__init__.py``, whose TYPE_CHECKING block only hands its exports' names to type
# checkers (the package root names every unit's that way). The implicit import of a module's parent packages is
# no arrow. There is no circle: a new one fails the test (break it: move what both sides need down).


def _module_file(dotted: str, root: Path) -> Path | None:
    """The file that importing ``dotted`` loads: the longest prefix of it that is a module or a package."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:n])
        for file in (base.with_suffix(".py"), base / "__init__.py"):
            if file.is_file():
                return file
    return None


def _import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each file of ``root/foundry_bridge`` → the package files it imports (paths from ``root``)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((root / "foundry_bridge").rglob("*.py")):
        imports = _project_imports(path, root, runtime_only=path.name == "__init__.py")
        files = {_module_file(target, root) for _, target in imports} - {None, path}
        graph[path.relative_to(root).as_posix()] = {f.relative_to(root).as_posix() for f in files if f}
    return graph


def _circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.add(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_among_the_packages_files() -> None:
    circles = sorted(sorted(c) for c in _circles(_import_graph()))
    assert circles == [], "an import circle (break it: move what both need down)"


def test_the_circle_check_catches_a_planted_circle(tmp_path: Path) -> None:
    files = {
        "__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import g\n",  # a facade
        "a.py": "from .b import c\n",  # a submodule named by a from-import
        "b/__init__.py": "",
        "b/c.py": "def f():\n    from .. import d\n",  # inside a function, ``from .. import x``
        "d.py": "import foundry_bridge.a\nfrom . import __version__\n",  # the package root: its __init__.py
        "e.py": "import typing\nif typing.TYPE_CHECKING:\n    from .f import Y\n",  # a tie of types counts
        "f.py": "from .e import X\n",
        "foundry/_client.py": "from ._poller import RunPoller\n",  # two modules of a subpackage
        "foundry/_poller.py": "from ._client import get_run\n",
    }
    pair = frozenset({"foundry_bridge/foundry/_client.py", "foundry_bridge/foundry/_poller.py"})
    for name, text in files.items():
        (tmp_path / "foundry_bridge" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "foundry_bridge" / name).write_text(text)
    graph = _import_graph(tmp_path)
    assert graph["foundry_bridge/d.py"] == {"foundry_bridge/a.py", "foundry_bridge/__init__.py"}
    assert graph["foundry_bridge/__init__.py"] == set()
    cycle = ["foundry_bridge/a.py", "foundry_bridge/b/c.py", "foundry_bridge/d.py"]
    types = ["foundry_bridge/e.py", "foundry_bridge/f.py"]
    assert _circles(graph) == {frozenset(cycle), frozenset(types), pair}


# -- each rule in its home ------------------------------------------------------------------------------------
# A comparison operand named like a pass threshold (``threshold``, ``thresholds[j]``, ``cfg.threshold``, ``thr``).
_PASS_THRESHOLD = re.compile(r"(?:^|_)(?:thr|thresholds?)$")
# Thresholds that are not a verdict's: which label counts as relevant, which retrieval score surfaces a document.
_NOT_A_VERDICT = {"relevance_threshold", "surface_threshold"}


def _operand_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _threshold_comparisons(path: Path) -> list[int]:
    """Lines of ``path`` comparing something to a pass threshold with ``>=`` or ``<=`` (a pass/fail decision)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            names = {_operand_name(operands[i]), _operand_name(operands[i + 1])} - {None} - _NOT_A_VERDICT
            if isinstance(op, ast.GtE | ast.LtE) and any(_PASS_THRESHOLD.search(n) for n in names if n):
                lines.add(node.lineno)
    return sorted(lines)


def test_only_wire_decides_pass_or_fail() -> None:
    """Pass/fail from score, threshold and direction is ``wire.passes``; no other module compares to a threshold."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "wire.py"
        for line in _threshold_comparisons(path)
    ]
    assert offenders == [], "decide pass/fail through foundry_bridge.wire.passes:\n" + "\n".join(offenders)


def test_the_pass_fail_check_catches_a_copy(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(score, cfg, thr, relevance_threshold, label):\n"
        "    a = score >= cfg.thresholds[0]\n"
        "    b = thr <= score\n"
        "    c = label >= relevance_threshold\n"  # which label is relevant: not a verdict
        "    d = cfg.threshold is None\n"
        "    return 0 < score <= cfg.threshold\n"
    )
    assert _threshold_comparisons(probe) == [2, 3, 6]


def test_validate_imports_no_click() -> None:
    """The gate is a library: no module of validate/ imports click (the CLI's parser), itself or through another."""
    validate = PACKAGE / "validate"
    direct = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted(validate.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "click" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "click")
    ]
    assert direct == []
    code = "import importlib\n" + "".join(
        f"importlib.import_module('foundry_bridge.validate.{p.stem}')\n" for p in sorted(validate.glob("*.py"))
    )
    assert {m for m in _modules_loaded_by(code) if m.split(".")[0] == "click"} == set()


# -- one decoding of every input ---------------------------------------------------------------------------------
# validate/ reads JSON only as dataset/ decodes it: JSONL rows from ``dataset.rows.jsonl_rows`` (each line decoded by
# ``dataset._json.decode``) and the criteria file by ``dataset._json.decode_document``, so a line is judged by the
# same function (and in the same words) whichever command reads it.
_JSON_LIBRARIES = {"json", "orjson", "msgspec", "simplejson", "ujson", "rapidjson"}
_OWN_DECODES = {"loads", "load", "raw_decode", "JSONDecoder", "Decoder"}


def _json_decoded_by_hand(path: Path) -> list[int]:
    """Lines of ``path`` that import a JSON library or call a JSON decoder (``loads``, ``load``, a ``Decoder``)
    themselves, whichever module it comes from."""
    return sorted(
        {
            node.lineno
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if (isinstance(node, ast.Import) and any(a.name.split(".")[0] in _JSON_LIBRARIES for a in node.names))
            or (
                isinstance(node, ast.ImportFrom)
                and not node.level
                and (node.module or "").split(".")[0] in _JSON_LIBRARIES
            )
            or (isinstance(node, ast.ImportFrom) and any(a.name in _OWN_DECODES for a in node.names))
            or (isinstance(node, ast.Call) and _operand_name(node.func) in _OWN_DECODES)
        }
    )


def test_validate_decodes_json_only_through_dataset() -> None:
    """No module of validate/ decodes JSON itself: rows come from ``dataset.rows.jsonl_rows``, the criteria file
    from ``dataset._json.decode_document``."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((PACKAGE / "validate").rglob("*.py"))
        for line in _json_decoded_by_hand(path)
    ]
    assert offenders == [], "decode JSON through foundry_bridge.dataset (rows.jsonl_rows, _json.decode):\n" + "\n".join(
        offenders
    )


def test_the_decoding_check_catches_a_copy(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""Rows are decoded by json.loads elsewhere."""\n'  # a docstring's mention: not a decode
        "import orjson\n"
        "from json import JSONDecodeError\n"
        "from ..dataset._json import loads\n"
        "def f(raw, msgspec, decoder):\n"
        "    a = orjson.loads(raw)\n"
        "    b = decoder.decode(raw)\n"  # a text codec's decode is not counted: only JSON decoders by name
        "    c = msgspec.json.Decoder(dict)\n"
        "    return loads(raw), a, b, c\n"
    )
    assert _json_decoded_by_hand(probe) == [2, 3, 4, 6, 8, 9]


def _click_imports(path: Path) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "click" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "click")
    ]


def test_the_library_imports_no_click() -> None:
    """Only the command line (cli.py, commands/) imports click: the gate, the plan, the run (with its lock, resume
    and repeats), the report and the comparison are library calls that need no click context."""
    cli_side = {PACKAGE / "cli.py", *(PACKAGE / "commands").rglob("*.py")}
    direct = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in cli_side
        for line in _click_imports(path)
    ]
    assert direct == []
    code = "import foundry_bridge.runner, foundry_bridge.validate._gate, foundry_bridge.report"
    assert {m for m in _modules_loaded_by(code) if m.split(".")[0] == "click"} == set()


def test_the_run_and_plan_commands_leave_the_work_to_the_library() -> None:
    """``run`` and ``plan`` parse, call ``run_evaluation`` / ``plan_evaluation`` and print: neither reads the
    data, builds the plan or backend, chooses, locks or prepares the run folder itself."""
    the_library_s = {"prepare_run", "execute_run", "choose_out", "get_backend", "build_plan", "gated_records"}
    the_library_s |= {"load_mapping", "read_records", "RunFolder.lock", "lock"}
    for name, call in (("run", "run_evaluation"), ("plan", "plan_evaluation")):
        path = PACKAGE / "commands" / f"{name}.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        called = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
        assert call in imported, name
        assert (imported | called) & the_library_s == set(), name


# -- one reader of a run folder's results ---------------------------------------------------------------------
# Who may open a run folder's results (``results.jsonl``) and query records (``records.jsonl``): the run folder
# itself (it writes them, and its validating readers name a bad line), the runner (it streams a backend's rows into
# the results, counts them as the run finishes, and reads them back on resume; the backends stream their rows to
# it and open no file of their own), ``results`` (it names the files) and ``columns`` (``seal`` turns them into
# Parquet; ``RunColumns`` is the one reader everything else — report, trust, compare, OTel, JUnit, the pytest
# plugin — goes through).
# graded.py reads back a grader run's labels per item for judge-docs: a plan of items alone, sealed into no columns
RESULTS_OPENERS = {
    "runfolder.py",
    "runner.py",
    "results.py",
    "columns.py",
    "graded.py",
    "judged.py",
}  # judged: rankings
_RESULT_READERS = {"iter_results", "read_results", "iter_records", "LoadedRun"}
_RUN_FILES_READ = {"results", "records"}


def _results_opened(path: Path) -> list[int]:
    """Lines of ``path`` that reach a run folder's results or records file: ``RunFolder.iter_results`` /
    ``iter_records`` / ``load``, ``runner.read_results``, ``folder.file("results")``, ``RUN_FILES["results"]`` or the
    name ``"results.jsonl"`` itself (not a docstring's or a message's mention of it); the same for records."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return sorted({node.lineno for node in ast.walk(tree) if _reads_run_file(node)})


def _reads_run_file(node: ast.AST) -> bool:
    if isinstance(node, ast.Name | ast.Attribute):
        return _operand_name(node) in _RESULT_READERS  # iter_results, read_results, iter_records
    if isinstance(node, ast.ImportFrom):
        return any(a.name in _RESULT_READERS for a in node.names)
    if isinstance(node, ast.Constant):
        return node.value in ("results.jsonl", "records.jsonl")
    if isinstance(node, ast.Subscript):  # RUN_FILES["results"]
        key = node.slice
        return (
            _operand_name(node.value) == "RUN_FILES" and isinstance(key, ast.Constant) and key.value in _RUN_FILES_READ
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "file":  # folder.file("results")
            return [getattr(a, "value", None) for a in node.args] in (["results"], ["records"])
        target = node.func.value  # RunFolder(run_dir).load(): every row in memory
        return node.func.attr == "load" and isinstance(target, ast.Call) and _operand_name(target.func) == "RunFolder"
    return False


def test_only_run_columns_opens_a_run_folders_results() -> None:
    """The report, the trust section, compare, OTel, JUnit and the pytest plugin see a run's results only through
    ``columns.RunColumns``; no other module of the package reads ``results.jsonl`` (nor keeps its own copy)."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not (path.parent == PACKAGE and path.name in RESULTS_OPENERS)
        for line in _results_opened(path)
    ]
    assert offenders == [], "read a run's results through foundry_bridge.columns.RunColumns:\n" + "\n".join(offenders)


def test_the_results_reader_check_catches_a_copy(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""Reads results.jsonl."""\n'  # a docstring's mention: not a read
        "from foundry_bridge.runner import read_results\n"
        "def f(folder, RUN_FILES, run_dir):\n"
        "    rows = list(folder.iter_results())\n"
        "    path = folder.file('results')\n"
        "    other = run_dir / RUN_FILES['results']\n"
        "    raw = open(run_dir / 'results.jsonl')\n"
        "    plan = folder.file('plan')\n"  # another file of the folder: fine
        "    every = RunFolder(run_dir).load(), folder.iter_records(plan), folder.file('records')\n"
        "    return read_results(run_dir), f'no results.jsonl in {run_dir}'\n"  # a message's mention: fine
    )
    assert _results_opened(probe) == [2, 4, 5, 6, 7, 9, 10]


_DEFINES = re.compile(r"^(?:class (\w+)\b|(\w+)(?:: TypeAlias)? = (?:Literal|NewType|Union|typing)\b)")


def _top_level_names(path: Path) -> list[str]:
    """The classes and type aliases a module defines at its top level."""
    return [m.group(1) or m.group(2) for line in path.read_text().splitlines() if (m := _DEFINES.match(line))]


def test_one_name_per_concept() -> None:
    """A public type name means one thing in the package: two modules defining ``Verdict`` (a compare verdict, a
    human label, an emulator row's outcome...) are two concepts under one name. A module's private helpers
    (``_Model``) are its own."""
    where: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _top_level_names(path):
            if not name.startswith("_"):
                where.setdefault(name, []).append(str(path.relative_to(ROOT)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert twice == {}, f"one name per concept; rename one of: {twice}"


def test_the_name_check_sees_classes_and_aliases(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('class Verdict:\n    pass\nKind = Literal["a"]\nx = 1\n    class Inner:\n')
    assert _top_level_names(probe) == ["Verdict", "Kind"]
