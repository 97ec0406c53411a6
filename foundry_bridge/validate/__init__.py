"""The validation gate: every rule a dataset and its criteria must pass, checked offline in one streaming pass.

``validate`` collects every problem into a ``ValidationReport``; ``gate`` is what ``plan`` and ``run`` call before
they write or submit anything, raising ``ValidationFailed`` on any error. This package sits above ``dataset`` and
``mapping`` (it reads both; neither imports it). Names are imported lazily from their modules.

The package can be called as the function: ``foundry_bridge.validate(df)`` is ``foundry_bridge.validate.validate(df)``
(the package root exports ``validate``, and Python binds that name to this package once it is imported).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._report import ValidationReport

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


class _CallablePackage(types.ModuleType):
    """This package, callable as ``validate`` (``_passes.validate``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> ValidationReport:
        from ._passes import validate

        return validate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
