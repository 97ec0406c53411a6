"""Replay the requests of real Foundry exchanges against the emulator and compare the responses' shapes.

The recordings (``tests/data/reference/recordings``, copied from the shared reference) are test-proxy captures of
the live service. Each request is sent in order to an in-process emulator (recorded ids are swapped for the
emulator's), and each response is compared with the recorded one: same status code; same keys (a key may be missing
on one side only if it is one the service itself adds or drops between versions, ``OPTIONAL_KEYS``); same JSON types
where both are non-null.
Values are not compared: the emulator's scores are stand-ins (see docs/mock.md).

Skipped, with reasons: ``eval_catalog.json`` (the ``/evaluators`` catalog API is not emulated: the catalog is
``mapping/catalog.py``, checked against that recording by ``test_catalog.py``) and the ``/connections`` lookups in
``datasets_upload.json`` (not needed by the upload flow when no connection name is given).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from mock_helpers import RECORDINGS

from foundry_bridge.mock import FoundryEmulator

EVAL_FLOWS = [
    "eval_inline_data.json",
    "groundedness.json",
    "response_completeness.json",
    "task_navigation_efficiency_errored.json",
    "eval_ai_assisted_nlp.json",
    "eval_model_target.json",
    "eval_agent_target.json",
]
# Keys the service adds or drops between versions (recorded: Jan, Mar, May 2026) or per evaluator.
OPTIONAL_KEYS = {
    "errored",  # result_counts / per-criterion counts: absent in older versions
    "skipped",  # idem
    "status",  # per-result status: May 2026 only; absent on errored results
    "sample",  # per-result judge call: only for model-judged results (and errored ones)
    "properties",  # per-result properties: document retrieval's single shape
    "RunSessionIdentifier",  # run property seen in one Jan 2026 recording
}
# Subtrees whose content depends on the evaluator or target, not on the API: types not compared.
FREE_FORM = (
    re.compile(r"\.per_model_usage$"),  # the models the real judges used
    re.compile(r"\.results\[\d+\]\.sample$"),  # the judge call
    re.compile(r"\.datasource_item$"),  # agent targets add response ids, traces, tool calls
    re.compile(r"^\$\.sample$|\.data\[\d+\]\.sample$"),  # item-level sample: usage filled for target runs only
)


def _load(name: str) -> list[dict[str, Any]]:
    path = RECORDINGS / name
    return json.loads(path.read_text())["Entries"]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def shape_problems(recorded: Any, ours: Any, path: str = "$") -> list[str]:
    """Differences in keys and types between a recorded body and ours (values ignored)."""
    if any(p.search(path) for p in FREE_FORM) or recorded is None or ours is None:
        return []
    if _kind(recorded) != _kind(ours):
        return [f"{path}: recorded {_kind(recorded)}, emulator {_kind(ours)}"]
    problems: list[str] = []
    if isinstance(recorded, dict):
        for key in sorted(set(recorded) ^ set(ours)):
            if key not in OPTIONAL_KEYS:
                side = "missing in emulator" if key in recorded else "not in recording"
                problems.append(f"{path}.{key}: {side}")
        for key in set(recorded) & set(ours):
            problems += shape_problems(recorded[key], ours[key], f"{path}.{key}")
    elif isinstance(recorded, list):
        if path.endswith(".results"):  # match results by criterion name: evaluators emit 1..n metrics
            for i, result in enumerate(ours):
                same = [r for r in recorded if r.get("name") == result.get("name")]
                if same:
                    problems += shape_problems(same[0], result, f"{path}[{i}]")
        else:
            for i, (rec, our) in enumerate(zip(recorded, ours, strict=False)):
                problems += shape_problems(rec, our, f"{path}[{i}]")
    return problems


class Replayer:
    """Sends recorded requests to an emulator, swapping recorded ids and blob containers for the emulator's."""

    def __init__(self, emulator: FoundryEmulator) -> None:
        self.client = httpx.Client(transport=emulator.transport())
        self.ids: dict[str, str] = {}

    def swap(self, text: str) -> str:
        for recorded, ours in self.ids.items():
            text = text.replace(recorded, ours)
        return text

    def send(self, entry: dict[str, Any]) -> httpx.Response:
        url = self.swap(entry["RequestUri"])
        headers = {k: v for k, v in entry["RequestHeaders"].items() if k.lower() not in ("content-length", "host")}
        body = entry["RequestBody"]
        if body is None:
            content = b""
        elif "blob.core.windows.net" in url and isinstance(body, str):
            content = base64.b64decode(body)  # the recording stores blob bytes as base64
        else:
            content = self.swap(json.dumps(body)).encode()
        return self.client.request(entry["RequestMethod"], url, headers=headers, content=content)

    def learn(self, recorded: Any, ours: Any) -> None:
        """Map recorded ids (eval, run, blob container) to the ones the emulator just created."""
        if isinstance(recorded, dict) and isinstance(ours, dict):
            if recorded.get("object") in ("eval", "eval.run") and recorded.get("id") and ours.get("id"):
                self.ids[recorded["id"]] = ours["id"]
            if "blobReference" in recorded and "blobReference" in ours:
                self.ids[recorded["blobReference"]["blobUri"].replace(":443", "")] = ours["blobReference"]["blobUri"]
                rec_sas = recorded["blobReference"]["credential"]["sasUri"].split("?")[0]
                self.ids[rec_sas] = ours["blobReference"]["credential"]["sasUri"].split("?")[0]


def _in_progress_polls(entries: list[dict[str, Any]]) -> int:
    run_gets = [e for e in entries if e["RequestMethod"] == "GET" and re.search(r"/runs/[^/?]+(\?|$)", e["RequestUri"])]
    return sum(1 for e in run_gets if e["ResponseBody"].get("status") == "in_progress")


@pytest.mark.parametrize("name", EVAL_FLOWS)
def test_replayed_eval_flow_matches_recorded_shapes(name: str) -> None:
    entries = _load(name)
    replayer = Replayer(FoundryEmulator(polls_to_complete=_in_progress_polls(entries)))
    problems: list[str] = []
    for n, entry in enumerate(entries):
        response = replayer.send(entry)
        where = f"#{n} {entry['RequestMethod']} {entry['RequestUri'].split('/api/projects/')[1][:80]}"
        assert response.status_code == entry["StatusCode"], f"{where}: {response.text[:500]}"
        ours = response.json() if response.content else None
        replayer.learn(entry["ResponseBody"], ours)
        problems += [f"{where}: {p}" for p in shape_problems(entry["ResponseBody"], ours)]
        if isinstance(ours, dict) and "data" in ours and "has_more" in ours:
            assert len(ours["data"]) == len(entry["ResponseBody"]["data"]), where
        if isinstance(ours, dict) and ours.get("object") == "eval.run":
            assert ours["status"] == entry["ResponseBody"]["status"], where
    assert problems == []


def test_replayed_dataset_upload_matches_recorded_shapes() -> None:
    entries = [e for e in _load("datasets_upload.json") if "/connections" not in e["RequestUri"]]
    replayer = Replayer(FoundryEmulator())
    problems: list[str] = []
    for n, entry in enumerate(entries):
        response = replayer.send(entry)
        where = f"#{n} {entry['RequestMethod']} {entry['RequestUri'][:100]}"
        assert response.status_code == entry["StatusCode"], f"{where}: {response.text[:500]}"
        ours = response.json() if response.content else None
        replayer.learn(entry["ResponseBody"], ours)
        if entry["RequestMethod"] != "PUT":
            problems += [f"{where}: {p}" for p in shape_problems(entry["ResponseBody"], ours)]
    assert problems == []


def test_the_comparison_can_fail() -> None:
    recorded = {"a": 1, "b": {"c": "x"}, "errored": 0}
    assert shape_problems(recorded, {"a": 1, "b": {"c": "y"}}) == []
    assert shape_problems(recorded, {"a": "1", "b": {"c": "x"}}) == ["$.a: recorded number, emulator str"]
    assert shape_problems(recorded, {"a": 1, "b": {}}) == ["$.b.c: missing in emulator"]
    assert shape_problems(recorded, {"a": 1, "b": {"c": "x"}, "z": 1}) == ["$.z: not in recording"]


def test_every_recording_is_replayed_or_skipped_with_a_reason() -> None:
    covered = {*EVAL_FLOWS, "datasets_upload.json", "eval_catalog.json"}
    assert {p.name for p in Path(RECORDINGS).glob("*.json")} == covered


# The primary metric of recorded multi-metric evaluators that are not in our catalog (read off the recording:
# ROUGEScore's per-criterion counts follow rouge_f1_score, not precision or recall).
RECORDED_PRIMARY = {"ROUGEScore": "rouge_f1_score"}


def _recorded_verdicts(item: dict[str, Any]) -> list[tuple[str, str]]:
    """An output item's per-criterion verdicts, read independently of the emulator from the recorded results."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for result in item["results"]:
        by_name.setdefault(result["name"], []).append(result)
    verdicts = []
    for name, results in by_name.items():
        if any(r["passed"] is None for r in results):
            verdicts.append((name, "errored"))
            continue
        primary = next(r for r in results if r["metric"] == RECORDED_PRIMARY.get(name, r["metric"]))
        verdicts.append((name, "passed" if primary["passed"] else "failed"))
    return verdicts


@pytest.mark.parametrize("name", EVAL_FLOWS)
def test_counting_rule_reproduces_the_recorded_counts(name: str) -> None:
    from foundry_bridge.mock._scoring import tally

    entries = _load(name)
    items = next(e for e in entries if e["RequestUri"].split("?")[0].endswith("/output_items"))["ResponseBody"]
    run = [e for e in entries if e["ResponseBody"] and e["ResponseBody"].get("status") == "completed"][-1]
    criteria = [c["name"] for c in entries[0]["RequestBody"]["testing_criteria"]]
    totals, per_criteria = tally([_recorded_verdicts(it) for it in items["data"]], criteria)
    recorded_counts = run["ResponseBody"]["result_counts"]
    assert {k: totals[k] for k in recorded_counts} == recorded_counts
    recorded_per = run["ResponseBody"]["per_testing_criteria_results"]
    assert [{k: ours[k] for k in rec} for ours, rec in zip(per_criteria, recorded_per, strict=True)] == recorded_per
