"""Which reader reads DATA: the one format dispatch every command (``validate``, ``plan``, ``run``, ``metrics``,
``canaries``) and ``read_records`` go through, so an input one of them reads is read by all, the same way."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .frames import TableSource, is_table

if TYPE_CHECKING:
    from .records import QueryRecord
    from .spec import BeirFiles, DatasetSpec, TrecFiles

__all__ = ["Folder", "JsonlFile", "Source", "dataset_source"]


class JsonlFile(NamedTuple):
    """A JSONL file, read line by line (``rows.jsonl_rows``)."""

    path: str | os.PathLike[str]


class Folder(NamedTuple):
    """A TREC or BEIR directory ``base`` holding the ``files`` the mapping names, read by ``read`` (``read_trec`` or
    ``read_beir``, one signature)."""

    format: Literal["trec", "beir"]
    base: Path
    files: TrecFiles | BeirFiles
    read: Callable[..., Iterator[QueryRecord]]


Source = JsonlFile | TableSource | Folder


def dataset_source(data: Any, dataset: DatasetSpec, *, rows: bool = False) -> Source:
    """The reader of ``data`` under the mapping's ``dataset`` section (``rows``: read DATA as rows whatever the
    format, as hand-written criteria name the rows' own keys).

    ``format: trec`` or ``beir``: that format's ``Folder`` (DATA is the folder holding the files the mapping names;
    whether it is one is the caller's to word). ``jsonl`` (rows): what DATA is decides the container — a
    ``TableSource`` for an in-memory table or DataFrame, a ``.parquet``/``.arrow``/``.feather``/``.ipc`` file, or a
    Hugging Face ``save_to_disk`` folder (a ``Dataset``'s, or a ``DatasetDict``'s, which the table reader refuses
    naming its split folders); anything else is a ``JsonlFile`` (whose reader refuses a missing file or another
    directory, saying which).
    """
    if rows or dataset.format == "jsonl":
        return TableSource(data) if is_table(data) else JsonlFile(data)
    if dataset.format == "beir":
        from .beir import read_beir

        return Folder("beir", Path(data), dataset.beir, read_beir)
    from .trec import read_trec

    return Folder("trec", Path(data), dataset.trec, read_trec)
