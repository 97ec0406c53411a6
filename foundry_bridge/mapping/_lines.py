"""Where a key path of a mapping stands in the YAML file it was read from: its line, and its dotted name.

Below both readers of a mapping file (``loader`` for a mapping, ``azd`` for azd's eval file), so neither needs
the other to locate an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["LineOf", "dotted", "key_line"]

LineOf = Callable[[tuple[Any, ...]], "int | None"]


def dotted(loc: tuple[Any, ...]) -> str:
    """A key path as the user writes it: ``evaluators[0].init.model``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def key_line(node: Any, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML key at ``loc`` (or of its closest existing parent). An init parameter the mapping
    stores under its name (``deployment_name``) is found under the alias the file wrote (``model``)."""
    import yaml

    from ..catalog import PARAM_ALIASES

    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            spellings = (str(part), *PARAM_ALIASES.get(str(part), ()))
            for key_node, value_node in node.value:
                if key_node.value in spellings:
                    line = key_node.start_mark.line + 1
                    node = value_node
                    break
            else:
                return line if line is not None else (node.start_mark.line + 1)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line
