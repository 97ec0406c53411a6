"""Shared pieces of the emulator tests: the four-criteria RAG eval body, sample rows, recordings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from foundry_bridge.catalog import CATALOG
from foundry_bridge.mock import PROJECT_ENDPOINT, FoundryEmulator

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
RECORDINGS = ROOT / "tests" / "data" / "reference" / "recordings"
OPENAI_V1 = PROJECT_ENDPOINT + "/openai/v1"

ITEM_FIELDS = ("query_id", "query", "kind", "context", "response", "ground_truth")


def _evaluator(short: str) -> str:
    """The Foundry name of a catalog evaluator, looked up by its short name (never typed out here)."""
    return next(spec.name for spec in CATALOG.values() if spec.short_name == short)


def item_schema() -> dict[str, Any]:
    props: dict[str, Any] = {k: {"type": "string"} for k in ITEM_FIELDS}
    props["retrieved_documents"] = {"type": "array", "items": {"type": "object"}}
    props["retrieval_ground_truth"] = {"type": "array", "items": {"type": "object"}}
    return {"type": "object", "properties": props, "required": []}


def rag_criteria(deployment: str = "gpt-4o-mini") -> list[dict[str, Any]]:
    """document_retrieval, retrieval, groundedness, relevance — as foundry_bridge's default mapping sends them."""
    judge = {"deployment_name": deployment, "threshold": 3}
    return [
        {
            "type": "azure_ai_evaluator",
            "name": "document_retrieval",
            "evaluator_name": _evaluator("document_retrieval"),
            "initialization_parameters": {"ground_truth_label_min": 0, "ground_truth_label_max": 4},
            "data_mapping": {
                "retrieval_ground_truth": "{{item.retrieval_ground_truth}}",
                "retrieved_documents": "{{item.retrieved_documents}}",
            },
        },
        {
            "type": "azure_ai_evaluator",
            "name": "retrieval",
            "evaluator_name": _evaluator("retrieval"),
            "initialization_parameters": dict(judge),
            "data_mapping": {"query": "{{item.query}}", "context": "{{item.context}}"},
        },
        {
            "type": "azure_ai_evaluator",
            "name": "groundedness",
            "evaluator_name": _evaluator("groundedness"),
            "initialization_parameters": dict(judge),
            "data_mapping": {"query": "{{item.query}}", "context": "{{item.context}}", "response": "{{item.response}}"},
        },
        {
            "type": "azure_ai_evaluator",
            "name": "relevance",
            "evaluator_name": _evaluator("relevance"),
            "initialization_parameters": dict(judge),
            "data_mapping": {"query": "{{item.query}}", "response": "{{item.response}}"},
        },
    ]


def eval_body(criteria: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "name": "rag-eval",
        "data_source_config": {"type": "custom", "item_schema": item_schema(), "include_sample_schema": True},
        "testing_criteria": criteria if criteria is not None else rag_criteria(),
        **extra,
    }


def sample_rows() -> list[dict[str, Any]]:
    """The bundled benefits sample as run items (document content dropped, as the plan does)."""
    rows = []
    for line in SAMPLE.read_text().splitlines():
        row = json.loads(line)
        item = {k: row[k] for k in (*ITEM_FIELDS, "retrieval_ground_truth") if k in row}
        item["retrieved_documents"] = [
            {"document_id": d["document_id"], "relevance_score": d["relevance_score"]}
            for d in row["retrieved_documents"]
        ]
        rows.append(item)
    return rows


def inline_source(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "jsonl", "source": {"type": "file_content", "content": [{"item": r} for r in rows]}}


def client_for(emulator: FoundryEmulator, base_url: str = OPENAI_V1) -> httpx.Client:
    return httpx.Client(transport=emulator.transport(), base_url=base_url)


def run_to_completion(client: httpx.Client, eval_id: str, run_id: str, max_polls: int = 50) -> dict[str, Any]:
    for _ in range(max_polls):
        run = client.get(f"/evals/{eval_id}/runs/{run_id}").json()
        if run["status"] not in ("queued", "in_progress"):
            return run
    raise AssertionError(f"run {run_id} did not finish in {max_polls} polls")


def all_items(client: httpx.Client, eval_id: str, run_id: str, limit: int = 100) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": limit}
    while True:
        page = client.get(f"/evals/{eval_id}/runs/{run_id}/output_items", params=params).json()
        items.extend(page["data"])
        if not page["has_more"]:
            return items
        params["after"] = page["data"][-1]["id"]


WORDNET_DIR = Path("/usr/share/wordnet")  # Debian's wordnet-base + wordnet-sense-index (WordNet 3.0, NLTK's too)
_NLTK_MARKERS = ("corpora/wordnet", "misc/perluniprops", "tokenizers/punkt", "tokenizers/punkt_tab")


def build_nltk_data(root: Path) -> tuple[Path, bool]:
    """An offline NLTK data folder for azure-ai-evaluation's BLEU, GLEU and METEOR (which otherwise download
    ``punkt_tab`` and ``wordnet`` on first use), and whether it holds WordNet (METEOR's synonyms).

    ``punkt_tab/english`` is an untrained Punkt model (no abbreviation list): sentences split at every period, which
    is what the trained one does on sentences without abbreviations. WordNet is copied from the Debian packages
    when installed, with the ``lexnames`` file NLTK reads, rebuilt from its documented content (lexnames(5WN)).
    Each resource also gets the ``.zip`` azure-ai-evaluation looks for before it tries to download."""
    import zipfile

    english = root / "tokenizers" / "punkt_tab" / "english"
    english.mkdir(parents=True, exist_ok=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (english / name).write_text("")
    (root / "misc" / "perluniprops").mkdir(parents=True, exist_ok=True)
    (root / "tokenizers" / "punkt").mkdir(parents=True, exist_ok=True)
    has_wordnet = (WORDNET_DIR / "data.noun").is_file() and (WORDNET_DIR / "index.sense").is_file()
    if has_wordnet:  # else no WordNet at all: NLTK then reports it missing (LookupError), as on a bare machine
        wordnet = root / "corpora" / "wordnet"
        wordnet.mkdir(parents=True, exist_ok=True)
        for path in WORDNET_DIR.iterdir():
            if path.is_file():
                (wordnet / path.name).write_bytes(path.read_bytes())
        (wordnet / "lexnames").write_text(
            "".join(f"{i:02d}\t{n}\t{_lexname_pos(n)}\n" for i, n in enumerate(_LEXNAMES))
        )
    for marker in _NLTK_MARKERS if has_wordnet else _NLTK_MARKERS[1:]:
        with zipfile.ZipFile(root / f"{marker}.zip", "w") as z:
            z.writestr(marker.rsplit("/", 1)[1] + "/", "")
    return root, has_wordnet


def _lexname_pos(name: str) -> int:
    return {"noun": 1, "verb": 2, "adj": 3, "adv": 4}[name.split(".", 1)[0]]


_LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]


def recorded_flow(name: str) -> dict[str, Any]:
    """The eval body, run body, completed run and output items of a recorded eval flow."""
    entries = json.loads((RECORDINGS / name).read_text())["Entries"]
    posts = [e for e in entries if e["RequestMethod"] == "POST"]
    completed = [e for e in entries if (e["ResponseBody"] or {}).get("status") == "completed"][-1]
    items = next(e for e in entries if e["RequestUri"].split("?")[0].endswith("/output_items"))
    polls = [e for e in entries if e["RequestMethod"] == "GET" and "/runs/" in e["RequestUri"]]
    return {
        "eval": posts[0]["RequestBody"],
        "run": posts[1]["RequestBody"],
        "created": posts[1]["ResponseBody"],
        "in_progress": [e["ResponseBody"] for e in polls if e["ResponseBody"].get("status") == "in_progress"],
        "completed": completed["ResponseBody"],
        "items": items["ResponseBody"]["data"],
    }
