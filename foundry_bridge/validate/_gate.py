"""The gate ``plan`` and ``run`` pass before they write or submit anything: what ``validate`` rejects is never sent.

``gate`` runs the same checks as ``foundry-bridge validate`` (one streaming pass) and raises ``ValidationFailed``
on any error, its message listing every error as ``file:line: field: message (fix: hint)``. Warnings pass.
"""

from __future__ import annotations

import os

from ..errors import FoundryBridgeError
from ._passes import validate
from ._report import ValidationReport

__all__ = ["ValidationFailed", "gate"]

_LISTED = 20  # errors listed in the message per code (all are counted)


class ValidationFailed(FoundryBridgeError):
    """The dataset or its mapping has errors; nothing was written or submitted (CLI exit 1)."""

    def __init__(self, report: ValidationReport, command: str) -> None:
        self.report = report
        errors = [p for p in report.problems if p.severity == "error"]
        codes = {p.code for p in errors}
        lines = [str(p) for p in errors]
        lines += [
            f"... and {n} more {c!r} error(s) not listed" for c, n in sorted(report.omitted.items()) if c in codes
        ]
        lines.append(
            f"{command}: {report.errors} validation error(s) in {report.rows} row(s), nothing was written or "
            "submitted (fix: correct them; `foundry-bridge validate` lists the warnings too; --skip-validation "
            "sends unchecked data)"
        )
        super().__init__("\n".join(lines))


def gate(
    data: str | os.PathLike[str],
    mapping: str | os.PathLike[str] | None = None,
    *,
    command: str = "plan",
    environ: dict[str, str] | None = None,
) -> ValidationReport:
    """Validate ``data`` against the mapping file (None: the packaged default); ``ValidationFailed`` on any error."""
    report = validate(data, mapping=mapping, environ=environ, max_per_code=_LISTED)
    if not report.ok:
        raise ValidationFailed(report, command)
    return report
