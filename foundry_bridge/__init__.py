"""foundry_bridge: local RAG evaluation data to Microsoft Foundry evaluators, and back.

The names a Python caller needs, from here (``from foundry_bridge import evaluate, validate, compare``)::

    report = evaluate(df)                    # a DataFrame, a file or a table → Report (the emulator by default)
    report.to_pandas()                       # one row per query; report.aggregates_frame(): metric × section
    validate(df).to_pandas()                 # one row per problem, located by row and column
    compare([report_a, report_b]).to_pandas()

``run_evaluation`` / ``plan_evaluation`` / ``build_report`` are the steps ``evaluate`` chains. Every name is
imported on first use, so ``import foundry_bridge`` (and the command line's start-up) loads nothing heavy.
``validate`` is also the subpackage ``foundry_bridge.validate``, which can be called like the function.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # what a type checker reads; at run time each name is imported on first use (``__getattr__``)
    from ._evaluate import evaluate as evaluate
    from .comparison._compare import Comparison as Comparison
    from .comparison._compare import compare_runs as compare
    from .comparison._compare import compare_runs as compare_runs
    from .errors import BackendError as BackendError
    from .errors import DatasetError as DatasetError
    from .errors import FoundryBridgeError as FoundryBridgeError
    from .errors import FoundryBridgeWarning as FoundryBridgeWarning
    from .errors import InputError as InputError
    from .errors import MappingError as MappingError
    from .errors import UsageError as UsageError
    from .mapping.loader import load_mapping as load_mapping
    from .mapping.model import Mapping as Mapping
    from .report._build import ReportError as ReportError
    from .report._build import build_report as build_report
    from .report._model import Report as Report
    from .runner import RunSummary as RunSummary
    from .runner import plan_evaluation as plan_evaluation
    from .runner import run_evaluation as run_evaluation
    from .runner_protocol import ProgressCallback as ProgressCallback
    from .validate._gate import ValidationFailed as ValidationFailed
    from .validate._gate import ValidationSkipped as ValidationSkipped
    from .validate._passes import validate as validate
    from .validate._report import ValidationReport as ValidationReport

# name → (module, attribute); "validate" is the callable subpackage itself (see validate/__init__.py)
_EXPORTS: dict[str, tuple[str, str]] = {
    "evaluate": ("_evaluate", "evaluate"),
    "validate": ("validate", ""),
    "compare": ("comparison._compare", "compare_runs"),
    "compare_runs": ("comparison._compare", "compare_runs"),
    "build_report": ("report._build", "build_report"),
    "run_evaluation": ("runner", "run_evaluation"),
    "plan_evaluation": ("runner", "plan_evaluation"),
    "load_mapping": ("mapping.loader", "load_mapping"),
    "Mapping": ("mapping.model", "Mapping"),
    "Report": ("report._model", "Report"),
    "Comparison": ("comparison._compare", "Comparison"),
    "ValidationReport": ("validate._report", "ValidationReport"),
    "RunSummary": ("runner", "RunSummary"),
    "ProgressCallback": ("runner_protocol", "ProgressCallback"),
    "FoundryBridgeError": ("errors", "FoundryBridgeError"),
    "FoundryBridgeWarning": ("errors", "FoundryBridgeWarning"),
    "InputError": ("errors", "InputError"),
    "DatasetError": ("errors", "DatasetError"),
    "MappingError": ("errors", "MappingError"),
    "BackendError": ("errors", "BackendError"),
    "UsageError": ("errors", "UsageError"),
    "ReportError": ("report._build", "ReportError"),
    "ValidationFailed": ("validate._gate", "ValidationFailed"),
    "ValidationSkipped": ("validate._gate", "ValidationSkipped"),
}

__all__ = [
    "BackendError",
    "Comparison",
    "DatasetError",
    "FoundryBridgeError",
    "FoundryBridgeWarning",
    "InputError",
    "Mapping",
    "MappingError",
    "ProgressCallback",
    "Report",
    "ReportError",
    "RunSummary",
    "UsageError",
    "ValidationFailed",
    "ValidationReport",
    "ValidationSkipped",
    "__version__",
    "build_report",
    "compare",
    "compare_runs",
    "evaluate",
    "load_mapping",
    "plan_evaluation",
    "run_evaluation",
    "validate",
]  # = _EXPORTS (tests/test_notebook_path.py)


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use (and keep it, so the next access is a plain one)."""
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{where[0]}")
    value = getattr(module, where[1]) if where[1] else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
