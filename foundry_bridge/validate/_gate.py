"""The gate ``plan`` and ``run`` pass before they write or submit anything: what ``validate`` rejects is never sent.

``gate`` runs the same checks as ``foundry-bridge validate`` (one streaming pass) and raises ``ValidationFailed``
on any error, its message listing every error as ``file:line: field: message (fix: hint)``. Warnings pass.
``gated_records`` is the same pass yielding the records the plan is built from, so the data is read once; with
``skip_validation`` it reads them unchecked after a ``ValidationSkipped`` warning. Neither needs a command line:
messages name the caller as Python does (``run_evaluation()``, ``skip_validation=True``) in ``str()``, and as the
command line does (``run``, ``--skip-validation``) in ``cli_text()``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator

from ..dataset.frames import Table
from ..dataset.records import QueryRecord
from ..errors import FoundryBridgeError, FoundryBridgeWarning, option, spelled
from ..mapping.model import Mapping
from ._passes import checked_records
from ._report import ValidationReport

__all__ = ["ValidationFailed", "ValidationSkipped", "gate", "gated_records"]

_LISTED = 20  # errors listed in the message per code (all are counted)
# the command of the CLI → the library call that does the same (how a message names the caller)
_CALLS = {"plan": "plan_evaluation()", "run": "run_evaluation()", "validate": "validate()"}
_VALIDATE = spelled("foundry_bridge.validate.validate()", "`foundry-bridge validate`")


def caller(command: str) -> str:
    """``command`` as the message names it: the library call in Python, the command's name on the command line."""
    return spelled(_CALLS.get(command, command), command)


class ValidationSkipped(FoundryBridgeWarning):
    """``skip_validation=True`` (``--skip-validation``): the data goes on unchecked."""


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
            f"{caller(command)}: {report.errors} validation error(s) in {report.rows} row(s), nothing was written "
            f"or submitted (fix: correct them; {_VALIDATE} lists the warnings too; "
            f"{option('skip_validation')} sends unchecked data)"
        )
        super().__init__("\n".join(lines))


def gate(
    data: str | os.PathLike[str] | Table,
    mapping: str | os.PathLike[str] | None = None,
    *,
    command: str = "plan",
    environ: dict[str, str] | None = None,
) -> ValidationReport:
    """Validate ``data`` against the mapping file (None: the packaged default); ``ValidationFailed`` on any error."""
    report = ValidationReport(max_per_code=_LISTED)
    for _ in checked_records(data, mapping, report, environ=environ):
        pass
    return _verdict(report, command)


def gated_records(
    data: str | os.PathLike[str] | Table,
    mapping: Mapping | str | os.PathLike[str] | None = None,
    *,
    command: str = "plan",
    environ: dict[str, str] | None = None,
    skip_validation: bool = False,
) -> Iterable[QueryRecord]:
    """``gate`` in the same pass as the reading: each usable record is yielded once its row is checked, and
    ``ValidationFailed`` is raised when the iteration ends if anything (a row, the criteria, a duplicate id) had an
    error. For a consumer that writes and sends only after it has read every record, as ``build_plan`` does.
    ``mapping``: a file (named in the problems), a loaded ``Mapping``, or None for the packaged default.

    ``skip_validation``: a loud ``ValidationSkipped`` warning, now, and the records read unchecked
    (``dataset.read_records``, which still raises on the first unreadable row).
    """
    if not skip_validation:
        return _checked(data, mapping, command, environ)
    from ..dataset import read_records
    from ..mapping import load_mapping

    warnings.warn(
        ValidationSkipped(
            f"{caller(command)} {option('skip_validation')}: NOTHING WAS CHECKED; data that {_VALIDATE} "
            "rejects may be written or sent (on the cloud: paid judge calls on rows Foundry rejects)"
        ),
        stacklevel=2,
    )
    model = mapping if isinstance(mapping, Mapping) else load_mapping(mapping)
    return read_records(data, model)


def _checked(
    data: str | os.PathLike[str] | Table,
    mapping: Mapping | str | os.PathLike[str] | None,
    command: str,
    environ: dict[str, str] | None,
) -> Iterator[QueryRecord]:
    report = ValidationReport(max_per_code=_LISTED)
    yield from checked_records(data, mapping, report, environ=environ, records=True)
    _verdict(report, command)


def _verdict(report: ValidationReport, command: str) -> ValidationReport:
    report.sort()
    if not report.ok:
        raise ValidationFailed(report, command)
    return report
