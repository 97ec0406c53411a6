"""Which reader reads DATA: the one choice every command (``validate``, ``plan``, ``run``, ``metrics``) and
``read_records`` make, so an input one of them reads is read by all."""

from __future__ import annotations

from typing import Any, Literal

from .frames import is_table

__all__ = ["ReaderKind", "choose_reader"]

ReaderKind = Literal["jsonl", "table", "trec", "beir"]


def choose_reader(data: Any, fmt: Literal["jsonl", "trec", "beir"]) -> ReaderKind:
    """The reader of ``data`` under the mapping's ``dataset.format`` ``fmt``.

    ``trec`` and ``beir``: that format's folder reader (DATA is the folder holding the files the mapping names).
    ``jsonl`` (rows): what DATA is decides the container — ``table`` for an in-memory table or DataFrame, a
    ``.parquet``/``.arrow``/``.feather``/``.ipc`` file, or a Hugging Face ``save_to_disk`` folder (a ``Dataset``'s,
    or a ``DatasetDict``'s, which the table reader refuses naming its split folders); anything else is ``jsonl``, a
    file read line by line (the JSONL reader refuses a missing file or another directory, saying which).
    """
    if fmt != "jsonl":
        return fmt
    return "table" if is_table(data) else "jsonl"
