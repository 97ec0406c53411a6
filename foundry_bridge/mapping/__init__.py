"""Mapping files, the evaluator catalog, the plan builder and the offline validator."""

from .builder import build_criteria, build_plan
from .catalog import CATALOG, get_evaluator
from .loader import expand_env, load_mapping, packaged_mapping_path
from .model import Mapping
from .plan import Plan
from .validator import ValidationReport, validate

__all__ = [
    "CATALOG",
    "Mapping",
    "Plan",
    "ValidationReport",
    "build_criteria",
    "build_plan",
    "expand_env",
    "get_evaluator",
    "load_mapping",
    "packaged_mapping_path",
    "validate",
]
