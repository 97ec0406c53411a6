"""Golden numbers of compare where the runs do not line up row by row, written by the code before compare became a
join (``tests/data/compare_join/``, read by ``tests/test_compare_join_golden.py``).

``join_outputs(tmp)`` writes three run folders of the benefits sample — the baseline; a candidate in reverse
order without q11, with q01 twice (its last row stands for it) and q02 turned negative; a third with better
relevance scores — and compares them with every pair tested, relative, floor and lost gates and a coverage
limit; then the TREC sample's run files (``compare --qrels``) with every pair. Paths are replaced by placeholders.

Provenance: regenerate only when an output is meant to change, ``python tests/compare_join_helpers.py`` (it writes
with whichever ``foundry_bridge`` is imported). The files were written by the code of main at 8a586a9 (run from
/work/main: pairing by ``IdIndex`` over a whole report per run, before issue #35 item 4; first at 9346a2b, again
after main gained the floors cut to the metric's range).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from report_helpers import JUDGE_SCORES, write_run

try:  # the code after issue #35 item 6
    from foundry_bridge.comparison import compare_run_files, compare_runs, render_comparison_json
except ImportError:  # the code that wrote the goldens
    from foundry_bridge.report import compare_run_files, compare_runs, render_comparison_json  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "data" / "compare_join"
TREC = REPO / "samples" / "trec"


def _scrambled(records: list[Any]) -> list[Any]:
    """Reverse order, q11 left out, q01 twice (an older copy first), q02 declared negative."""
    rs = [r for r in records if r.query_id != "q11"][::-1]
    rs = [r.model_copy(update={"kind": "negative"}) if r.query_id == "q02" else r for r in rs]
    q01 = next(r for r in rs if r.query_id == "q01")
    return [q01.model_copy(update={"response": "an older answer"}), *rs]


def join_outputs(tmp: Path) -> dict[str, dict[str, Any]]:
    """File name → the comparison's JSON (a dict), paths replaced by ``<ROOT>`` / ``<REPO>``."""
    better = copy.deepcopy(JUDGE_SCORES)
    for q in ("q01", "q03", "q04", "q06", "q07", "q09", "q10"):
        better["relevance"][q] = 5
    worse = copy.deepcopy(JUDGE_SCORES)
    worse["groundedness"].update({"q01": 1, "q06": 2, "q07": 1})
    runs = [
        write_run(tmp / "base"),
        write_run(tmp / "scrambled", scores=worse, ndcg3={"q07": 0.2, "q09": 1.0}, edit_records=_scrambled),
        write_run(tmp / "better", scores=better),
    ]
    folders = compare_runs(
        runs,
        fail_on=["groundedness:0.1", "rr@10", "recall@10>=0.5", "lost@10<=0", "negative:hit@10"],
        allow_empty_gate=True,
        coverage_drop=0.2,
        all_pairs=True,
        n_resamples=500,
    )
    files = compare_run_files(
        [TREC / "qrels.txt"],
        [TREC / "run.txt", REPO / "samples" / "degraded" / "run.txt", TREC / "run.txt"],
        labels=["trec", "degraded", "again"],
        fail_on=["ndcg@10"],
        n_resamples=500,
    )
    out = {"folders.json": render_comparison_json(folders), "files.json": render_comparison_json(files)}
    for path, name in ((str(tmp.resolve()), "<ROOT>"), (str(REPO), "<REPO>")):
        out = {k: v.replace(path, name) for k, v in out.items()}
    return {k: json.loads(v) for k, v in out.items()}


if __name__ == "__main__":
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        for name, data in join_outputs(Path(d)).items():
            (GOLDEN / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"wrote {GOLDEN / name}", file=sys.stderr)
