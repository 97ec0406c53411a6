"""The exit codes of every command, in one table: the epilog of each command's ``--help`` and the table in
docs/cli.md are generated from it (``exit_codes_epilog``), never written by hand per command.

The codes are the ``exit_code`` attributes of the exception tree (``errors.FoundryBridgeError`` 1,
``errors.UsageError`` 2, ``comparison.CompareGateFailed`` 3, ``comparison.CompareGateInconclusive`` 4; a test holds the
table to them) and click's own (2 for a usage error it finds, 130 after Ctrl-C).
Importing this module loads nothing but the standard library.
"""

from __future__ import annotations

__all__ = ["COMMON", "EXIT_CODES", "exit_codes", "exit_codes_epilog"]

OK, ERROR, USAGE, GATE, INCONCLUSIVE, INTERRUPTED = 0, 1, 2, 3, 4, 130

# what every command means by each code
COMMON: dict[int, str] = {
    OK: "success",
    ERROR: "a data, validation or backend error (an `Error:` line on stderr names the file, line and fix)",
    USAGE: "a usage error: an unknown, missing or conflicting option",
}

# command (as typed after foundry-bridge; "" for the group itself) → its codes beyond or instead of COMMON's text
EXIT_CODES: dict[str, dict[int, str]] = {
    "": {},
    "validate": {ERROR: "the data has at least one error (warnings do not fail)"},
    "plan": {ERROR: "the data or the mapping did not pass validation; nothing was written"},
    "metrics": {},
    "judge-docs": {},
    "run": {
        ERROR: "the run failed or was canceled, or the service refused a request (its message on stderr); "
        "errored results alone still exit 0, in red on stderr",
        INTERRUPTED: "interrupted (Ctrl-C); `run --resume DIR` goes on without submitting again",
    },
    "report": {},
    "compare": {
        USAGE: "a usage error, or a --fail-on gate that could never fire (without --allow-empty-gate)",
        GATE: "the gate failed: a --fail-on metric regressed significantly, a floor or a lost-query limit was "
        "broken, or a Foundry metric's coverage dropped",
        INCONCLUSIVE: "the gate is inconclusive: nothing failed, but a gate could not decide — a relative gate's test "
        "too weak for the change asked about, a floor inside the candidate's interval, or a gated judge metric's "
        "judge below --judge-trust-floor (each line names the queries / labels needed)",
    },
    "canaries": {},
    "traces": {
        ERROR: "unreadable files, or no request could be rebuilt (each trace's problem is in the problems file)"
    },
    "mock-server": {OK: "stopped (Ctrl-C)"},
    "schema": {},
    "catalog": {},
    "catalog diff": {ERROR: "drift, or a live read that failed"},
}


def exit_codes(command: str) -> dict[int, str]:
    """``command``'s exit codes, ascending: COMMON's, with the command's own meanings and extra codes."""
    merged = {**COMMON, **EXIT_CODES[command]}
    return dict(sorted(merged.items()))


def exit_codes_epilog(command: str) -> str:
    """The last block of ``command``'s ``--help``: ``Exit codes: 0 success; 1 ...`` (click rewraps it)."""
    return "Exit codes: " + "; ".join(f"{code} {text}" for code, text in exit_codes(command).items()) + "."
