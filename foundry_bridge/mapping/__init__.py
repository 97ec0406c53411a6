"""Mapping files and the plan builder (the evaluator catalog is ``foundry_bridge.catalog``; validation is
``foundry_bridge.validate``).

Names are imported lazily from their modules, so importing one of them stays cheap.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "Mapping": "model",
    "Plan": "plan",
    "build_criteria": "builder",
    "build_plan": "builder",
    "expand_env": "loader",
    "load_mapping": "loader",
    "packaged_mapping_path": "loader",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
