"""Golden outputs of report and compare on the benefits sample, written by the code before the pipeline split.

``golden_outputs(tmp)`` writes a baseline and two candidate run folders with ``report_helpers.write_run`` and
renders the report (JSON, Markdown, HTML) and the comparison (JSON, Markdown) with the paths and the creation time
replaced by placeholders, so the files under ``tests/data/golden/`` can be compared byte for byte.
Regenerate (only when an output is meant to change): ``python tests/golden_helpers.py``.
"""

from __future__ import annotations

import copy
import re
import sys
import tempfile
from pathlib import Path

from report_helpers import ERROR, JUDGE_SCORES, write_run

from foundry_bridge.report import build_report, compare_runs, render, render_comparison_json, render_comparison_markdown

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "data" / "golden"


def _scrub(text: str, root: Path) -> str:
    """Paths, the build time and the plan fingerprint (it hashes the dataset path) replaced by placeholders."""
    from foundry_bridge.report._format import md_escape

    for path, name in ((str(root.resolve()), "<ROOT>"), (str(REPO), "<REPO>")):
        text = text.replace(path, name).replace(md_escape(path), name)  # Markdown escapes a path's underscores
    text = re.sub(r'"created_at": ?"[^"]*"', '"created_at": "<TIME>"', text)
    text = re.sub(r"built \d{4}-\d\d-\d\dT[\d:+]+", "built <TIME>", text)
    return re.sub(r'"plan_fingerprint": ?"[0-9a-f]*"', '"plan_fingerprint": "<SHA>"', text)


def golden_outputs(tmp: Path) -> dict[str, str]:
    """File name → text of every golden output."""
    better = copy.deepcopy(JUDGE_SCORES)
    for q in ("q01", "q03", "q04", "q06", "q07", "q09", "q10"):
        better["relevance"][q] = 5
    worse = copy.deepcopy(JUDGE_SCORES)
    worse["groundedness"].update({"q01": 1, "q05": ERROR, "q06": 2})
    runs = [
        write_run(tmp / "base"),
        write_run(tmp / "better", scores=better, ndcg3={"q07": 1.0, "q09": 0.5}),
        write_run(tmp / "worse", scores=worse),
    ]
    report = build_report(runs[0])
    # hit@10 is undefined on every negative query: a gate that could never fire, kept as a skipped check
    gate = {"fail_on": ["groundedness:0.1", "negative:hit@10"], "allow_empty_gate": True}
    comparison = compare_runs(runs, **gate, n_resamples=500)  # type: ignore[arg-type]
    out = {
        "report.json": render(report, "json"),
        "report.md": render(report, "md"),
        "report.html": render(report, "html"),
        "compare.json": render_comparison_json(comparison),
        "compare.md": render_comparison_markdown(comparison),
    }
    return {name: _scrub(text, tmp) for name, text in out.items()}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        for name, text in golden_outputs(Path(d)).items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
            print(f"wrote {GOLDEN / name}", file=sys.stderr)
