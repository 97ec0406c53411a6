"""compare's gates (issue #26, item 5): each --fail-on decided at its own α, the false-alarm rate across gates
stated, correction across gates an explicit choice; the exploratory family fixed by the metrics compared; a gate
that can never fire is an error; swapping baseline and candidate negates Δ and keeps p.
"""

from __future__ import annotations

from click.testing import CliRunner

from foundry_bridge.cli import cli


def test_a_float_option_without_bounds_shows_no_range() -> None:
    result = CliRunner().invoke(cli, ["metrics", "--help"], terminal_width=200)
    assert result.exit_code == 0 and "--surface-threshold" in result.output
    assert "None" not in result.output
