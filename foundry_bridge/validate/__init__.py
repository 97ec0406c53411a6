"""The validation gate: every rule a dataset and its criteria must pass, checked offline in one streaming pass.

``validate`` collects every problem into a ``ValidationReport``; ``gate`` is what ``plan`` and ``run`` call before
they write or submit anything, raising ``ValidationFailed`` on any error. This package sits above ``dataset`` and
``mapping`` (it reads both; neither imports it). Names are imported lazily from their modules.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "MAX_DOCUMENTS": "_docret",
    "RULES": "_rules",
    "ValidationFailed": "_gate",
    "ValidationReport": "_report",
    "ValidationSkipped": "_gate",
    "gate": "_gate",
    "gated_records": "_gate",
    "validate": "_passes",
    "validate_criteria_file": "_criteria",
    "validate_dataset": "_passes",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
