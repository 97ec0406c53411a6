"""The one YAML loader of the project: safe, with alias expansion, nesting depth and duplicate keys bounded.

PyYAML resolves an alias to the anchored object itself, so a "billion laughs" file (each level ten aliases of the
one above) composes in a few hundred nodes but is a billion values for whatever walks it later (pydantic, ``${VAR}``
expansion, JSON output). ``BoundedLoader`` counts, while composing, how many nodes (and characters of text) each
node stands for once its aliases are expanded, and stops at ``MAX_NODES`` (``MAX_CHARS``); it stops at
``MAX_DEPTH`` levels of nesting before the Python stack does; and a key written twice in one mapping is an error
naming both lines (PyYAML keeps the last silently). Every limit is a located ``MappingError``: file, line, which
limit, how to fix.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import MappingError

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_NODES", "BoundedLoader", "compose_bounded", "load_bounded"]

MAX_DEPTH = 64  # nesting levels of collections; the shipped mappings use 5
MAX_NODES = 100_000  # nodes after alias expansion; the shipped mappings have about 100
Duplicates = list[tuple[str, int, int]]  # (key, first line, second line) of each key written twice
MAX_CHARS = 10_000_000  # characters of scalars after alias expansion (a long string repeated by aliases)


class _LimitError(yaml.MarkedYAMLError):
    def __init__(self, problem: str, mark: Any, hint: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.hint = hint


class BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses deep nesting, alias bombs and duplicate keys while composing."""

    def __init__(self, stream: str, *, duplicate_keys: Duplicates | None = None) -> None:
        super().__init__(stream)
        self._duplicates = duplicate_keys
        self._depth = 0
        self._weight: dict[int, tuple[int, int]] = {}  # id(node) → (nodes, characters) it stands for, expanded

    def compose_node(self, parent: Any, index: Any) -> Any:
        mark = self.peek_event().start_mark
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _LimitError(
                    f"nesting deeper than {MAX_DEPTH} levels",
                    mark,
                    f"a mapping file needs a few levels; flatten this value (limit: {MAX_DEPTH})",
                )
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if id(node) not in self._weight:  # an alias returns its anchored node, weighed already
            self._weight[id(node)] = self._weigh(node, mark)
        return node

    def _weigh(self, node: Any, mark: Any) -> tuple[int, int]:
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            return 1, len(node.value)
        weights = [self._weight.get(id(child), (1, 0)) for child in children]
        nodes, chars = 1 + sum(w[0] for w in weights), sum(w[1] for w in weights)
        if nodes > MAX_NODES or chars > MAX_CHARS:
            what = f"{MAX_NODES:,} nodes" if nodes > MAX_NODES else f"{MAX_CHARS:,} characters"
            raise _LimitError(
                f"this value expands to more than {what} once its aliases (*name) are expanded",
                mark,
                "write the value out instead of repeating aliases of aliases (an alias bomb)",
            )
        return nodes, chars

    def compose_mapping_node(self, anchor: Any) -> Any:
        node = super().compose_mapping_node(anchor)
        first: dict[str, int] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            line = key.start_mark.line + 1
            if key.value not in first:
                first[key.value] = line
            elif self._duplicates is not None:
                self._duplicates.append((key.value, first[key.value], line))
            else:
                raise _LimitError(
                    f"key {key.value!r} is written twice in one mapping (lines {first[key.value]} and {line})",
                    key.start_mark,
                    "keep one of them: YAML would silently use the last",
                )
        return node


def compose_bounded(text: str, *, file: str | None = None, duplicate_keys: Duplicates | None = None) -> Any:
    """The YAML node tree of ``text`` (None if empty); ``MappingError`` on bad YAML or a limit.

    ``duplicate_keys``: accept a key written twice (JSON read for its line numbers: orjson keeps the last), each
    one appended to that list as ``(key, first line, second line)``.
    """
    return _read(text, file, duplicate_keys, construct=False)[1]


def load_bounded(text: str, *, file: str | None = None) -> tuple[Any, Any]:
    """(data, node tree) of ``text``, composed once and bounded; ``MappingError`` on bad YAML or a limit."""
    return _read(text, file, None, construct=True)


def _read(text: str, file: str | None, duplicate_keys: Duplicates | None, *, construct: bool) -> tuple[Any, Any]:
    loader = BoundedLoader(text, duplicate_keys=duplicate_keys)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if construct and node is not None else None), node
    except yaml.YAMLError as exc:
        raise _located(exc, file) from None
    finally:
        loader.dispose()


def _located(exc: yaml.YAMLError, file: str | None) -> MappingError:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    if isinstance(exc, _LimitError):
        return MappingError(f"YAML refused: {problem}", file=file, line=line, hint=exc.hint)
    return MappingError(f"invalid YAML: {problem}", file=file, line=line)
