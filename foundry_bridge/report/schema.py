"""Write the report's JSON Schema: ``python -m foundry_bridge.report.schema [FILE]`` (stdout without FILE)."""

from __future__ import annotations

import sys

from .._io import dumps, write_json
from ._model import report_json_schema

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    schema = report_json_schema()
    if args:
        write_json(args[0], schema)
    else:
        sys.stdout.write(dumps(schema, indent=True).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
