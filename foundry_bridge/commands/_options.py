"""Click parameter types shared by the commands: bounded, finite numbers."""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["Finite"]


class Finite(click.FloatRange):
    """``click.FloatRange`` that also refuses ``nan`` and ``inf`` (a NaN compares false with every bound, so a plain
    FloatRange lets it through): ``Finite(0, 1)``, ``Finite(0, 3600, min_open=True)``."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number
