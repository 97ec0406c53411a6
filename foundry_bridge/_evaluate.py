"""``foundry_bridge.evaluate``: one call from a DataFrame, a file or a table to a ``Report``.

A thin wrapper: ``runner.run_evaluation`` (the validation gate, the run folder's lock, resume, reuse of a finished
run, ``force``) then ``report.build_report`` on the folder. There is no second run path: whatever ``run_evaluation``
refuses, ``evaluate`` refuses with the same error.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import UsageError

if TYPE_CHECKING:
    from .dataset.frames import Table
    from .mapping.model import Mapping
    from .report._model import Report
    from .runner_protocol import Backend, ProgressCallback

__all__ = ["evaluate"]

BackendName = Literal["mock", "cloud", "local"]


def evaluate(
    data: str | os.PathLike[str] | Table,
    mapping: Mapping | str | os.PathLike[str] | None = None,
    *,
    backend: BackendName | Backend | None = None,
    out: str | os.PathLike[str] | None = None,
    keep: bool = False,
    resume: bool = False,
    force: bool = False,
    skip_validation: bool = False,
    progress: ProgressCallback | None = None,
    stage_k: int | None = None,
    **backend_options: Any,
) -> Report:
    """Evaluate ``data`` (a pandas/polars/pyarrow table, a JSONL file, a TREC/BEIR directory or a table file)
    under ``mapping`` (a file, a loaded ``Mapping``, None: the packaged default) on ``backend`` (None or ``"mock"``: the
    emulator, offline, or on ``resume`` the folder's own; ``"cloud"``; ``"local"``; or a ``Backend``) and return
    the ``Report``.

    * ``out``: the run folder, kept (and reused, resumed or refused as ``run_evaluation`` decides: ``resume``,
      ``force``). None: a temporary folder, removed once the report is garbage-collected (or at exit) unless
      ``keep=True``; the report
      names the folder in ``report.provenance.run_dir``. Without a folder to read later, the report holds every
      per-query row in memory (``report.queries`` complete, whatever the number of queries); with ``out`` it keeps
      at most 2,000 and ``report.to_pandas()`` reads the rest from the folder.
    * ``progress(stage, done, total)`` as the run advances; ``backend_options`` go to ``get_backend``
      (``judge_model=``, ``endpoint=``, ``faults=``, ...); ``stage_k`` to ``build_report``.

    Raises what ``run_evaluation`` raises: ``ValidationFailed`` (nothing sent; ``skip_validation=True`` sends
    unchecked data after a ``ValidationSkipped`` warning), ``UsageError``, ``BackendError``.
    """
    from .report._build import TABLE_ROWS, build_report
    from .runner import run_evaluation

    if keep and out is not None:
        raise UsageError("keep=True keeps the temporary run folder made when out is None; a folder given as out= "
                         "is always kept")  # fmt: skip
    if resume and out is None:
        raise UsageError("resume=True continues the run in a folder: give its out=")
    temporary = Path(tempfile.mkdtemp(prefix="foundry-bridge-")) if out is None else None
    run_dir = Path(out) if out is not None else Path(str(temporary)) / "run"
    try:
        summary = run_evaluation(
            data,
            run_dir,
            backend,
            mapping=mapping,
            resume=resume,
            force=force,
            skip_validation=skip_validation,
            progress=progress,
            **backend_options,
        )
        gone = temporary is not None and not keep
        report = build_report(summary.run_dir, stage_k=stage_k, table_rows=sys.maxsize if gone else TABLE_ROWS)
    except BaseException:
        if temporary is not None and not keep:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    if temporary is not None and not keep:
        # the report reads its columns from the folder (to_pandas, compare): removed when the report is collected,
        # or at exit at the latest
        weakref.finalize(report, shutil.rmtree, temporary, True)
    return report
