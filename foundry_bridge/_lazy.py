"""Lazy package exports: a name is imported from its submodule on first access, keeping start-up cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_getattr", "optional_module"]


def lazy_getattr(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``exports`` (name → submodule of ``package``) on demand."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__


def optional_module(name: str, purpose: str) -> Any:
    """The optional dependency ``name`` (pandas, polars...), imported now; a ``UsageError`` saying ``purpose``
    needs it, and how to install it, when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        from .errors import UsageError

        raise UsageError(f"{purpose} need {name} (fix: pip install {name})") from None
