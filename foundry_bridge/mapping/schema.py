"""The JSON Schema of the mapping format, generated from the pydantic model (``foundry-bridge schema``)."""

from __future__ import annotations

import json

from .model import Mapping

__all__ = ["mapping_json_schema_text"]


def mapping_json_schema_text() -> str:
    """``Mapping.model_json_schema()`` with a ``$schema`` and a title, for editors (YAML language server), as the
    committed ``mappings/mapping.schema.json`` holds it (2-space indent, trailing newline)."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **Mapping.model_json_schema(),
        "title": "foundry_bridge mapping",
    }
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
