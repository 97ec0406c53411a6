"""Golden outputs of report and compare on the benefits sample, written by the code before the pipeline split.

``golden_outputs(tmp)`` writes a baseline and two candidate run folders with ``report_helpers.write_run`` and
renders the report (JSON, Markdown, HTML) and the comparison (JSON, Markdown) with the paths and the creation time
replaced by placeholders, so the files under ``tests/data/golden/`` can be compared byte for byte.
Regenerate (only when an output is meant to change): ``python tests/golden_helpers.py``.

Provenance of the compare goldens. ``compare.json`` and ``compare.md`` were regenerated deliberately by issue #23
item 2 (one comparison engine, ``metrics.significance``; on top of #24 item 1's t intervals). Every number that
changed, and why:

- ``better`` positive ``document_retrieval/ndcg@3``: p_adjusted 1 → 0.125: the 34 other tests of the family had
  every paired difference 0 (p = 1); they are still shown (p_adjusted 1) but no longer counted in the family, so
  Holm is over 1 test instead of 35. ``exploratory_tests`` 35 → 1; new ``left_out_tests`` 39 (the 27 before plus the
  12 new ``/pass`` rows with n ≥ 10).
- ``worse`` positive ``groundedness`` (n = 9, too few to decide): test "exact sign-flip over 4 assignments" →
  "Wilcoxon signed-rank (exact over sign flips, ties)" (a judge's ordinal score is tested by Wilcoxon); p 0.5 and
  the interval unchanged.
- every other judge score row (``retrieval``, ``groundedness``, ``relevance``, both sections, both candidates): test
  "exact (all differences are 0)" → "Wilcoxon signed-rank"; p 1 unchanged.
- 12 new rows ``retrieval/pass``, ``groundedness/pass``, ``relevance/pass`` per candidate and section (McNemar
  exact; Δ interval Agresti–Min padded, cut to [−1, 1]): the judges' pass/fail rows, which were in the removed
  "Judge metrics by their kind's test" table spelled ``criterion:metric:pass``; ``worse`` positive
  ``groundedness/pass``: n 9, Δ −0.222 [−0.617, 0.172], p 0.5, too few paired queries; the negative sections' n =
  2–3 rows: Δ 0 [−1, 1], too few paired queries.
- new per-row fields ``kind``, ``d_z``, ``d_z_low``, ``d_z_high``, ``rank_biserial``, ``n_informative``,
  ``in_family``; ``ci`` names the pass/fail padding; the ``judge_tests`` table is gone (its rows are rows of the one
  table); the method line names the test per kind and the tests left out of the family; the Markdown table gains the
  test and d_z columns.
- every other number (means, Δ and its interval, n, wins/ties/losses, got-worse lists, coverage, the gate) is as
  before.

``report.*`` regenerated deliberately by #24 items 3–4 (no human verdict in the sample run, so no interval moved):
the label budget is now for ±0.05 on a pass rate (was ±0.1) with Student's t — 387 labels (was 97 for ±0.1 by z) —
and the mean score ±0.25 with t and the n − 1 sd (141/122/54 → 154/135/60); the interval note names the raters'
variance and α's bootstrap interval; the JSON gains ``labels_for_target``, ``target``, ``raters``,
``alpha_*_interval``, ``alpha_rows``, ``alpha_with_judge_rows``, ``pass_rate_target``, ``score_target`` and
``rows`` (agreement); the HTML style gains ``td.few`` (greyed κ/α). Nothing else changed.
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
