"""The report's columns on disk (``report._spill.Spill``) and the allocator setting the report relies on."""

from __future__ import annotations

import gc
import os

import numpy as np

from foundry_bridge.report._spill import Spill, blocks


def test_a_column_reads_back_what_was_written_at_any_offset() -> None:
    spill = Spill()
    spill.create("score", 10, "float64", np.nan)
    spill.write("score", 3, np.array([1.5, 2.5]))
    got = spill.read("score")
    assert got[3:5].tolist() == [1.5, 2.5]
    assert np.isnan(np.delete(got, [3, 4])).all()
    assert spill.read("score", 4, 6)[0] == 2.5
    got[0] = 7.0  # a writable copy: the file is not changed by it
    assert np.isnan(spill.read("score", 0, 1)[0])


def test_a_column_grows_when_written_past_its_end_and_keeps_its_dtype() -> None:
    spill = Spill()
    spill.write("flag", 0, np.array([1, 0], np.int8))
    spill.write("flag", 2, np.array([1], np.int8))
    assert spill.rows("flag") == 3
    assert spill.read("flag").dtype == np.int8
    assert spill.read("flag").tolist() == [1, 0, 1]
    assert spill.read("flag", 2, 99).tolist() == [1]  # a range past the end stops at the end


def test_the_files_go_when_the_spill_is_closed_or_collected() -> None:
    spill = Spill()
    spill.create("x", 1000, "float64", 0.0)
    folder = spill.dir
    assert os.listdir(folder)
    spill.close()
    assert not os.path.exists(folder)
    other = Spill()
    other.write("y", 0, np.zeros(3))
    folder = other.dir
    del other
    gc.collect()
    assert not os.path.exists(folder)


def test_blocks_cover_every_row_once() -> None:
    assert list(blocks(5, 2)) == [(0, 2), (2, 4), (4, 5)]
    assert list(blocks(0, 2)) == []
