"""The derived samples (custom_fields/, trec/, degraded/, beir/, parquet/) are exactly what
samples/derive_samples.py writes from samples/benefits/rag_eval.jsonl: edit the sample, run the script, commit."""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def test_the_committed_derived_samples_are_what_the_script_writes(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    copy = tmp_path / "samples"
    copy.mkdir()
    shutil.copy(SAMPLES / "derive_samples.py", copy)
    shutil.copytree(SAMPLES / "benefits", copy / "benefits")
    for name in ("custom_fields", "trec"):
        (copy / name).mkdir()
    runpy.run_path(str(copy / "derive_samples.py"), run_name="__main__")

    written = sorted(p.relative_to(copy) for p in copy.rglob("*") if p.is_file() and p.suffix != ".py")
    derived = [p for p in written if p.parts[0] != "benefits"]
    assert {p.parts[0] for p in derived} == {"custom_fields", "trec", "degraded", "beir", "parquet"}
    for rel in derived:
        if rel.suffix == ".parquet":
            assert pq.read_table(copy / rel).equals(pq.read_table(SAMPLES / rel)), rel
        else:
            assert (copy / rel).read_bytes() == (SAMPLES / rel).read_bytes(), f"{rel}: run samples/derive_samples.py"
