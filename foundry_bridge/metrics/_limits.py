"""What the metric arrays hold exactly: labels and counts are int64, its minimum reserved for "no label".

Pure integers (no numpy), so the readers can check a label before any array exists.
"""

from __future__ import annotations

__all__ = ["LABEL_MAX", "LABEL_MIN", "NO_LABEL", "label_range_message"]

#: The arrays' mark for "this document has no label" (int64's minimum, so no label may take it).
NO_LABEL = -(2**63)
LABEL_MIN = NO_LABEL + 1
LABEL_MAX = 2**63 - 1


def label_range_message(value: int | float) -> str | None:
    """Why ``value`` cannot be a label of the arrays (``None`` when it can; a float is judged by its magnitude only,
    NaN passing: whether a label may be a float at all is the reader's rule)."""
    if value != value or LABEL_MIN <= value <= LABEL_MAX:
        return None
    return f"label {value!r} is outside the range the metrics hold exactly (-(2**63 - 1) .. 2**63 - 1)"
