"""``report --qrels J --human-qrels H``: the judge's document grades against the human labels of the queries that
have them (``judged.run_vs_human``: weighted κ, the confusion table, each ranking metric's mean corrected by PPI /
PPI++), as a section of the run report — the same numbers ``metrics --human-qrels`` prints."""

from __future__ import annotations

import html
import math
from typing import Any

from ._format import html_table, md_escape, md_table

__all__ = ["estimate_cell", "render_vs_human_html", "render_vs_human_markdown", "vs_human_parts"]

_HEADING = "Judge labels against human labels"


def estimate_cell(e: dict[str, Any] | None) -> str:
    """``mean [low, high]`` (``†``: cut to [0, 1]), or "too few labels (need N)" (the trust section's wording)."""
    if e is None or e["mean"] is None or math.isnan(e["mean"]):
        return "–"
    if e["need_labels"] is not None:
        return f"too few labels (need {e['need_labels']})"
    return f"{e['mean']:.3f} [{e['low']:.3f}, {e['high']:.3f}]" + ("†" if e["clipped"] else "")


def vs_human_parts(v: dict[str, Any]) -> tuple[list[str], list[tuple[list[str], list[list[str]]]], list[str]]:
    """``compare_with_human``'s output as words for any renderer (``metrics --human-qrels``' text, the run report's
    section): its lines (who is labelled, κ), its tables (head, rows: the confusion table, the corrected means) and
    its notes (the intervals' design, the query queue)."""
    from ..metrics.ppi import WEIGHTED_NOTE

    lines = [f"{v['human_queries']} of {v['queries']} queries human-labelled"]
    if v["declared_negative_left_out"]:
        lines.append(f"({v['declared_negative_left_out']} queries declared negative left out: positive queries only)")
    tables: list[tuple[list[str], list[list[str]]]] = []
    a = v["agreement"]
    if a is None:
        why = "human labels off the 0–3 scale" if v["off_scale_human_labels"] else "no (query, document) pair in both"
        lines.append(f"weighted κ: – ({why})")
    else:
        ci = a["weighted_kappa_interval"]
        interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and not math.isnan(ci[0]) else ""
        lines.append(
            f"weighted κ (quadratic): {a['weighted_kappa']:.3f}{interval} on {a['pairs']} documents of "
            f"{a['queries']} queries; exact agreement {a['exact_agreement']:.3f}"
        )
        grid = zip(a["grades"], a["confusion"], strict=True)
        head = ["judge grade \\ human grade", *(str(int(g)) for g in a["grades"])]
        tables.append((head, [[str(int(g)), *(str(n) for n in row)] for g, row in grid]))
    estimators = ("judge_only", "human_only", "ppi", "ppi_plus")
    rows = [[key, *(estimate_cell(m[w]) for w in estimators)] for key, m in v["corrected"].items()]
    tables.append((["mean over queries", "judge only", "human only", "PPI", "PPI++"], rows))
    weighted = any(m.get("design") == WEIGHTED_NOTE for m in v["corrected"].values())
    design = (
        "weighted by 1/(the query queue's inclusion probability)"
        if weighted
        else "take the human-labelled queries as a uniform random sample"
    )
    notes = [f"95 % intervals; PPI/PPI++ {design}; † clipped"]
    queue = v.get("queue")
    if queue:
        notes.append(f"query queue {queue['file']}: its first {queue['labelled_prefix']} places labelled")
        notes += list(queue["notes"])
    return lines, tables, notes


def _parts(v: dict[str, Any]) -> tuple[list[str], list[tuple[list[str], list[list[str]]]], str]:
    """The section's lines, its tables (head, rows) and its note (``vs_human_parts``)."""
    lines, tables, notes = vs_human_parts(v)
    first = f"{lines[0]} (human qrels {v['human_qrels']})" if v.get("human_qrels") else lines[0]
    return [first, *lines[1:]], tables, "; ".join(notes) + " (docs/metrics.md, judge-labelled qrels)."


def render_vs_human_markdown(v: dict[str, Any]) -> str:
    """The section as Markdown, starting with its ``##`` heading."""
    lines, tables, note = _parts(v)
    out = [f"## {_HEADING}", "", *(md_escape(line) + "\n" for line in lines)]
    for head, rows in tables:
        out += [*md_table([md_escape(h) for h in head], ([md_escape(c) for c in r] for r in rows)), ""]
    return "\n".join([*out, md_escape(note), ""])


def render_vs_human_html(v: dict[str, Any]) -> str:
    """The section as an HTML fragment (every value escaped)."""
    e = html.escape
    lines, tables, note = _parts(v)
    parts = ['<section id="judged-vs-human">', f"<h2>{_HEADING}</h2>", *(f"<p>{e(line)}</p>" for line in lines)]
    parts += [html_table(head, rows) for head, rows in tables]
    parts += [f"<p class=meta>{e(note)}</p>", "</section>"]
    return "\n".join(parts) + "\n"
