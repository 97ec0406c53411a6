"""The JSON Schema of the mapping format, generated from the pydantic model (``foundry-bridge schema``)."""

from __future__ import annotations

import json
from typing import Any

from .model import Mapping

__all__ = ["mapping_json_schema", "mapping_json_schema_text"]


def mapping_json_schema() -> dict[str, Any]:
    """``Mapping.model_json_schema()`` with a ``$schema`` and a title, for editors (YAML language server)."""
    schema = Mapping.model_json_schema()
    out: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    out.update(schema)
    out["title"] = "foundry_bridge mapping"
    return out


def mapping_json_schema_text() -> str:
    """The schema as the committed ``mappings/mapping.schema.json`` holds it (2-space indent, trailing newline)."""
    return json.dumps(mapping_json_schema(), indent=2, ensure_ascii=False) + "\n"
