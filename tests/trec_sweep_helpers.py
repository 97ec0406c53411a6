"""Four TREC runs on one qrels file, generated (seeded) for compare --qrels's tests and the sweep benchmark.

The qrels grade 0–2 over 300 documents; the first two topics have only 0 labels (judged, nothing relevant). Each
run ranks every judged document of a topic plus unjudged ones by a noisy score rounded to one decimal (so scores
tie: trec_eval breaks the ties by document id), its quality the weight of the label in the score; every run also
has a query the qrels do not judge (``u1``), and ``sys_c`` lacks topic 5 (a missing query: trec_eval -c scores it
0). Written as TREC files; ``write_beir_json`` and ``write_jsonl`` write a run again as a BEIR ``.json`` run and as
the project's JSONL (in trec_eval's order).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SYSTEMS = {"sys_a": 3.0, "sys_b": 2.0, "sys_c": 1.0, "sys_d": 0.0}  # weight of the label in the score
MISSING = ("sys_c", 5)  # sys_c has no line for topic 5


def topic_id(i: int) -> str:
    return f"t{i:04d}"


def write_sweep(root: Path, topics: int = 40, seed: int = 7, depth: int = 30) -> tuple[Path, dict[str, Path]]:
    """(qrels path, system → run path) under ``root``."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    qrels: dict[str, dict[str, int]] = {}
    for i in range(topics):
        docs = rng.sample(range(300), rng.randint(6, 14))
        labels = [0 if i < 2 else rng.choice((0, 0, 1, 1, 2)) for _ in docs]
        qrels[topic_id(i)] = {f"d{d:03d}": label for d, label in zip(docs, labels, strict=True)}
    qrels_path = root / "qrels.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {lab}\n" for q, judged in qrels.items() for d, lab in judged.items()))
    runs: dict[str, Path] = {}
    for name, weight in SYSTEMS.items():
        lines = []
        for q, judged in [*qrels.items(), ("u1", {})]:
            if (name, q) == (MISSING[0], topic_id(MISSING[1])):
                continue
            pool = list(judged) + [f"d{d:03d}" for d in rng.sample(range(300), depth)]
            pool = list(dict.fromkeys(pool))[:depth]
            scored = [(round(weight * judged.get(d, 0) + rng.uniform(0, 3), 1), d) for d in pool]
            for rank, (score, d) in enumerate(sorted(scored, reverse=True), 1):
                lines.append(f"{q} Q0 {d} {rank} {score} {name}\n")
        runs[name] = root / f"{name}.trec"
        runs[name].write_text("".join(lines))
    return qrels_path, runs


def read_trec_run(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run as pytrec_eval takes it: {qid: {docid: score}}."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        out.setdefault(q, {})[d] = float(score)
    return out


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        q, _, d, label = line.split()
        out.setdefault(q, {})[d] = int(label)
    return out


def trec_eval_order(docs: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, ties by document id descending."""
    return [(d, s) for s, d in sorted(((s, d) for d, s in docs.items()), reverse=True)]


def write_beir_json(run: Path, out: Path) -> Path:
    out.write_text(json.dumps(read_trec_run(run)))
    return out


def write_jsonl(run: Path, out: Path) -> Path:
    """The project's JSONL: one row per query, its documents in trec_eval's order (the stored order is the rank)."""
    rows = [
        {
            "query_id": q,
            "retrieved_documents": [{"document_id": d, "relevance_score": s} for d, s in trec_eval_order(docs)],
        }
        for q, docs in read_trec_run(run).items()
    ]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out
