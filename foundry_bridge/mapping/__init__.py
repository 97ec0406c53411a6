"""Mapping files, the evaluator catalog, the plan builder and the offline validator.

Names are imported lazily from their modules, so importing the catalog alone stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CATALOG": "catalog",
    "get_evaluator": "catalog",
    "Mapping": "model",
    "Plan": "plan",
    "build_criteria": "builder",
    "build_plan": "builder",
    "expand_env": "loader",
    "load_mapping": "loader",
    "packaged_mapping_path": "loader",
    "ValidationReport": "validator",
    "validate": "validator",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'foundry_bridge.mapping' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
