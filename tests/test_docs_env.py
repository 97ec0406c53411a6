"""The environment variables the docs tell users to set or read are the ones the code reads: one name everywhere.

The docs are README.md and docs/*.md. A name counts as mentioned when it is written `$NAME`, `${NAME}`,
`${NAME:-default}`, or assigned (`NAME=value` at the start of a line, of an inline code span or after `;`/`&&`,
after an optional `export`/`env`). It counts as read when the package holds it as a string literal of its own
(``os.environ.get("NAME")``, ``ENDPOINT_ENV = "NAME"``...) or a packaged mapping expands it (``${NAME}``); the
few read by other programs are listed below with the reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "foundry_bridge"
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

READ_ELSEWHERE = {
    "GITHUB_BASE_REF": "set by GitHub Actions on pull requests; the documented workflow's shell reads it",
    "SSL_CERT_FILE": "read by httpx and the openai SDK (docs/mock.md: trusting the emulator's TLS CA)",
    "REQUESTS_CA_BUNDLE": "read by requests (docs/mock.md: trusting the emulator's TLS CA)",
    "TIKTOKEN_CACHE_DIR": "read by tiktoken: where it keeps the encoding files it fetched (docs/inputs.md)",
    "VAR": "the placeholder of the `${VAR}` syntax in the mapping docs",
    "LMAX": "a variable of the `${LMAX:-3}` example in docs/mapping.md",
}

_REFERENCE = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)\b")
_ASSIGNMENTS = re.compile(
    r"(?:^|`|;|&&)[ \t]*(?:export[ \t]+|env[ \t]+)?((?:[A-Z][A-Z0-9_]*=[^\s`]*[ \t]*)+)", re.MULTILINE
)
_ASSIGNED = re.compile(r"(?:^|\s)([A-Z][A-Z0-9_]*)=")


def documented_variables(text: str) -> set[str]:
    """The environment variables ``text`` (Markdown) references or assigns."""
    names = set(_REFERENCE.findall(text))
    for match in _ASSIGNMENTS.finditer(text):
        names.update(_ASSIGNED.findall(match.group(1)))
    return names


def _variables_the_package_reads() -> set[str]:
    literals = {
        node.value
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    expanded = {
        name
        for path in (PACKAGE / "resources" / "mappings").glob("*.yaml")
        for name in re.findall(r"\$\{([A-Z][A-Z0-9_]*)", path.read_text(encoding="utf-8"))
    }
    return literals | expanded


def test_the_scan_finds_every_spelling_of_a_variable() -> None:
    text = (
        "run `foundry-bridge x --endpoint $ONE_A`, init `${TWO_B}` or `${THREE_C:-d}`;\n"
        "    export FOUR_D=1 FIVE_E=~/x\n"
        "`SIX_F=0` turns it off\n"
        "SEVEN_G=1 foundry-bridge run && EIGHT_H=2 make\n"
        "f(run_dir, NOT_ONE=None) and `BACKEND: cloud` are not assignments\n"
    )
    assert documented_variables(text) == {
        "ONE_A",
        "TWO_B",
        "THREE_C",
        "FOUR_D",
        "FIVE_E",
        "SIX_F",
        "SEVEN_G",
        "EIGHT_H",
    }


def test_every_variable_the_docs_name_is_read_by_the_code() -> None:
    read = _variables_the_package_reads()
    unread = sorted(
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in DOCS
        for name in documented_variables(doc.read_text(encoding="utf-8"))
        if name not in read and name not in READ_ELSEWHERE
    )
    assert unread == [], "variables the docs name but nothing reads (use the name the code reads):\n" + "\n".join(
        unread
    )


def test_the_allow_list_holds_no_name_the_code_reads_or_the_docs_dropped() -> None:
    documented = set().union(*(documented_variables(doc.read_text(encoding="utf-8")) for doc in DOCS))
    assert sorted(set(READ_ELSEWHERE) - documented) == []
    assert sorted(set(READ_ELSEWHERE) & _variables_the_package_reads()) == []
